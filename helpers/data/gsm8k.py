"""GSM8K as GRPO prompts: the course's system prompt (:mod:`helpers.course_format`) plus the question.

Sources, in order (:func:`load_gsm8k`):
1. an explicit ``data_dir`` or the ``GSM8K_DIR`` environment variable, holding GSM8K's
   ``train.jsonl`` / ``test.jsonl`` (fields ``question`` and ``answer``; the final answer
   follows ``####``);
2. the hub dataset ``openai/gsm8k`` (config ``main``), unless offline;
3. an embedded sample of 48 grade-school problems written for this course (NOT GSM8K; 40 train,
   8 test; ``assets/sample_problems.jsonl``), so that the notebooks run anywhere. A message says when it is
   used. :func:`running_example` builds the course's running example from GSM8K test question 0.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from helpers.colab.hub import hub_reachable
from helpers.course_format import SYSTEM_PROMPT, extract_hash_answer, make_prompt

SAMPLE_FILE = Path(__file__).parent / "assets" / "sample_problems.jsonl"
SPLITS = ("train", "test")


def load_gsm8k(
    split: str = "train",
    data_dir: str | os.PathLike | None = None,
    n: int | None = None,
    system_prompt: str = SYSTEM_PROMPT,
):
    """Load a GSM8K split as a ``datasets.Dataset`` with ``question``, ``prompt``, ``answer``.

    ``prompt`` is the chat (system + user) that training and evaluation both use; ``answer``
    is the label after ``####``. ``n`` keeps the first ``n`` rows (file order, reproducible).
    The dataset's ``info.description`` names the source used.

    Raises:
        ValueError: unknown split.
        FileNotFoundError: ``data_dir``/``GSM8K_DIR`` is set but lacks ``<split>.jsonl``.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    rows, source = read_rows(split, data_dir)
    if n is not None:
        rows = rows[:n]
    from datasets import Dataset, DatasetInfo

    records = {
        "question": [r["question"] for r in rows],
        "prompt": [make_prompt(r["question"], system_prompt) for r in rows],
        "answer": [extract_hash_answer(r["answer"]) for r in rows],
    }
    return Dataset.from_dict(records, info=DatasetInfo(description=source))


def read_rows(split: str, data_dir: str | os.PathLike | None = None) -> tuple[list[dict], str]:
    """Raw GSM8K rows ``{"question", "answer"}`` (``answer`` = the whole worked solution) and a
    description of their source, from the sources listed in the module docstring."""
    directory = data_dir or os.environ.get("GSM8K_DIR")
    if directory:
        path = Path(directory) / f"{split}.jsonl"
        if not path.exists():
            raise FileNotFoundError(f"{path} not found (GSM8K_DIR / data_dir = {directory})")
        return _read_jsonl(path), f"GSM8K {split} from {path}"
    if hub_reachable():
        from datasets import load_dataset

        hub = load_dataset("openai/gsm8k", "main", split=split)
        rows = [{"question": q, "answer": a} for q, a in zip(hub["question"], hub["answer"])]
        return rows, f"GSM8K {split} from the hub (openai/gsm8k)"
    rows = sample_rows(split)
    print(
        f"GSM8K not found (set GSM8K_DIR or go online): using the embedded sample, "
        f"{len(rows)} course-written problems that are NOT GSM8K."
    )
    return rows, f"embedded course sample ({split}), not GSM8K"


def sample_rows(split: str) -> list[dict]:
    """The embedded sample's rows: every 6th problem is ``test`` (8), the rest ``train`` (40)."""
    rows = _read_jsonl(SAMPLE_FILE)
    return [r for i, r in enumerate(rows) if (i % 6 == 0) == (split == "test")]


def _read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def running_example(tokenizer, data_dir: str | os.PathLike | None = None, index: int = 0):
    """The course's running example (:class:`helpers.example.RunningExample`) for GSM8K *test* question
    ``index`` (default the first): :func:`helpers.example.group_from_solution` on its question and worked
    solution, read at run time (``data_dir``, default ``GSM8K_DIR``, else the hub, else the embedded sample).

    Raises:
        ValueError: the tokenizer has no EOS token, or the solution has no worked steps.
    """
    from helpers.example import group_from_solution

    rows, source = read_rows("test", data_dir)
    return group_from_solution(tokenizer, rows[index]["question"], rows[index]["answer"], source)
