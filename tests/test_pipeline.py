"""The main job at smoke size: cold start -> GRPO -> evaluation, on a tiny random model."""

import csv
import json

import pytest

from cpu_study.reference import save_reference
from helpers.evaluation.reports import PAIRED, RECORDS_FILE, SUMMARY_FILE, load_summary
from helpers.training.pipeline import run_pipeline
from helpers.training.profiles import PROFILES, shortened

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smoke_run(tiny_model_dir, tmp_path_factory, gsm8k_dir):
    out = tmp_path_factory.mktemp("pipeline")
    return run_pipeline(shortened(PROFILES["cpu"]), out, model_path=tiny_model_dir, command="pytest smoke run")


def test_every_stage_writes_its_files(smoke_run):
    out = smoke_run.output_dir
    for name in (
        "cold_start/model.safetensors",
        "cold_start/config.json",
        "cold_start_metrics.csv",
        "lora_adapter/adapter_model.safetensors",
        "lora_adapter/adapter_config.json",
        "metrics.csv",
        "training_curves.png",
        SUMMARY_FILE,
        RECORDS_FILE,
    ):
        assert (out / name).exists(), name
    adapter = json.loads((out / "lora_adapter" / "adapter_config.json").read_text())
    assert adapter["base_model_name_or_path"] == str(out / "cold_start"), "GRPO must start from the cold start"


def test_grpo_metrics_have_one_row_per_step_the_reward_and_the_heldout_curve(smoke_run):
    with open(smoke_run.output_dir / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["step"] for r in rows] == ["0", "1", "2"]  # step 0: held-out accuracy before training
    for column in (
        "reward",
        "completions/clipped_ratio",
        "frac_reward_zero_std",
        "step_time_s",
        "rewards/strict_format_reward_func/mean",
        "rewards/correctness_reward_func/mean",
    ):
        assert all(r[column] != "" for r in rows[1:]), column
    assert "kl" not in rows[0]  # beta = 0: TRL computes no KL
    for column in ("heldout/accuracy", "heldout/accuracy_format_free", "heldout/seconds"):
        assert all(r[column] != "" for r in rows), column
    assert [h["step"] for h in smoke_run.summary["heldout"]] == [0, 1, 2]


def test_grpo_reads_the_curriculum_in_order(smoke_run):
    assert smoke_run.summary["grpo_prompts"].startswith(
        "curriculum, 1 prompt(s) per batch: 2 batches of 1 op up to 20 + 2 ops up to 20"
    )
    assert not smoke_run.training.trainer.args.shuffle_dataset
    groups = [json.loads(line) for line in open(smoke_run.output_dir / "groups.jsonl")]
    assert [(g["step"], g["row"]) for g in groups] == [(1, 0), (2, 1)]  # one prompt a step, in order
    assert [g["kind"] for g in groups] == ["add", "sub"] and groups[1]["template"].startswith("sub.")  # kinds in turn


def test_summary_has_provenance_stages_and_paired_tests(smoke_run):
    s = json.loads((smoke_run.output_dir / SUMMARY_FILE).read_text())
    assert s == smoke_run.summary
    assert s["command"] == "pytest smoke run" and s["created_utc"] and "CPU cores" in s["machine"]
    assert s["reward_set"] == "checked" and s["cold_start_examples"] == 8 + 8  # GSM8K + course-written
    assert s["profile"]["max_steps"] == 2 and s["evaluation"]["n"] == 4
    assert s["evaluation"]["decoding"]["temperature"] == 0.0
    assert list(s["stages"]) == ["base", "cold_start", "grpo"]
    for stage in s["stages"].values():
        assert stage["n"] == 4
        for key in (
            "accuracy",
            "correct",
            "format_rate_strict",
            "format_rate_valid",
            "placeholder_rate",
            "mean_tokens",
        ):
            assert stage[key] is not None, key
    assert set(s["mcnemar_start_vs_grpo"]) == set(PAIRED)
    assert set(s["timings_s"]) == {"cold_start_s", "grpo_s", "grpo_per_step_s", "heldout_s", "evaluation_s", "total_s"}
    problems = s["problems"]
    levels = ["1 op up to 20", "2 ops up to 20", "1 op up to 50", "2 ops up to 50"]
    assert problems["levels"] == levels
    assert list(problems["stages"]) == ["cold_start", "grpo"]  # the base model: GSM8K only
    for stage in problems["stages"].values():
        assert [stage[k]["n"] for k in ("all", *levels)] == [8, 2, 2, 2, 2]
        assert stage["all"]["accuracy_format_free"] is not None
    assert set(problems["mcnemar_start_vs_grpo"]["all"]) == set(PAIRED)
    transfer = s["transfer"]
    assert transfer["levels"] == [
        "trained kinds, numbers up to 20",
        "new kinds, numbers up to 20",
        "trained kinds, numbers up to 60",
        "new kinds, numbers up to 60",
    ]
    assert transfer["stages"]["grpo"]["all"]["n"] == 24  # 12 kinds x 2 ranges x 1
    kinds = {row["kind"]: row for row in s["kinds"]["transfer"]}
    assert len(kinds) == 12 and all(row["n"] == 2 for row in kinds.values())
    assert sum(row["n"] for row in s["kinds"]["problems"]) == 8


