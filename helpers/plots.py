"""Matplotlib figures shared by the notebooks."""

from __future__ import annotations

import csv
from pathlib import Path


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


def plot_training_curves(metrics_csv: str | Path, save_to: str | Path | None = None, show: bool = True):
    """Four panels against the optimizer step: total reward (mean +- std over completions),
    each reward function's mean, KL to the reference model, and mean completion length (tokens).

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
    ax.plot(steps, reward, marker="o", label="mean reward")
    if len(std) == len(reward):
        ax.fill_between(steps, reward - std, reward + std, alpha=0.2, label="+- std")
    ax.set(title="Total reward", xlabel="step", ylabel="reward")
    ax.legend()
    ax = axes[0, 1]
    for key in m:
        if key.startswith("rewards/") and key.endswith("/mean"):
            ax.plot(steps, m[key], marker="o", label=key.split("/")[1].replace("_reward_func", ""))
    ax.set(title="Reward per function", xlabel="step", ylabel="mean reward")
    ax.legend(fontsize=8)
    axes[1, 0].plot(steps, m.get("kl", [np.nan] * len(steps)), marker="o", color="tab:red")
    axes[1, 0].set(title="KL(policy || reference), k3 estimate", xlabel="step", ylabel="nats/token")
    axes[1, 1].plot(steps, m.get("completions/mean_length", [np.nan] * len(steps)), marker="o", color="tab:green")
    axes[1, 1].set(title="Mean completion length", xlabel="step", ylabel="tokens")
    for ax in axes.flat:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
    if save_to is not None:
        fig.savefig(save_to, dpi=110)
    if show:
        plt.show()
    else:
        plt.close(fig)
    return fig
