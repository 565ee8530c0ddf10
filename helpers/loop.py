"""The from-scratch loop's data (notebook 07): its knobs (:class:`LoopConfig`), a sampled batch
(:class:`Batch`), what a run measured (:class:`LoopRun`) and the columns of its ``metrics.csv``.

The loop itself is notebook 07's cells: sample, score, advantages (:func:`helpers.grpo.group_advantages`),
no-gradient log-probs (old policy, reference = adapter off), the clipped loss (:func:`helpers.grpo.grpo_loss`)
and AdamW steps. Their importable copy, for the CPU study's variant runs, is :mod:`cpu_study.loop`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import torch

from helpers import grpo

TIME_PARTS = ("seconds/generation", "seconds/logps_no_grad", "seconds/loss_backward", "seconds/rest")
# fmt: off
METRIC_COLUMNS = ("step", "rollout", "reward", "reward_std", "frac_reward_zero_std", "kl", "clip_ratio/region_mean",
                  "clip_ratio/low_mean", "clip_ratio/high_mean", "ratio_mean", "completions/mean_length",
                  "completions/max_length", "completions/clipped_ratio", "grad_norm", "loss", *TIME_PARTS,
                  "step_time_s", "heldout/accuracy", "heldout/accuracy_format_free", "heldout/seconds")
# fmt: on


@dataclass(frozen=True)
class LoopConfig:
    """Every knob of the loop. Lengths in tokens, the learning rate per AdamW step.

    Raises:
        ValueError: any value out of range (named in the message).
    """

    variant: str = "custom"  # a label for the logs; variant_config() sets it
    scale_std: bool = True  # divide the advantages by the group's std (GRPO) or not (REINFORCE + baseline)
    num_iterations: int = 1  # AdamW steps per sampled batch (> 1: the ratio departs from 1, the clip binds)
    epsilon: float = 0.2  # clip range of the ratio, [1 - eps, 1 + eps]
    beta: float = 0.0  # weight of the k3 KL to the reference model
    loss_type: str = "grpo"  # helpers.grpo.LOSS_TYPES
    prompts_per_step: int = 2  # distinct prompts in a sampled batch
    num_generations: int = 8  # G, completions per prompt
    max_new_tokens: int = 96
    temperature: float = 0.6  # the cpu profile's
    top_p: float = 1.0
    learning_rate: float = 5e-4
    weight_decay: float = 0.1  # the cpu profile's AdamW settings
    adam_betas: tuple = (0.9, 0.99)
    adam_eps: float = 1e-8
    max_grad_norm: float = 0.1
    steps: int = 20
    seed: int = 3407
    heldout_problems: int = 32  # course-written test problems (helpers.data.problem_sets.heldout_problems); 0: off
    heldout_every: int = 5
    log_kl: bool = True  # reference log-probs also when beta = 0, for the KL column

    def __post_init__(self):
        checks = [
            (self.num_iterations >= 1, "num_iterations must be >= 1"),
            (0 <= self.epsilon < 1, "epsilon must lie in [0, 1)"),
            (self.beta >= 0, "beta must be >= 0"),
            (self.loss_type in grpo.LOSS_TYPES, f"loss_type must be one of {grpo.LOSS_TYPES}"),
            (self.prompts_per_step >= 1, "prompts_per_step must be >= 1"),
            (self.num_generations >= 2, "num_generations must be >= 2 (a group of 1 has no baseline)"),
            (self.max_new_tokens >= 1, "max_new_tokens must be >= 1"),
            (self.temperature > 0, "temperature must be > 0"),
            (0 < self.top_p <= 1, "top_p must lie in (0, 1]"),
            (self.learning_rate > 0, "learning_rate must be > 0"),
            (self.max_grad_norm > 0, "max_grad_norm must be > 0"),
            (self.steps >= 1, "steps must be >= 1"),
            (self.heldout_problems >= 0, "heldout_problems must be >= 0"),
            (self.heldout_every >= 1, "heldout_every must be >= 1"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(f"{message} (LoopConfig, variant {self.variant!r})")

    @property
    def rollouts(self) -> int:
        """Sampled batches in the run: one every ``num_iterations`` steps."""
        return math.ceil(self.steps / self.num_iterations)


@dataclass
class Batch:
    """One sampled batch: B = prompts x G rows (a group's G consecutive), P prompt and T completion columns;
    ``old_logps`` is None when the batch is used once (rho = 1), ``ref_logps`` when no reference pass ran."""

    prompt_ids: torch.Tensor  # (B, P), left-padded
    prompt_mask: torch.Tensor  # (B, P)
    completion_ids: torch.Tensor  # (B, T), right-padded
    completion_mask: torch.Tensor  # (B, T): 1 up to and including the first stop token
    rewards: torch.Tensor  # (B, F) float32, one column per reward function
    advantages: torch.Tensor  # (B,)
    old_logps: torch.Tensor | None = None  # (B, T), log pi_old
    ref_logps: torch.Tensor | None = None  # (B, T), log pi_ref
    reward_names: list = field(default_factory=list)


@dataclass
class LoopRun:
    """What notebook 07's ``train_from_scratch`` (or :func:`cpu_study.loop.train_from_scratch`) measured: rows
    (:data:`METRIC_COLUMNS`), the held-out curve ``[(step, values)]``, its seconds, and the files
    :func:`cpu_study.variants.run_loop` wrote."""

    rows: list
    heldout: list
    seconds: float
    metrics_csv: Path | None = None
    summary_json: Path | None = None
