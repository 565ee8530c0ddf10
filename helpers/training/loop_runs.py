"""What notebook 07's from-scratch loop runs on: its four variants (:data:`VARIANTS`, :func:`variant_config`,
:func:`quick`), its prompts (:func:`train_prompts`) and held-out problems (:func:`heldout_set`,
:func:`heldout_evaluator`), and the benchmark that timed it (:func:`bench_tables`). The CPU study runs the
variants with the same data (:func:`cpu_study.variants.run_variant`)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import torch

from helpers.data.curriculum import curriculum_dataset
from helpers.data.problem_sets import heldout_problems
from helpers.loop import LoopConfig
from helpers.training.callbacks import HeldoutAccuracy
from helpers.training.profiles import CPU, Phase

# The pieces added one at a time: each variant is the one before plus one change.
VARIANTS = {
    "reinforce": dict(scale_std=False, num_iterations=1, beta=0.0),  # group-mean baseline, rho = 1, no KL
    "std": dict(scale_std=True, num_iterations=1, beta=0.0),  # + GRPO's std division
    "clip": dict(scale_std=True, num_iterations=2, epsilon=0.2, beta=0.0),  # + each batch used twice, clipped
    "kl": dict(scale_std=True, num_iterations=2, epsilon=0.2, beta=0.04),  # + k3 KL to the reference
}


def variant_config(variant: str, **overrides) -> LoopConfig:
    """The config of a named variant (:data:`VARIANTS`) with ``overrides`` (e.g. ``steps=2``).

    Raises:
        ValueError: unknown variant, or a bad value (:class:`LoopConfig`).
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose one of {list(VARIANTS)}")
    return LoopConfig(**{"variant": variant, **VARIANTS[variant], **overrides})


def quick(config: LoopConfig) -> LoopConfig:
    """Smoke size (CI, ``--quick``): 2 steps of 1 prompt x 4 completions x 24 tokens, 4 held-out problems
    after every step. It checks that the loop runs, not that it learns."""
    return replace(
        config,
        steps=2,
        prompts_per_step=1,
        num_generations=4,
        max_new_tokens=24,
        heldout_problems=min(config.heldout_problems, 4),
        heldout_every=1,
    )


LOOP_FAMILY = "fixed"  # the loop's problems: the family its committed runs (results/scratch-variants) used


def heldout_set(n: int) -> list[dict]:
    """The loop's held-out problems: ``n`` course-written test problems of the :data:`LOOP_FAMILY`, half
    with one operation and half with two, up to 20 (:func:`helpers.data.problem_sets.heldout_problems`)."""
    profile = CPU.replace(heldout_problems=n, problem_family=LOOP_FAMILY, eval_levels=((1, 20), (2, 20)))
    return heldout_problems(profile) if n > 0 else []


def heldout_evaluator(tokenizer, problems, max_new_tokens: int):
    """``evaluate(model) -> dict`` for the loop's ``train_from_scratch`` (notebook 07): greedy accuracy on ``problems``
    and its seconds, as the trainer's held-out curve measures it
    (:meth:`helpers.training.callbacks.HeldoutAccuracy.evaluate`). The global random state is restored after
    each call (greedy generation reseeds it), so that evaluating does not change the rollouts."""
    scorer = HeldoutAccuracy(problems, tokenizer, max_new_tokens=max_new_tokens)

    def evaluate(model) -> dict:
        state = torch.get_rng_state()
        values = scorer.evaluate(model)
        torch.set_rng_state(state)
        return values

    return evaluate


def train_prompts(config: LoopConfig):
    """One-operation course-written *train* problems of the :data:`LOOP_FAMILY`, ``prompts_per_step`` per
    sampled batch, in order (:func:`helpers.data.curriculum.curriculum_dataset` with one phase)."""
    return curriculum_dataset(
        (Phase(1.0, ((1, 20),)),),
        batches=config.rollouts,
        prompts_per_batch=config.prompts_per_step,
        seed=config.seed,
        family=LOOP_FAMILY,
    )


def bench_tables(path) -> list[dict]:
    """The tables of a ``benchmarks/bench_training.py`` output (``results/benchmarks/bench_training.txt``), in
    the file's order (its newest run first): one dict per table, ``{"title", "notes" (the ``#`` lines above
    it), "table" (a ``DataFrame``, one row per side: seconds per part, median of the measured steps),
    "ratios" ({"plain TRL / ours": 3.88, ...})}``.

    Raises:
        ValueError: a row whose columns do not match its table's header.
    """
    import pandas as pd

    tables, notes, current = [], [], None
    for line in Path(path).read_text().splitlines():
        text = line.strip()
        if not text:
            current = None
        elif text.startswith("#"):
            notes.append(text.lstrip("# "))
        elif not line.startswith(" "):  # a table's title line, then its header
            current = {"title": text, "notes": notes, "header": None, "rows": {}, "ratios": {}}
            tables.append(current)
            notes = []
        elif current is not None and current["header"] is None:
            current["header"] = re.split(r"\s{2,}", text)
        elif current is not None and text.startswith("step time,"):
            label, value = text.removeprefix("step time,").split("=")
            current["ratios"][label.strip()] = float(value)
        elif current is not None:
            side, *cells = re.split(r"\s{2,}", text)
            if len(cells) != len(current["header"]):
                raise ValueError(f"{path}: {len(cells)} cells for {len(current['header'])} columns in {text!r}")
            current["rows"][side] = [_number(c) for c in cells]
    return [
        {
            "title": t["title"],
            "notes": t["notes"],
            "table": pd.DataFrame.from_dict(t["rows"], orient="index", columns=t["header"]),
            "ratios": t["ratios"],
        }
        for t in tables
    ]


def _number(text: str):
    """``text`` as a float when it is one (``"131.5"``), else as it is (``"40/87, 40/71"``)."""
    try:
        return float(text)
    except ValueError:
        return text
