"""Reading and reporting runs: ``summary.json``, the stage tables, per-kind outcomes.

:func:`pipeline_summary` builds a pipeline run's ``summary.json`` (provenance, profile, timings, every
stage's summary and McNemar's tests, :func:`paired_tests`); :func:`load_summary` reads one back, e.g. a
committed reference run under :data:`RESULTS_DIR`. The tables of strings: :func:`stage_table` (GSM8K),
:func:`problems_table` (course-written problems by level), :func:`outcomes_by_kind` (gained, lost, p per kind).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

from helpers.evaluation.provenance import git_commit, machine
from helpers.training.profiles import Profile

RESULTS_DIR = Path(__file__).resolve().parents[2] / "results"  # the committed reference runs
SUMMARY_FILE = "summary.json"
FORMAT_GAIN_FILE = "format_gain.json"  # results/cpu-varied-format/: the main job's claim over seeds
RECORDS_FILE = "eval_records.jsonl"
STAGE_LABELS = {"base": "base", "cold_start": "cold start", "grpo": "cold start + GRPO"}
# (summary key, table row): the rates compared between the stages.
RATES = (
    ("format_rate_strict", "strict format (layout only)"),
    ("format_rate_valid", "valid format: real reasoning + number"),
    ("placeholder_rate", "placeholder / template copy"),
)
# Per-question outcomes tested with McNemar between the cold start and GRPO, and their table row.
PAIRED = {
    "format_valid": RATES[1][1],
    "correct": "accuracy",
    "correct_format_free": "accuracy, format-free (last number)",
}


def paired_tests(first, last) -> dict:
    """McNemar's exact test (:func:`helpers.evaluation.stats.mcnemar`) between two evaluations of the same
    questions, for each per-question outcome in :data:`PAIRED`: ``{outcome: McNemar.as_dict()}``;
    ``lora_only`` counts the questions only ``last`` got, ``base_only`` those only ``first`` got."""
    from helpers.evaluation.stats import mcnemar

    return {key: mcnemar([r[key] for r in first.records], [r[key] for r in last.records]).as_dict() for key in PAIRED}


def tag_problems(result, problems) -> None:
    """Write each problem's tags into the matching record of ``result`` (an ``EvalResult`` of those
    problems, in order): ``level`` (:func:`problem_level`, which :func:`problems_summary` groups by),
    ``ops``, ``kind``, ``template`` and ``family``, which :func:`outcomes_by_kind` can group by."""
    for record, problem in zip(result.records, problems, strict=True):
        record.update(
            level=problem_level(problem),
            ops=problem.ops,
            kind=problem.kind,
            template=problem.template,
            family=problem.family,
        )


def problem_level(problem) -> str:
    """A problem's level: ``"1 op up to 20"`` (:func:`helpers.training.profiles.level_name`), or for the
    transfer family its number range and whether training has its kind: ``"trained kinds, numbers up to
    20"``, ``"new kinds, numbers up to 60"``."""
    from helpers.training.profiles import level_name

    if problem.family != "transfer":
        return level_name(problem.ops, problem.max_number)
    from helpers.data.transfer import IN_TRAINING

    kinds = "trained kinds" if problem.kind in IN_TRAINING else "new kinds"
    return f"{kinds}, numbers up to {problem.max_number}"


def kind_rows(by_stage: dict) -> list[dict]:
    """:func:`outcomes_by_kind` of ``{stage: EvalResult}`` on tagged problems (:func:`tag_problems`),
    between the starting point (cold start, else base) and GRPO."""
    start = "cold_start" if "cold_start" in by_stage else "base"
    records = [
        {"set": "problems", "stage": stage, "index": i, **r}
        for stage in (start, "grpo")
        for i, r in enumerate(by_stage[stage].records)
    ]
    return outcomes_by_kind(records, first=start)


