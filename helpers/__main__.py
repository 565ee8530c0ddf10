"""Command line: ``python -m helpers <command>``.

* ``train [--profile P] [--max-steps N] [--output-dir D]`` - the GRPO pipeline of notebook 04.
* ``evaluate --adapter DIR [--n N] [--profile P] [--greedy]`` - base vs. base + LoRA on GSM8K
  test (notebook 05): writes ``results/<run>/summary.json`` and ``records.jsonl``, prints the table.
* ``sync-notebooks`` - rewrite the Colab badge and install cell of every notebook.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _train(args) -> int:
    from .models import import_backend
    from .profiles import get_profile

    profile = get_profile(args.profile)
    import_backend(profile)
    from .training import train

    run = train(profile, max_steps=args.max_steps, output_dir=args.output_dir)
    print(f"\nProfile: {profile.name} ({profile.description})")
    print(f"GRPO steps:       {run.trainer.state.global_step}")
    print(f"Seconds per step: {run.seconds_per_step:.1f}")
    print(f"Metrics CSV:      {run.metrics_csv}")
    print(f"Training curves:  {run.curves_png}")
    print(f"LoRA adapter:     {run.adapter_dir}")
    return 0


def _evaluate(args) -> int:
    from .models import import_backend
    from .profiles import get_profile

    profile = get_profile(args.profile)
    import_backend(profile)
    from .comparison import (check_adapter_dir, compare, decoding, default_n, evaluate_before_after,
                             load_with_adapter, run_name, save_results)
    from .data import load_gsm8k

    adapter = check_adapter_dir(args.adapter)
    test = load_gsm8k("test")
    n = args.n if args.n is not None else min(default_n(profile) or len(test), len(test))
    settings = {**decoding(profile, greedy=args.greedy), "seed": args.seed, "batch_size": args.batch_size}
    model, tokenizer = load_with_adapter(profile, adapter, args.model_path)
    base, lora = evaluate_before_after(model, tokenizer, test, adapter, n=n, **settings)
    comparison = compare(base, lora)
    out_dir = Path(args.results_dir) / (args.run_label or run_name(adapter, args.greedy))
    summary, records = save_results(comparison, out_dir, profile=profile.name, model_id=profile.model_id,
                                    model_path=args.model_path, adapter=str(adapter),
                                    dataset=test.info.description, decoding=settings)
    print(f"\nProfile {profile.name}: {profile.description}")
    print(f"{comparison.mcnemar.n} questions of {test.info.description}; decoding {settings}")
    print(comparison.table().to_string())
    print(f"\nSummary: {summary}\nRecords: {records}")
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
    evaluate = commands.add_parser("evaluate", help="base vs. base + LoRA on GSM8K test (notebook 05)")
    evaluate.add_argument("--adapter", required=True, help="saved LoRA adapter folder (from `train`)")
    evaluate.add_argument("--n", type=int, help="first N test questions; default all (cpu profile: 10)")
    evaluate.add_argument("--profile", choices=["t4", "cpu"], help="default: picked from the hardware")
    evaluate.add_argument("--greedy", action="store_true",
                          help="greedy decoding instead of the profile's training sampling")
    evaluate.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    evaluate.add_argument("--batch-size", type=int, default=16, help="questions per generate call")
    evaluate.add_argument("--model-path", help="local base-model checkpoint instead of the profile's")
    evaluate.add_argument("--run", dest="run_label",
                          help="results subfolder; default: the adapter's training run name")
    evaluate.add_argument("--results-dir", default="results", help="default: results")
    evaluate.set_defaults(run=_evaluate)
    sync = commands.add_parser("sync-notebooks", help="rewrite badges and install cells")
    sync.set_defaults(run=_sync)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
