"""The four stages of notebook 07 (issue 21), each from the headline run's merged cold start:

    GSM8K_DIR=... python results/scratch-stages/run.py reinforce std clip kl

`helpers.scratch` with `stage_config(stage, share_prompt=True)`: 20 AdamW steps of 2 prompts x 8
completions x 96 tokens on one-operation course-written train problems, T 0.6, lr 5e-4, held-out
accuracy on 32 test problems every 5 steps. share_prompt computes the log-probs with one prompt pass
per group (the same values and gradients, tests/test_scratch.py); sampling is plain `generate`.
Writes results/scratch-stages/<stage>/{metrics.csv,summary.json}.
"""

import sys
from pathlib import Path

from helpers.scratch import run_stage

HERE = Path(__file__).resolve().parent
COLD_START = HERE.parents[1] / "outputs" / "grpo-cpu" / "cold_start"  # `make train`'s merged cold start

for stage in sys.argv[1:]:
    run_stage(stage, cold_start=COLD_START, output_dir=HERE / stage, share_prompt=True,
              command=f"python results/scratch-stages/run.py {stage}  # cold start {COLD_START.relative_to(HERE.parents[1])}")
