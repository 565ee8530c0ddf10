"""Unsloth must be imported before transformers, trl and peft.

Static: in every notebook that may load a model on the GPU backend, the settings cell calls
``import_backend(profile)`` before any statement that imports transformers, trl or peft, directly
or through a ``helpers`` module that imports them at module level. Dynamic (slow): the notebooks'
code up to ``import_backend`` and every later import, and the CLI's ``train`` and ``evaluate``,
run in a fresh Python with the test-only fake Unsloth, which refuses to come after them.
"""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FAKES = Path(__file__).resolve().parent / "fakes"
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
PATCHED = ("transformers", "trl", "peft")
LOADERS = {"load_model", "load_with_adapter", "train", "train_cold_start", "run_pipeline"}


def _imported_modules(node) -> list[str]:
    """Absolute module names an import statement loads (``helpers.x.y`` for ``from helpers.x import y``
    when ``helpers/x/y.py`` is a module)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module
        if base and (REPO / base.replace(".", "/")).is_dir():  # from helpers.training import trainer
            return [f"{base}.{alias.name}" for alias in node.names]
        return [base]
    return []


def heavy_helpers() -> set[str]:
    """``helpers`` modules whose module-level imports pull in transformers, trl or peft."""
    direct = {}
    for path in (REPO / "helpers").rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        direct[name] = [m for node in ast.parse(path.read_text()).body for m in _imported_modules(node)]
    heavy, changed = set(), True
    while changed:
        changed = False
        for name, mods in direct.items():
            if name not in heavy and any(m.split(".")[0] in PATCHED or m in heavy for m in mods):
                heavy.add(name)
                changed = True
    return heavy


def statements(notebook: Path):
    """Every top-level statement of the notebook's code cells, in execution order."""
    for cell in json.loads(notebook.read_text())["cells"]:
        if cell["cell_type"] == "code":
            yield from ast.parse("".join(cell["source"])).body


def imports_patched(stmt, heavy: set[str]) -> list[str]:
    found = []
    for node in ast.walk(stmt):
        for module in _imported_modules(node):
            if module.split(".")[0] in PATCHED or module in heavy:
                found.append(module)
    return found


def imports_backend(stmt) -> bool:
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "import_backend":
            return True
        if any(m.split(".")[0] == "unsloth" for m in _imported_modules(node)):
            return True
    return False


def loads_models(notebook: Path) -> bool:
    return any(
        isinstance(node, ast.Call) and getattr(node.func, "id", None) in LOADERS
        for stmt in statements(notebook)
        for node in ast.walk(stmt)
    )


def order_problem(stmts, heavy: set[str]) -> str | None:
    """None when the backend comes before every import of a patched module, else what came first."""
    for stmt in stmts:
        if imports_backend(stmt):
            return None
        early = imports_patched(stmt, heavy)
        if early:
            return f"line {stmt.lineno}: {ast.unparse(stmt)[:80]!r} imports {early} before import_backend"
    return None


def test_the_static_analysis_knows_which_helpers_pull_in_transformers():
    heavy = heavy_helpers()
    assert {"helpers.training.trainer", "helpers.training.callbacks"} <= heavy  # transformers' TrainerCallback
    assert not heavy & {
        "helpers.training.profiles",
        "helpers.training.models",
        "helpers.training.hardware",
        "helpers.data.gsm8k",
        "helpers.training.pipeline",
        "helpers",
        "helpers.colab.persist",
        "helpers.evaluation.reports",
        "helpers.loop",
        "helpers.grpo",
    }


