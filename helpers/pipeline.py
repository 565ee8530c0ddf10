"""The course's main job in three stages: cold start -> GRPO -> evaluation of every stage.

:func:`run_pipeline` is what ``make train`` and ``python -m helpers train`` run. It writes, under
the run's folder (default ``outputs/grpo-<profile>``):

* ``cold_start/`` - the merged cold-start model (:mod:`helpers.cold_start`), when the profile has
  one, and ``cold_start_metrics.csv`` (its SFT loss per step);
* ``lora_adapter/``, ``metrics.csv``, ``training_curves.png`` - GRPO (:func:`helpers.training.train`)
  on top of the cold start, which is also the reference model, on the profile's curriculum
  (:mod:`helpers.curriculum`) with the held-out accuracy every few steps (:mod:`helpers.heldout`);
* ``summary.json`` and ``eval_records.jsonl`` - the base model, the cold start and cold start +
  GRPO on the same held-out course-written test problems, by difficulty (:mod:`helpers.problems`;
  :func:`problems_table` prints them) and on the same GSM8K test questions (:func:`stage_table`),
  greedy, with McNemar's exact test between the cold start and GRPO.

Under ``accelerate launch`` (several processes) every process trains the cold start and GRPO, the
main one alone writes the files and evaluates (:mod:`helpers.distributed` says why).
"""

from __future__ import annotations

import json
import platform
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from .profiles import Profile

RESULTS_DIR = Path(__file__).resolve().parent.parent / "results"  # the committed reference runs
SUMMARY_FILE = "summary.json"
RECORDS_FILE = "eval_records.jsonl"
STAGE_LABELS = {"base": "base", "cold_start": "cold start", "grpo": "cold start + GRPO"}
# (summary key, table row): the rates compared between the stages.
RATES = (("format_rate_strict", "strict format (layout only)"),
         ("format_rate_valid", "valid format: real reasoning + number"),
         ("placeholder_rate", "placeholder / template copy"))
# Per-question outcomes tested with McNemar between the cold start and GRPO, and their table row.
PAIRED = {"format_valid": RATES[1][1], "correct": "accuracy",
          "correct_format_free": "accuracy, format-free (last number)"}
# Course-written test problems: the final evaluation and the held-out curve use their own draws.
EVAL_SEED, HELDOUT_SEED = 0, 1


@dataclass
class PipelineRun:
    """What a run wrote and measured. ``summary`` is the content of ``summary.json``."""

    output_dir: Path
    summary: dict
    summary_json: Path
    records_jsonl: Path
    training: object  # helpers.training.TrainingRun

    def table(self):
        """The GSM8K stage table (:func:`stage_table`) of this run."""
        return stage_table(self.summary["stages"], self.summary["mcnemar_start_vs_grpo"])

    def problems_table(self):
        """The course-written problems' table (:func:`problems_table`), or None without them."""
        return problems_table(self.summary["problems"]) if self.summary.get("problems") else None


