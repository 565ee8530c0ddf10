"""Notebook 07 writes the GRPO loop out in its cells; ``cpu_study/loop.py`` keeps the importable copy for the
longer runs (``python -m cpu_study scratch``, ``cpu_study/experiments/scratch_variants.py``). These tests fail when a
function the notebook defines and the function of the same name in ``cpu_study/loop.py`` differ in anything but
docstrings, comments and layout (their ASTs, docstrings removed, are compared), and when the notebook stops
defining one of the loop's functions."""

import ast
import json
import math
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "07_grpo_from_scratch.ipynb"
PACKAGE = ROOT / "cpu_study" / "loop.py"
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
# The notebook writes these out line by line (the lesson); cpu_study/loop.py calls helpers.grpo for them instead, so
# they are compared by value, bit for bit (test_the_written_out_functions_equal_helpers_grpo_bit_for_bit).
WRITTEN_OUT = ("compute_advantages", "compute_grpo_loss", "loss_stats")
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
        if name in WRITTEN_OUT:
            continue
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
    assert set(LOOP_FUNCTIONS) - {"loss_stats"} <= set(names)  # grpo.grpo_loss returns the stats


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
    cells = _cells_with("batch.old_logps = logps(model, batch, config)", "batch.old_logps = None")
    assert drift(cells, package) == ["prepare_batch differs"]
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


def notebook_loop(cells=None) -> dict:
    """The notebook's loop functions, run from its cells: each cell that defines one holds only definitions."""
    import math
    import time

    import torch

    from helpers import grpo
    from helpers.loop import Batch, LoopRun
    from helpers.rewards import REWARD_FUNCS

    names = {"math": math, "time": time, "torch": torch, "grpo": grpo, "REWARD_FUNCS": REWARD_FUNCS}
    names.update(Batch=Batch, LoopRun=LoopRun)  # what the setup cell imports for them
    for source in notebook_cells() if cells is None else cells:
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


def _toy_batch(seed, dtype=torch.float64):
    """A batch of 2 groups of 4: random log-probs (old, reference, policy with gradients), a ragged mask,
    rewards with one group of equal rewards and one missing value."""
    from helpers.loop import Batch

    gen = torch.Generator().manual_seed(seed)
    shape = (8, 7)
    logp = (-torch.rand(shape, generator=gen, dtype=dtype) * 3).requires_grad_()
    old = logp.detach() + 0.3 * torch.randn(shape, generator=gen, dtype=dtype)
    ref = logp.detach() + 0.5 * torch.randn(shape, generator=gen, dtype=dtype)
    mask = (torch.arange(7)[None, :] < torch.randint(1, 8, (8, 1), generator=gen)).long()
    rewards = torch.randint(0, 3, (8, 2), generator=gen).to(torch.float32)
    rewards[:4] = 1.0
    rewards[5, 0] = math.nan  # a reward function that returned None: nansum skips it
    advantages = torch.randn(8, generator=gen, dtype=dtype)
    return logp, Batch(None, None, None, mask, rewards, advantages, old, ref)


def _written_out_vs_grpo(cells):
    """``[]`` when the cells' compute_advantages and compute_grpo_loss give helpers.grpo's numbers bit for bit
    (values, gradients, statistics) over seeds, loss types, reused or fresh batches and beta; else what differs."""
    from helpers import grpo
    from helpers.loop import LoopConfig

    found = []
    for seed in range(3):
        for scale_std in (True, False):
            config = LoopConfig(scale_std=scale_std, num_generations=4)
            rewards = _toy_batch(seed)[1].rewards
            theirs = grpo.group_advantages(rewards.nansum(1), 4, "group" if scale_std else "none")
            if not torch.equal(cells["compute_advantages"](rewards, config), theirs):
                found.append(f"compute_advantages, seed {seed}, scale_std {scale_std}")
        for loss_type in grpo.LOSS_TYPES:
            for reused, beta in ((True, 0.04), (False, 0.0)):
                config = LoopConfig(beta=beta, epsilon=0.2, loss_type=loss_type, num_generations=4, max_new_tokens=7)
                logp, batch = _toy_batch(seed)
                batch.old_logps = batch.old_logps if reused else None
                ours, our_stats = cells["compute_grpo_loss"](logp, batch, config)
                (our_grad,) = torch.autograd.grad(ours, logp)
                theirs, their_stats = grpo.grpo_loss(
                    logp, batch.old_logps, batch.ref_logps, batch.advantages, batch.completion_mask,
                    beta, 0.2, None, loss_type, 7,
                )  # fmt: skip
                (their_grad,) = torch.autograd.grad(theirs, logp)
                same_stats = list(our_stats) == list(their_stats) and all(
                    a == b or (math.isnan(a) and math.isnan(b))
                    for a, b in zip(our_stats.values(), their_stats.values())
                )
                if not (torch.equal(ours, theirs) and torch.equal(our_grad, their_grad) and same_stats):
                    found.append(f"compute_grpo_loss, seed {seed}, {loss_type}, reused {reused}")
    return found


def test_the_written_out_functions_equal_helpers_grpo_bit_for_bit():
    assert _written_out_vs_grpo(notebook_loop()) == []


def test_the_value_check_catches_an_edited_line():
    cells = notebook_cells()
    [i] = [i for i, c in enumerate(cells) if "clipped = ratio.clamp(1 - config.epsilon, 1 + config.epsilon)" in c]
    cells[i] = cells[i].replace("1 + config.epsilon)", "1 + 2 * config.epsilon)")
    assert any(f.startswith("compute_grpo_loss") for f in _written_out_vs_grpo(notebook_loop(cells)))
