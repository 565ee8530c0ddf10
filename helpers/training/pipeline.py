"""The course's main job in three stages: cold start -> GRPO -> evaluation of every stage.

:func:`run_pipeline` is what ``make train`` and ``python -m helpers train`` run. It writes, under the run's
folder (default ``outputs/grpo-<profile>``):

* ``cold_start/`` and ``cold_start_metrics.csv`` - the merged cold-start model and its SFT loss per step
  (:mod:`helpers.training.cold_start`), when the profile has one;
* ``lora_adapter/``, ``metrics.csv``, ``training_curves.png`` - GRPO (:func:`helpers.training.trainer.train`)
  from the cold start (also the reference model when ``beta > 0``), on the profile's curriculum
  (:func:`helpers.data.problem_sets.grpo_prompts`), with the held-out accuracy every few steps;
* ``summary.json`` and ``eval_records.jsonl`` - the base model, the cold start and cold start + GRPO
  (:func:`evaluate_stages`), greedy, on the same course-written test problems by difficulty level
  (:func:`helpers.evaluation.reports.problems_table`) and GSM8K test questions
  (:func:`helpers.evaluation.reports.stage_table`), with McNemar's exact test between cold start and GRPO.

Under ``accelerate launch`` every process trains; the main one alone evaluates and writes the files
(:mod:`helpers.training.distributed` says why).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from helpers.data.problem_sets import eval_problem_set, grpo_prompts, heldout_problems, transfer_problem_set
from helpers.evaluation.reports import (
    RECORDS_FILE,
    STAGE_LABELS,
    SUMMARY_FILE,
    pipeline_summary,
    problems_table,
    stage_table,
    tag_problems,
)
from helpers.training.profiles import Profile


@dataclass
class PipelineRun:
    """What a run wrote and measured. ``summary`` is the content of ``summary.json``."""

    output_dir: Path
    summary: dict
    summary_json: Path
    records_jsonl: Path
    training: object  # helpers.training.trainer.TrainingRun

    def table(self):
        """The GSM8K stage table (:func:`stage_table`) of this run."""
        return stage_table(self.summary["stages"], self.summary["mcnemar_start_vs_grpo"])

    def problems_table(self, set_name: str = "problems"):
        """The table (:func:`problems_table`) of the course-written problems in distribution
        (``"problems"``) or of the transfer family (``"transfer"``), or None without them."""
        return problems_table(self.summary[set_name]) if self.summary.get(set_name) else None

    def kinds_table(self, set_name: str = "problems"):
        """Per kind (:func:`helpers.evaluation.reports.outcomes_by_kind`): right before and after
        GRPO, gained, lost, McNemar's p; a ``DataFrame``, or None without the set."""
        import pandas as pd

        rows = self.summary.get("kinds", {}).get(set_name)
        return pd.DataFrame(rows).round({"p": 3}) if rows else None


