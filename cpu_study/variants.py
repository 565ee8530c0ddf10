"""The committed runs of the from-scratch loop's variants (notebook 07): :func:`read_variant_runs`,
:func:`fresh_steps`, :func:`variant_table`,
:func:`plot_variant_runs`."""

from __future__ import annotations

import math
from pathlib import Path

from helpers.evaluation.plots import finish_figure, read_metrics, rolling_mean
from helpers.training.loop_runs import VARIANTS
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