def test_records_pair_the_same_questions_across_stages(smoke_run):
    rows = [json.loads(line) for line in open(smoke_run.output_dir / RECORDS_FILE)]
    sizes = {"gsm8k": 4, "problems": 8, "transfer": 24}
    assert [(r["set"], r["stage"]) for r in rows] == [
        (test_set, stage)
        for test_set in ("gsm8k", "problems", "transfer")
        for stage in (("base",) if test_set == "gsm8k" else ()) + ("cold_start", "grpo")
        for _ in range(sizes[test_set])
    ]
    for test_set in sizes:
        questions = {
            stage: [r["question"] for r in rows if r["stage"] == stage and r["set"] == test_set]
            for stage in ("cold_start", "grpo")
        }
        assert questions["cold_start"] == questions["grpo"]
    assert all({"format_valid", "placeholder", "correct", "correct_format_free", "tokens"} <= set(r) for r in rows)
    problem_rows = [r for r in rows if r["set"] == "problems" and r["stage"] == "grpo"]
    assert [r["level"] for r in problem_rows] == [
        lv for lv in ("1 op up to 20", "2 ops up to 20", "1 op up to 50", "2 ops up to 50") for _ in range(2)
    ]
    assert all(r["family"] == "varied" and r["template"].startswith(r["kind"]) for r in problem_rows)
    assert {r["family"] for r in rows if r["set"] == "transfer"} == {"transfer"}


def test_problems_table_counts_agree_with_the_records(smoke_run):
    table = smoke_run.problems_table()
    rows = [json.loads(line) for line in open(smoke_run.output_dir / RECORDS_FILE)]
    for stage, label in (("cold_start", "cold start"), ("grpo", "cold start + GRPO")):
        mine = [r for r in rows if r["set"] == "problems" and r["stage"] == stage]
        assert table.loc["accuracy, all", label] == f"{sum(r['correct'] for r in mine)}/8"
        two = [r for r in mine if r["level"] == "2 ops up to 20"]
        assert (
            table.loc["format-free accuracy, 2 ops up to 20", label]
            == f"{sum(r['correct_format_free'] for r in two)}/2"
        )
    assert table.loc["accuracy, 1 op up to 20"].iloc[-1].endswith("lost)")


def test_stage_table_counts_agree_with_the_records(smoke_run):
    table = smoke_run.table()
    column = "McNemar p, cold start -> cold start + GRPO"
    assert list(table.columns) == ["base", "cold start", "cold start + GRPO", column]
    rows = [json.loads(line) for line in open(smoke_run.output_dir / RECORDS_FILE) if '"gsm8k"' in line]
    start = [r["format_valid"] for r in rows if r["stage"] == "cold_start"]
    grpo = [r["format_valid"] for r in rows if r["stage"] == "grpo"]
    assert table.loc["valid format: real reasoning + number", "cold start + GRPO"] == f"{sum(grpo)}/4"
    gained = sum(not a and b for a, b in zip(start, grpo))
    lost = sum(a and not b for a, b in zip(start, grpo))
    assert table.loc["valid format: real reasoning + number", column].endswith(f"({gained} gained, {lost} lost)")


def test_unknown_reward_set_and_missing_cold_start_are_refused(tmp_path):
    with pytest.raises(ValueError, match="reward set"):
        run_pipeline(PROFILES["cpu"], tmp_path, reward_set="seed")
    with pytest.raises(FileNotFoundError, match="no model"):
        run_pipeline(PROFILES["cpu"], tmp_path, cold_start_dir=tmp_path)


