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
    """Four panels against the optimizer step: total reward (mean +- std over completions) with the
    held-out accuracy on a second axis when the run measured it (:mod:`helpers.heldout`; step 0 is
    before training), each reward function's mean, KL to the reference model (or, where the run
    logged none, beta = 0, the share of groups with equal rewards), and mean completion length
    (tokens). A reward that rises while the held-out accuracy does not is a hack.

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
    handles = ax.get_legend_handles_labels()
    if "heldout/accuracy" in m:
        held = [(s, a, f) for s, a, f in zip(steps, m["heldout/accuracy"],
                                              m.get("heldout/accuracy_format_free", m["heldout/accuracy"]))
                if not np.isnan(a)]
        twin = ax.twinx()
        twin.plot([h[0] for h in held], [100 * h[1] for h in held], marker="s", color="tab:purple", lw=2,
                  label="held-out accuracy (answer block)")
        twin.plot([h[0] for h in held], [100 * h[2] for h in held], marker="^", color="tab:purple", ls=":",
                  label="held-out accuracy (last number)")
        twin.set(ylabel="held-out accuracy (%)", ylim=(0, 100))
        twin_handles = twin.get_legend_handles_labels()
        handles = (handles[0] + twin_handles[0], handles[1] + twin_handles[1])
        ax.set_title("Total reward and held-out accuracy (greedy)")
    ax.legend(*handles, fontsize=8, loc="upper left")
    ax = axes[0, 1]
    for key in m:
        if key.startswith("rewards/") and key.endswith("/mean"):
            line, = ax.plot(steps, rolling_mean(m[key]), lw=2,
                            label=key.split("/")[1].replace("_reward_func", ""))
            ax.plot(steps, m[key], ls="", marker=".", alpha=0.35, color=line.get_color())
    ax.set(title=f"Reward per function ({SMOOTHING}-step mean; dots: each step)", xlabel="step",
           ylabel="mean reward")
    ax.legend(fontsize=8)
    if "kl" in m:
        axes[1, 0].plot(steps, m["kl"], marker="o", color="tab:red")
        axes[1, 0].set(title="KL(policy || reference), k3 estimate", xlabel="step", ylabel="nats/token")
    else:  # beta = 0: TRL computes no KL; show how many groups taught nothing instead
        axes[1, 0].plot(steps, m.get("frac_reward_zero_std", [np.nan] * len(steps)), marker="o", color="tab:red")
        axes[1, 0].set(title="Groups with equal rewards (advantage 0; no KL logged at beta = 0)",
                       xlabel="step", ylabel="share of groups", ylim=(-0.05, 1.05))
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
    return _finish(fig, show)


def plot_heldout_runs(runs: dict[str, list[dict]], n: int, title: str = "", show: bool = True):
    """Held-out greedy accuracy against the GRPO step, one line per run: ``runs`` maps a label to
    a ``summary.json``'s ``"heldout"`` list (dicts with ``step`` and ``heldout/accuracy``, a share in
    [0, 1]); ``n`` is the held-out set's size, for the y axis in problems. Labels containing
    "placebo" are drawn dashed. Returns the ``Figure``. Raises ``ValueError`` for no runs or a run
    without points."""
    import matplotlib.pyplot as plt

    if not runs:
        raise ValueError("no runs to plot")
    empty = [label for label, points in runs.items() if not points]
    if empty:
        raise ValueError(f"runs without held-out points: {empty}")
    fig, ax = plt.subplots(figsize=(7, 4), constrained_layout=True)
    for label, points in runs.items():
        ax.plot([p["step"] for p in points], [n * p["heldout/accuracy"] for p in points], marker="o",
                linestyle="--" if "placebo" in label else "-", label=label)
    ax.set(xlabel="GRPO step", ylabel=f"held-out problems right, of {n}",
           title=title or "Held-out accuracy during GRPO (greedy)")
    ax.legend(fontsize=8)
    return _finish(fig, show)


def _finish(fig, show: bool):
    import matplotlib.pyplot as plt

    if show:
        plt.show()
    else:
        plt.close(fig)
    return fig


def plot_group_baseline(rewards, advantages, labels, show: bool = True):
    """Left: each completion's reward, the group mean (GRPO's baseline) and mean ± std. Right: the
    advantages ``(r - mean) / std`` (DeepSeekMath §4.1.2). ``rewards``, ``advantages``: ``(G,)``;
    ``labels``: ``G`` names. Returns the ``Figure``. Raises ``ValueError`` on a length mismatch."""
    import matplotlib.pyplot as plt

    rewards, advantages = [float(r) for r in rewards], [float(a) for a in advantages]
    if not len(rewards) == len(advantages) == len(labels):
        raise ValueError(f"{len(rewards)} rewards, {len(advantages)} advantages, {len(labels)} labels")
    g = len(rewards)
    mean = sum(rewards) / g
    std = (sum((r - mean) ** 2 for r in rewards) / max(g - 1, 1)) ** 0.5
    names = [f"o{i}\n{label}" for i, label in enumerate(labels)]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.4), constrained_layout=True)
    ax1.bar(names, rewards, color="tab:blue")
    ax1.axhspan(mean - std, mean + std, color="grey", alpha=0.15, label="mean ± std")
    ax1.axhline(mean, color="k", ls="--", label=f"group mean {mean:.2f} (the baseline)")
    ax1.set(title="rewards r_i", ylabel="reward")
    ax1.legend(fontsize=8)
    colors = ["tab:green" if a > 0 else "tab:red" for a in advantages]
    bars = ax2.bar(names, advantages, color=colors)
    ax2.bar_label(bars, fmt="%+.2f", fontsize=8)
    ax2.axhline(0, color="k", lw=0.8)
    ax2.set(title="advantages Â_i = (r_i − mean) / std", ylabel="advantage")
    for ax in (ax1, ax2):
        ax.tick_params(axis="x", labelsize=8)
    return _finish(fig, show)


def plot_token_grid(values, mask, labels, title: str, marks=None, center: float | None = None,
                    cbar_label: str = "", show: bool = True):
    """A ``(G, C)`` per-token quantity as a heat map: one row per completion, one column per token
    position; padding (``mask == 0``) is blank. ``marks``: optional ``(G, C)`` bool, drawn as x
    (e.g. clipped tokens). ``center``: a value to put at the middle of a diverging colour map.
    Returns the ``Figure``. Raises ``ValueError`` on a shape mismatch."""
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import TwoSlopeNorm

    values = np.asarray(values, dtype=float)
    mask = np.asarray(mask).astype(bool)
    if values.shape != mask.shape or values.shape[0] != len(labels):
        raise ValueError(f"values {values.shape}, mask {mask.shape}, {len(labels)} labels")
    shown = np.where(mask, values, np.nan)
    norm, cmap = None, "viridis"
    if center is not None:
        span = max(float(np.nanmax(np.abs(shown - center))), 1e-12)
        norm, cmap = TwoSlopeNorm(center, center - span, center + span), "RdBu_r"
    fig, ax = plt.subplots(figsize=(11, 0.5 * len(labels) + 1.4), constrained_layout=True)
    image = ax.imshow(shown, aspect="auto", cmap=cmap, norm=norm, interpolation="nearest")
    if marks is not None:
        rows, cols = np.nonzero(np.asarray(marks).astype(bool) & mask)
        ax.scatter(cols, rows, marker="x", s=14, color="k", linewidths=0.8)
    ax.set_yticks(range(len(labels)), [f"o{i} {label}" for i, label in enumerate(labels)])
    ax.set(title=title, xlabel="token position t")
    fig.colorbar(image, ax=ax, label=cbar_label, pad=0.01)
    return _finish(fig, show)


PIPELINE_STEPS = ("prompt q", "π_old samples\nG completions", "reward functions\nr_1 … r_G",
                  "advantages Â_i:\n(r_i − mean) / std", "loss: ratio ρ, clip,\n− β·KL to π_ref",
                  "update π_θ\n(optimizer step)")


def _box_row(ax, steps, y: float, highlight=(), gap: float = 1.4) -> None:
    """Boxes joined by arrows, left to right, at height ``y`` (``highlight``: shaded indices)."""
    for i, step in enumerate(steps):
        ax.text(i * gap, y, step, ha="center", va="center", fontsize=9,
                bbox=dict(boxstyle="round,pad=0.5", facecolor="tab:blue" if i in highlight else "white",
                          alpha=0.25 if i in highlight else 1.0, edgecolor="k"))
        if i < len(steps) - 1:
            ax.annotate("", xy=(i * gap + 0.9, y), xytext=(i * gap + 0.5, y),
                        arrowprops=dict(arrowstyle="->"))


def plot_grpo_pipeline(show: bool = True):
    """One GRPO step as a row of boxes, prompt to update (:data:`PIPELINE_STEPS`). Returns the
    ``Figure``."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(12, 1.6), constrained_layout=True)
    _box_row(ax, PIPELINE_STEPS, 0, highlight=(1, 5))
    ax.set(xlim=(-0.6, (len(PIPELINE_STEPS) - 1) * 1.4 + 0.6), ylim=(-0.6, 0.6))
    ax.axis("off")
    return _finish(fig, show)


