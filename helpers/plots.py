"""Matplotlib figures shared by the notebooks."""

from __future__ import annotations

import csv
from pathlib import Path

SMOOTHING = 5  # steps in the trailing mean of the reward curves


def read_metrics(path: str | Path) -> dict[str, list[float]]:
    """Columns of a metrics CSV (:class:`helpers.training.MetricsCSV`) as float lists.

    Empty cells become NaN.
    """
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return {}
    return {key: [float(r[key]) if r.get(key) not in (None, "") else float("nan") for r in rows]
            for key in rows[0]}


def rolling_mean(values, window: int = SMOOTHING) -> list[float]:
    """Trailing mean over the last ``window`` values (fewer at the start); NaNs are skipped.

    ``rolling_mean([1, 2, 3, 4], 2)`` -> ``[1.0, 1.5, 2.5, 3.5]``. Raises ``ValueError`` for
    ``window < 1``.
    """
    import math

    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    out = []
    for i in range(len(values)):
        recent = [v for v in values[max(0, i - window + 1): i + 1] if not math.isnan(v)]
        out.append(sum(recent) / len(recent) if recent else float("nan"))
    return out


def plot_training_curves(metrics_csv: str | Path, save_to: str | Path | None = None, show: bool = True,
                         title: str = ""):
    """Four panels against the optimizer step: total reward (mean +- std over completions),
    each reward function's mean, KL to the reference model, and mean completion length (tokens).

    Rewards and length are noisy from step to step (one step sees few prompts), so those panels
    draw each step faintly and a trailing mean over :data:`SMOOTHING` steps boldly.
    Returns the matplotlib ``Figure``. Raises ``FileNotFoundError`` if the CSV is missing.
    """
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    m = read_metrics(metrics_csv)
    steps = m.get("step", [])
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), constrained_layout=True)
    ax = axes[0, 0]
    reward, std = np.array(m.get("reward", [])), np.array(m.get("reward_std", []))
    ax.plot(steps, reward, marker="o", alpha=0.35, label="mean reward")
    ax.plot(steps, rolling_mean(list(reward)), lw=2.5, color="tab:blue", label=f"{SMOOTHING}-step mean")
    if len(std) == len(reward):
        ax.fill_between(steps, reward - std, reward + std, alpha=0.15, label="+- std")
    ax.set(title="Total reward", xlabel="step", ylabel="reward")
    ax.legend(fontsize=8)
    ax = axes[0, 1]
    for key in m:
        if key.startswith("rewards/") and key.endswith("/mean"):
            line, = ax.plot(steps, rolling_mean(m[key]), lw=2,
                            label=key.split("/")[1].replace("_reward_func", ""))
            ax.plot(steps, m[key], ls="", marker=".", alpha=0.35, color=line.get_color())
    ax.set(title=f"Reward per function ({SMOOTHING}-step mean; dots: each step)", xlabel="step",
           ylabel="mean reward")
    ax.legend(fontsize=8)
    axes[1, 0].plot(steps, m.get("kl", [np.nan] * len(steps)), marker="o", color="tab:red")
    axes[1, 0].set(title="KL(policy || reference), k3 estimate", xlabel="step", ylabel="nats/token")
    length = m.get("completions/mean_length", [np.nan] * len(steps))
    axes[1, 1].plot(steps, length, marker="o", alpha=0.35, color="tab:green")
    axes[1, 1].plot(steps, rolling_mean(length), lw=2.5, color="tab:green")
    axes[1, 1].set(title="Mean completion length", xlabel="step", ylabel="tokens")
    for ax in axes.flat:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
    if title:
        fig.suptitle(title)
    if save_to is not None:
        fig.savefig(save_to, dpi=110)
    if show:
        plt.show()
    else:
        plt.close(fig)
    return fig


STAGE_RATES = (("accuracy", "accuracy"), ("format_rate_strict", "strict format\n(layout only)"),
               ("format_rate_valid", "valid format\n(real reasoning + number)"),
               ("placeholder_rate", "placeholder /\ntemplate copy"))


def plot_stages(stages: dict[str, dict], title: str = "", show: bool = True):
    """Grouped bars, one group per rate of :data:`STAGE_RATES` (in % of questions), one bar per
    stage; ``stages`` maps a label to :func:`helpers.comparison.extended_summary` output (a
    ``summary.json``'s ``"stages"``, with keys relabelled as you like). Bars carry their counts.
    Returns the ``Figure``. Raises ``ValueError`` for no stages."""
    import matplotlib.pyplot as plt
    import numpy as np

    if not stages:
        raise ValueError("no stages to plot")
    x = np.arange(len(STAGE_RATES))
    width = 0.8 / len(stages)
    fig, ax = plt.subplots(figsize=(9, 4), constrained_layout=True)
    for i, (label, s) in enumerate(stages.items()):
        values = [100 * (s[key] or 0.0) for key, _ in STAGE_RATES]
        bars = ax.bar(x + (i - (len(stages) - 1) / 2) * width, values, width, label=label)
        ax.bar_label(bars, labels=[f"{round(v * s['n'] / 100)}" for v in values], fontsize=7, padding=2)
    n = sorted({s["n"] for s in stages.values()})
    ax.set_xticks(x, [name for _, name in STAGE_RATES])
    ax.set(ylabel="% of questions", ylim=(0, 105),
           title=title or f"Each stage on the same {', '.join(map(str, n))} test questions (greedy)")
    ax.legend()
    if show:
        plt.show()
    else:
        plt.close(fig)
    return fig
