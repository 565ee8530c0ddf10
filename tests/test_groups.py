"""cpu_study.groups: flat, correctness and format-only groups, in all, per kind and per third."""

import json

import pytest

from cpu_study.groups import group_kind, group_kinds, groups_table, read_groups


def _group(step, kind, correct, fmt):
    return {
        "step": step,
        "kind": kind,
        "rewards": {"correctness_reward_func": correct, "strict_format_reward_func": fmt},
    }


def test_a_group_teaches_correctness_only_when_some_completions_are_right_and_some_wrong():
    assert group_kind(_group(1, "add", [2.0, 2.0], [0.5, 0.5])) == "flat"
    assert group_kind(_group(1, "add", [2.0, 0.0], [0.5, 0.5])) == "correctness"
    assert group_kind(_group(1, "add", [0.0, 0.0], [0.5, 0.0])) == "format_only"  # all wrong, layouts differ
    assert group_kind(_group(1, "add", [2.0, 0.0], [0.0, 2.0])) == "flat"  # equal totals: advantages 0
    assert group_kind({"step": 1, "rewards": {"random_reward_func": [1.0, 0.0]}}) == "format_only"  # placebo
    assert group_kind(_group(1, "add", [None, 2.0], [0.5, 0.5])) == "correctness"  # TRL's NaN counts as 0


def test_counts_in_all_per_kind_and_per_third(tmp_path):
    groups = [
        _group(1, "add", [2.0, 2.0], [0.5, 0.5]),
        _group(1, "mul_add", [0.0, 0.0], [0.5, 0.0]),
        _group(2, "add", [2.0, 0.0], [0.5, 0.5]),
        _group(3, "mul_add", [0.0, 0.0], [0.0, 0.0]),
    ]
    (tmp_path / "groups.jsonl").write_text("".join(json.dumps(g) + "\n" for g in groups))
    counts = group_kinds(read_groups(tmp_path))
    assert counts["all"] == {"groups": 4, "flat": 2, "correctness": 1, "format_only": 1, "all_right": 1}
    assert counts["by_kind"]["add"] == {"groups": 2, "flat": 1, "correctness": 1, "format_only": 0, "all_right": 1}
    assert [t["groups"] for t in counts["by_third"]] == [2, 1, 1]  # steps 1, 2, 3
    assert [t["correctness"] for t in counts["by_third"]] == [0, 1, 0]
    with pytest.raises(FileNotFoundError, match="no group log"):
        read_groups(tmp_path / "none")
    with pytest.raises(ValueError, match="no groups"):
        group_kinds([])


def test_the_table_puts_runs_side_by_side(tmp_path):
    for name, correct in (("a", [2.0, 0.0]), ("b", [0.0, 0.0])):
        (tmp_path / name).mkdir()
        rows = [_group(step, "add", correct, [0.5, 0.5]) for step in (1, 2, 3)]
        (tmp_path / name / "groups.jsonl").write_text("".join(json.dumps(g) + "\n" for g in rows))
    table = groups_table({"seed a": tmp_path / "a", "seed b": tmp_path / "b"})
    assert table.loc["seed a", "correctness"] == 3 and table.loc["seed b", "flat"] == 3
    assert table.loc["seed a", "correctness by third"] == "1 1 1"


def test_the_seeds_reading_compares_the_correctness_groups_of_seeds_that_gained_and_did_not():
    import pandas as pd

    from cpu_study.groups import seeds_groups_reading

    table = pd.DataFrame({"groups": [192, 192, 192], "correctness": [90, 81, 70]}, index=["a", "b", "c"])
    text = seeds_groups_reading(table, {"a": 7, "b": -10, "c": 4})
    assert "gained: a (+7): 90, c (+4): 70" in text and "did not: b (-10): 81" in text
    assert "ranges overlap" in text
    separate = seeds_groups_reading(table, {"a": 7, "b": 2, "c": -4})
    assert "do not overlap" in separate and "did not: c (-4): 70" in separate
    with pytest.raises(ValueError, match="nothing to compare"):
        seeds_groups_reading(table, {"a": 1, "b": 2})
    with pytest.raises(ValueError, match="no group log"):
        seeds_groups_reading(table, {"d": 1, "a": -1})
