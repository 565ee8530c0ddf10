"""The main job at smoke size: cold start -> GRPO -> evaluation, on a tiny random model."""

import csv
import json

import pytest

from helpers.pipeline import PAIRED, RECORDS_FILE, SUMMARY_FILE, load_summary, run_pipeline, save_reference
from helpers.profiles import PROFILES, shortened

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smoke_run(tiny_model_dir, tmp_path_factory, gsm8k_dir):
    out = tmp_path_factory.mktemp("pipeline")
    return run_pipeline(shortened(PROFILES["cpu"]), out, model_path=tiny_model_dir, command="pytest smoke run")


def test_every_stage_writes_its_files(smoke_run):
    out = smoke_run.output_dir
    for name in ("cold_start/model.safetensors", "cold_start/config.json", "cold_start_metrics.csv",
                 "lora_adapter/adapter_model.safetensors", "lora_adapter/adapter_config.json",
                 "metrics.csv", "training_curves.png", SUMMARY_FILE, RECORDS_FILE):
        assert (out / name).exists(), name
    adapter = json.loads((out / "lora_adapter" / "adapter_config.json").read_text())
    assert adapter["base_model_name_or_path"] == str(out / "cold_start"), "GRPO must start from the cold start"


def test_grpo_metrics_have_one_row_per_step_and_the_reward_columns(smoke_run):
    with open(smoke_run.output_dir / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["step"] for r in rows] == ["1", "2"]
    for column in ("reward", "kl", "completions/clipped_ratio", "frac_reward_zero_std", "step_time_s",
                   "rewards/strict_format_reward_func/mean", "rewards/correctness_reward_func/mean"):
        assert all(r[column] != "" for r in rows), column


def test_summary_has_provenance_stages_and_paired_tests(smoke_run):
    s = json.loads((smoke_run.output_dir / SUMMARY_FILE).read_text())
    assert s == smoke_run.summary
    assert s["command"] == "pytest smoke run" and s["created_utc"] and "CPU cores" in s["machine"]
    assert s["reward_set"] == "checked" and s["cold_start_examples"] == 8
    assert s["profile"]["max_steps"] == 2 and s["evaluation"]["n"] == 4
    assert s["evaluation"]["decoding"]["temperature"] == 0.0
    assert list(s["stages"]) == ["base", "cold_start", "grpo"]
    for stage in s["stages"].values():
        assert stage["n"] == 4
        for key in ("accuracy", "correct", "format_rate_strict", "format_rate_valid", "placeholder_rate",
                    "mean_tokens"):
            assert stage[key] is not None, key
    assert set(s["mcnemar_start_vs_grpo"]) == set(PAIRED)
    assert set(s["timings_s"]) == {"cold_start_s", "grpo_s", "grpo_per_step_s", "evaluation_s", "total_s"}


def test_records_pair_the_same_questions_across_stages(smoke_run):
    rows = [json.loads(line) for line in open(smoke_run.output_dir / RECORDS_FILE)]
    assert [r["stage"] for r in rows] == ["base"] * 4 + ["cold_start"] * 4 + ["grpo"] * 4
    questions = {stage: [r["question"] for r in rows if r["stage"] == stage] for stage in ("base", "grpo")}
    assert questions["base"] == questions["grpo"]
    assert all({"format_valid", "placeholder", "correct", "tokens"} <= set(r) for r in rows)


def test_stage_table_counts_agree_with_the_records(smoke_run):
    table = smoke_run.table()
    column = "McNemar p, cold start -> cold start + GRPO"
    assert list(table.columns) == ["base", "cold start", "cold start + GRPO", column]
    rows = [json.loads(line) for line in open(smoke_run.output_dir / RECORDS_FILE)]
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
    from helpers.__main__ import main

    assert main(["train", "--profile", "cpu", "--quick", "--output-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for row in ("accuracy", "strict format (layout only)", "valid format: real reasoning + number",
                "placeholder / template copy", "mean completion tokens"):
        assert row in out
    summary = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert summary["profile"]["name"] == "cpu-quick" and summary["command"].startswith("python -m helpers train")
    assert summary["stages"]["grpo"]["mean_tokens"] <= 32


def test_reference_copy_keeps_outcomes_but_no_gsm8k_text(smoke_run, tmp_path):
    dest = save_reference(smoke_run.output_dir, tmp_path / "ref")
    assert sorted(p.name for p in dest.iterdir()) == ["cold_start_metrics.csv", "eval_outcomes.jsonl",
                                                     "metrics.csv", "summary.json", "training_curves.png"]
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
    from helpers.pipeline import build_summary

    profile = PROFILES["cpu"].replace(cold_start_examples=96)
    summary = build_summary(profile, {}, {}, reward_set="layout", dataset=None, reused_cold_start="outputs/a/cold_start")
    assert summary["cold_start_examples"] == 96 and summary["cold_start_reused"] == "outputs/a/cold_start"
    fresh = build_summary(profile.replace(cold_start_examples=0), {}, {}, reward_set="checked", dataset=None)
    assert fresh["cold_start_examples"] == 0 and fresh["cold_start_reused"] is None
