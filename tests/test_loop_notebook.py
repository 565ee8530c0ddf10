"""Notebook 07 writes the GRPO loop out in its cells; ``helpers/loop.py`` keeps the importable copy for the
longer runs (``python -m helpers scratch``, ``cpu_study/experiments/scratch_variants.py``). These tests fail when a
function the notebook defines and the function of the same name in ``helpers/loop.py`` differ in anything but
docstrings, comments and layout (their ASTs, docstrings removed, are compared), and when the notebook stops
defining one of the loop's functions."""

import ast
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "07_grpo_from_scratch.ipynb"
PACKAGE = ROOT / "helpers" / "loop.py"
# The loop, in the order the notebook defines it: sample, score, advantages, old and reference log-probs,
# the loss, the optimizer step, and the loop that calls them.
LOOP_FUNCTIONS = (
    "tokenize_prompts",
    "decode_completions",
    "sample_completions",
    "score_completions",
    "compute_advantages",
    "batch_logps",
    "prepare_batch",
    "compute_grpo_loss",
    "loss_stats",
    "make_optimizer",
    "optimizer_step",
    "sample_batch",
    "batch_stats",
    "step_line",
    "train_from_scratch",
)
MAX_CODE_LINES = 30  # a function of the notebook reads on one screen


def notebook_cells(path=NOTEBOOK) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(Path(path).read_text())["cells"] if c["cell_type"] == "code"]


def top_level_functions(source: str) -> list[ast.FunctionDef]:
    return [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)]


def without_docstring(node: ast.FunctionDef) -> str:
    """``ast.dump`` of the function with its docstring removed (comments and layout are not in the AST)."""
    node = ast.parse(ast.unparse(node)).body[0]  # a copy
    if ast.get_docstring(node, clean=False) is not None:
        node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(node)


def drift(cells: list[str], package_source: str) -> list[str]:
    """What differs between the notebook's cells and the package: ``"NAME differs"`` for a function defined in
    both whose code differs, ``"NAME is not defined in the notebook"``, ``"NAME is defined in N cells"``."""
    package = {n.name: n for n in top_level_functions(package_source)}
    defined = {}
    for source in cells:
        for node in top_level_functions(source):
            defined.setdefault(node.name, []).append(node)
    found = [f"{name} is not defined in the notebook" for name in LOOP_FUNCTIONS if name not in defined]
    for name, nodes in defined.items():
        if name in package and len(nodes) > 1:
            found.append(f"{name} is defined in {len(nodes)} cells")
        elif name in package and without_docstring(nodes[0]) != without_docstring(package[name]):
            found.append(f"{name} differs")
    return found


def code_lines(node: ast.FunctionDef, source: str) -> int:
    """Lines of a function's body that hold code: not blank, not a comment, not its docstring."""
    body = node.body[1:] if ast.get_docstring(node) is not None else node.body
    lines = source.splitlines()
    numbers = {i for stmt in body for i in range(stmt.lineno, stmt.end_lineno + 1)}
    return sum(1 for i in numbers if lines[i - 1].strip() and not lines[i - 1].strip().startswith("#"))


def test_the_notebook_defines_the_loop_as_the_package_does():
    assert drift(notebook_cells(), PACKAGE.read_text()) == []


def test_the_package_has_every_function_of_the_loop():
    names = [n.name for n in top_level_functions(PACKAGE.read_text())]
    assert set(LOOP_FUNCTIONS) <= set(names)


def test_each_function_of_the_notebook_reads_on_one_screen():
    for source in notebook_cells():
        for node in top_level_functions(source):
            if node.name in LOOP_FUNCTIONS:
                assert code_lines(node, source) <= MAX_CODE_LINES, node.name


def _cells_with(old: str, new: str) -> list[str]:
    cells = notebook_cells()
    [i] = [i for i, c in enumerate(cells) if old in c]  # the string is in one cell
    cells[i] = cells[i].replace(old, new)
    return cells


