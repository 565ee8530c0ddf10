"""The from-scratch loop's variants (notebook 07), run and read: :func:`run_variant` (what
``python -m cpu_study scratch`` runs) and :func:`run_loop` write a run's ``metrics.csv`` and ``summary.json``;
:func:`read_variant_runs`, :func:`fresh_steps`, :func:`variant_table` and :func:`plot_variant_runs` read the
committed runs (``results/scratch-variants``)."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import asdict, replace
from pathlib import Path

import torch

from cpu_study.loop import batch_logps, train_from_scratch
from helpers.evaluation.plots import finish_figure, read_metrics, rolling_mean
from helpers.evaluation.provenance import git_commit, machine
from helpers.evaluation.reports import SUMMARY_FILE
from helpers.loop import METRIC_COLUMNS, TIME_PARTS, LoopConfig, LoopRun
from helpers.training.fast_rollouts import shared_prompt_logps
from helpers.training.loop_runs import VARIANTS, heldout_evaluator, heldout_set, quick, train_prompts, variant_config
from helpers.training.models import load_model
from helpers.training.profiles import CPU
from helpers.training.run_files import METRICS_FILE


def read_variant_runs(results_dir) -> tuple[dict, list]:
    """``({variant: metrics columns}, [missing variants])`` from ``results_dir/<variant>/metrics.csv``, variants in
    :data:`VARIANTS` order (:func:`helpers.evaluation.plots.read_metrics`)."""
    results_dir = Path(results_dir)
    found = {
        s: read_metrics(results_dir / s / METRICS_FILE) for s in VARIANTS if (results_dir / s / METRICS_FILE).exists()
    }
    return found, [s for s in VARIANTS if s not in found]


def fresh_steps(m: dict) -> list:
    """The steps of a metrics table (:func:`helpers.evaluation.plots.read_metrics` columns) that sampled a new batch
    (the others reuse it: their KL is measured on the old policy's samples, where k3 is biased)."""
    return [s for s, g in zip(m["step"], m["seconds/generation"]) if s > 0 and g > 0]


def variant_table(runs: dict):
    """A ``DataFrame``, one row per variant run: mean reward over the first and the last 5 steps, the KL of
    the last fresh batch (:func:`fresh_steps`), mean length and grad norm over the last 5 steps, the share
    of clipped tokens, held-out accuracy before (step 0) and after (last evaluation), and the mean step
    time (s, without the held-out evaluations)."""
    import pandas as pd

    def mean(values):
        values = [v for v in values if not math.isnan(v)]
        return sum(values) / len(values) if values else float("nan")

    rows = {}
    for variant, m in runs.items():
        trained = [i for i, s in enumerate(m["step"]) if s > 0]
        first, last = trained[:5], trained[-5:]
        held = [v for v in m.get("heldout/accuracy", []) if not math.isnan(v)]
        rows[variant] = {
            "reward, steps 1-5": mean([m["reward"][i] for i in first]),
            "reward, last 5": mean([m["reward"][i] for i in last]),
            "KL, last fresh batch": m["kl"][m["step"].index(fresh_steps(m)[-1])],
            "length, last 5": mean([m["completions/mean_length"][i] for i in last]),
            "grad norm, last 5": mean([m["grad_norm"][i] for i in last]),
            "clipped tokens, mean": mean([m["clip_ratio/region_mean"][i] for i in trained]),
            "held-out, step 0": held[0] if held else float("nan"),
            "held-out, last": held[-1] if held else float("nan"),
            "seconds per step": mean([m["step_time_s"][i] for i in trained]),
        }
    return pd.DataFrame.from_dict(rows, orient="index")


PLOTTED = (
    ("reward", "reward (mean over the batch)"),
    ("kl", "KL to the reference (k3, nats/token)"),
    ("completions/mean_length", "mean completion length (tokens)"),
    ("grad_norm", "grad norm (before clipping)"),
    ("heldout/accuracy", "held-out accuracy (greedy)"),
)


def plot_variant_runs(runs: dict, show: bool = True):
    """One figure, five panels against the step (:data:`PLOTTED`: reward, KL, length, grad norm, held-out
    accuracy), one line per variant run (``{variant: metrics columns}``). Returns the ``Figure``.

    Raises:
        ValueError: no runs.
    """
    import matplotlib.pyplot as plt

    if not runs:
        raise ValueError("no variant runs to plot")
    fig, axes = plt.subplots(1, len(PLOTTED), figsize=(19, 3.8), constrained_layout=True)
    for variant, m in runs.items():
        for ax, (key, title) in zip(axes, PLOTTED):
            pairs = [(s, v) for s, v in zip(m["step"], m.get(key, [])) if not math.isnan(v)]
            steps, values = [p[0] for p in pairs], [p[1] for p in pairs]
            if key == "heldout/accuracy":
                ax.plot(steps, [100 * v for v in values], marker="s", label=variant)
            elif key == "kl":  # a line through the fresh batches; the reused ones (off-policy k3) as dots
                fresh = set(fresh_steps(m))
                (line,) = ax.plot(
                    [s for s in steps if s in fresh], [v for s, v in pairs if s in fresh], marker=".", label=variant
                )
                ax.plot(
                    [s for s in steps if s not in fresh],
                    [v for s, v in pairs if s not in fresh],
                    ls="",
                    marker="x",
                    alpha=0.5,
                    color=line.get_color(),
                )
            elif key in ("reward", "completions/mean_length"):
                (line,) = ax.plot(steps, rolling_mean(values, 3), lw=2, label=variant)
                ax.plot(steps, values, ls="", marker=".", alpha=0.4, color=line.get_color())
            else:
                ax.plot(steps, values, marker=".", label=variant)
            ax.set(title=title + (" %" if key == "heldout/accuracy" else ""), xlabel="step")
    axes[0].set_title("reward (3-step mean; dots: each step)")
    axes[1].set_title("KL (k3) on fresh batches; x: reused batch")
    axes[0].legend(fontsize=8)
    return finish_figure(fig, show)


def shared_batch_logps(model, batch, config) -> torch.Tensor:
    """:func:`cpu_study.loop.batch_logps` with each group's prompt pass shared
    (:func:`helpers.training.fast_rollouts.shared_prompt_logps`):
    ``(B, T)`` log-probs of ``batch``'s completions at ``config.temperature``, the same values and gradients."""
    ids = torch.cat([batch.prompt_ids, batch.completion_ids], 1)
    mask = torch.cat([batch.prompt_mask, batch.completion_mask], 1)
    return shared_prompt_logps(model, ids, mask, batch.completion_ids.size(1), config.temperature)[0]


def write_metrics(rows: list[dict], path) -> Path:
    """``metrics.csv`` with the columns of :data:`helpers.loop.METRIC_COLUMNS` (then any others), empty cells
    where a row has no value."""
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
    """:func:`cpu_study.loop.train_from_scratch` with the course's data, then its files.

    Args:
        prompts: default :func:`helpers.training.loop_runs.train_prompts`; heldout: default
            :func:`helpers.training.loop_runs.heldout_set` (``[]``: none).
        reward_funcs: default :data:`helpers.rewards.REWARD_FUNCS`.
        output_dir: where ``metrics.csv`` and ``summary.json`` go (None: nothing written).
        share_prompt: log-probs with one prompt pass per group
            (:func:`shared_batch_logps`: the same values and gradients).
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
    ``python -m cpu_study scratch`` runs. Files go to ``output_dir`` (default ``outputs/scratch-<variant>``).

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
