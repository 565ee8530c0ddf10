"""tools/cot_prompting_cpu.py: notebook 01's strategies on course-written problems (no model here), and the
committed results/cot-prompting-cpu/summary.json when there is one."""

import ast
import importlib.util
import json
from pathlib import Path

import pytest

from helpers.evaluation.stats import mcnemar_exact_p, wilson_interval

ROOT = Path(__file__).resolve().parent.parent
SUMMARY = ROOT / "results" / "cot-prompting-cpu" / "summary.json"
NOTEBOOK = ROOT / "notebooks" / "01_cot_prompting.ipynb"


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("cot_prompting_cpu", ROOT / "tools" / "cot_prompting_cpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_compare_counts_intervals_and_mcnemar_against_direct(tool):
    table = tool.compare(
        {
            "direct": [1, 0, 0, 1, 0, 0, 0, 0, 1, 0],  # 3 of 10
            "cot": [1, 1, 1, 1, 1, 1, 1, 1, 0, 0],  # 8 of 10: 6 gained (1, 2, 4-7), 1 lost (8)
            "long-cot": [0] * 10,  # 3 lost
        },
        seconds={"direct": 1.04, "cot": 2.0, "long-cot": 3.0},
    )
    assert list(table) == ["direct", "cot", "long-cot"]
    assert table["direct"]["mcnemar_vs_direct"] is None and table["direct"]["seconds"] == 1.0
    cot = table["cot"]
    assert (cot["n"], cot["correct"], cot["accuracy"], cot["outcomes"]) == (10, 8, 0.8, "1111111100")
    assert cot["wilson_95"] == pytest.approx([0.490, 0.943], abs=1e-3)
    assert cot["mcnemar_vs_direct"] == {"p": pytest.approx(0.125), "gained": 6, "lost": 1}  # 2 * (1 + 7) / 2**7
    assert table["long-cot"]["wilson_95"] == pytest.approx([0.0, 0.278], abs=1e-3)
    assert table["long-cot"]["mcnemar_vs_direct"] == {"p": pytest.approx(0.25), "gained": 0, "lost": 3}
    with pytest.raises(ValueError, match="different numbers"):
        tool.compare({"direct": [1, 0], "cot": [1]})
    with pytest.raises(ValueError, match="direct"):
        tool.compare({"cot": [1]})


def test_every_strategy_runs_on_the_same_problems_with_the_notebooks_budgets(tool):
    problems, draw = tool.draw_problems(2)
    assert draw["n"] == len(problems) == 4 and [p["ops"] for p in draw["problems"]] == [1, 1, 2, 2]
    assert all(p.max_number == 20 for p in problems)
    calls = []

    def fake_generate(prompts, *, max_new_tokens, temperature, top_p, seed):
        calls.append((max_new_tokens, temperature, seed))
        answers = []
        for messages in prompts:
            i = next(i for i, p in enumerate(problems) if p.question in messages[-1]["content"])
            answers.append(f"\\boxed{{{problems[i].answer}}}" if i % 2 == 0 else "no idea")
        return answers

    results, seconds = tool.run_strategies(None, None, problems, tool.SIZES, generate_fn=fake_generate)
    sc = "self-consistency (k=3)"
    assert list(results) == ["direct", "few-shot", "cot", "zero-shot-cot", "long-cot", sc] == list(seconds)
    # one batch of 4 each; the five strategies greedy with their budgets, then 3 samples of the CoT budget
    assert calls == [(32, 0.0, 0)] + [(128, 0.0, 0)] * 4 + [(128, 0.7, 0), (128, 0.7, 1), (128, 0.7, 2)]
    table = tool.summarize_results(results, seconds)
    for name, row in table.items():
        assert [r["question"] for r in results[name].records] == [p.question for p in problems], name
        assert (row["correct"], row["outcomes"], row["answer_rate"]) == (2, "1010", 0.5), name
    assert table[sc]["mcnemar_vs_direct"] == {"p": 1.0, "gained": 0, "lost": 0}


def test_the_sizes_are_the_notebooks(tool):
    """The script must run notebook 01's cpu sizes, sampling temperature and seed."""
    cells = ["".join(c["source"]) for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]
    [settings] = [c for c in cells if "SIZES = {" in c]
    found = {}
    for node in ast.parse(settings).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name == "SIZES":
                found[name] = eval(ast.unparse(node.value.value), {"dict": dict})["cpu"]
            elif name in ("SC_TEMPERATURE", "SEED"):
                found[name] = ast.literal_eval(node.value)
    assert found == {"SIZES": tool.SIZES, "SC_TEMPERATURE": tool.SC_TEMPERATURE, "SEED": tool.SEED}


@pytest.mark.skipif(not SUMMARY.exists(), reason="results/cot-prompting-cpu/summary.json is not committed yet")
def test_the_committed_comparison_is_consistent():
    summary = json.loads(SUMMARY.read_text())
    assert summary["command"].startswith("python tools/cot_prompting_cpu.py") and not summary["smoke"]
    assert summary["commit"] and "CPU cores" in summary["machine"]
    n = summary["draw"]["n"]
    assert len(summary["draw"]["problems"]) == n
    rows = summary["strategies"]
    base = rows[summary["baseline"]]["outcomes"]
    for name, row in rows.items():
        assert row["n"] == n == len(row["outcomes"]) and 0 <= row["correct"] <= n, name
        assert row["correct"] == row["outcomes"].count("1") and row["accuracy"] == row["correct"] / n, name
        assert row["wilson_95"] == list(wilson_interval(row["correct"], n)), name
        test = row["mcnemar_vs_direct"]
        if name == summary["baseline"]:
            assert test is None
            continue
        pairs = list(zip(base, row["outcomes"]))
        assert (test["gained"], test["lost"]) == (pairs.count(("0", "1")), pairs.count(("1", "0"))), name
        assert test["p"] == mcnemar_exact_p(test["gained"], test["lost"]), name
