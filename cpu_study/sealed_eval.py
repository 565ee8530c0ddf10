"""Opening the sealed test set (:mod:`cpu_study.sealed`) on a finished ``make train`` run, once.

:func:`open_sealed` evaluates the run's cold start (adapter off) and cold start + GRPO greedily on both
parts of the sealed set, as the pipeline evaluates its test sets, and writes into a ``results/``
folder ``sealed_summary.json`` (per part: :func:`helpers.evaluation.reports.problems_summary` and
per-kind outcomes) and ``sealed_outcomes.jsonl`` (per-problem outcomes, no text); :func:`sealed_rows`
reads the summary back as one row per part. It refuses a folder
that already holds a sealed summary: a run's sealed numbers are measured once, and a recipe chosen
after reading them would no longer be judged on unseen problems.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

SEALED_SUMMARY_FILE = "sealed_summary.json"
SEALED_OUTCOMES_FILE = "sealed_outcomes.jsonl"


class AlreadyOpened(RuntimeError):
    """The results folder already holds this run's sealed evaluation."""


def open_sealed(run_dir, dest, profile) -> dict:
    """Evaluate a finished run on the sealed set and write the two files into ``dest``.

    Args:
        run_dir: the run's folder: ``lora_adapter/`` and its cold start, ``cold_start/`` beside it (as
            ``make train`` writes) or the one a run with ``--cold-start DIR`` reused
            (:func:`helpers.evaluation.adapters.adapter_base`).
        dest: the ``results/`` folder of its reference run.
        profile: the run's profile (decoding and backend; transformers backend only).

    Returns:
        the sealed summary (the content of ``sealed_summary.json``).

    Raises:
        AlreadyOpened: ``dest`` holds ``sealed_summary.json``.
        FileNotFoundError: the run has no adapter, or no cold start for it.
        cpu_study.sealed.SealedSetChanged: the generator no longer draws the committed set.
    """
    from cpu_study.reference import OUTCOME_KEYS
    from cpu_study.sealed import DIGEST, sealed_problems
    from helpers.data.problems import problems_dataset
    from helpers.evaluation.adapters import adapter_base, load_with_adapter
    from helpers.evaluation.before_after import decoding, evaluate_before_after
    from helpers.evaluation.provenance import git_commit
    from helpers.evaluation.reports import kind_rows, problems_summary, tag_problems

    run_dir, dest = Path(run_dir), Path(dest)
    if (dest / SEALED_SUMMARY_FILE).exists():
        raise AlreadyOpened(f"{dest / SEALED_SUMMARY_FILE} exists: this run's sealed set was opened already")
    if not (run_dir / "lora_adapter").exists() or adapter_base(run_dir / "lora_adapter") is None:
        raise FileNotFoundError(
            f"no lora_adapter/ with its cold start (beside it, or named by a reused cold start's adapter "
            f"config) in {run_dir}: is it a finished make train run?"
        )
    sets = sealed_problems()
    model, tokenizer = load_with_adapter(profile, run_dir / "lora_adapter")
    settings = {**decoding(profile, greedy=True), "batch_size": 32}
    summary = {
        "run_dir": str(run_dir),
        "digest": DIGEST,
        "commit": git_commit(),
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "decoding": settings,
        "parts": {},
    }
    dest.mkdir(parents=True, exist_ok=True)
    lines = []
    for name, problems in sets.items():
        start, grpo = evaluate_before_after(
            model,
            tokenizer,
            problems_dataset(problems),
            run_dir / "lora_adapter",
            **settings,
            labels=(f"cold start (sealed {name})", f"cold start + GRPO (sealed {name})"),
        )
        by_stage = {"cold_start": start, "grpo": grpo}
        for result in by_stage.values():
            tag_problems(result, problems)
        summary["parts"][name] = {**problems_summary(by_stage), "kinds": kind_rows(by_stage)}
        for stage, result in by_stage.items():
            for i, record in enumerate(result.records):
                row = {"set": name, "stage": stage, "index": i, **record}
                lines.append(json.dumps({k: row[k] for k in OUTCOME_KEYS if k in row}))
    (dest / SEALED_OUTCOMES_FILE).write_text("\n".join(lines) + "\n")
    (dest / SEALED_SUMMARY_FILE).write_text(json.dumps(summary, indent=2, default=str) + "\n")
    return summary


def sealed_rows(summary: dict) -> list[dict]:
    """One row per part of a sealed summary (:func:`open_sealed`), counts of problems:
    ``{"part", "n", "cold_start", "grpo", "gained", "lost", "p"}``, ``p`` McNemar's exact p between
    the cold start and cold start + GRPO (:func:`helpers.evaluation.stats.mcnemar`)."""
    from cpu_study.seeds import start_vs_grpo

    return [{"part": name, **start_vs_grpo(part)} for name, part in summary["parts"].items()]
