"""Notebook 05's exercises 1, 2, 4, 5 and 6, measured: 6 GRPO steps each from the same cold start.

The first recipe (``helpers.training.profiles.format_recipe``: one GSM8K prompt x 8 completions x 160
tokens, T = 1.0), its 160-example cold start, seed 3407, 2 CPU cores. Each arm changes one thing;
``baseline`` changes nothing. Writes ``<arm>/metrics.csv`` and ``summary.json`` (per arm: a few
metrics at each of the 6 steps, and the seconds a step) into results/exercises05/.

    GSM8K_DIR=... python cpu_study/experiments/grpo_training_exercises.py [--cold DIR]
"""

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "results" / "exercises05"
sys.path.insert(0, str(ROOT))
from helpers.data.problem_sets import grpo_prompts  # noqa: E402
from helpers.original_rewards import ORIGINAL_REWARD_FUNCS  # noqa: E402
from helpers.rewards import REWARD_FUNCS  # noqa: E402
from helpers.training import profiles  # noqa: E402
from helpers.training.cold_start import train_cold_start  # noqa: E402
from helpers.training.models import load_model  # noqa: E402
from helpers.training.trainer import train  # noqa: E402

ARMS = {  # name: (what changes, train() overrides, reward functions)
    "baseline": ("nothing", {}, REWARD_FUNCS),
    "beta0": ("Exercise 1: beta = 0", {"beta": 0.0}, REWARD_FUNCS),
    "dr_grpo": (
        "Exercise 2: Dr. GRPO (loss_type dr_grpo, no std scaling)",
        {"loss_type": "dr_grpo", "scale_rewards": "none"},
        REWARD_FUNCS,
    ),
    "two_iterations": ("Exercise 4: num_iterations = 2", {"num_iterations": 2}, REWARD_FUNCS),
    "original_rewards": ("Exercise 5: the original reward functions", {}, ORIGINAL_REWARD_FUNCS),
    "mask_truncated": ("Exercise 6: mask_truncated_completions", {"mask_truncated_completions": True}, REWARD_FUNCS),
}
COLUMNS = [
    "reward",
    "kl",
    "completions/mean_length",
    "completions/clipped_ratio",
    "clip_ratio/region_mean",
    "frac_reward_zero_std",
    "grad_norm",
    "rewards/strict_format_reward_func/mean",
    "rewards/soft_format_reward_func/mean",
    "step_time_s",
]


def main() -> None:
    import pandas as pd

    parser = argparse.ArgumentParser()
    parser.add_argument("--cold", help="a merged 160-example cold start of format_recipe (else trained here)")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--note", default="", help="e.g. what else ran on the machine (timings)")
    args = parser.parse_args()
    profile = profiles.format_recipe(profiles.CPU)
    work = Path(tempfile.mkdtemp(prefix="ex05-"))
    cold = Path(args.cold) if args.cold else train_cold_start(profile, work).model_dir
    prompts = grpo_prompts(profile)
    summary = {
        "recipe": "format_recipe(CPU)",
        "steps": args.steps,
        "cold_start": str(cold),
        "note": args.note,
        "arms": {},
    }
    for name, (what, overrides, funcs) in ARMS.items():
        model, tokenizer = load_model(profile, cold)
        run = train(
            profile,
            model=model,
            tokenizer=tokenizer,
            dataset=prompts,
            output_dir=work / name,
            reward_funcs=funcs,
            max_steps=args.steps,
            resume=False,
            **overrides,
        )
        (HERE / name).mkdir(exist_ok=True)
        shutil.copy(run.metrics_csv, HERE / name / "metrics.csv")
        metrics = pd.read_csv(run.metrics_csv)
        metrics = metrics[metrics["step"] > 0]
        summary["arms"][name] = {
            "what": what,
            "overrides": overrides,
            "seconds_per_step": run.seconds_per_step,
            "per_step": {c: [round(float(v), 5) for v in metrics[c]] for c in COLUMNS if c in metrics},
        }
        (HERE / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
        print(name, f"{run.seconds_per_step:.1f} s/step", flush=True)


if __name__ == "__main__":
    main()
