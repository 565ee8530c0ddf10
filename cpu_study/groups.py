"""What GRPO learned from, group by group: the group log of a run (``groups.jsonl``,
:class:`helpers.training.callbacks.GroupLog`).

A group teaches only through the differences between its G rewards (DeepSeekMath §4.1.2, outcome
supervision: the advantage is the reward minus the group's mean, over its std). Three kinds of group, by what differs:

* **flat** - every completion earned the same total reward: every advantage is 0, so no gradient at
  β = 0 (with β > 0 only the KL term pulls);
* **correctness** - some completions are right and some wrong: the only groups that push the policy
  toward right answers;
* **format only** - all right or all wrong, but the format or integer rewards differ: the gradient
  moves the layout, not the arithmetic.

:func:`group_kinds` sorts one run's groups so, in total, per problem kind and per third of the steps.
"""

from __future__ import annotations

import json
from pathlib import Path

from helpers.training.run_files import GROUPS_FILE

CORRECTNESS = "correctness_reward_func"
KINDS = ("flat", "correctness", "format_only")


def read_groups(run_dir) -> list[dict]:
    """The rows of ``run_dir/groups.jsonl``, one per group.

    Raises:
        FileNotFoundError: the run has no group log (made before :class:`GroupLog` existed)."""
    path = Path(run_dir) / GROUPS_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: the run has no group log")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def group_kind(group: dict) -> str:
    """``"flat"``, ``"correctness"`` or ``"format_only"`` (the module docstring says which is which).
    Rewards a reward function did not give (``None``, TRL's NaN) count as 0. A run without a
    correctness reward (the placebo) has no correctness groups."""
    rewards = {name: [v or 0.0 for v in values] for name, values in group["rewards"].items()}
    totals = [sum(values) for values in zip(*rewards.values())]
    if max(totals) - min(totals) < 1e-6:
        return "flat"
    right = [v > 0 for v in rewards.get(CORRECTNESS, [])]
    return "correctness" if any(right) and not all(right) else "format_only"


def _counts(groups: list[dict]) -> dict:
    counts = {"groups": len(groups), **dict.fromkeys(KINDS, 0), "all_right": 0}
    for g in groups:
        counts[group_kind(g)] += 1
        counts["all_right"] += all((v or 0) > 0 for v in g["rewards"].get(CORRECTNESS, [0]))
    return counts


def group_kinds(groups: list[dict]) -> dict:
    """How many groups of each :data:`KINDS` a run trained on (``all_right``: every completion right).

    Args:
        groups: :func:`read_groups` of one run.

    Returns:
        ``{"all": counts, "by_kind": {problem kind: counts}, "by_third": [counts of the first, middle
        and last third of the steps]}``, counts ``{"groups", "flat", "correctness", "format_only",
        "all_right"}``; rows without a kind (GSM8K) count under ``"?"``.

    Raises:
        ValueError: no groups."""
    if not groups:
        raise ValueError("no groups")
    kinds = list(dict.fromkeys(g.get("kind") or "?" for g in groups))
    steps = sorted({g["step"] for g in groups})
    third = max(1, round(len(steps) / 3))
    cuts = [steps[:third], steps[third:-third] if len(steps) > 2 * third else [], steps[-third:]]
    return {
        "all": _counts(groups),
        "by_kind": {k: _counts([g for g in groups if (g.get("kind") or "?") == k]) for k in kinds},
        "by_third": [_counts([g for g in groups if g["step"] in cut]) for cut in cuts],
    }


def groups_table(runs: dict):
    """Group kinds of several runs side by side, a ``DataFrame`` with one row per run.

    Args:
        runs: ``{label: run folder}`` (each with ``groups.jsonl``).

    Returns:
        Columns ``groups``, ``flat``, ``correctness``, ``format_only``, ``all_right`` (counts over the
        run, :func:`group_kinds`) and ``correctness by third`` (the correctness groups of the first,
        middle and last third of the steps, e.g. ``"31 28 22"``).

    Raises:
        FileNotFoundError: a run has no group log."""
    import pandas as pd

    rows = {}
    for label, run_dir in runs.items():
        counts = group_kinds(read_groups(run_dir))
        rows[label] = {
            **counts["all"],
            "correctness by third": " ".join(str(t["correctness"]) for t in counts["by_third"]),
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def seeds_groups_reading(table, gains: dict) -> str:
    """A sentence on whether the group log tells the seeds that gained from those that did not.

    Args:
        table: :func:`groups_table` of the seeds' runs (one row per run label).
        gains: ``{run label: right answers after GRPO minus before}`` on one test set, for the same
            labels.

    Returns:
        The correctness groups (the only groups with a signal toward right answers) of the seeds
        that gained and of those that did not, and whether their ranges overlap.

    Raises:
        ValueError: a label of ``gains`` has no row in ``table``, or no seed gained or no seed failed
            to gain (nothing to compare)."""
    missing = set(gains) - set(table.index)
    if missing:
        raise ValueError(f"no group log for {sorted(missing)}")
    up = {k: int(table.loc[k, "correctness"]) for k, g in gains.items() if g > 0}
    down = {k: int(table.loc[k, "correctness"]) for k, g in gains.items() if g <= 0}
    if not up or not down:
        raise ValueError("every seed gained, or none did: nothing to compare")

    def listed(d: dict) -> str:
        return ", ".join(f"{k} ({gains[k]:+d}): {v}" for k, v in d.items())

    overlap = min(up.values()) <= max(down.values()) and min(down.values()) <= max(up.values())
    verdict = (
        "the ranges overlap: the group log does not single out the seeds that gained nothing"
        if overlap
        else "the ranges do not overlap"
    )
    return (
        f"Correctness groups per run (of {int(table['groups'].iloc[0])}), seeds that gained: {listed(up)}; "
        f"seeds that did not: {listed(down)}; {verdict}."
    )