def run_pipeline(profile: Profile, output_dir=None, *, reward_set: str = "checked",
                 cold_start_dir=None, model_path=None, command: str | None = None) -> PipelineRun | None:
    """Cold start (if the profile has one) -> GRPO -> evaluation; writes the files listed above.

    With several processes (``accelerate launch``) all of them train; the main process evaluates and
    returns the :class:`PipelineRun`, the others return None after GRPO. Under DeepSpeed ZeRO-3 the
    weights are sharded and the evaluation is skipped (``summary.json`` says so; evaluate the
    adapter afterwards with ``python -m helpers evaluate``).

    Args:
        profile: all sizes and settings (:mod:`helpers.profiles`; :func:`~helpers.profiles.shortened`
            for a smoke run).
        output_dir: default ``outputs/grpo-<profile>``.
        reward_set: ``"checked"`` (:data:`helpers.rewards.REWARD_FUNCS`) or ``"layout"`` (the
            hackable :data:`helpers.rewards.LAYOUT_REWARD_FUNCS`).
        cold_start_dir: an existing merged cold-start model to reuse instead of training one.
        model_path: local base checkpoint instead of the profile's model.
        command: how the run was started, recorded in ``summary.json``.

    Raises:
        ValueError: unknown ``reward_set``.
        SetupError: settings this launch cannot run, before any model loads
            (:func:`helpers.distributed.check_launch`: e.g. a global batch of partial groups).
        FileNotFoundError: ``cold_start_dir`` has no model.
    """
    from .cold_start import train_cold_start
    from .distributed import check_launch, is_main_process, zero3_launch
    from .rewards import REWARD_SETS
    from .training import train

    if reward_set not in REWARD_SETS:
        raise ValueError(f"unknown reward set {reward_set!r}; choose one of {sorted(REWARD_SETS)}")
    n_sft = profile.cold_start_examples
    check_launch(profile, cold_start=cold_start_dir is None and n_sft > 0)
    output_dir = Path(output_dir or f"outputs/grpo-{profile.name}")
    output_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    timings, cold = {}, None
    if cold_start_dir is not None:
        cold_start_dir = Path(cold_start_dir)
        if not (cold_start_dir / "config.json").exists():
            raise FileNotFoundError(f"{cold_start_dir} holds no model (no config.json)")
        print(f"Cold start: reusing {cold_start_dir}")
    elif n_sft > 0:
        written = f" and {profile.cold_start_problems} course-written worked problems" if profile.cold_start_problems else ""
        print(f"Stage 1/3 - cold start: SFT on {n_sft} formatted GSM8K train solutions{written}")
        cold = train_cold_start(profile, output_dir, model_path=model_path)
        cold_start_dir, timings["cold_start_s"] = cold.model_dir, cold.seconds
    prompts = grpo_prompts(profile)
    heldout = heldout_problems(profile)
    print(f"Stage 2/3 - GRPO: {profile.max_steps} steps, {reward_set} rewards, prompts: "
          f"{prompts.info.description}" + (f"; held-out accuracy on {len(heldout)} course-written test problems "
                                           f"every {profile.heldout_every} steps" if heldout else ""))
    run = train(profile, output_dir=output_dir, dataset=prompts, reward_funcs=REWARD_SETS[reward_set],
                model_path=cold_start_dir or model_path, heldout=heldout or None)
    heldout_s = sum(values["heldout/seconds"] for _, values in run.heldout)
    timings["grpo_s"] = run.seconds_per_step * run.trainer.state.global_step
    timings["grpo_per_step_s"] = (timings["grpo_s"] - heldout_s) / max(run.trainer.state.global_step, 1)
    timings["heldout_s"] = heldout_s
    if not is_main_process():
        return None  # the main process evaluates alone; the other processes end here
    results, problems, dataset, skipped = {}, {}, None, None
    if zero3_launch():
        skipped = (f"DeepSpeed ZeRO-3 shards the weights; run `python -m helpers evaluate --adapter "
                   f"{run.adapter_dir}` on one GPU")
        print(f"Stage 3/3 - evaluation: skipped ({skipped})")
    else:
        print(f"Stage 3/3 - evaluation, greedy: {profile.eval_problems} course-written test problems of each "
              f"difficulty {list(profile.eval_levels)}, {profile.eval_questions or 'all'} GSM8K test questions")
        t0 = time.perf_counter()
        (results, problems), dataset = evaluate_stages(
            profile, run.trainer.model, run.trainer.processing_class, run.adapter_dir,
            has_cold_start=cold_start_dir is not None, model_path=model_path)
        timings["evaluation_s"] = time.perf_counter() - t0
    timings["total_s"] = time.perf_counter() - started
    summary = build_summary(profile, results, timings, reward_set=reward_set, dataset=dataset,
                            cold_start=cold, reused_cold_start=cold_start_dir if cold is None else None,
                            command=command, training=run, skipped=skipped, problems=problems,
                            prompts=prompts.info.description)
    summary_json = output_dir / SUMMARY_FILE
    summary_json.write_text(json.dumps(summary, indent=2) + "\n")
    records_jsonl = output_dir / RECORDS_FILE
    with open(records_jsonl, "w", encoding="utf-8") as f:
        for test_set, by_stage in (("gsm8k", results), ("problems", problems)):
            for stage, result in by_stage.items():
                for i, record in enumerate(result.records):
                    f.write(json.dumps({"set": test_set, "stage": stage, "index": i, **record},
                                       ensure_ascii=False) + "\n")
    return PipelineRun(output_dir, summary, summary_json, records_jsonl, run)


