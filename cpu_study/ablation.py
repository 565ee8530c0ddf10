"""Reading the ablation back (:mod:`cpu_study.arms`): each arm against the baseline arm (the ``cpu``
recipe itself), per seed and pooled, with its cost, and the forest plot of notebook 08.

The unit of comparison is the **seed**: an arm and the baseline of the same seed start from the same cold
start and train on the same prompts, so their outcomes pair problem by problem. For each development set:

* per seed: the arm's right answers minus the baseline's (``diff``) and McNemar's exact p between
  the two (:func:`helpers.evaluation.stats.mcnemar_exact_p`, the problems one gets right and the other
  wrong);
* pooled: the mean ``diff`` over the seeds with a Student-t 95 % interval
  (:func:`cpu_study.seeds.t_interval`). The seeds answer the same problems, so their discordant
  problems are not independent draws: they are not summed into one McNemar test.
"""

from __future__ import annotations

import json
from pathlib import Path

SETS = {"dev": "in distribution (dev)", "dev_transfer": "transfer (dev)"}
BASELINE = "baseline"  # the arm every other arm is compared with (the cpu recipe itself)


def read_arms(root) -> dict:
    """``{(arm, seed): {"result": result.json, "correct": {set: [bool per problem]}}}`` for every arm run
    under ``root`` (``results/ablation``), and ``("cold_start", None)`` for the cold start's outcomes.

    Raises:
        FileNotFoundError: ``root`` holds no arm run."""
    from cpu_study.arms import OUTCOMES_FILE, RESULT_FILE

    root = Path(root)
    runs = {}
    for result_path in sorted(root.glob(f"*/seed*/{RESULT_FILE}")):
        result = json.loads(result_path.read_text())
        rows = [json.loads(line) for line in (result_path.parent / OUTCOMES_FILE).read_text().splitlines()]
        runs[(result["arm"], result["seed"])] = {"result": result, "correct": _by_set(rows)}
    if not runs:
        raise FileNotFoundError(f"no arm run (*/seed*/{RESULT_FILE}) under {root}")
    for cache in sorted((root / "cold_start").glob("*.jsonl")):
        rows = [json.loads(line) for line in cache.read_text().splitlines()[1:]]
        runs[("cold_start", None)] = {"result": None, "correct": _by_set(rows)}
    return runs


def _by_set(rows: list[dict]) -> dict:
    correct = {}
    for r in sorted(rows, key=lambda r: (r["set"], r["index"])):
        correct.setdefault(r["set"], []).append(bool(r["correct"]))
    return correct


def _discordant(a: list[bool], b: list[bool]) -> tuple[int, int]:
    if len(a) != len(b):
        raise ValueError(f"the runs evaluated {len(a)} and {len(b)} problems: not the same set")
    return sum(x and not y for x, y in zip(a, b)), sum(y and not x for x, y in zip(a, b))


PER_SEED_COLUMNS = (
    "arm", "seed", "n", "right", "baseline", "diff", "only_arm", "only_baseline", "p", "seconds_per_step",
    "peak_rss_gib", "step_ratio",
)  # fmt: skip


def per_seed(runs: dict, set_name: str = "dev"):
    """One row per arm and seed that has a baseline run of the same seed: ``arm``, ``seed``, ``n``,
    ``right`` (the arm's), ``baseline`` (the baseline's), ``diff``, ``only_arm``, ``only_baseline``
    (discordant problems), ``p`` (McNemar), and the arm's cost (``seconds_per_step``, ``peak_rss_gib``:
    the training process's peak resident memory, GiB; ``step_ratio``: its seconds a step over the
    baseline's of the same seed, which vary from seed to seed). A ``DataFrame`` with :data:`PER_SEED_COLUMNS`
    (no rows before an arm and its baseline share a seed), sorted by arm as
    :data:`cpu_study.arms.ARMS` lists them, then seed.

    Raises:
        ValueError: two runs of one seed evaluated different problems."""
    import pandas as pd

    from cpu_study.arms import ARMS
    from helpers.evaluation.stats import mcnemar_exact_p

    rows = []
    for (arm, seed), run in runs.items():
        base = runs.get((BASELINE, seed))
        if arm in (BASELINE, "cold_start") or base is None:
            continue
        mine, theirs = run["correct"][set_name], base["correct"][set_name]
        only_arm, only_base = _discordant(mine, theirs)
        cost = run["result"]["cost"]
        rows.append(
            {
                "arm": arm,
                "seed": seed,
                "n": len(mine),
                "right": sum(mine),
                "baseline": sum(theirs),
                "diff": sum(mine) - sum(theirs),
                "only_arm": only_arm,
                "only_baseline": only_base,
                "p": mcnemar_exact_p(only_arm, only_base),
                "seconds_per_step": cost["seconds_per_step"],
                "peak_rss_gib": cost["peak_rss_gib"],
                "step_ratio": cost["seconds_per_step"] / base["result"]["cost"]["seconds_per_step"],
            }
        )
    order = {name: i for i, name in enumerate(ARMS)}
    frame = pd.DataFrame(rows, columns=list(PER_SEED_COLUMNS))
    return frame.sort_values(["arm", "seed"], key=lambda c: c.map(order) if c.name == "arm" else c).reset_index(
        drop=True
    )