def test_make_train_command_at_smoke_size_on_smollm2(smollm2_dir, tmp_path, capsys, gsm8k_dir):
    """`python -m helpers train --quick`: the real model through every stage, the table printed."""
    from helpers.cli import main

    assert main(["train", "--profile", "cpu", "--quick", "--output-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for row in (
        "accuracy",
        "strict format (layout only)",
        "valid format: real reasoning + number",
        "placeholder / template copy",
        "mean completion tokens",
        "Course-written test problems, in distribution",
        "format-free accuracy, 2 ops up to 20",
        "Transfer problems: wordings no training problem uses",
        "format-free accuracy, new kinds, numbers up to 60",
        "per kind:",
    ):
        assert row in out
    summary = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert summary["profile"]["name"] == "cpu-quick" and summary["command"].startswith("python -m helpers train")
    assert summary["stages"]["grpo"]["mean_tokens"] <= 32


def test_reference_copy_keeps_outcomes_but_no_gsm8k_text(smoke_run, tmp_path):
    dest = save_reference(smoke_run.output_dir, tmp_path / "ref")
    assert sorted(p.name for p in dest.iterdir()) == [
        "cold_start_metrics.csv",
        "eval_outcomes.jsonl",
        "groups.jsonl",
        "metrics.csv",
        "summary.json",
        "training_curves.png",
    ]
    assert load_summary(dest) == smoke_run.summary
    outcomes = [json.loads(line) for line in open(dest / "eval_outcomes.jsonl")]
    records = [json.loads(line) for line in open(smoke_run.output_dir / RECORDS_FILE)]
    assert [o["format_valid"] for o in outcomes] == [r["format_valid"] for r in records]
    text = (dest / "eval_outcomes.jsonl").read_text()
    assert all(r["question"][:30] not in text for r in records)
    with pytest.raises(FileNotFoundError, match="finished run"):
        save_reference(tmp_path / "nothing", tmp_path / "ref2")


def test_a_reused_cold_start_is_recorded_with_its_examples():
    # Bug: a run with --cold-start DIR recorded cold_start_examples 0, as if it had none.
    from helpers.evaluation.reports import pipeline_summary

    profile = PROFILES["cpu"].replace(cold_start_examples=96)
    summary = pipeline_summary(
        profile, {}, {}, reward_set="layout", dataset=None, reused_cold_start="outputs/a/cold_start"
    )
    assert summary["cold_start_examples"] == 96 + 120 and summary["cold_start_reused"] == "outputs/a/cold_start"
    fresh = pipeline_summary(profile.replace(cold_start_examples=0), {}, {}, reward_set="checked", dataset=None)
    assert fresh["cold_start_examples"] == 0 and fresh["cold_start_reused"] is None


def test_outcomes_by_kind_counts_gains_losses_and_p_per_kind():
    from helpers.data.problems import make_problems
    from helpers.evaluation.reports import outcomes_by_kind

    problems = make_problems(8, ops=1, split="test", seed=0)  # kinds in turn: add, sub, mul, div, add, ...
    before = [True, False, True, False, True, False, False, False]
    after = [False, True, True, False, False, True, False, True]
    records = [
        {"set": "problems", "stage": stage, "index": i, "correct": ok}
        for stage, outcomes in (("cold_start", before), ("grpo", after))
        for i, ok in enumerate(outcomes)
    ]
    records.append({"set": "gsm8k", "stage": "grpo", "index": 0, "correct": True})  # another set: ignored
    rows = {row["kind"]: row for row in outcomes_by_kind(records[::-1], problems)}  # any record order
    assert list(rows) == ["add", "sub", "mul", "div"]
    assert {k: (r["n"], r["cold_start"], r["grpo"], r["gained"], r["lost"]) for k, r in rows.items()} == {
        "add": (2, 2, 0, 0, 2),
        "sub": (2, 0, 2, 2, 0),
        "mul": (2, 1, 1, 0, 0),
        "div": (2, 0, 1, 1, 0),
    }
    assert rows["add"]["p"] == 0.5 and rows["mul"]["p"] == 1.0  # exact two-sided: 2 x (1/2)^2; no discordant pair
    with pytest.raises(ValueError, match="8 problem records, not one for each of the 9 problems"):
        outcomes_by_kind(records, make_problems(9, ops=1, split="test", seed=0))
    shifted = [
        {**r, "index": r["index"] + 1} if r["stage"] == "grpo" else r for r in records
    ]  # right count, wrong problems
    with pytest.raises(ValueError, match="stage 'grpo'"):
        outcomes_by_kind(shifted, problems)


def test_the_sealed_set_opens_once_on_a_finished_run(smoke_run, tmp_path, monkeypatch):
    import cpu_study.sealed as sealed
    from cpu_study.sealed_eval import (
        SEALED_OUTCOMES_FILE,
        SEALED_SUMMARY_FILE,
        AlreadyOpened,
        open_sealed,
        sealed_rows,
    )

    few = {name: problems[:3] for name, problems in sealed.sealed_problems().items()}  # the real draw, cut short
    monkeypatch.setattr(sealed, "sealed_problems", lambda: few)
    summary = open_sealed(smoke_run.output_dir, tmp_path, shortened(PROFILES["cpu"]))
    assert json.loads((tmp_path / SEALED_SUMMARY_FILE).read_text()) == json.loads(json.dumps(summary, default=str))
    outcomes = [json.loads(line) for line in open(tmp_path / SEALED_OUTCOMES_FILE)]
    assert len(outcomes) == 2 * 2 * 3  # two parts x two stages x three problems
    assert all("question" not in o and "completion" not in o for o in outcomes)
    for row in sealed_rows(summary):
        right = {
            stage: sum(o["correct"] for o in outcomes if o["set"] == row["part"] and o["stage"] == stage)
            for stage in ("cold_start", "grpo")
        }
        assert (row["n"], row["cold_start"], row["grpo"]) == (3, right["cold_start"], right["grpo"])
    kinds = list(dict.fromkeys(p.kind for p in few["transfer"]))
    assert [k["kind"] for k in summary["parts"]["transfer"]["kinds"]] == kinds
    with pytest.raises(AlreadyOpened):
        open_sealed(smoke_run.output_dir, tmp_path, shortened(PROFILES["cpu"]))
