"""Runs of the from-scratch loop (:mod:`helpers.loop`) on the course's data: its prompts and held-out problems,
its four variants (:data:`VARIANTS`), the policy loaded from a cold start, and the files a run writes
(``metrics.csv``, ``summary.json``). Read :func:`run_variant` (what ``python -m helpers scratch`` runs) first;
notebook 07 also reads the benchmark that timed the loop (:func:`bench_tables`)."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import asdict, replace
from pathlib import Path

import torch

from helpers.data.curriculum import curriculum_dataset
from helpers.data.problem_sets import heldout_problems
from helpers.evaluation.provenance import git_commit, machine
from helpers.evaluation.reports import SUMMARY_FILE
from helpers.loop import (
    METRIC_COLUMNS,
    TIME_PARTS,
    LoopConfig,
    LoopRun,
    batch_logps,
    train_from_scratch,
)
from helpers.training.callbacks import HeldoutAccuracy
from helpers.training.fast_rollouts import shared_batch_logps
from helpers.training.models import load_model
from helpers.training.profiles import CPU, Phase
from helpers.training.run_files import METRICS_FILE

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
    """``evaluate(model) -> dict`` for :func:`helpers.loop.train_from_scratch`: greedy accuracy on ``problems``
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


def write_metrics(rows: list[dict], path) -> Path:
    """``metrics.csv`` with the columns of :data:`METRIC_COLUMNS` (then any others), empty cells where a row
    has no value."""
    path = Path(path)
    columns = list(METRIC_COLUMNS) + [k for k in dict.fromkeys(k for r in rows for k in r) if k not in METRIC_COLUMNS]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return path


def loop_summary(run: LoopRun, config: LoopConfig, command: str | None = None, share_prompt: bool = False) -> dict:
    """``summary.json``: config (with ``share_prompt``), command, commit, machine, held-out curve, total and
    mean part times."""
    steps = [r for r in run.rows if r["step"] > 0]
    summary = {
        "command": command,
        "commit": git_commit(),
        "machine": machine() + f", torch {torch.__version__}",
        "config": {**asdict(config), "share_prompt": share_prompt},
        "total_s": round(run.seconds, 1),
        "mean_s": {k: round(sum(r[k] for r in steps) / len(steps), 2) for k in (*TIME_PARTS, "step_time_s")},
        "heldout": [{"step": s, **v} for s, v in run.heldout],
        "final": {k: steps[-1][k] for k in ("reward", "kl", "completions/mean_length", "grad_norm")},
    }
    return json.loads(json.dumps(summary, default=str))  # as the file holds it: anything else as text


def run_loop(
    model,
    tokenizer,
    config: LoopConfig,
    *,
    prompts=None,
    heldout=None,
    reward_funcs=None,
    output_dir=None,
    share_prompt: bool = False,
    command: str | None = None,
    log=print,
) -> LoopRun:
    """:func:`helpers.loop.train_from_scratch` with the course's data, then its files.

    Args:
        prompts: default :func:`train_prompts`; heldout: default :func:`heldout_set` (``[]``: none).
        reward_funcs: default :data:`helpers.rewards.REWARD_FUNCS`.
        output_dir: where ``metrics.csv`` and ``summary.json`` go (None: nothing written).
        share_prompt: log-probs with one prompt pass per group
            (:func:`helpers.training.fast_rollouts.shared_batch_logps`: the same values and gradients).
    """
    prompts = train_prompts(config) if prompts is None else prompts
    heldout = heldout_set(config.heldout_problems) if heldout is None else list(heldout)
    evaluate = heldout_evaluator(tokenizer, heldout, config.max_new_tokens) if heldout else None
    run = train_from_scratch(
        model,
        tokenizer,
        config,
        prompts,
        reward_funcs=reward_funcs,
        evaluate=evaluate,
        log=log,
        logps=shared_batch_logps if share_prompt else batch_logps,
    )
    if output_dir is not None:
        Path(output_dir).mkdir(parents=True, exist_ok=True)
        run.metrics_csv = write_metrics(run.rows, Path(output_dir) / METRICS_FILE)
        run.summary_json = Path(output_dir) / SUMMARY_FILE
        run.summary_json.write_text(json.dumps(loop_summary(run, config, command, share_prompt), indent=2) + "\n")
    return run


def run_variant(
    variant: str,
    *,
    steps: int | None = None,
    cold_start=None,
    output_dir=None,
    quick_run: bool = False,
    seed: int | None = None,
    share_prompt: bool = False,
    command: str | None = None,
    **overrides,
) -> LoopRun:
    """Load the policy (the merged cold start ``cold_start``, else SmolLM2-135M-Instruct; fp32, the cpu
    profile's LoRA) and :func:`run_loop` one variant (:data:`VARIANTS`); what
    ``python -m helpers scratch`` runs. Files go to ``output_dir`` (default ``outputs/scratch-<variant>``).

    Raises:
        ValueError: unknown variant; FileNotFoundError: ``cold_start`` holds no model.
    """
    config = variant_config(variant, **overrides)
    config = quick(config) if quick_run else config
    config = replace(config, **{k: v for k, v in (("steps", steps), ("seed", seed)) if v is not None})
    if cold_start is not None and not (Path(cold_start) / "config.json").exists():
        raise FileNotFoundError(f"{cold_start} holds no model (no config.json)")
    torch.manual_seed(config.seed)  # the LoRA's initial weights, then the rollouts
    model, tokenizer = load_model(CPU, cold_start, seed=None)  # keeps the stream seeded above
    print(
        f"GRPO from scratch, variant {variant}: {config.steps} steps of {config.prompts_per_step} prompts x "
        f"{config.num_generations} completions x {config.max_new_tokens} tokens, from {cold_start or CPU.model_id}"
    )
    return run_loop(
        model,
        tokenizer,
        config,
        output_dir=output_dir or f"outputs/scratch-{variant}" + "-quick" * quick_run,
        share_prompt=share_prompt,
        command=command,
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
