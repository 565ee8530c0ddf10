"""The four stages of notebook 07 (issue 21), each from the headline run's merged cold start:

    GSM8K_DIR=... python results/scratch-stages/run.py reinforce std clip kl

`helpers.scratch` with `stage_config(stage, share_prompt=True)`: 20 AdamW steps of 2 prompts x 8
completions x 96 tokens on one-operation course-written train problems, T 0.6, lr 5e-4, held-out
accuracy on 32 test problems every 5 steps. share_prompt computes the log-probs with one prompt pass
per group (the same values and gradients, tests/test_scratch.py); sampling is plain `generate`.
Writes results/scratch-stages/<stage>/{metrics.csv,summary.json}.
"""

import sys
from dataclasses import replace
from pathlib import Path

import torch

from helpers.models import load_model
from helpers.profiles import CPU
from helpers.scratch import stage_config, train

HERE = Path(__file__).resolve().parent
COLD_START = HERE.parents[1] / "outputs" / "grpo-cpu" / "cold_start"  # `make train`'s merged cold start

for stage in sys.argv[1:]:
    config = stage_config(stage, share_prompt=True)
    torch.manual_seed(config.seed)  # the LoRA's initial weights, then the rollouts (as run_stage)
    model, tokenizer = load_model(CPU, COLD_START)
    print(f"stage {stage}: {config}", flush=True)
    train(model, tokenizer, config, output_dir=HERE / stage,
          command=f"python results/scratch-stages/run.py {stage}  # cold start {COLD_START.relative_to(HERE.parents[1])}",
          log=lambda line: print(line, flush=True))