def grpo_prompts(profile: Profile):
    """GRPO's prompts: the profile's curriculum in training order (:func:`helpers.curriculum.curriculum_dataset`,
    GSM8K rows after the cold start's), or without one the GSM8K train questions the cold start has not
    seen (shuffled by the trainer)."""
    import math

    from .data import load_gsm8k
    from .distributed import prompts_per_step

    train_rows = load_gsm8k("train")
    skip = profile.cold_start_examples if profile.cold_start_examples < len(train_rows) else 0
    if not profile.curriculum:
        rows = train_rows.select(range(skip, len(train_rows)))
        rows.info.description = f"{train_rows.info.description} (row {skip} on)"
        return rows
    from .curriculum import curriculum_dataset

    return curriculum_dataset(profile.curriculum, batches=math.ceil(profile.max_steps / profile.num_iterations),
                              prompts_per_batch=prompts_per_step(profile),
                              seed=profile.seed, gsm8k_skip=skip)


def eval_problem_set(profile: Profile, n: int | None = None, seed: int = EVAL_SEED) -> list:
    """``n`` (default ``profile.eval_problems``) course-written *test* problems of each difficulty in
    ``profile.eval_levels``, in that order (:func:`helpers.problems.make_problems`; never trained on)."""
    from .problems import make_problems

    n = profile.eval_problems if n is None else n
    if n < 1:
        return []
    return [p for ops, top in profile.eval_levels
            for p in make_problems(n, ops=ops, max_number=top, split="test", seed=seed)]


