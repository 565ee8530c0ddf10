"""Collect answer-equivalence test cases that other projects wrote, for ``tests/data``.

Reads the test files of public repositories checked out (or mirrored) locally and writes
``tests/data/external_grading_cases.json``: one record per case with its source (repo, commit,
file, test name), the gold and the prediction as that project wrote them, and the verdict it
expects (True: equivalent). Run it again to refresh the file; tests read the file, not the repos.

    python tools/collect_grading_cases.py MIRROR_ROOT

``MIRROR_ROOT`` holds ``owner+name/repo`` git directories (bare or not), e.g. from
``git clone --mirror``. Sources (all Apache-2.0 or MIT, cited per case):

- huggingface/Math-Verify ``tests/*.py``: every ``pytest.mark.parametrize`` of (gold, pred,
  expected) tuples;
- hendrycks/math ``modeling/math_equivalence_test.py``: ``is_equiv(test_in, test_out)`` asserts;
- allenai/open-instruct ``open_instruct/test_math_utils.py`` (pairs that normalise to the same
  string are equivalent) and ``test_ground_truth_utils.py`` (the GSM8K verifier's cases);
- huggingface/open-r1 and huggingface/trl ``tests/test_rewards.py``: the accuracy-reward cases
  (literal completion / solution / reward triples).
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "external_grading_cases.json"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def _files(repo: Path, pattern: str) -> list[str]:
    return [f for f in _git(repo, "ls-tree", "-r", "--name-only", "HEAD").split() if Path(f).match(pattern)]


def _literal(node: ast.AST):
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return None


def _parametrized(source: str):
    """(test name, argnames, rows) of every parametrize/expand decorator with literal rows."""
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for deco in fn.decorator_list:
            if not isinstance(deco, ast.Call) or not deco.args:
                continue
            name = ast.unparse(deco.func)
            if name.endswith("parametrize") and len(deco.args) >= 2:
                argnames = _literal(deco.args[0])
                argnames = [a.strip() for a in argnames.split(",")] if isinstance(argnames, str) else argnames
                rows = deco.args[1]
            elif name.endswith("expand"):
                argnames, rows = None, deco.args[0]
            else:
                continue
            if isinstance(rows, (ast.List, ast.Tuple)):
                yield fn.name, argnames, [_literal(r) for r in rows.elts]


def math_verify(repo: Path) -> list[dict]:
    cases = []
    for path in _files(repo, "tests/*.py"):
        for test, argnames, rows in _parametrized(_git(repo, "show", f"HEAD:{path}")):
            if not argnames or argnames[:2] != ["gold", "pred"]:
                continue  # e.g. test_string_extraction's (pred, expected, config)
            for row in rows:
                if isinstance(row, tuple) and isinstance(row[2], (int, bool)):
                    cases.append(dict(gold=row[0], pred=row[1], expected=bool(row[2]), file=path, test=test))
    return cases


def hendrycks_math(repo: Path) -> list[dict]:
    path = "modeling/math_equivalence_test.py"
    cases = []
    for fn in ast.walk(ast.parse(_git(repo, "show", f"HEAD:{path}"))):
        if isinstance(fn, ast.FunctionDef) and fn.name.startswith("test_"):
            values = {
                t.id: _literal(s.value)
                for s in fn.body
                if isinstance(s, ast.Assign)
                for t in s.targets
                if isinstance(t, ast.Name)
            }
            calls = [
                c
                for c in ast.walk(fn)
                if isinstance(c, ast.Call) and ast.unparse(c.func) in ("self.assertTrue", "self.assertFalse")
            ]
            for call in calls:
                # math_equivalence.is_equiv(str1, str2): test_in is the gold side
                cases.append(
                    dict(
                        gold=values["test_in"],
                        pred=values["test_out"],
                        expected=ast.unparse(call.func) == "self.assertTrue",
                        file=path,
                        test=fn.name,
                    )
                )
    return cases


def open_instruct(repo: Path) -> list[dict]:
    cases = []
    path = "open_instruct/test_math_utils.py"
    for test, _, rows in _parametrized(_git(repo, "show", f"HEAD:{path}")):
        for raw, normalised in rows:  # strip_string(raw) == normalised: the same answer
            cases.append(dict(gold=normalised, pred=raw, expected=True, file=path, test=test))
    path = "open_instruct/test_ground_truth_utils.py"
    source = _git(repo, "show", f"HEAD:{path}")
    tree = ast.parse(source)
    gsm8k = next(c for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and c.name == "TestGSM8KVerifier")
    for test, _, rows in _parametrized(ast.unparse(gsm8k)):
        for _name, prediction, label, score in rows:
            cases.append(
                dict(
                    gold=label,
                    pred=prediction,
                    expected=score == 1.0,
                    file=path,
                    test=f"TestGSM8KVerifier.{test}[{_name}]",
                )
            )
    return cases


def _reward_cases(repo: Path, path: str) -> list[dict]:
    """Accuracy-reward tests: ``completion = [[{"content": X}], ...]``, ``solution = [Y, ...]``,
    then ``rewards[i] == 1.0 | 0.0 | None`` (assertEqual or assert); literal values only. A
    reward of None (TRL: the gold cannot be parsed) is recorded as not equivalent (fail closed)."""
    cases = []
    tree = ast.parse(_git(repo, "show", f"HEAD:{path}"))
    owner = {fn: cls.name for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef) for fn in cls.body}
    for fn in ast.walk(tree):
        if not (isinstance(fn, ast.FunctionDef) and fn.name.startswith("test_")):
            continue
        values = {
            t.id: _literal(s.value)
            for s in fn.body
            if isinstance(s, ast.Assign)
            for t in s.targets
            if isinstance(t, ast.Name)
        }
        completions = values.get("completion") or values.get("completions")
        solutions = values.get("solution") or values.get("solutions")
        if not completions or not solutions or "accuracy" not in ast.unparse(fn):
            continue
        expected = {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("assertEqual") and len(node.args) == 2:
                left, right = node.args
            elif isinstance(node, ast.Compare) and len(node.comparators) == 1:
                left, right = node.left, node.comparators[0]
            else:
                continue
            if m := re.fullmatch(r"rewards\[(\d+)\]", ast.unparse(left)):
                expected[int(m.group(1))] = _literal(right)
        for i, (completion, gold) in enumerate(zip(completions, solutions)):
            if i in expected and expected[i] in (0.0, 1.0, None):
                cases.append(
                    dict(
                        gold=gold,
                        pred=completion[0]["content"],
                        expected=expected[i] == 1.0,
                        file=path,
                        test=f"{owner[fn]}.{fn.name}" if fn in owner else fn.name,
                    )
                )
    return cases


_IN_SCOPE_COMMANDS = re.compile(
    r"\\(?:[dtc]?frac|sqrt|pi|cdot|times|div|left|right|boxed|text|mathrm|textnormal|mbox"
    r"|textit|textbf|%|\$|!|,|;|circ)(?![A-Za-z])"
)
_TEXT_COMMAND = re.compile(r"\\(?:text|mathrm|textnormal|mbox|textit|textbf)\s*\{[^{}]*\}")


def scope(gold: str, test: str) -> str:
    """``"number"`` when the gold is what a GSM8K-style grader must handle: a number, money,
    a percent, a unit in ``\\text{}``, a fraction, a radical or arithmetic on them (LaTeX or
    not); ``"format"`` when the case tests where a reasoning block ends (``</think>``), not
    equivalence;
    else ``"other"`` (sets, intervals, tuples, lists, variables, constants such as e,
    equations, matrices)."""
    if "ReasoningAccuracy" in test:  # TRL's reasoning_accuracy_reward: where </think> ends
        return "format"
    if re.search(r"\band\b", gold) or gold.count("\\boxed") > 1:  # a list: "6 and 8"
        return "other"
    g = re.sub(r"\\mathrm\s*\{\s*[A-Za-z]\s*\}", "x", gold.strip().strip("$"))  # \mathrm{e}
    g = _TEXT_COMMAND.sub(" ", g)
    g = _IN_SCOPE_COMMANDS.sub(" ", g)
    g = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", g)  # thousands groups
    return "number" if re.fullmatch(r"[\d\s.+\-*/^(){}%$\u00b0\u20ac]*\d[\d\s.+\-*/^(){}%$]*", g) else "other"


SOURCES = {
    "huggingface/Math-Verify": math_verify,
    "hendrycks/math": hendrycks_math,
    "allenai/open-instruct": open_instruct,
    "huggingface/open-r1": lambda repo: _reward_cases(repo, "tests/test_rewards.py"),
    "huggingface/trl": lambda repo: _reward_cases(repo, "tests/test_rewards.py"),
}


def main(root: Path) -> None:
    cases = []
    for name, collect in SOURCES.items():
        repo = root / name.replace("/", "+") / "repo"
        commit = _git(repo, "rev-parse", "HEAD").strip()
        found = collect(repo)
        for case in found:
            cases.append(dict(source=name, commit=commit, **case, scope=scope(case["gold"], case["test"])))
        print(f"{name:28s} {len(found):4d} cases at {commit[:10]}")
    for i, case in enumerate(cases):
        case["id"] = i
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(cases)} cases -> {OUT}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "/work/.mirror"))
