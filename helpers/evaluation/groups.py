"""What GRPO learned from, group by group: the group log of a run (``groups.jsonl``,
:class:`helpers.training.callbacks.GroupLog`).

A group teaches only through the differences between its G rewards (DeepSeekMath eq. 3: the advantage is
the reward minus the group's mean, over its std). Three kinds of group, by what differs:

* **flat** - every completion earned the same total reward: every advantage is 0, no gradient;
* **correctness** - some completions are right and some wrong: the only groups that push the policy
  toward right answers;
* **format only** - all right or all wrong, but the format or integer rewards differ: the gradient
  moves the layout, not the arithmetic.

:func:`group_kinds` sorts one run's groups so, in total, per problem kind and per third of the steps.
"""

from __future__ import annotations

import json
from pathlib import Path

from helpers.evaluation.reports import GROUPS_FILE

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