def problems_summary(problems: dict) -> dict:
    """``{"levels": [...], "stages": {stage: {"all": summary, level: summary}}, "mcnemar_start_vs_grpo":
    {"all": tests, level: tests}}`` for ``{stage: EvalResult}`` on course-written problems whose records
    carry a ``level`` (:func:`evaluate_stages`): :func:`helpers.evaluation.scoring.extended_summary` and
    :func:`paired_tests` between the starting point and GRPO."""
    from helpers.evaluation.scoring import EvalResult, extended_summary

    levels = list(dict.fromkeys(r["level"] for r in next(iter(problems.values())).records))

    def part(result, level):
        return EvalResult([r for r in result.records if level == "all" or r["level"] == level])

    start = problems.get("cold_start", problems.get("base"))
    return {
        "levels": levels,
        "stages": {
            stage: {level: extended_summary(part(result, level)) for level in ["all", *levels]}
            for stage, result in problems.items()
        },
        "mcnemar_start_vs_grpo": {
            level: paired_tests(part(start, level), part(problems["grpo"], level)) for level in ["all", *levels]
        },
    }


def outcomes_by_kind(
    records, problems=None, first: str = "cold_start", last: str = "grpo", *, set_name: str = "problems"
) -> list[dict]:
    """Where a gain or a loss came from: per problem kind (``add``, ``sub``, ..., ``add_sub``, ...;
    :data:`helpers.data.problems.KINDS`) how many problems ``first`` and ``last`` got right, how many only
    ``last`` got (gained), only ``first`` got (lost), and McNemar's exact p (:func:`helpers.evaluation.stats.mcnemar`).

    Args:
        records: a run's records (``eval_records.jsonl`` or a reference run's ``eval_outcomes.jsonl``):
            dicts with ``set``, ``stage``, ``index`` and ``correct``; only ``set == set_name`` counts.
        problems: the run's test problems in evaluation order (:func:`eval_problem_set` of its profile):
            record ``index`` i is problem i; None: the records' own ``kind`` and ``ops``
            (:func:`tag_problems` wrote them).
        set_name: ``"problems"`` (in distribution) or ``"transfer"``.

    Returns:
        one row per kind, in order of first appearance: ``{"ops", "kind", "n", first, last, "gained",
        "lost", "p"}`` (counts of problems).

    Raises:
        ValueError: a stage's problem records are not exactly the indices ``0 .. len(problems) - 1``.
    """
    from helpers.evaluation.stats import mcnemar

    correct = {}
    for stage in (first, last):
        rows = sorted(
            (r for r in records if r.get("set") == set_name and r["stage"] == stage), key=lambda r: r["index"]
        )
        if problems is None:
            problems = [SimpleNamespace(kind=r["kind"], ops=r.get("ops", 0)) for r in rows]
        if [r["index"] for r in rows] != list(range(len(problems))):
            raise ValueError(
                f"stage {stage!r}: {len(rows)} problem records, not one for each of the "
                f"{len(problems)} problems (index 0 to {len(problems) - 1})"
            )
        correct[stage] = [bool(r["correct"]) for r in rows]
    table = []
    for kind in dict.fromkeys(p.kind for p in problems):
        idx = [i for i, p in enumerate(problems) if p.kind == kind]
        test = mcnemar([correct[first][i] for i in idx], [correct[last][i] for i in idx])
        table.append(
            {
                "ops": problems[idx[0]].ops,
                "kind": kind,
                "n": len(idx),
                first: sum(correct[first][i] for i in idx),
                last: sum(correct[last][i] for i in idx),
                "gained": test.lora_only,
                "lost": test.base_only,
                "p": test.p_value,
            }
        )
    return table


