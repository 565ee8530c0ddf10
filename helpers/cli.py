"""Command line: ``python -m helpers <command>``.

* ``train [--profile P] [--quick] [--max-steps N] [--rewards checked|layout] [--seed S]
  [--cold-start-examples N] [--cold-start DIR] [--output-dir D] [--vllm-server URL]``
  - the main job (:func:`helpers.training.pipeline.run_pipeline`): cold start -> GRPO -> evaluation of
  every stage; prints the stage table and writes ``summary.json``. Also on several GPUs:
  ``accelerate launch --config_file configs/multi_gpu.yaml --num_processes N -m helpers train ...``
  (:mod:`helpers.training.distributed`; only the main process prints).
* ``evaluate --adapter DIR [--n N] [--profile P] [--greedy]`` - base vs. base + LoRA on GSM8K
  test (notebook 06): writes ``results/<run>/summary.json`` and ``records.jsonl``, prints the table.

The CPU study's commands (control runs, the sealed set, pass@k, the ablation, notebook 07's loop variants,
the README blocks) are ``python -m cpu_study`` (:mod:`cpu_study.cli`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def train_command(args) -> int:
    """``train``: the main job with ``args`` as :func:`add_train_arguments` parses them (and
    ``args.reward_funcs``, when a caller trains with reward functions of its own)."""
    from helpers.training.distributed import describe_batch, quiet_if_replica

    quiet_if_replica()  # several processes: only the main one prints
    check_data_dir()
    from helpers.training.models import import_backend
    from helpers.training.profiles import get_profile, quick_requested, shortened

    profile = get_profile(args.profile)
    import_backend(profile)
    from helpers.training.pipeline import run_pipeline

    if args.quick or quick_requested():
        profile = shortened(profile)
        print("Shortened run (--quick / GRPO_QUICK=1): checks that every stage runs, learns nothing.")
    options = {"max_steps": args.max_steps, "cold_start_examples": args.cold_start_examples, "seed": args.seed}
    options["vllm_server_url"] = args.vllm_server
    profile = profile.replace(**{field: value for field, value in options.items() if value is not None})
    run = run_pipeline(
        profile,
        args.output_dir,
        reward_set=args.rewards,
        reward_funcs=getattr(args, "reward_funcs", None),
        cold_start_dir=args.cold_start,
        command=" ".join([args.prog, *args.argv]),
    )
    if run is None:  # another process of a multi-process launch: the main one reports
        return 0
    print(f"\nProfile: {profile.name} ({profile.description})")
    if run.summary["stages"]:
        for name, title in (
            ("problems", "Course-written test problems, in distribution (greedy)"),
            ("transfer", "Transfer problems: wordings no training problem uses (greedy)"),
        ):
            if run.summary.get(name):
                print(f"{title}:\n{run.problems_table(name).to_string()}")
                print(f"\nper kind:\n{run.kinds_table(name).to_string(index=False)}\n")
        if run.summary.get("problems"):
            print("GSM8K test (greedy):")
        print(run.table().to_string())
        if profile.name == "cpu":  # the main job's claim, over the committed seeds of this recipe
            from helpers.evaluation.reports import format_gain_text

            print("\n" + format_gain_text())
    else:
        print(f"Evaluation skipped: {run.summary['evaluation']['skipped']}")
    t, d = run.summary["timings_s"], run.summary["distributed"]
    print(
        f"\nGRPO: {run.training.trainer.state.global_step} steps, {t['grpo_per_step_s']:.1f} s per step; "
        f"whole run (every stage) {t['total_s'] / 60:.1f} min"
    )
    print(
        "GRPO ran on "
        + describe_batch(
            d["processes"], d["per_device_train_batch_size"], d["gradient_accumulation_steps"], d["num_generations"]
        )
    )
    for label, path in (
        ("Summary", run.summary_json),
        ("Eval records", run.records_jsonl),
        ("Metrics CSV", run.training.metrics_csv),
        ("Training curves", run.training.curves_png),
        ("LoRA adapter", run.training.adapter_dir),
    ):
        print(f"{label + ':':17s}{path}")
    return 0


def _evaluate(args) -> int:
    check_data_dir()
    from helpers.training.models import import_backend
    from helpers.training.profiles import get_profile

    profile = get_profile(args.profile)
    import_backend(profile)
    from helpers.colab.persist import check_adapter_dir
    from helpers.data.gsm8k import load_gsm8k
    from helpers.evaluation.adapters import adapter_base, load_with_adapter
    from helpers.evaluation.before_after import compare, decoding, evaluate_before_after, run_name, save_results

    adapter = check_adapter_dir(args.adapter)
    test = load_gsm8k("test")
    n = min(args.n or profile.eval_questions or len(test), len(test))
    base_path = adapter_base(adapter, args.model_path)
    print(f"Base model: {base_path or profile.model_id}")
    model, tokenizer = load_with_adapter(profile, adapter, base_path)
    from helpers.evaluation.scoring import default_batch_size

    settings = {
        **decoding(profile, greedy=args.greedy),
        "seed": args.seed,
        "batch_size": args.batch_size or default_batch_size(model),
    }
    base, lora = evaluate_before_after(model, tokenizer, test, adapter, n=n, **settings)
    comparison = compare(base, lora)
    out_dir = Path(args.results_dir) / (args.run_label or run_name(adapter, args.greedy))
    summary, records = save_results(
        comparison,
        out_dir,
        profile=profile.name,
        model_id=profile.model_id,
        model_path=base_path,
        adapter=str(adapter),
        dataset=test.info.description,
        decoding=settings,
    )
    print(f"\nProfile {profile.name}: {profile.description}")
    print(f"{comparison.mcnemar.n} questions of {test.info.description}; decoding {settings}")
    print(comparison.table().to_string())
    print(f"\nSummary: {summary}\nRecords: {records}")
    return 0


def _int_at_least(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
    return value


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (TRL reads ``max_steps=-1`` as "train whole epochs")."""
    return _int_at_least(text, 1)


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    return _int_at_least(text, 0)


