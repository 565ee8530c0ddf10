"""cpu_study.recipes: one name per recipe, and every committed run belongs to one."""

import pytest

from cpu_study.recipes import CURRENT, RECIPES, recipe_of, recipe_table
from helpers.evaluation.reports import RESULTS_DIR

NOT_RECIPE_RUNS = {"cot-prompting-cpu", "exercises05", "gpu-check-cpu", "scratch-variants"}  # 01, 05, the GPU check, 07


def test_every_listed_run_is_committed_and_every_committed_run_is_listed():
    listed = [run for r in RECIPES.values() for run in r.runs]
    assert len(listed) == len(set(listed))
    assert all((RESULTS_DIR / run / "summary.json").exists() for run in listed)
    committed = {p.parent.name for p in RESULTS_DIR.glob("*/summary.json")} - NOT_RECIPE_RUNS
    assert committed == set(listed)


def test_names_and_lookup():
    assert list(RECIPES) == ["format", "g4", "unscaled", "fixed", "varied"] and CURRENT == "varied"
    assert recipe_of("cpu-curriculum-seed1") == "fixed" and recipe_of("cpu-varied") == "varied"
    with pytest.raises(KeyError, match="no recipe"):
        recipe_of("cpu-nothing")
    table = recipe_table()
    assert list(table.index) == list(RECIPES) and "22a31b9" in table.loc["g4", "runs (results/)"]
