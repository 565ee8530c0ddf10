"""A finished run's light files, for ``results/``: :func:`save_reference` (no GSM8K text, no completion)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.evaluation.reports import RECORDS_FILE, SUMMARY_FILE

REFERENCE_FILES = (
    "summary.json",
    "metrics.csv",
    "groups.jsonl",
    "cold_start_metrics.csv",
    "training_curves.png",
    "pass_at_k.json",
)


OUTCOME_KEYS = (
    "set",
    "stage",
    "index",
    "level",
    "ops",
    "kind",
    "template",
    "family",
    "correct",
    "correct_format_free",
    "format_strict",
    "format_valid",
    "placeholder",
    "tokens",
)


def save_reference(run_dir, dest) -> Path:
    """Copy a finished run's light files into ``dest`` (a ``results/`` folder to commit):
    :data:`REFERENCE_FILES` and ``eval_outcomes.jsonl``, the per-question outcomes of
    ``eval_records.jsonl`` without any text (:data:`OUTCOME_KEYS`: no GSM8K question, no
    completion). Returns ``dest``.

    Raises:
        FileNotFoundError: ``run_dir`` lacks ``summary.json`` or ``eval_records.jsonl``.
    """
    import shutil

    run_dir, dest = Path(run_dir), Path(dest)
    for name in (SUMMARY_FILE, RECORDS_FILE):
        if not (run_dir / name).exists():
            raise FileNotFoundError(f"{run_dir / name} not found: is {run_dir} a finished run?")
    dest.mkdir(parents=True, exist_ok=True)
    for name in REFERENCE_FILES:
        if (run_dir / name).exists():
            shutil.copy2(run_dir / name, dest / name)
    with open(run_dir / RECORDS_FILE, encoding="utf-8") as src, open(dest / "eval_outcomes.jsonl", "w") as out:
        for line in src:
            record = json.loads(line)
            out.write(json.dumps({key: record[key] for key in OUTCOME_KEYS if key in record}) + "\n")
    return dest