def pipeline_summary(
    profile: Profile,
    results: dict,
    timings: dict,
    *,
    reward_set: str,
    dataset: str | None,
    cold_start=None,
    reused_cold_start=None,
    command: str | None = None,
    training=None,
    skipped: str | None = None,
    problems: dict | None = None,
    transfer: dict | None = None,
    prompts: str | None = None,
) -> dict:
    """The content of ``summary.json``, as JSON types (lists, not tuples).

    * provenance (command, commit, date, machine), the profile, the cold start (``cold_start``, trained
      in this run, or the folder ``reused_cold_start``, assumed trained on the profile's first
      ``cold_start_examples`` train rows and its ``cold_start_problems``);
    * GRPO's processes and global batch (``training``, a :class:`helpers.training.trainer.TrainingRun`),
      timings (seconds), its prompts (``prompts``, a description), held-out curve and ``effective_config``
      (the trainer's settings after TRL's and Unsloth's rewrites);
    * ``stages``: each stage's :func:`helpers.evaluation.scoring.extended_summary` on GSM8K, and
      :func:`paired_tests` between the starting point and GRPO; ``"problems"`` and ``"transfer"``: the
      same on the course-written problems and the transfer family (``{stage: EvalResult}``), per level
      (:func:`problems_summary`); ``"kinds"``: each set's :func:`outcomes_by_kind`.

    Without ``results`` (evaluation ``skipped``, with the reason) ``stages`` and the tests are empty."""
    from dataclasses import asdict

    from helpers.evaluation.before_after import decoding
    from helpers.evaluation.scoring import extended_summary

    start = results.get("cold_start", results.get("base"))
    processes = training.processes if training else 1
    summary = {
        "command": command
        or f"helpers.training.pipeline.run_pipeline(profile {profile.name!r}, {reward_set!r} rewards)",
        "commit": git_commit(),
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "profile": asdict(profile),
        "reward_set": reward_set,
        "cold_start_examples": (
            cold_start.examples
            if cold_start
            else profile.cold_start_examples + profile.cold_start_problems
            if reused_cold_start
            else 0
        ),
        "cold_start_reused": str(reused_cold_start) if reused_cold_start else None,
        "distributed": {
            "processes": processes,
            "per_device_train_batch_size": profile.per_device_train_batch_size,
            "gradient_accumulation_steps": profile.gradient_accumulation_steps,
            "num_generations": profile.num_generations,
            "global_batch": training.global_batch
            if training
            else profile.per_device_train_batch_size * profile.gradient_accumulation_steps,
        },
        "timings_s": {k: round(v, 1) for k, v in timings.items()},
        "evaluation": (
            {"dataset": dataset, "n": len(start.records), "decoding": decoding(profile, greedy=True)}
            if start
            else {"skipped": skipped or "no evaluation"}
        ),
        "grpo_prompts": prompts,
        "heldout": [{"step": step, **values} for step, values in (training.heldout if training else [])],
        # GRPO's settings as the trainer ran them, after TRL's and Unsloth's rewrites (helpers.training.checks)
        "effective_config": getattr(training, "effective_config", {}) if training else {},
        "stages": {stage: extended_summary(result) for stage, result in results.items()},
        "mcnemar_start_vs_grpo": paired_tests(start, results["grpo"]) if start else {},
        "problems": problems_summary(problems) if problems else {},
        "transfer": problems_summary(transfer) if transfer else {},
        "kinds": {
            name: kind_rows(by_stage) for name, by_stage in (("problems", problems), ("transfer", transfer)) if by_stage
        },
    }
    return json.loads(json.dumps(summary, default=str))  # as summary.json holds it (lists, not tuples)