POOLED_COLUMNS = (
    "arm", "seeds", "diff", "low", "high", "p_seeds", "seconds_per_step", "peak_rss_gib", "step_ratio", "knob",
    "predicted",
)  # fmt: skip


def pooled(runs: dict, set_name: str = "dev"):
    """One row per arm: ``seeds``, mean ``diff`` with its 95 % t interval (``low``, ``high``; NaN with one
    seed), ``p_seeds`` (each seed's McNemar p, in seed order, as text), the mean cost (``step_ratio``: the mean
    over seeds of the arm's seconds a step over the same seed's baseline's), and the arm's
    ``knob`` and ``predicted`` effect. The first row is the baseline's own cost (``diff`` 0, no interval).
    A ``DataFrame`` indexed by arm."""
    import math

    import pandas as pd

    from cpu_study.seeds import t_interval

    seeds = per_seed(runs, set_name)
    rows = []
    baseline = [r["result"] for (arm, _), r in sorted(runs.items(), key=str) if arm == BASELINE]
    if baseline:
        rows.append(
            {
                "arm": BASELINE,
                "seeds": len(baseline),
                "diff": 0.0,
                "low": math.nan,
                "high": math.nan,
                "p_seeds": "",
                "seconds_per_step": sum(r["cost"]["seconds_per_step"] for r in baseline) / len(baseline),
                "peak_rss_gib": max(r["cost"]["peak_rss_gib"] for r in baseline),
                "step_ratio": 1.0,
                "knob": baseline[0]["knob"],
                "predicted": baseline[0]["predicted"],
            }
        )
    for arm, group in seeds.groupby("arm", sort=False):
        diffs = list(group["diff"])
        mean, low, high = t_interval(diffs) if len(diffs) > 1 else (diffs[0], math.nan, math.nan)
        result = runs[(arm, int(group["seed"].iloc[0]))]["result"]
        rows.append(
            {
                "arm": arm,
                "seeds": len(diffs),
                "diff": mean,
                "low": low,
                "high": high,
                "p_seeds": " ".join(f"{p:.2g}" for p in group["p"]),
                "seconds_per_step": group["seconds_per_step"].mean(),
                "peak_rss_gib": group["peak_rss_gib"].max(),
                "step_ratio": group["step_ratio"].mean(),
                "knob": result["knob"],
                "predicted": result["predicted"],
            }
        )
    return pd.DataFrame(rows, columns=list(POOLED_COLUMNS)).set_index("arm")


def plot_forest(runs: dict, set_name: str = "dev", ax=None):
    """Forest plot: one line per arm, each seed's ``diff`` against the baseline (gray dots) and the mean over
    seeds (a blue diamond; hollow with one seed) with its 95 % t interval (a bar, from two seeds on), in
    problems of the set; seconds a step beside each arm. Returns the matplotlib ``Axes``."""
    import matplotlib.pyplot as plt

    seeds, table = per_seed(runs, set_name), pooled(runs, set_name)
    arms = [a for a in table.index if a != BASELINE]
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 0.45 * len(arms) + 1.2))
    for y, arm in enumerate(arms):
        row, dots = table.loc[arm], seeds[seeds["arm"] == arm]
        ax.scatter(dots["diff"], [y] * len(dots), color="tab:gray", s=18, zorder=3)
        if row["seeds"] > 1:
            ax.plot([row["low"], row["high"]], [y, y], color="tab:blue", lw=2)
        face = "none" if row["seeds"] < 2 else "tab:blue"  # hollow: one seed, no interval
        ax.scatter([row["diff"]], [y], marker="D", s=40, zorder=4, edgecolors="tab:blue", facecolors=face)
        ax.annotate(f"{row['seconds_per_step']:.0f} s/step", (1.01, y), xycoords=("axes fraction", "data"), va="center")
    ax.axvline(0, color="black", lw=1)
    ax.set_yticks(range(len(arms)), arms)
    ax.invert_yaxis()
    n = int(seeds["n"].iloc[0]) if len(seeds) else 0
    ax.set_xlabel(f"right answers minus the baseline's, of {n} ({SETS.get(set_name, set_name)})")
    ax.set_title("each knob against the baseline: seeds (gray), mean and 95 % t interval (blue)")
    return ax
