"""The CPU study's command line: ``python -m cpu_study <command>``.

* ``control --rewards placebo|format|shuffled [train's options]`` - the main job
  (:func:`helpers.cli.train_command`) with a control reward set (:mod:`cpu_study.control_rewards`):
  what GRPO does at the same budget with a reward that carries no information about the answer.
* ``pass-at-k --run DIR [--n 8] [--problems 32]`` - pass@1, 2, 4, 8 of the base model, the cold start
  and GRPO of a finished run on course-written test problems (:mod:`cpu_study.pass_at_k`).
* ``sealed --run DIR --dest results/NAME [--profile P]`` - open the sealed test set once on a finished
  run (:func:`cpu_study.sealed_eval.open_sealed`): cold start and GRPO on its in-distribution
  and transfer parts; refuses a ``dest`` that holds a sealed summary already.
* ``ablate --arm NAME --seed S --cold-start DIR [--root D] [--quick]`` - one arm of the ablation
  (:func:`cpu_study.arms.run_arm`): the cpu recipe with one knob changed, GRPO from the cold
  start, evaluated on the development sets; writes ``<root>/<arm>/seed<S>/``.
* ``scratch --variant reinforce|std|clip|kl [--steps N] [--cold-start DIR] [--output-dir D] [--quick]``
  (``--stage`` is the same option) - notebook 07's from-scratch loop in plain PyTorch, one variant
  (:func:`cpu_study.variants.run_variant`): writes ``metrics.csv`` and ``summary.json``.
* ``blocks [--check]`` - rewrite the READMEs' generated blocks from ``results/``
  (:mod:`cpu_study.blocks`); ``--check`` only lists the files that differ (exit 1).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from helpers.cli import add_train_arguments, check_data_dir, existing_dir, positive_int, run_command, train_command


def _control(args) -> int:
    from cpu_study.control_rewards import CONTROL_REWARD_SETS

    args.reward_funcs = CONTROL_REWARD_SETS[args.rewards]
    return train_command(args)


def _pass_at_k(args) -> int:
    from helpers.training.profiles import get_profile

    profile = get_profile(args.profile)
    from cpu_study.pass_at_k import PASS_AT_K_FILE, evaluate_run

    result = evaluate_run(args.run_dir, profile, n=args.n, problems=args.problems)
    for stage, levels in result["stages"].items():
        cells = ", ".join(
            f"pass@{k} {100 * levels['all'][f'pass@{k}']['value']:.1f} %"
            for k in (1, 2, 4, 8)
            if f"pass@{k}" in levels["all"]
        )
        print(f"{stage:11s} {cells}")
    print(f"Written: {Path(args.run_dir) / PASS_AT_K_FILE}")
    return 0


def _sealed(args) -> int:
    check_data_dir()
    from helpers.training.profiles import get_profile

    profile = get_profile(args.profile)
    from cpu_study.sealed_eval import SEALED_SUMMARY_FILE, open_sealed, sealed_rows

    for row in sealed_rows(open_sealed(args.run_dir, args.dest, profile)):
        print(
            f"sealed {row['part']}: {row['cold_start']} -> {row['grpo']} of {row['n']} "
            f"(McNemar p = {row['p']:.2g}: {row['gained']} gained, {row['lost']} lost)"
        )
    print(f"Written: {Path(args.dest) / SEALED_SUMMARY_FILE}")
    return 0


def _ablate(args) -> int:
    check_data_dir()
    from cpu_study.arms import ARMS, run_arm
    from helpers.training.profiles import quick_requested

    result = run_arm(
        ARMS[args.arm],
        args.seed,
        args.cold_start,
        args.root,
        quick=args.quick or quick_requested(),
        command=" ".join([args.prog, *args.argv]),
    )
    for name, s in result["sets"].items():
        before = result["cold_start_sets"][name]
        print(f"{args.arm}, seed {args.seed}, {name}: cold start {before['correct']} -> {s['correct']} of {s['n']}")
    print(f"cost: {result['cost']}")
    return 0


def _scratch(args) -> int:
    check_data_dir()
    from cpu_study.variants import run_variant
    from helpers.training.profiles import quick_requested

    run = run_variant(
        args.variant,
        steps=args.steps,
        cold_start=args.cold_start,
        output_dir=args.output_dir,
        quick_run=args.quick or quick_requested(),
        seed=args.seed,
        command=" ".join([args.prog, *args.argv]),
    )
    print(f"{len(run.rows)} rows in {run.metrics_csv}; summary {run.summary_json}; {run.seconds / 60:.1f} min")
    return 0


def _blocks(args) -> int:
    from cpu_study import blocks

    if args.check:
        stale = blocks.stale()
        for path in stale:
            print(f"{path} differs from results/: run python -m cpu_study blocks")
        return 1 if stale else 0
    for path in blocks.write():
        print(f"rewrote the generated blocks of {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from cpu_study.arms import ARMS  # no torch, no transformers
    from cpu_study.control_rewards import CONTROL_REWARD_SETS
    from helpers.training.profiles import PROFILES

    parser = argparse.ArgumentParser(
        prog="python -m cpu_study", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    control = commands.add_parser("control", help="the main job with a control reward set (CPU)")
    add_train_arguments(
        control,
        CONTROL_REWARD_SETS,
        "placebo (a coin flip per completion; default), format (no correctness reward), "
        "shuffled (correctness against another problem's answer)",
    )
    control.set_defaults(run=_control)
    passk = commands.add_parser("pass-at-k", help="pass@1..8 of every stage of a finished `train` run (CPU)")
    passk.add_argument(
        "--run", dest="run_dir", required=True, type=existing_dir, help="the run's folder (outputs/grpo-cpu)"
    )
    passk.add_argument("--n", type=positive_int, default=8, help="samples per problem (default 8)")
    passk.add_argument(
        "--problems", type=positive_int, default=32, help="course-written test problems per difficulty (default 32)"
    )
    passk.add_argument("--profile", choices=sorted(PROFILES), help="default: picked from the hardware")
    passk.set_defaults(run=_pass_at_k)
    sealed = commands.add_parser("sealed", help="open the sealed test set once on a finished `train` run (CPU)")
    sealed.add_argument(
        "--run", dest="run_dir", required=True, type=existing_dir, help="the run's folder (outputs/grpo-cpu)"
    )
    sealed.add_argument("--dest", required=True, help="the reference run's results folder (results/<run>)")
    sealed.add_argument("--profile", choices=sorted(PROFILES), help="default: picked from the hardware")
    sealed.set_defaults(run=_sealed)
    ablate = commands.add_parser("ablate", help="one arm of the ablation: the cpu recipe with one knob changed (CPU)")
    ablate.add_argument("--arm", required=True, choices=list(ARMS), help="the knob to change (cpu_study.arms)")
    ablate.add_argument("--seed", type=int, default=3407, help="training seed (default 3407)")
    ablate.add_argument(
        "--cold-start", required=True, type=existing_dir, help="the merged cold start (outputs/grpo-cpu/cold_start)"
    )
    ablate.add_argument("--root", default="outputs/ablation", help="the ablation's folder (default outputs/ablation)")
    ablate.add_argument("--quick", action="store_true", help="smoke size (also: GRPO_QUICK=1)")
    ablate.set_defaults(run=_ablate)
    scratch = commands.add_parser("scratch", help="GRPO from scratch in plain PyTorch, one variant (notebook 07)")
    scratch.add_argument(
        "--variant",
        "--stage",
        dest="variant",
        choices=["reinforce", "std", "clip", "kl"],
        default="kl",
        help="reinforce (group-mean baseline), std (+ std scaling), clip (+ 2 iterations, "
        "eps 0.2), kl (+ beta 0.04; default)",
    )
    scratch.add_argument("--steps", type=positive_int, help="AdamW steps (default 20)")
    scratch.add_argument(
        "--cold-start", type=existing_dir, help="the merged cold start to start from (default SmolLM2-135M-Instruct)"
    )
    scratch.add_argument("--output-dir", help="default: outputs/scratch-<variant>")
    scratch.add_argument("--seed", type=int, help="LoRA init and sampling seed (default 3407)")
    scratch.add_argument("--quick", action="store_true", help="smoke size (also: GRPO_QUICK=1)")
    scratch.set_defaults(run=_scratch)
    blocks = commands.add_parser("blocks", help="rewrite the READMEs' numbers and tables from results/")
    blocks.add_argument("--check", action="store_true", help="only list the files that differ (exit status 1)")
    blocks.set_defaults(run=_blocks)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run a command (:func:`helpers.cli.run_command`: bad input is one line on stderr, exit status 2)."""
    return run_command(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
