"""The notebooks' prose: short markdown cells, and solutions after all the exercises."""

import json
import re
import statistics
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
MEDIAN_WORDS, MAX_WORDS = 50, 250  # per markdown cell
DERIVATION_MAX_WORDS = 400  # notebook 02: a cell with display math ($$) may run longer


def _markdown(path):
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "markdown"]


def _words(text: str) -> int:
    return len(text.split())


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_markdown_cells_are_short(path):
    cells = _markdown(path)
    assert statistics.median(_words(c) for c in cells) <= MEDIAN_WORDS
    for cell in cells:
        limit = DERIVATION_MAX_WORDS if path.name.startswith("02_") and "$$" in cell else MAX_WORDS
        assert _words(cell) <= limit, f"{_words(cell)} words: {cell[:80]!r}"


def _heading(cell: str, word: str) -> bool:
    return re.search(rf"^#+ .*\b{word}", cell, flags=re.M) is not None


def _cells(path):
    return json.loads(path.read_text())["cells"]


def _text(cell) -> str:
    return "".join(cell["source"])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_solutions_come_after_all_the_exercises(path):
    cells = _markdown(path)
    exercises = [i for i, c in enumerate(cells) if _heading(c, r"Exercises?\b")]
    solutions = [i for i, c in enumerate(cells) if _heading(c, "Solutions")]
    assert exercises and len(solutions) == 1, "an Exercise heading and one Solutions heading"
    assert exercises[-1] < solutions[0]
    between = cells[exercises[0] : solutions[0]]
    assert not any(re.search(r"\bSolution\b", c) for c in between), "a solution sits among the exercises"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_learner_acts_early(path):
    """A "Predict, then run" prompt in the first third of the cells, the first exercise before the last third."""
    cells = _cells(path)
    predict = [i for i, c in enumerate(cells) if c["cell_type"] == "markdown" and "Predict, then run" in _text(c)]
    exercise = [i for i, c in enumerate(cells) if c["cell_type"] == "markdown" and _heading(_text(c), r"Exercises?\b")]
    assert predict and predict[0] < len(cells) / 3, f"first prediction at cell {predict[:1]} of {len(cells)}"
    assert exercise and exercise[0] < 2 * len(cells) / 3, f"first exercise at cell {exercise[:1]} of {len(cells)}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_solutions_are_folded(path):
    """After the Solutions heading, a code cell is hidden (Colab's form view, Jupyter's ``source_hidden``) and a
    markdown cell is a ``<details>`` block."""
    cells = _cells(path)
    [start] = [i for i, c in enumerate(cells) if c["cell_type"] == "markdown" and _heading(_text(c), "Solutions")]
    for cell in cells[start + 1 :]:
        if cell["cell_type"] == "code":
            assert cell["metadata"].get("jupyter", {}).get("source_hidden"), _text(cell)[:80]
        else:
            assert _text(cell).lstrip().startswith("<details>"), _text(cell)[:80]


def test_the_checks_catch_a_long_cell_and_a_solution_under_its_exercise(tmp_path):
    bad = tmp_path / "09_bad.ipynb"
    cells = ["## Exercises\n1. Do it.", "**Solution 1.** Done.", "## Solutions\n...", "word " * 300]
    bad.write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": [c]} for c in cells]}))
    with pytest.raises(AssertionError, match="a solution sits among the exercises"):
        test_solutions_come_after_all_the_exercises(bad)
    with pytest.raises(AssertionError, match="300 words"):
        test_markdown_cells_are_short(bad)
