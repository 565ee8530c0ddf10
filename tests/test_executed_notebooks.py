"""notebooks/executed/ holds every notebook run with its outputs (``make executed``): a learner browsing the
repository sees the figures before running anything. These tests fail when a copy is missing, when its
cells differ from its notebook's (the copy is stale: run ``make executed``), or when it has no output."""

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
EXECUTED = ROOT / "notebooks" / "executed"
sys.path.insert(0, str(ROOT / "tools"))

from execute_notebooks import HEADER_ID, REDACTED, redact, relink, solution_lines  # noqa: E402


def cells_of(path: Path, executed: bool = False) -> list[tuple[str, str]]:
    """``(cell type, source)`` of every cell but the executed copy's header; a notebook's markdown as its
    executed copy shows it (links relative to ``notebooks/executed/``) unless ``executed``."""
    cells = json.loads(path.read_text())["cells"]
    return [
        (
            c["cell_type"],
            "".join(c["source"]) if executed or c["cell_type"] != "markdown" else relink("".join(c["source"])),
        )
        for c in cells
        if c.get("id") != HEADER_ID
    ]


def stale(notebook: Path, copy: Path) -> list[str]:
    """What differs between a notebook and its executed copy: ``"missing"``, or the cells that differ."""
    if not copy.exists():
        return ["missing"]
    mine, theirs = cells_of(notebook), cells_of(copy, executed=True)
    if len(mine) != len(theirs):
        return [f"{len(theirs)} cells in the copy, {len(mine)} in the notebook"]
    return [f"cell {i} differs" for i, (a, b) in enumerate(zip(mine, theirs)) if a != b]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_the_executed_copy_has_the_notebooks_cells(notebook):
    assert stale(notebook, EXECUTED / notebook.name) == [], "run `make executed`"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_the_executed_copy_says_where_it_ran_and_shows_outputs(notebook):
    cells = json.loads((EXECUTED / notebook.name).read_text())["cells"]
    assert cells[0]["id"] == HEADER_ID and "MIT licence" in "".join(cells[0]["source"])
    outputs = [o for c in cells if c["cell_type"] == "code" for o in c["outputs"]]
    assert outputs and not any(o.get("output_type") == "error" for o in outputs)
    sources = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    if "plt.show()" in sources or "plot_" in sources:  # a notebook that draws shows its figures
        assert any("image/png" in o.get("data", {}) for o in outputs)


def test_the_check_catches_an_edited_cell(tmp_path):
    notebook = NOTEBOOKS[0]
    copy = tmp_path / notebook.name
    data = json.loads(notebook.read_text())
    code = next(c for c in data["cells"] if c["cell_type"] == "code")
    code["source"] = ["print('edited')\n"]
    copy.write_text(json.dumps(data))
    assert stale(notebook, copy) and stale(notebook, tmp_path / "none.ipynb") == ["missing"]


def test_a_gsm8k_solution_line_is_redacted_and_the_rest_kept(tmp_path):
    data = tmp_path / "gsm8k"
    data.mkdir()
    answer = "Natalie bought 48/2 = <<48/2=24>>24 clips in May for the fair.\nShort line.\n#### 24"
    for split in ("train", "test"):
        (data / f"{split}.jsonl").write_text(json.dumps({"question": "Q?", "answer": answer}) + "\n")
    lines = solution_lines(data)
    assert lines == {"Natalie bought 48/2 = 24 clips in May for the fair."}
    text = "Q?\nNatalie bought 48/2 = 24 clips in May for the fair.\nShort line.\nthe model's own words"
    assert redact(text, lines) == f"Q?\n{REDACTED}\nShort line.\nthe model's own words"
    table = "<td>Natalie bought 48/2 = &lt;&lt;48/2=24&gt;&gt;24 clips in May for the fair.</td>"
    assert redact(table, lines) == REDACTED  # a pandas HTML cell, escaped
    assert solution_lines(tmp_path / "nowhere") == set()


@pytest.mark.skipif(not solution_lines(), reason="GSM8K_DIR is not set: the solutions to look for are not here")
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_no_gsm8k_solution_line_in_an_executed_copy(notebook):
    lines = solution_lines()
    cells = json.loads((EXECUTED / notebook.name).read_text())["cells"]
    for cell in cells:
        for output in cell.get("outputs", []):
            texts = [output.get("text", "")] + [output.get("data", {}).get(k, "") for k in ("text/plain", "text/html")]
            for text in texts:
                text = text if isinstance(text, str) else "".join(text)
                assert redact(text, lines) == text, "a GSM8K solution line: run `make executed`"


def test_links_out_of_notebooks_climb_one_more_folder_in_a_copy():
    assert relink("see [the report](../results/README.md) and [07](07_grpo_from_scratch.ipynb)") == (
        "see [the report](../../results/README.md) and [07](07_grpo_from_scratch.ipynb)"
    )
    for copy in sorted(EXECUTED.glob("*.ipynb")):
        for cell in json.loads(copy.read_text())["cells"]:
            for target in re.findall(r"\]\((\.\./[^)#]+)", "".join(cell["source"])):
                assert (EXECUTED / target).resolve().exists(), f"{copy.name}: {target}"
