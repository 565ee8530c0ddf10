"""Notebook 02's figures: one GRPO step (:func:`plot_grpo_pipeline`), a critic against a group baseline
(:func:`plot_critic_vs_group`), a group's rewards and advantages (:func:`plot_group_baseline`) and per-token
values on a grid (:func:`plot_token_grid`)."""

from __future__ import annotations

from helpers.evaluation.plots import finish_figure


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
    return finish_figure(fig, show)


def plot_token_grid(
    values, mask, labels, title: str, marks=None, center: float | None = None, cbar_label: str = "", show: bool = True
):
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
    return finish_figure(fig, show)


PIPELINE_STEPS = (
    "prompt q",
    "π_old samples\nG completions",
    "reward functions\nr_1 … r_G",
    "advantages Â_i:\n(r_i − mean) / std",
    "loss: ratio ρ, clip,\n− β·KL to π_ref",
    "update π_θ\n(optimizer step)",
)


def _box_row(ax, steps, y: float, highlight=(), gap: float = 1.4) -> None:
    """Boxes joined by arrows, left to right, at height ``y`` (``highlight``: shaded indices)."""
    for i, step in enumerate(steps):
        face, alpha = ("tab:blue", 0.25) if i in highlight else ("white", 1.0)
        box = dict(boxstyle="round,pad=0.5", facecolor=face, alpha=alpha, edgecolor="k")
        ax.text(i * gap, y, step, ha="center", va="center", fontsize=9, bbox=box)
        if i < len(steps) - 1:
            ax.annotate("", xy=(i * gap + 0.9, y), xytext=(i * gap + 0.5, y), arrowprops=dict(arrowstyle="->"))


def plot_grpo_pipeline(show: bool = True):
    """One GRPO step as a row of boxes, prompt to update (:data:`PIPELINE_STEPS`). Returns the ``Figure``."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(12, 1.6), constrained_layout=True)
    _box_row(ax, PIPELINE_STEPS, 0, highlight=(1, 5))
    ax.set(xlim=(-0.6, (len(PIPELINE_STEPS) - 1) * 1.4 + 0.6), ylim=(-0.6, 0.6))
    ax.axis("off")
    return finish_figure(fig, show)


CRITIC_STEPS = (
    "prompt q",
    "π_old samples\n1 completion",
    "reward r\nat the end",
    "critic V(s_t)\nper token (trained)",
    "GAE:\nA_t per token",
)
GROUP_STEPS = (
    "prompt q",
    "π_old samples\nG completions",
    "rewards\nr_1 … r_G",
    "group mean, std\n(no network)",
    "Â_i = (r_i − mean)/std\nfor all tokens of o_i",
)


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
    return finish_figure(fig, show)