def stage_table(stages: dict, tests: dict | None = None):
    """Rows: accuracy (correct/n; the ``<answer>`` block), format-free accuracy (the last number; runs
    that recorded it), the format rates of :data:`RATES`, mean tokens; one column per stage
    (``{stage: extended_summary}``, keys of :data:`STAGE_LABELS`); with ``tests`` (:func:`paired_tests`
    of the last two stages), a last column with McNemar's exact p between them. A pandas ``DataFrame``
    of strings. ``stage_table(summary["stages"], summary["mcnemar_start_vs_grpo"])`` is the GSM8K table
    ``make train`` prints."""
    import pandas as pd

    rows = {"accuracy": [f"{s['correct']}/{s['n']}" for s in stages.values()]}
    if all(s.get("accuracy_format_free") is not None for s in stages.values()):
        rows[PAIRED["correct_format_free"]] = [_count(s, "accuracy_format_free") for s in stages.values()]
    for key, label in RATES:
        rows[label] = [_count(s, key) for s in stages.values()]
    rows["mean completion tokens"] = [f"{s['mean_tokens']:.0f}" for s in stages.values()]
    labels = [STAGE_LABELS[k] for k in stages]
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=labels)
    if tests:
        column = f"McNemar p, {labels[-2]} -> {labels[-1]}"
        frame[column] = ""
        for key, row in PAIRED.items():
            if key in tests and row in frame.index:
                frame.loc[row, column] = _p_cell(tests[key])
    return frame


def problems_table(problems: dict):
    """The course-written problems of a summary (``summary["problems"]``, :func:`problems_summary`) as a
    ``DataFrame`` of strings: accuracy and format-free accuracy for all problems and for each level,
    the valid format and mean tokens over all; one column per stage, then McNemar's exact p between the
    last two stages."""
    import pandas as pd

    stages, tests = problems["stages"], problems["mcnemar_start_vs_grpo"]
    rows, paired = {}, {}
    for key, summary_key, name in (
        ("correct", "accuracy", "accuracy"),
        ("correct_format_free", "accuracy_format_free", "format-free accuracy"),
    ):
        for level in ["all", *problems["levels"]]:
            rows[f"{name}, {level}"] = [_count(s[level], summary_key) for s in stages.values()]
            paired[f"{name}, {level}"] = tests[level][key]
    rows["valid format, all"] = [_count(s["all"], "format_rate_valid") for s in stages.values()]
    paired["valid format, all"] = tests["all"]["format_valid"]
    rows["mean completion tokens, all"] = [f"{s['all']['mean_tokens']:.0f}" for s in stages.values()]
    labels = [STAGE_LABELS[k] for k in stages]
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=labels)
    frame[f"McNemar p, {labels[-2]} -> {labels[-1]}"] = [
        _p_cell(paired[row]) if row in paired else "" for row in frame.index
    ]
    return frame


def _count(summary: dict, rate: str) -> str:
    """A rate of a summary as ``"count/n"``."""
    return f"{round(summary[rate] * summary['n'])}/{summary['n']}"


def _p_cell(test: dict) -> str:
    return f"{test['p_value']:.2g} ({test['lora_only']} gained, {test['base_only']} lost)"


def load_summary(run_dir) -> dict:
    """``summary.json`` of a run folder, e.g. ``RESULTS_DIR / "cpu-cold160-checked"`` (a committed
    reference run) or ``outputs/grpo-cpu``.

    Raises:
        FileNotFoundError: the folder has no ``summary.json``.
    """
    path = Path(run_dir) / SUMMARY_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: run `python -m helpers train` to make one")
    return json.loads(path.read_text())


def format_gain_text(path=None) -> str:
    """The committed :func:`cpu_study.seeds.format_gain` (default ``results/cpu-varied-format/format_gain.json``) as
    markdown lines: one per set and measure, then its reading. ``make train`` prints it; README's
    ``format-gain`` block holds it."""
    committed = json.loads(Path(path or RESULTS_DIR / "cpu-varied-format" / FORMAT_GAIN_FILE).read_text())
    lines = [f"What GRPO changes over the committed seeds {committed['seeds']} (after GRPO minus cold start):", ""]
    for r in committed["sets"]:
        lines.append(
            f"- {r['measure']}, {r['set']} ({r['n']}): per seed {r['gains']}, mean {r['mean']:+.1f}, "
            f"95 % t interval [{r['low']:+.1f}, {r['high']:+.1f}]"
        )
    return "\n".join([*lines, "", committed["reading"]])