def existing_dir(text: str) -> Path:
    """argparse type: a folder that exists."""
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"no folder at {text}")
    return path


def add_train_arguments(train: argparse.ArgumentParser, reward_sets: dict, rewards_help: str) -> None:
    """The ``train`` options: profile, size, ``--rewards`` (one of ``reward_sets``'s names, the first
    by default), seed, cold start, output folder, vLLM server."""
    from helpers.training.profiles import PROFILES  # the backend is imported later

    train.add_argument("--profile", choices=sorted(PROFILES), help="default: picked from the hardware")
    train.add_argument("--quick", action="store_true", help="smoke-size run of every stage (also: GRPO_QUICK=1)")
    train.add_argument("--max-steps", type=positive_int, help="GRPO steps; default: the profile's")
    train.add_argument(
        "--rewards",
        choices=sorted(reward_sets),
        default=next(iter(reward_sets)),
        help=rewards_help,
    )
    train.add_argument("--seed", type=int, help="training seed (LoRA init, sampling, problems); default: the profile's")
    train.add_argument(
        "--cold-start-examples",
        type=non_negative_int,
        help="SFT examples of the cold start (0: none); default: the profile's",
    )
    train.add_argument(
        "--cold-start",
        type=existing_dir,
        help="reuse this merged cold-start model (GRPO prompts still skip the "
        "--cold-start-examples rows it was trained on)",
    )
    train.add_argument("--output-dir", help="default: outputs/grpo-<profile>")
    train.add_argument(
        "--vllm-server",
        metavar="URL",
        help="rollouts from a running `trl vllm-serve` (e.g. http://localhost:8000; plain TRL profile cuda only)",
    )


def build_parser() -> argparse.ArgumentParser:
    from helpers.rewards import REWARD_SETS  # no torch, no transformers
    from helpers.training.profiles import PROFILES

    parser = argparse.ArgumentParser(
        prog="python -m helpers", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    train = commands.add_parser("train", help="cold start -> GRPO (LoRA) on GSM8K -> evaluation")
    add_train_arguments(train, REWARD_SETS, "checked (default); layout: the hackable layout-only format rewards")
    train.set_defaults(run=train_command)
    evaluate = commands.add_parser("evaluate", help="base vs. base + LoRA on GSM8K test (notebook 06)")
    evaluate.add_argument(
        "--adapter", required=True, type=existing_dir, help="saved LoRA adapter folder (from `train`)"
    )
    evaluate.add_argument(
        "--n", type=positive_int, help="first N test questions; default the profile's eval_questions (cpu 32, t4 all)"
    )
    evaluate.add_argument("--profile", choices=sorted(PROFILES), help="default: picked from the hardware")
    evaluate.add_argument(
        "--greedy", action="store_true", help="greedy decoding instead of the profile's training sampling"
    )
    evaluate.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    evaluate.add_argument(
        "--batch-size",
        type=positive_int,
        default=None,
        help="questions per generate call (default: 256 with vLLM, 8 with transformers)",
    )
    evaluate.add_argument(
        "--model-path",
        help="the adapter's base model; default: the run's cold_start/ beside the adapter, else the profile's model",
    )
    evaluate.add_argument("--run", dest="run_label", help="results subfolder; default: the adapter's training run name")
    evaluate.add_argument("--results-dir", default="results", help="default: results")
    evaluate.set_defaults(run=_evaluate)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run a command of :func:`build_parser` (:func:`run_command`)."""
    return run_command(build_parser(), argv)


def run_command(parser: argparse.ArgumentParser, argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``) with ``parser`` and run the command; bad input (a missing
    data folder, a missing model) ends with one line on stderr and exit status 2, as argparse's own
    errors do."""
    from helpers.training.distributed import SetupError, is_main_process
    from helpers.training.models import ModelSourceError

    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    args.argv, args.prog = argv, parser.prog  # recorded in summary.json
    try:
        return args.run(args)
    except (FileNotFoundError, ModelSourceError, SetupError) as error:
        if is_main_process():  # every process of a launch fails alike: one line
            print(f"{parser.prog} {args.command}: error: {error}", file=sys.stderr)
        return 2


def check_data_dir() -> None:
    """Fail before any model loads when ``GSM8K_DIR`` points at nothing usable."""
    import os

    directory = os.environ.get("GSM8K_DIR")
    if directory and not (Path(directory) / "train.jsonl").exists():
        raise FileNotFoundError(
            f"GSM8K_DIR={directory} has no train.jsonl (unset it to use the hub or the embedded sample)"
        )


if __name__ == "__main__":
    sys.exit(main())
