"""Matplotlib figures of runs and evaluations: training curves (:func:`plot_training_curves`), stage
bars (:func:`plot_stages`), accuracy with intervals (:func:`plot_accuracy`), before/after GRPO
(:func:`plot_before_after`, :func:`plot_completion_lengths`). Each returns its ``Figure``, shown, or
closed when ``show=False`` (:func:`finish_figure`).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from helpers.evaluation.before_after import RUN_LABELS, Comparison

SMOOTHING = 5  # steps in the trailing mean of the reward curves


def read_metrics(path: str | Path) -> dict[str, list[float]]:
    """Columns of a metrics CSV (:class:`helpers.training.callbacks.MetricsCSV`) as float lists.

    Empty cells become NaN.
    """
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return {}
    return {key: [float(r[key]) if r.get(key) not in (None, "") else float("nan") for r in rows] for key in rows[0]}


def rolling_mean(values, window: int = SMOOTHING) -> list[float]:
    """Trailing mean over the last ``window`` values (fewer at the start); NaNs are skipped.

    ``rolling_mean([1, 2, 3, 4], 2)`` -> ``[1.0, 1.5, 2.5, 3.5]``.

    Raises:
        ValueError: ``window < 1``.
    """
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    out = []
    for i in range(len(values)):
        recent = [v for v in values[max(0, i - window + 1) : i + 1] if not math.isnan(v)]
        out.append(sum(recent) / len(recent) if recent else float("nan"))
    return out


def plot_training_curves(
    metrics_csv: str | Path, save_to: str | Path | None = None, show: bool = True, title: str = ""
):
    """Four panels against the optimizer step: total reward (mean +- std over completions) with the
    held-out accuracy on a second axis when the run measured it (:mod:`helpers.training.callbacks`; step 0 is
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
        accuracy = m["heldout/accuracy"]
        free = m.get("heldout/accuracy_format_free", accuracy)
        held = [i for i, a in enumerate(accuracy) if not np.isnan(a)]
        twin = ax.twinx()
        for values, style in (
            (accuracy, dict(marker="s", lw=2, label="held-out accuracy (answer block)")),
            (free, dict(marker="^", ls=":", label="held-out accuracy (last number)")),
        ):
            twin.plot([steps[i] for i in held], [100 * values[i] for i in held], color="tab:purple", **style)
        twin.set(ylabel="held-out accuracy (%)", ylim=(0, 100))
        twin_handles = twin.get_legend_handles_labels()
        handles = (handles[0] + twin_handles[0], handles[1] + twin_handles[1])
        ax.set_title("Total reward and held-out accuracy (greedy)")
    ax.legend(*handles, fontsize=8, loc="upper left")
    ax = axes[0, 1]
    for key in m:
        if key.startswith("rewards/") and key.endswith("/mean"):
            (line,) = ax.plot(steps, rolling_mean(m[key]), lw=2, label=key.split("/")[1].replace("_reward_func", ""))
            ax.plot(steps, m[key], ls="", marker=".", alpha=0.35, color=line.get_color())
    ax.set(title=f"Reward per function ({SMOOTHING}-step mean; dots: each step)", xlabel="step", ylabel="mean reward")
    ax.legend(fontsize=8)
    if "kl" in m:
        axes[1, 0].plot(steps, m["kl"], marker="o", color="tab:red")
        axes[1, 0].set(title="KL(policy || reference), k3 estimate", xlabel="step", ylabel="nats/token")
    else:  # beta = 0: TRL computes no KL; show how many groups taught nothing instead
        axes[1, 0].plot(steps, m.get("frac_reward_zero_std", [np.nan] * len(steps)), marker="o", color="tab:red")
        axes[1, 0].set(
            title="Groups with equal rewards (advantage 0; no KL logged at beta = 0)",
            xlabel="step",
            ylabel="share of groups",
            ylim=(-0.05, 1.05),
        )
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
    return finish_figure(fig, show)


STAGE_RATES = (
    ("accuracy", "accuracy"),
    ("format_rate_strict", "strict format\n(layout only)"),
    ("format_rate_valid", "valid format\n(real reasoning + number)"),
    ("placeholder_rate", "placeholder /\ntemplate copy"),
)


def plot_stages(stages: dict[str, dict], title: str = "", show: bool = True):
    """Grouped bars, one group per rate of :data:`STAGE_RATES` (in % of questions), one bar per
    stage; ``stages`` maps a label to :func:`helpers.evaluation.scoring.extended_summary` output (a
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
    ax.set(
        ylabel="% of questions",
        ylim=(0, 105),
        title=title or f"Each stage on the same {', '.join(map(str, n))} test questions (greedy)",
    )
    ax.legend()
    return finish_figure(fig, show)


def finish_figure(fig, show: bool):
    """Show ``fig``, or close it when ``show=False`` (a figure only saved or returned); returns it."""
    import matplotlib.pyplot as plt

    if show:
        plt.show()
    else:
        plt.close(fig)
    return fig


def plot_accuracy(summaries: dict[str, dict], title: str = "", show: bool = True):
    """Bar chart of accuracy (%) per run, error bars from the Wilson interval.

    ``summaries`` maps a label (a strategy, a model) to :func:`summarize` output; bars keep the
    dict's order. Returns the matplotlib ``Figure``.

    Raises:
        ValueError: no summaries, or one without ``accuracy``/``ci_low``/``ci_high``.
    """
    import matplotlib.pyplot as plt

    if not summaries:
        raise ValueError("nothing to plot")
    for label, s in summaries.items():
        if not {"accuracy", "ci_low", "ci_high"} <= set(s):
            raise ValueError(f"summary {label!r} lacks accuracy/ci_low/ci_high")
    labels = list(summaries)
    acc = [100 * summaries[k]["accuracy"] for k in labels]
    err = [
        [a - 100 * summaries[k]["ci_low"] for a, k in zip(acc, labels)],
        [100 * summaries[k]["ci_high"] - a for a, k in zip(acc, labels)],
    ]
    fig, ax = plt.subplots(figsize=(1.3 * len(labels) + 2, 4), constrained_layout=True)
    bars = ax.bar(labels, acc, yerr=err, capsize=5, color="tab:blue", alpha=0.8)
    ax.bar_label(bars, fmt="%.0f", padding=3, fontsize=8, label_type="center")
    n = sorted({s["n"] for s in summaries.values() if "n" in s})
    ax.set(
        ylabel="accuracy (%)",
        ylim=(0, 100),
        title=title or f"Accuracy, n = {', '.join(map(str, n))} (error bar: Wilson 95 % CI)",
    )
    ax.tick_params(axis="x", labelrotation=20)
    return finish_figure(fig, show)


def plot_before_after(comparison: Comparison, show: bool = True):
    """Paired bars, base vs. base + LoRA: accuracy (with Wilson 95 % CI error bars), valid and
    strict format, placeholder rate, reasoning completeness, all in %. Returns the ``Figure``."""
    import matplotlib.pyplot as plt
    import numpy as np

    keys = [
        ("accuracy", "accuracy"),
        ("format_rate_valid", "format, valid"),
        ("format_rate_strict", "format, strict"),
        ("placeholder_rate", "placeholder"),
        ("reasoning_rate", "reasoning complete"),
    ]
    x = np.arange(len(keys))
    fig, ax = plt.subplots(figsize=(8, 4), constrained_layout=True)
    for offset, name in ((-0.2, "base"), (0.2, "lora")):
        s = comparison.summaries[name]
        values = np.array([100 * (s[k] or 0.0) for k, _ in keys])
        err = np.zeros((2, len(keys)))
        err[:, 0] = [values[0] - 100 * s["ci_low"], 100 * s["ci_high"] - values[0]]
        bars = ax.bar(x + offset, values, 0.4, yerr=err, capsize=4, label=RUN_LABELS[name])
        ax.bar_label(bars, fmt="%.0f", padding=2, fontsize=8)
    ax.set_xticks(x, [label for _, label in keys])
    ax.set(
        ylabel="% of questions",
        ylim=(0, 105),
        title=f"Before vs. after GRPO, n = {comparison.mcnemar.n} (error bar: Wilson 95 % CI)",
    )
    ax.legend()
    return finish_figure(fig, show)


def plot_completion_lengths(comparison: Comparison, max_tokens: int | None = None, show: bool = True):
    """Histograms of completion length (tokens) for both models; a dashed line marks
    ``max_tokens`` (completions there were cut off). Returns the ``Figure``."""
    import matplotlib.pyplot as plt
    import numpy as np

    lengths = {
        name: [r["tokens"] for r in getattr(comparison, name).records if r["tokens"] is not None]
        for name in ("base", "lora")
    }
    top = max([max(v, default=0) for v in lengths.values()] + [max_tokens or 0, 1])
    bins = np.linspace(0, top + 1, 21)
    fig, ax = plt.subplots(figsize=(8, 3.5), constrained_layout=True)
    for name, values in lengths.items():
        ax.hist(values, bins=bins, alpha=0.55, label=f"{RUN_LABELS[name]} (mean {np.mean(values):.0f})")
    if max_tokens:
        ax.axvline(max_tokens, color="k", ls="--", lw=1, label=f"limit {max_tokens}")
    ax.set(xlabel="completion tokens", ylabel="questions", title="Completion lengths")
    ax.legend()
    return finish_figure(fig, show)
