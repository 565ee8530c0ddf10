"""The four variants of notebook 07's from-scratch loop, each from `make train`'s merged cold start:

    GSM8K_DIR=... python cpu_study/experiments/scratch_variants.py reinforce std clip kl

`cpu_study.variants.run_variant(variant, share_prompt=True)`: 20 AdamW steps of 2 prompts x 8
completions x 96 tokens on one-operation course-written train problems, T 0.6, lr 5e-4, held-out
accuracy on 32 test problems every 5 steps. share_prompt computes the log-probs with one prompt pass
per group (the same values and gradients, tests/test_loop.py); sampling is plain `generate`.
Writes results/scratch-variants/<variant>/{metrics.csv,summary.json}.
"""

import argparse
from pathlib import Path

from cpu_study.variants import run_variant

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "results" / "scratch-variants"
COLD_START = ROOT / "outputs" / "grpo-cpu" / "cold_start"  # `make train`'s merged cold start

parser = argparse.ArgumentParser(
    description="Run variants of notebook 07's from-scratch loop from make train's cold start."
)
parser.add_argument(
    "variants", nargs="+", choices=("reinforce", "std", "clip", "kl"), help="the variants to run, in order"
)
for variant in parser.parse_args().variants:
    run_variant(
        variant,
        cold_start=COLD_START,
        output_dir=OUT / variant,
        share_prompt=True,
        command=f"python cpu_study/experiments/scratch_variants.py {variant}"
        f"  # cold start {COLD_START.relative_to(ROOT)}",
    )