def run_pipeline(
    profile: Profile,
    output_dir=None,
    *,
    reward_set: str = "checked",
    reward_funcs=None,
    cold_start_dir=None,
    model_path=None,
    command: str | None = None,
) -> PipelineRun | None:
    """Cold start (if the profile has one) -> GRPO -> evaluation; writes the files listed above.

    Returns the :class:`PipelineRun` on the main process, None on the others (after GRPO). Under DeepSpeed
    ZeRO-3 the weights are sharded and the evaluation is skipped (``summary.json`` says so; evaluate the
    adapter afterwards with ``python -m helpers evaluate``).

    Args:
        profile: all sizes and settings (:mod:`helpers.training.profiles`; :func:`~helpers.training.profiles.shortened`
            for a smoke run).
        output_dir: default ``outputs/grpo-<profile>``.
        reward_set: a name in :data:`helpers.rewards.REWARD_SETS` (``"checked"``, or ``"layout"``: the hackable
            :data:`helpers.rewards.LAYOUT_REWARD_FUNCS`), or any name when ``reward_funcs`` is given.
        reward_funcs: the reward functions to train with, recorded under ``reward_set``; default
            ``REWARD_SETS[reward_set]``.
        cold_start_dir: an existing merged cold-start model to reuse instead of training one.
        model_path: local base checkpoint instead of the profile's model.
        command: how the run was started, recorded in ``summary.json``.

    Raises:
        ValueError: unknown ``reward_set`` and no ``reward_funcs``.
        SetupError: settings this launch cannot run, before any model loads
            (:func:`helpers.training.distributed.check_launch`: e.g. a global batch of partial groups).
        FileNotFoundError: ``cold_start_dir`` has no model.
    """
    from helpers.rewards import REWARD_SETS
    from helpers.training.cold_start import train_cold_start
    from helpers.training.distributed import check_launch, is_main_process, zero3_launch
    from helpers.training.trainer import train

    if reward_funcs is None and reward_set not in REWARD_SETS:
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
        n_written = profile.cold_start_problems
        written = f" and {n_written} course-written worked problems" if n_written else ""
        print(f"Stage 1/3 - cold start: SFT on {n_sft} formatted GSM8K train solutions{written}")
        cold = train_cold_start(profile, output_dir, model_path=model_path)
        cold_start_dir, timings["cold_start_s"] = cold.model_dir, cold.seconds
    prompts = grpo_prompts(profile)
    heldout = heldout_problems(profile)
    watched = f"; held-out accuracy on {len(heldout)} course-written test problems every {profile.heldout_every} steps"
    print(
        f"Stage 2/3 - GRPO: {profile.max_steps} steps, {reward_set} rewards, prompts: {prompts.info.description}"
        + (watched if heldout else "")
    )
    run = train(
        profile,
        output_dir=output_dir,
        dataset=prompts,
        reward_funcs=REWARD_SETS[reward_set] if reward_funcs is None else reward_funcs,
        model_path=cold_start_dir or model_path,
        heldout=heldout or None,
    )
    heldout_s = sum(values["heldout/seconds"] for _, values in run.heldout)
    timings["grpo_s"] = run.seconds_per_step * run.trainer.state.global_step
    timings["grpo_per_step_s"] = (timings["grpo_s"] - heldout_s) / max(run.trainer.state.global_step, 1)
    timings["heldout_s"] = heldout_s
    if not is_main_process():
        return None  # the main process evaluates alone; the other processes end here
    evaluated, dataset, skipped = {}, None, None
    if zero3_launch():
        skipped = (
            f"DeepSpeed ZeRO-3 shards the weights; run `python -m helpers evaluate --adapter "
            f"{run.adapter_dir}` on one GPU"
        )
        print(f"Stage 3/3 - evaluation: skipped ({skipped})")
    else:
        print(
            f"Stage 3/3 - evaluation, greedy: {profile.eval_problems} course-written test problems of each "
            f"difficulty {list(profile.eval_levels)}, {profile.transfer_problems} transfer problems of each kind "
            f"and number range, {profile.eval_questions or 'all'} GSM8K test questions"
        )
        t0 = time.perf_counter()
        evaluated, dataset = evaluate_stages(
            profile,
            run.trainer.model,
            run.trainer.processing_class,
            run.adapter_dir,
            has_cold_start=cold_start_dir is not None,
            model_path=model_path,
        )
        timings["evaluation_s"] = time.perf_counter() - t0
    timings["total_s"] = time.perf_counter() - started
    sets = {name: evaluated.get(name, {}) for name in ("gsm8k", "problems", "transfer")}
    summary = pipeline_summary(
        profile,
        sets["gsm8k"],
        timings,
        reward_set=reward_set,
        dataset=dataset,
        cold_start=cold,
        reused_cold_start=cold_start_dir if cold is None else None,
        command=command,
        training=run,
        skipped=skipped,
        problems=sets["problems"],
        transfer=sets["transfer"],
        prompts=prompts.info.description,
    )
    summary_json = output_dir / SUMMARY_FILE
    summary_json.write_text(json.dumps(summary, indent=2) + "\n")
    records_jsonl = output_dir / RECORDS_FILE
    with open(records_jsonl, "w", encoding="utf-8") as f:
        for test_set, by_stage in sets.items():
            for stage, result in by_stage.items():
                for i, record in enumerate(result.records):
                    row = {"set": test_set, "stage": stage, "index": i, **record}
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return PipelineRun(output_dir, summary, summary_json, records_jsonl, run)


def evaluate_stages(profile: Profile, model, tokenizer, adapter_dir, *, has_cold_start: bool, model_path=None):
    """Evaluate every stage greedily on the profile's first ``eval_questions`` GSM8K test questions, its
    course-written test problems (:func:`eval_problem_set`) and the transfer family's
    (:func:`transfer_problem_set`). The base model, which never writes the answer format (none of the
    course-written problems in ``results/cpu-curriculum``), is evaluated on GSM8K only.

    ``model`` is the trained policy (PEFT, or Unsloth with vLLM): adapter off, the starting point (the cold
    start, or the base model without one); adapter on, GRPO's result
    (:func:`helpers.evaluation.before_after.evaluate_before_after`). After a cold start the base model is
    loaded separately (transformers backend only: a second vLLM engine does not fit beside the first on a T4).

    Returns:
        ``({"gsm8k" | "problems" | "transfer": {stage: EvalResult}}, description of the GSM8K data)``,
        stages in pipeline order, sets without problems left out; problem records carry their tags
        (:func:`helpers.evaluation.reports.tag_problems`).
    """
    from helpers.data.gsm8k import load_gsm8k
    from helpers.data.problems import problems_dataset
    from helpers.evaluation.before_after import decoding, evaluate_before_after
    from helpers.evaluation.scoring import evaluate
    from helpers.training.models import load_model

    test = load_gsm8k("test")
    sets = {"gsm8k": (test, min(profile.eval_questions or len(test), len(test)))}
    drawn = {"problems": eval_problem_set(profile), "transfer": transfer_problem_set(profile)}
    for name, problems in drawn.items():
        if problems:
            sets[name] = (problems_dataset(problems), len(problems))
    settings = {**decoding(profile, greedy=True), "batch_size": 32}
    start = "cold_start" if has_cold_start else "base"
    out = {name: {} for name in sets}
    base_model = None
    if has_cold_start and profile.backend == "transformers":
        base_model, base_tokenizer = load_model(profile, model_path, lora=False)
    elif has_cold_start:
        print("Base model not evaluated: with vLLM only the trained policy's engine fits in memory.")
    for name, (data, n) in sets.items():
        label = "" if name == "gsm8k" else f" ({name})"
        if base_model is not None and name == "gsm8k":
            out[name]["base"] = evaluate(
                base_model, base_tokenizer, data, n=n, desc=STAGE_LABELS["base"] + label, **settings
            )
        out[name][start], out[name]["grpo"] = evaluate_before_after(
            model,
            tokenizer,
            data,
            adapter_dir,
            n=n,
            **settings,
            labels=(STAGE_LABELS[start] + label, STAGE_LABELS["grpo"] + label),
        )
    del base_model
    for name, problems in drawn.items():
        for result in out.get(name, {}).values():
            tag_problems(result, problems)
    return out, test.info.description