def test_the_check_catches_a_changed_line():
    package = PACKAGE.read_text()
    cells = _cells_with(
        "clipped = ratio.clamp(1 - config.epsilon, 1 + config.epsilon)",
        "clipped = ratio.clamp(1 - config.epsilon, 1 + 2 * config.epsilon)",
    )
    assert drift(cells, package) == ["compute_grpo_loss differs"]
    cells = _cells_with("(grouped.std(1, keepdim=True) + 1e-4)", "(grouped.std(1, keepdim=True) + 1e-6)")
    assert drift(cells, package) == ["compute_advantages differs"]
    # a package change the notebook did not follow is caught the same way
    edited = package.replace("config.max_grad_norm)", "2 * config.max_grad_norm)", 1)
    assert edited != package and drift(notebook_cells(), edited) == ["optimizer_step differs"]


def test_the_check_catches_a_missing_or_repeated_function():
    cells = notebook_cells()
    [i] = [i for i, c in enumerate(cells) if "def train_from_scratch(" in c]
    without = cells[:i] + cells[i + 1 :]
    assert drift(without, PACKAGE.read_text()) == ["train_from_scratch is not defined in the notebook"]
    assert drift(cells + [cells[i]], PACKAGE.read_text()) == ["train_from_scratch is defined in 2 cells"]


def test_docstrings_comments_and_layout_do_not_count():
    source = '''def f(x, y):
    """One docstring."""
    return x + y  # a comment
'''
    other = '''def f(x,
      y):
    """Another docstring, longer,
    on two lines."""
    # a comment of its own
    return (x +
            y)
'''
    assert drift([other], source) == drift([source], source)
    assert "f differs" not in drift([other], source)
    assert "f differs" in drift([other.replace("x +", "x -")], source)


@pytest.mark.parametrize("name", LOOP_FUNCTIONS)
def test_each_function_has_a_docstring_in_the_notebook(name):
    """A learner reads what a function returns before its code."""
    nodes = [n for source in notebook_cells() for n in top_level_functions(source) if n.name == name]
    assert nodes and ast.get_docstring(nodes[0])


def notebook_loop() -> dict:
    """The notebook's loop functions, run from its cells: each cell that defines one holds only definitions."""
    import math
    import time

    import torch

    from helpers import grpo, loop
    from helpers.rewards import REWARD_FUNCS

    names = {"math": math, "time": time, "torch": torch, "grpo": grpo, "REWARD_FUNCS": REWARD_FUNCS}
    names.update(Batch=loop.Batch, LoopRun=loop.LoopRun)  # what the setup cell imports for them
    for source in notebook_cells():
        defined = [n.name for n in top_level_functions(source)]
        if set(defined) & set(LOOP_FUNCTIONS):
            assert all(isinstance(n, ast.FunctionDef) for n in ast.parse(source).body), defined
            exec(compile(source, "notebook 07", "exec"), names)
    return names


def test_the_notebooks_own_functions_equal_trls_update(smollm2_dir, tmp_path):
    """Section 7 of the notebook, one case: TRL's update against the cells' functions (not the package's)."""
    from types import SimpleNamespace

    from transformers import AutoTokenizer

    from helpers.loop import LoopConfig
    from helpers.training import trl_check

    cells = notebook_loop()
    ours = SimpleNamespace(**{name: cells[name] for name in trl_check.LOOP_FUNCTIONS})
    assert ours.optimizer_step.__globals__ is cells  # it calls the cells' compute_grpo_loss, batch_logps, ...

    def toy_reward(completion_ids, **kwargs):
        return [float(sum(x) % 7) for x in completion_ids]

    tokenizer = AutoTokenizer.from_pretrained(smollm2_dir)
    rows = [{"prompt": [{"role": "user", "content": q}]} for q in ("What is 2+2?", "Name a prime.", "Count to 3.")]
    case = LoopConfig(
        num_iterations=2,
        beta=0.04,
        epsilon=0.05,
        num_generations=4,
        max_new_tokens=12,
        temperature=0.7,
        learning_rate=0.02,
        steps=2,
        heldout_problems=0,
    )
    found = trl_check.compare_with_trl(
        trl_check.tiny_policy(tokenizer), tokenizer, rows, case, [toy_reward], tmp_path, loop=ours
    )
    assert found["stats"][-1]["clip_ratio/region_mean"] > 0  # the clip binds at step 2
    assert found["per_tensor"] <= 1e-6 and found["of_update"] <= 1e-6
