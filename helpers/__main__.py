"""Command line: ``python -m helpers <command>``.

* ``train [--profile P] [--max-steps N] [--output-dir D]`` - the GRPO pipeline of notebook 04.
* ``sync-notebooks`` - rewrite the Colab badge and install cell of every notebook.
"""

from __future__ import annotations

import argparse
import sys


def _train(args) -> int:
    from .profiles import get_profile
    from .training import train

    profile = get_profile(args.profile)
    run = train(profile, max_steps=args.max_steps, output_dir=args.output_dir)
    print(f"\nProfile: {profile.name} ({profile.description})")
    print(f"Seconds per step: {run.seconds_per_step:.1f}")
    print(f"Metrics CSV:      {run.metrics_csv}")
    print(f"Training curves:  {run.curves_png}")
    print(f"LoRA adapter:     {run.adapter_dir}")
    return 0


def _sync(args) -> int:
    from .colab import sync_notebooks

    changed = sync_notebooks()
    print("updated:", ", ".join(p.name for p in changed) if changed else "nothing (all in sync)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m helpers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    train = commands.add_parser("train", help="GRPO training (LoRA) on GSM8K")
    train.add_argument("--profile", choices=["t4", "cpu"], help="default: picked from the hardware")
    train.add_argument("--max-steps", type=int, help="default: the profile's")
    train.add_argument("--output-dir", help="default: outputs/grpo-<profile>")
    train.set_defaults(run=_train)
    sync = commands.add_parser("sync-notebooks", help="rewrite badges and install cells")
    sync.set_defaults(run=_sync)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