CRITIC_STEPS = ("prompt q", "π_old samples\n1 completion", "reward r\nat the end",
                "critic V(s_t)\nper token (trained)", "GAE:\nA_t per token")
GROUP_STEPS = ("prompt q", "π_old samples\nG completions", "rewards\nr_1 … r_G",
               "group mean, std\n(no network)", "Â_i = (r_i − mean)/std\nfor all tokens of o_i")


def plot_critic_vs_group(show: bool = True):
    """Where PPO's advantage comes from (a trained critic, :data:`CRITIC_STEPS`) and where GRPO's
    does (the group, :data:`GROUP_STEPS`), one row each. Returns the ``Figure``."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 2.6), constrained_layout=True)
    _box_row(ax, CRITIC_STEPS, 0.7, highlight=(3,))
    _box_row(ax, GROUP_STEPS, -0.7, highlight=(1, 3))
    ax.text(-0.75, 0.7, "PPO", ha="right", va="center", fontsize=11, weight="bold")
    ax.text(-0.75, -0.7, "GRPO", ha="right", va="center", fontsize=11, weight="bold")
    ax.set(xlim=(-1.5, (len(GROUP_STEPS) - 1) * 1.4 + 0.8), ylim=(-1.3, 1.3))
    ax.axis("off")
    return _finish(fig, show)