def heldout_problems(profile: Profile) -> list[dict]:
    """The held-out set of the training curve: ``profile.heldout_problems`` course-written test problems,
    split evenly over ``profile.eval_levels`` (their own draw, :data:`HELDOUT_SEED`); [] when off."""
    if profile.heldout_problems < 1:
        return []
    per_level = max(1, profile.heldout_problems // len(profile.eval_levels))
    return [p.to_dict() for p in eval_problem_set(profile, per_level, HELDOUT_SEED)]


def evaluate_stages(profile: Profile, model, tokenizer, adapter_dir, *, has_cold_start: bool,
                    model_path=None):
    """Evaluate every stage greedily on the course-written test problems (:func:`eval_problem_set`) and
    the profile's first ``eval_questions`` GSM8K test questions.

    ``model`` is the trained policy (PEFT, or Unsloth with vLLM): with its adapter off it is the
    starting point (the cold start, or the base model without one), with it on it is GRPO's
    result (:func:`helpers.comparison.evaluate_before_after`). The base model is loaded
    separately when there was a cold start (transformers backend only: a second vLLM engine does
    not fit next to the first on a T4).

    Returns:
        ``(({stage: EvalResult} on GSM8K, {stage: EvalResult} on the problems), description of the
        GSM8K data)``, stages in pipeline order; problem records carry their ``level``.
    """
    from .comparison import decoding, evaluate_before_after
    from .data import load_gsm8k
    from .evaluation import evaluate
    from .models import load_model
    from .problems import problems_dataset

    test = load_gsm8k("test")
    sets = {"gsm8k": (test, min(profile.eval_questions or len(test), len(test)))}
    problems = eval_problem_set(profile)
    if problems:
        sets["problems"] = (problems_dataset(problems), len(problems))
    settings = {**decoding(profile, greedy=True), "batch_size": 32}
    start = "cold_start" if has_cold_start else "base"
    out = {name: {} for name in sets}
    base_model = None
    if has_cold_start and profile.backend == "transformers":
        base_model, base_tokenizer = load_model(profile, model_path, lora=False)
    elif has_cold_start:
        print("Base model not evaluated: with vLLM only the trained policy's engine fits in memory.")
    for name, (data, n) in sets.items():
        label = "" if name == "gsm8k" else " (problems)"
        if base_model is not None:
            out[name]["base"] = evaluate(base_model, base_tokenizer, data, n=n, desc=STAGE_LABELS["base"] + label,
                                         **settings)
        out[name][start], out[name]["grpo"] = evaluate_before_after(
            model, tokenizer, data, adapter_dir, n=n, **settings,
            labels=(STAGE_LABELS[start] + label, STAGE_LABELS["grpo"] + label))
    del base_model
    for result in out.get("problems", {}).values():
        tag_levels(result, problems)
    return (out["gsm8k"], out.get("problems", {})), test.info.description


def tag_levels(result, problems) -> None:
    """Write each problem's difficulty (:func:`helpers.curriculum.source_name`, e.g. ``"1 op up to
    20"``) into the matching record of ``result`` (an ``EvalResult`` of those problems, in order), as
    :func:`problems_summary` needs."""
    from .curriculum import source_name

    for record, problem in zip(result.records, problems, strict=True):
        record["level"] = source_name(problem.ops, problem.max_number)


def paired_tests(first, last) -> dict:
    """McNemar's exact test (:func:`helpers.statistics.mcnemar`) between two evaluations of the same
    questions, for each per-question outcome in :data:`PAIRED`: ``{outcome: McNemar.as_dict()}``;
    ``lora_only`` counts the questions only ``last`` got, ``base_only`` those only ``first`` got."""
    from .statistics import mcnemar

    return {key: mcnemar([r[key] for r in first.records], [r[key] for r in last.records]).as_dict()
            for key in PAIRED}


def problems_summary(problems: dict) -> dict:
    """``{"levels": [...], "stages": {stage: {"all": summary, level: summary}}, "mcnemar_start_vs_grpo":
    {"all": tests, level: tests}}`` for ``{stage: EvalResult}`` on course-written problems whose records
    carry a ``level`` (:func:`evaluate_stages`): :func:`helpers.comparison.extended_summary` and
    :func:`paired_tests` between the starting point and GRPO."""
    from .comparison import extended_summary
    from .evaluation import EvalResult

    levels = list(dict.fromkeys(r["level"] for r in next(iter(problems.values())).records))

    def part(result, level):
        return EvalResult([r for r in result.records if level == "all" or r["level"] == level])

    start = problems.get("cold_start", problems.get("base"))
    return {"levels": levels,
            "stages": {stage: {level: extended_summary(part(result, level)) for level in ["all", *levels]}
                       for stage, result in problems.items()},
            "mcnemar_start_vs_grpo": {level: paired_tests(part(start, level), part(problems["grpo"], level))
                                      for level in ["all", *levels]}}


def outcomes_by_kind(records, problems, first: str = "cold_start", last: str = "grpo") -> list[dict]:
    """Where a gain or a loss came from: per problem kind (``add``, ``sub``, ..., ``add_sub``, ...;
    :data:`helpers.problems.KINDS`) how many problems ``first`` and ``last`` got right, how many only
    ``last`` got (gained), only ``first`` got (lost), and McNemar's exact p (:func:`helpers.statistics.mcnemar`).

    Args:
        records: a run's records (``eval_records.jsonl`` or a reference run's ``eval_outcomes.jsonl``):
            dicts with ``set``, ``stage``, ``index`` and ``correct``; only ``set == "problems"`` counts.
        problems: the run's test problems in evaluation order (:func:`eval_problem_set` of its profile):
            record ``index`` i is problem i.

    Returns:
        one row per kind, in order of first appearance: ``{"ops", "kind", "n", first, last, "gained",
        "lost", "p"}`` (counts of problems).

    Raises:
        ValueError: a stage's problem records are not exactly the indices ``0 .. len(problems) - 1``.
    """
    from .statistics import mcnemar

    correct = {}
    for stage in (first, last):
        rows = sorted((r for r in records if r.get("set") == "problems" and r["stage"] == stage),
                      key=lambda r: r["index"])
        if [r["index"] for r in rows] != list(range(len(problems))):
            raise ValueError(f"stage {stage!r}: {len(rows)} problem records, not one for each of the "
                             f"{len(problems)} problems (index 0 to {len(problems) - 1})")
        correct[stage] = [bool(r["correct"]) for r in rows]
    table = []
    for kind in dict.fromkeys(p.kind for p in problems):
        idx = [i for i, p in enumerate(problems) if p.kind == kind]
        test = mcnemar([correct[first][i] for i in idx], [correct[last][i] for i in idx])
        table.append({"ops": problems[idx[0]].ops, "kind": kind, "n": len(idx),
                      first: sum(correct[first][i] for i in idx), last: sum(correct[last][i] for i in idx),
                      "gained": test.lora_only, "lost": test.base_only, "p": test.p_value})
    return table


def build_summary(profile: Profile, results: dict, timings: dict, *, reward_set: str, dataset: str | None,
                  cold_start=None, reused_cold_start=None, command: str | None = None, training=None,
                  skipped: str | None = None, problems: dict | None = None, prompts: str | None = None) -> dict:
    """The content of ``summary.json``: provenance (command, commit, date, machine), the profile,
    the cold start (``cold_start``, trained in this run, or the folder ``reused_cold_start``, assumed
    trained on the profile's ``cold_start_examples`` first train rows, as GRPO's prompts skip them,
    and its ``cold_start_problems``),
    the processes and global batch of GRPO (``training``, a :class:`helpers.training.TrainingRun`),
    timings (seconds), GRPO's prompts (``prompts``, a description) and its held-out curve, each
    stage's :func:`helpers.comparison.extended_summary` on GSM8K (``stages``) and :func:`paired_tests`
    between the starting point and GRPO; on the course-written problems (``problems``: ``{stage: EvalResult}``)
    the same under ``"problems"``, for all of them and for each level (:func:`problems_summary`).
    Without ``results`` (evaluation ``skipped``, with the reason) ``stages`` and the tests are empty."""
    from dataclasses import asdict

    from .comparison import decoding, extended_summary

    start = results.get("cold_start", results.get("base"))
    processes = training.processes if training else 1
    summary = {
        "command": command or f"helpers.pipeline.run_pipeline(profile {profile.name!r}, {reward_set!r} rewards)",
        "commit": _git_commit(),
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {_cpu_count()} CPU cores, python {platform.python_version()}",
        "profile": asdict(profile),
        "reward_set": reward_set,
        "cold_start_examples": (cold_start.examples if cold_start else
                                profile.cold_start_examples + profile.cold_start_problems if reused_cold_start
                                else 0),
        "cold_start_reused": str(reused_cold_start) if reused_cold_start else None,
        "distributed": {"processes": processes,
                        "per_device_train_batch_size": profile.per_device_train_batch_size,
                        "gradient_accumulation_steps": profile.gradient_accumulation_steps,
                        "num_generations": profile.num_generations,
                        "global_batch": training.global_batch if training else
                        profile.per_device_train_batch_size * profile.gradient_accumulation_steps},
        "timings_s": {k: round(v, 1) for k, v in timings.items()},
        "evaluation": ({"dataset": dataset, "n": len(start.records), "decoding": decoding(profile, greedy=True)}
                       if start else {"skipped": skipped or "no evaluation"}),
        "grpo_prompts": prompts,
        "heldout": [{"step": step, **values} for step, values in (training.heldout if training else [])],
        "stages": {stage: extended_summary(result) for stage, result in results.items()},
        "mcnemar_start_vs_grpo": paired_tests(start, results["grpo"]) if start else {},
        "problems": problems_summary(problems) if problems else {},
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
        rows[PAIRED["correct_format_free"]] = [f"{round(s['accuracy_format_free'] * s['n'])}/{s['n']}"
                                               for s in stages.values()]
    for key, label in RATES:
        rows[label] = [f"{round(s[key] * s['n'])}/{s['n']}" for s in stages.values()]
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
    for key, name in (("correct", "accuracy"), ("correct_format_free", "format-free accuracy")):
        summary_key = "accuracy" if key == "correct" else "accuracy_format_free"
        for level in ["all", *problems["levels"]]:
            row = f"{name}, {level}"
            rows[row] = [f"{round(s[level][summary_key] * s[level]['n'])}/{s[level]['n']}" for s in stages.values()]
            paired[row] = tests[level][key]
    rows["valid format, all"] = [f"{round(s['all']['format_rate_valid'] * s['all']['n'])}/{s['all']['n']}"
                                 for s in stages.values()]
    paired["valid format, all"] = tests["all"]["format_valid"]
    rows["mean completion tokens, all"] = [f"{s['all']['mean_tokens']:.0f}" for s in stages.values()]
    labels = [STAGE_LABELS[k] for k in stages]
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=labels)
    frame[f"McNemar p, {labels[-2]} -> {labels[-1]}"] = [_p_cell(paired[row]) if row in paired else ""
                                                         for row in frame.index]
    return frame


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


REFERENCE_FILES = ("summary.json", "metrics.csv", "cold_start_metrics.csv", "training_curves.png", "pass_at_k.json")
OUTCOME_KEYS = ("set", "stage", "index", "level", "correct", "correct_format_free", "format_strict", "format_valid",
                "placeholder", "tokens")


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


def _git_commit() -> str | None:
    """The current commit (``+dirty`` with uncommitted changes), or None outside a git clone."""
    try:
        root = Path(__file__).resolve().parent.parent
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
        return commit + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def _cpu_count() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