def test_a_wrong_order_is_caught():
    wrong = ast.parse(
        "from helpers.training.trainer import train\nprofile = get_profile()\nimport_backend(profile)"
    ).body
    assert "helpers.training.trainer" in order_problem(wrong, heavy_helpers())
    wrong = ast.parse("import peft\nimport unsloth").body
    assert "peft" in order_problem(wrong, set())
    right = ast.parse("profile = get_profile()\nimport_backend(profile)\nimport peft").body
    assert order_problem(right, heavy_helpers()) is None


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_backend_before_transformers_trl_peft_in_every_gpu_notebook(notebook):
    if not loads_models(notebook):
        pytest.skip(f"{notebook.name} never loads a model on the GPU backend")
    stmts = list(statements(notebook))
    assert any(imports_backend(s) for s in stmts), f"{notebook.name} never calls import_backend(profile)"
    assert order_problem(stmts, heavy_helpers()) is None, order_problem(stmts, heavy_helpers())


def test_notebooks_that_load_models_are_the_expected_ones():
    assert {p.name[:2] for p in NOTEBOOKS if loads_models(p)} == {"01", "04", "05", "06", "07", "08"}


# ------------------------------------------------------------------- dynamic: fresh interpreters
def _run(code: str, tmp_path, **env) -> subprocess.CompletedProcess:
    environ = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(FAKES), str(REPO)]),
        "FAKE_UNSLOTH_STRICT": "1",
        "GRPO_PROFILE": "t4",
        "GRPO_QUICK": "1",
        "OMP_NUM_THREADS": "1",
        **env,
    }
    return subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=600
    )


REPORT = (
    "import sys, json; print('ORDER', json.dumps({'unsloth': 'unsloth' in sys.modules, "
    "'before': getattr(sys.modules.get('unsloth'), 'IMPORTED_BEFORE', None)}))"
)


def _report(result) -> dict:
    lines = [line for line in result.stdout.splitlines() if line.startswith("ORDER ")]
    assert lines, result.stdout[-2000:] + result.stderr[-3000:]
    return json.loads(lines[-1][6:])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["01", "04", "05", "06"])
def test_notebook_imports_in_a_fresh_interpreter_with_a_strict_fake_unsloth(name, tmp_path):
    """The cells up to import_backend run as they are (profile t4); after it, every import."""
    [notebook] = [p for p in NOTEBOOKS if p.name.startswith(name)]
    cells = [
        c
        for c in json.loads(notebook.read_text())["cells"]
        if c["cell_type"] == "code" and "install-cell" not in c.get("metadata", {}).get("tags", [])
    ]
    code, seen_backend = [f"ROOT = {str(REPO)!r}"], False
    for cell in cells:
        source = "".join(cell["source"])
        if not seen_backend:
            code.append(source)
            seen_backend = any(imports_backend(s) for s in ast.parse(source).body)
        else:
            code += [ast.unparse(n) for n in ast.walk(ast.parse(source)) if isinstance(n, (ast.Import, ast.ImportFrom))]
    result = _run("\n".join(code + [REPORT]), tmp_path)
    assert _report(result) == {"unsloth": True, "before": []}, result.stderr[-3000:]


@pytest.mark.slow
def test_the_strict_fake_fails_on_the_wrong_order(tmp_path):
    result = _run("import peft\nimport unsloth", tmp_path)
    assert result.returncode != 0 and "'peft']: Unsloth could not patch them" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("command", ["train", "evaluate"])
def test_cli_imports_the_backend_first(command, tmp_path):
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        (adapter / name).write_text("{}")
    stop = "def stop(*a, **k):\n    raise SystemExit(0)\n"
    argv = (
        [command, "--profile", "t4", "--output-dir", str(tmp_path)]
        if command == "train"
        else [command, "--profile", "t4", "--adapter", str(adapter)]
    )
    code = stop + (
        "import helpers.training.pipeline, helpers.data.gsm8k\n"
        "helpers.training.pipeline.run_pipeline = stop\nhelpers.data.gsm8k.load_gsm8k = stop\n"
        "from helpers.cli import main\n"
        f"try:\n    main({argv!r})\n"
        "except SystemExit:\n    pass\n" + REPORT
    )
    assert _report(_run(code, tmp_path)) == {"unsloth": True, "before": []}
