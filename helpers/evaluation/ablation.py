"""Reading the ablation back (:mod:`helpers.training.arms`): each arm against the reference, per seed and
pooled, with its cost, and the forest plot of notebook 08.

The unit of comparison is the **seed**: arm and reference of the same seed start from the same cold
start and train on the same prompts, so their outcomes pair problem by problem. For each development set:

* per seed: the arm's right answers minus the reference's (``diff``) and McNemar's exact p between
  the two (:func:`helpers.evaluation.stats.mcnemar_exact_p`, the problems one gets right and the other
  wrong);
* pooled: the mean ``diff`` over the seeds with a Student-t 95 % interval
  (:func:`helpers.evaluation.seeds.t_interval`), and McNemar's exact p on the discordant problems of all
  seeds together.
"""

from __future__ import annotations

import json
from pathlib import Path

SETS = {"dev": "in distribution (dev)", "dev_transfer": "transfer (dev)"}
REFERENCE = "reference"


def read_arms(root) -> dict:
    """``{(arm, seed): {"result": result.json, "correct": {set: [bool per problem]}}}`` for every arm run
    under ``root`` (``results/ablation``), and ``("cold_start", None)`` for the cold start's outcomes.

    Raises:
        FileNotFoundError: ``root`` holds no arm run."""
    from helpers.training.arms import OUTCOMES_FILE, RESULT_FILE

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


def per_seed(runs: dict, set_name: str = "dev"):
    """One row per arm and seed that has a reference run of the same seed: ``arm``, ``seed``, ``n``,
    ``right`` (the arm's), ``reference`` (the reference's), ``diff``, ``only_arm``, ``only_reference``
    (discordant problems), ``p`` (McNemar), and the arm's cost (``seconds_per_step``, ``peak_rss_gib``).
    A ``DataFrame`` sorted by arm as :data:`helpers.training.arms.ARMS` lists them, then seed.

    Raises:
        ValueError: two runs of one seed evaluated different problems."""
    import pandas as pd

    from helpers.evaluation.stats import mcnemar_exact_p
    from helpers.training.arms import ARMS

    rows = []
    for (arm, seed), run in runs.items():
        ref = runs.get((REFERENCE, seed))
        if arm in (REFERENCE, "cold_start") or ref is None:
            continue
        mine, theirs = run["correct"][set_name], ref["correct"][set_name]
        only_arm, only_ref = _discordant(mine, theirs)
        cost = run["result"]["cost"]
        rows.append(
            {
                "arm": arm,
                "seed": seed,
                "n": len(mine),
                "right": sum(mine),
                "reference": sum(theirs),
                "diff": sum(mine) - sum(theirs),
                "only_arm": only_arm,
                "only_reference": only_ref,
                "p": mcnemar_exact_p(only_arm, only_ref),
                "seconds_per_step": cost["seconds_per_step"],
                "peak_rss_gib": cost["peak_rss_gib"],
            }
        )
    order = {name: i for i, name in enumerate(ARMS)}
    frame = pd.DataFrame(rows)
    return frame.sort_values(["arm", "seed"], key=lambda c: c.map(order) if c.name == "arm" else c).reset_index(
        drop=True
    )


def pooled(runs: dict, set_name: str = "dev"):
    """One row per arm: ``seeds``, mean ``diff`` with its 95 % t interval (``low``, ``high``; NaN with one
    seed), McNemar's p on all seeds' discordant problems together, the mean cost, and the arm's ``knob``
    and ``predicted`` effect. The reference's own cost is the row ``reference``."""
    import math

    import pandas as pd

    from helpers.evaluation.seeds import t_interval
    from helpers.evaluation.stats import mcnemar_exact_p

    seeds = per_seed(runs, set_name)
    rows = []
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
                "p": mcnemar_exact_p(int(group["only_arm"].sum()), int(group["only_reference"].sum())),
                "seconds_per_step": group["seconds_per_step"].mean(),
                "peak_rss_gib": group["peak_rss_gib"].max(),
                "knob": result["knob"],
                "predicted": result["predicted"],
            }
        )
    reference = [r["result"]["cost"] for (arm, _), r in runs.items() if arm == REFERENCE]
    if reference:
        rows.insert(
            0,
            {
                "arm": REFERENCE,
                "seeds": len(reference),
                "diff": 0.0,
                "seconds_per_step": sum(c["seconds_per_step"] for c in reference) / len(reference),
                "peak_rss_gib": max(c["peak_rss_gib"] for c in reference),
                "knob": runs[(REFERENCE, next(s for a, s in runs if a == REFERENCE))]["result"]["knob"],
            },
        )
    return pd.DataFrame(rows).set_index("arm")


def plot_forest(runs: dict, set_name: str = "dev", ax=None):
    """Forest plot: one line per arm, each seed's ``diff`` against the reference (dots) and the pooled
    mean with its 95 % t interval (a bar), in problems of the set; seconds a step beside each arm.
    Returns the matplotlib ``Axes``."""
    import matplotlib.pyplot as plt

    seeds, table = per_seed(runs, set_name), pooled(runs, set_name)
    arms = [a for a in table.index if a != REFERENCE]
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 0.45 * len(arms) + 1.2))
    for y, arm in enumerate(arms):
        row, dots = table.loc[arm], seeds[seeds["arm"] == arm]
        ax.scatter(dots["diff"], [y] * len(dots), color="tab:gray", s=18, zorder=3)
        if row["seeds"] > 1:
            ax.plot([row["low"], row["high"]], [y, y], color="tab:blue", lw=2)
        ax.scatter([row["diff"]], [y], color="tab:blue", marker="D", s=40, zorder=4)
        ax.annotate(f"{row['seconds_per_step']:.0f} s/step", (1.01, y), xycoords=("axes fraction", "data"), va="center")
    ax.axvline(0, color="black", lw=1)
    ax.set_yticks(range(len(arms)), arms)
    ax.invert_yaxis()
    n = int(seeds["n"].iloc[0]) if len(seeds) else 0
    ax.set_xlabel(f"right answers minus the reference's, of {n} ({SETS.get(set_name, set_name)})")
    ax.set_title("each knob against the reference: seeds (gray), mean and 95 % t interval (blue)")
    return ax
