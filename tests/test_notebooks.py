"""Static checks of the notebooks (nbmake executes them in `make test`)."""

import json
from pathlib import Path

import pytest

from helpers.colab import BADGE_TAG, INSTALL_CELL, INSTALL_TAG, REPO_URL, badge_markdown

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_course_notebooks_exist():
    names = [p.name for p in NOTEBOOKS]
    assert "05_grpo_training.ipynb" in names and "04_cold_start.ipynb" in names
    assert all(name[:2].isdigit() and name[2] == "_" for name in names), names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_without_outputs(path):
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, "".join(cell["source"])[:60]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_badge_first_and_the_same_install_cell_everywhere(path):
    cells = json.loads(path.read_text())["cells"]
    assert "".join(cells[0]["source"]) == badge_markdown(path.name)
    assert cells[0]["metadata"]["tags"] == [BADGE_TAG]
    install = [c for c in cells if INSTALL_TAG in c.get("metadata", {}).get("tags", [])]
    assert len(install) == 1 and "".join(install[0]["source"]) == INSTALL_CELL
    first_code = next(c for c in cells if c["cell_type"] == "code")
    assert first_code is install[0], "the install cell must run before any other code"
    assert REPO_URL in INSTALL_CELL and "import torch" not in INSTALL_CELL
