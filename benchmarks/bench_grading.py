"""Grading speed: our grader vs plain Math-Verify, two rows.

1. The 1,319 GSM8K test labels: each becomes a well-formatted completion (the GSM8K solution
   as reasoning, the label as answer), graded against the label.
2. The in-scope cases other projects' suites wrote (``tests/data/external_grading_cases.json``):
   radicals, LaTeX fractions, free text, where Math-Verify's own cost shows.

Prints completions/second and how many grade as expected for both.

    GSM8K_DIR=/path/to/gsm8k python benchmarks/bench_grading.py
"""

import json
import logging
import os
import time
from pathlib import Path

from grader_vs_suites import load_cases
from grader_vs_suites import ours as suite_ours
from grader_vs_suites import plain_math_verify as suite_math_verify

from helpers import symbolic
from helpers.course_format import extract_hash_answer
from helpers.grading import extract_answer, is_equivalent

DEFAULT_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "gsm8k"


def completions_and_golds() -> tuple[list[str], list[str]]:
    """Gold-formatted completions (solution as reasoning) and labels of the test split."""
    path = Path(os.environ.get("GSM8K_DIR", DEFAULT_DIR)) / "test.jsonl"
    rows = [json.loads(line) for line in path.open()]
    golds = [extract_hash_answer(r["answer"]) for r in rows]
    texts = [
        f"<reasoning>\n{r['answer'].split('####')[0].strip()}\n</reasoning>\n<answer>\n{g}\n</answer>\n"
        for r, g in zip(rows, golds)
    ]
    return texts, golds


def ours(texts, golds) -> list[bool]:
    return [is_equivalent(extract_answer(t), g) for t, g in zip(texts, golds)]


def plain_math_verify(texts, golds) -> list[bool]:
    from math_verify import parse, verify

    return [verify(parse(g), parse(t)) for t, g in zip(texts, golds)]


def external_cases() -> list[dict]:
    """The in-scope external cases, graded by ``grader_vs_suites`` (this folder)."""
    return [c for c in load_cases() if c["scope"] == "number"]


def row(name, grade, texts, golds, expected) -> None:
    symbolic.VERDICT_CACHE.clear()  # no cached Math-Verify verdicts from the warm-up
    start = time.perf_counter()
    results = grade(texts, golds)
    seconds = time.perf_counter() - start
    right = sum(r == e for r, e in zip(results, expected))
    print(f"{name:24s} {len(texts) / seconds:12,.0f} completions/s   as expected {right}/{len(texts)}")


def main() -> None:
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    texts, golds = completions_and_golds()
    plain_math_verify(texts[:5], golds[:5])  # import and warm up both before timing
    ours(texts[:5], golds[:5])
    print(f"{len(texts)} GSM8K test completions")
    for name, grade in [("ours (helpers.grading)", ours), ("plain Math-Verify", plain_math_verify)]:
        row(name, grade, texts, golds, [True] * len(texts))
    cases = external_cases()
    print(f"\n{len(cases)} in-scope cases from other projects' test suites")
    for name, grade in [("ours (helpers.grading)", suite_ours), ("plain Math-Verify", suite_math_verify)]:
        row(name, lambda cs, _, grade=grade: [grade(c) for c in cs], cases, None, [c["expected"] for c in cases])


if __name__ == "__main__":
    main()
