"""Cost of our wrappers: ``helpers.training.train`` vs a plain TRL ``GRPOTrainer`` script, and
``helpers.cold_start.train_cold_start`` vs a plain ``SFTTrainer`` script, same sizes, one run.

Both sides of each pair load the same SmolLM2-135M-Instruct weights with the same LoRA, prompts,
config and seed, and are timed whole (model load included); ours adds the metrics CSV, the curves
PNG, the adapter save (GRPO) and the merge + save (cold start). Prints seconds and the ratio
ours / plain (target <= 1.15). The plain side of each pair runs first.

    GSM8K_DIR=/path/to/gsm8k python benchmarks/bench_training.py [--steps 4] [--sft-examples 32]
"""

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
DEFAULT_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "gsm8k"
os.environ.setdefault("GSM8K_DIR", str(DEFAULT_DIR))

from helpers.cold_start import build_sft_config, build_sft_dataset, train_cold_start  # noqa: E402
from helpers.data import load_gsm8k  # noqa: E402
from helpers.models import load_model  # noqa: E402
from helpers.profiles import PROFILES  # noqa: E402
from helpers.rewards import REWARD_FUNCS  # noqa: E402
from helpers.training import build_grpo_config, train  # noqa: E402


def timed(func, *args) -> float:
    start = time.perf_counter()
    func(*args)
    return time.perf_counter() - start


def plain_grpo(profile, dataset, out) -> None:
    """What a learner would write with TRL alone: load, build the trainer, train."""
    from trl import GRPOTrainer

    model, tokenizer = load_model(profile)
    GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=REWARD_FUNCS,
                args=build_grpo_config(profile, out), train_dataset=dataset).train()


def ours_grpo(profile, dataset, out) -> None:
    """``helpers.training.train``: the same run plus metrics CSV, curves and adapter save."""
    train(profile, dataset=dataset, output_dir=out)


def plain_sft(profile, dataset, out) -> None:
    from trl import SFTTrainer

    model, tokenizer = load_model(profile)
    SFTTrainer(model=model, processing_class=tokenizer, train_dataset=dataset,
               args=build_sft_config(profile, out)).train()


def ours_sft(profile, dataset, out) -> None:
    """``train_cold_start``: the same run plus the loss CSV and the merge + save."""
    train_cold_start(profile, out, dataset=dataset)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=4, help="GRPO steps (default 4)")
    parser.add_argument("--sft-examples", type=int, default=32, help="cold-start examples (default 32)")
    args = parser.parse_args()
    profile = PROFILES["cpu"].replace(max_steps=args.steps, max_completion_length=64)
    prompts = load_gsm8k("train").select(range(args.sft_examples, args.sft_examples + 64))
    sft_rows = build_sft_dataset(args.sft_examples)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        times = {
            "grpo plain TRL": timed(plain_grpo, profile, prompts, tmp / "plain-grpo"),
            "grpo ours": timed(ours_grpo, profile, prompts, tmp / "ours-grpo"),
            "sft plain TRL": timed(plain_sft, profile, sft_rows, tmp / "plain-sft"),
            "sft ours": timed(ours_sft, profile, sft_rows, tmp / "ours-sft"),
        }
    print(f"\nGRPO: {args.steps} steps of {profile.num_generations} x {profile.max_completion_length} tokens; "
          f"cold start: {args.sft_examples} examples, batch {profile.cold_start_batch_size}")
    for name, seconds in times.items():
        print(f"  {name:15s} {seconds:7.1f} s")
    for stage in ("grpo", "sft"):
        print(f"  {stage}: ours / plain = {times[stage + ' ours'] / times[stage + ' plain TRL']:.3f}")


if __name__ == "__main__":
    main()
