"""Our grader and plain Math-Verify against answer-equivalence cases other projects wrote.

Reads ``tests/data/external_grading_cases.json`` (``collect_grading_cases.py``) and prints, per
source and scope, how often each grader gives the verdict the suite expects, then every
in-scope case where ours differs (the speed of both: ``bench_grading.py``).

    python benchmarks/grader_vs_suites.py [--all]    # --all: list out-of-scope differences too

Ours: ``is_equivalent(answer(pred), answer(gold))``, where ``answer`` is ``extract_answer`` when
the text has an ``<answer>`` block or a box, else the text itself. Plain Math-Verify:
``verify(parse(gold), parse(pred))`` with its default configuration.
"""

from __future__ import annotations

import json
import logging
import sys
from collections import defaultdict
from pathlib import Path

from helpers.grading import extract_answer, is_equivalent

CASES = Path(__file__).resolve().parents[1] / "tests" / "data" / "external_grading_cases.json"


def load_cases() -> list[dict]:
    return json.loads(CASES.read_text())


def answer(text: str) -> str:
    """The part of a suite's string the course grades: the answer block or last box, else all."""
    if "<answer>" in text or "\\boxed" in text or "\\fbox" in text:
        return extract_answer(text) or ""
    return text


def ours(case: dict) -> bool:
    return is_equivalent(answer(case["pred"]), answer(case["gold"]), warn=False)


def plain_math_verify(case: dict) -> bool:
    from math_verify import parse, verify

    return bool(verify(parse(case["gold"]), parse(case["pred"])))


def main(show_all: bool = False) -> None:
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    cases = load_cases()
    table: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    differ = []
    for case in cases:
        mine, theirs = ours(case), plain_math_verify(case)
        row = table[(case["source"], case["scope"])]
        row[0] += 1
        row[1] += mine == case["expected"]
        row[2] += theirs == case["expected"]
        if mine != case["expected"] and (show_all or case["scope"] == "number"):
            differ.append((case, mine, theirs))
    print(f"{'source':26s} {'scope':7s} {'cases':>5s} {'ours agree':>10s} {'Math-Verify agrees':>18s}")
    for scope in ("number", "other", "format"):
        total = [0, 0, 0]
        for (source, s), row in sorted(table.items()):
            if s == scope:
                print(f"{source:26s} {scope:7s} {row[0]:5d} {row[1]:10d} {row[2]:18d}")
                total = [a + b for a, b in zip(total, row)]
        print(f"{'all':26s} {scope:7s} {total[0]:5d} {total[1]:10d} {total[2]:18d}")
    print("\nwhere ours differs from the suite (id, expected, ours, Math-Verify, gold, pred):")
    for case, mine, theirs in differ:
        print(
            f"  {case['id']:4d} {case['expected']!s:5s} {mine!s:5s} {theirs!s:5s} "
            f"{case['gold'][:40]!r} {case['pred'][:60]!r}"
        )


if __name__ == "__main__":
    main(show_all="--all" in sys.argv)
