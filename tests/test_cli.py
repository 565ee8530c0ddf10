"""The command line: settings reach the pipeline; bad input is one clear line and exit 2."""

from pathlib import Path

import pytest

from cpu_study.cli import main as study_main
from helpers.cli import main
from helpers.training.pipeline import PipelineRun
from helpers.training.trainer import TrainingRun

SUMMARY = {
    "stages": {
        s: {
            "n": 4,
            "correct": 0,
            "format_rate_strict": 0.5,
            "format_rate_valid": 0.25,
            "placeholder_rate": 0.0,
            "mean_tokens": 30.0,
        }
        for s in ("base", "cold_start", "grpo")
    },
    "mcnemar_start_vs_grpo": {k: {"p_value": 1.0, "lora_only": 0, "base_only": 0} for k in ("format_valid", "correct")},
    "timings_s": {"grpo_per_step_s": 12.5, "total_s": 600.0},
    "distributed": {
        "processes": 1,
        "per_device_train_batch_size": 8,
        "gradient_accumulation_steps": 1,
        "num_generations": 8,
        "global_batch": 8,
    },
}


@pytest.fixture
def fake_pipeline(monkeypatch):
    calls = []

    def run_pipeline(
        profile, output_dir=None, reward_set="checked", reward_funcs=None, cold_start_dir=None, command=None
    ):
        calls.append(
            dict(
                profile=profile,
                output_dir=output_dir,
                reward_set=reward_set,
                reward_funcs=reward_funcs,
                cold_start=cold_start_dir,
                command=command,
            )
        )
        out = Path(output_dir)
        state = type("State", (), {"global_step": profile.max_steps})
        training = TrainingRun(
            out,
            out / "metrics.csv",
            out / "lora_adapter",
            out / "curves.png",
            12.5,
            trainer=type("Trainer", (), {"state": state}),
        )
        return PipelineRun(out, SUMMARY, out / "summary.json", out / "eval_records.jsonl", training)

    monkeypatch.setattr("helpers.training.pipeline.run_pipeline", run_pipeline)
    monkeypatch.delenv("GRPO_QUICK", raising=False)
    return calls


def test_train_command_runs_the_pipeline_with_the_chosen_settings(fake_pipeline, capsys, tmp_path):
    assert (
        main(["train", "--profile", "cpu", "--max-steps", "2", "--rewards", "layout", "--output-dir", str(tmp_path)])
        == 0
    )
    [call] = fake_pipeline
    assert call["profile"].name == "cpu" and call["profile"].max_steps == 2
    assert call["profile"].cold_start_examples == 40 and call["reward_set"] == "layout"
    assert (
        call["command"]
        == f"python -m helpers train --profile cpu --max-steps 2 --rewards layout --output-dir {tmp_path}"
    )
    out = capsys.readouterr().out
    assert "GRPO: 2 steps, 12.5 s per step; whole run (every stage) 10.0 min" in out
    assert (
        "GRPO ran on 1 process; global batch 8 completions = 8 per process x 1 process x 1 accumulation step "
        "(1 prompt x 8 completions)" in out
    )
    assert "valid format: real reasoning + number" in out and str(tmp_path / "summary.json") in out


def test_quick_flag_and_environment_shorten_every_stage(fake_pipeline, monkeypatch, tmp_path):
    main(["train", "--profile", "cpu", "--quick", "--output-dir", str(tmp_path)])
    monkeypatch.setenv("GRPO_QUICK", "1")
    main(["train", "--profile", "cpu", "--output-dir", str(tmp_path)])
    for call in fake_pipeline:
        p = call["profile"]
        assert (p.name, p.cold_start_examples, p.max_steps, p.eval_questions) == ("cpu-quick", 8, 2, 4)


def test_cold_start_size_and_reuse_reach_the_pipeline(fake_pipeline, tmp_path):
    main(
        [
            "train",
            "--profile",
            "cpu",
            "--cold-start-examples",
            "96",
            "--cold-start",
            str(tmp_path),
            "--output-dir",
            str(tmp_path),
        ]
    )
    main(["train", "--profile", "cpu", "--cold-start-examples", "0", "--output-dir", str(tmp_path)])
    assert [c["profile"].cold_start_examples for c in fake_pipeline] == [96, 0]
    assert [c["cold_start"] for c in fake_pipeline] == [tmp_path, None]


def test_vllm_server_reaches_the_profile_and_a_skipped_evaluation_is_said(fake_pipeline, monkeypatch, capsys, tmp_path):
    main(["train", "--profile", "cuda", "--vllm-server", "http://localhost:8000", "--output-dir", str(tmp_path)])
    assert fake_pipeline[0]["profile"].vllm_server_url == "http://localhost:8000"
    skipped = {
        **SUMMARY,
        "stages": {},
        "mcnemar_start_vs_grpo": {},
        "evaluation": {"skipped": "ZeRO-3 shards"},
        "distributed": {**SUMMARY["distributed"], "processes": 4, "global_batch": 32},
    }
    monkeypatch.setitem(globals(), "SUMMARY", skipped)  # what the fake pipeline returns
    capsys.readouterr()
    main(["train", "--profile", "cuda", "--output-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert "Evaluation skipped: ZeRO-3 shards" in out and "accuracy" not in out
    assert "GRPO ran on 4 processes; global batch 32 completions = 8 per process x 4 processes" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["train", "--max-steps", "0"], "must be at least 1, got 0"),
        (["train", "--max-steps", "-1"], "must be at least 1, got -1"),  # TRL would train whole epochs
        (["train", "--max-steps", "two"], "'two' is not an integer"),
        (["train", "--profile", "a100"], "invalid choice: 'a100'"),
        (["train", "--cold-start", "/no/such/folder"], "no folder at /no/such/folder"),
        (["train", "--cold-start-examples", "-5"], "must be at least 0, got -5"),
        (["evaluate", "--adapter", "/no/such/adapter"], "no folder at /no/such/adapter"),
        (["evaluate", "--adapter", ".", "--n", "0"], "must be at least 1"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_missing_data_folder_is_one_line_and_exit_2(fake_pipeline, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("GSM8K_DIR", str(tmp_path / "nowhere"))
    assert main(["train", "--profile", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "GSM8K_DIR=" in err and "no train.jsonl" in err
    assert fake_pipeline == []  # failed before anything was loaded or trained


def test_adapter_folder_without_an_adapter_is_one_line_and_exit_2(monkeypatch, capsys, tmp_path):
    assert main(["evaluate", "--adapter", str(tmp_path), "--profile", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "adapter_config.json not found" in err


def test_pass_at_k_command_reaches_evaluate_run_with_the_run_folder(monkeypatch, capsys, tmp_path):
    # bug: --run was stored as args.run, the name of the command function, so the command crashed
    calls = []

    def evaluate_run(run_dir, profile, n=8, problems=32):
        calls.append((run_dir, profile.name, n, problems))
        summary = {f"pass@{k}": {"value": v} for k, v in ((1, 0.25), (8, 0.5))}
        return {"stages": {"grpo": {"all": summary}}}

    monkeypatch.setattr("cpu_study.pass_at_k.evaluate_run", evaluate_run)
    assert study_main(["pass-at-k", "--run", str(tmp_path), "--profile", "cpu", "--n", "4", "--problems", "2"]) == 0
    assert calls == [(tmp_path, "cpu", 4, 2)]
    assert "pass@1 25.0 %, pass@8 50.0 %" in capsys.readouterr().out


def test_every_reward_set_can_be_asked_for_by_name():
    from cpu_study.cli import build_parser as study_parser
    from cpu_study.control_rewards import ALL_REWARD_SETS, CONTROL_REWARD_SETS
    from helpers.cli import build_parser
    from helpers.rewards import REWARD_SETS

    def choices(parser, command):
        sub = parser._subparsers._group_actions[0].choices[command]
        [rewards] = [a for a in sub._actions if a.dest == "rewards"]
        return sorted(rewards.choices)

    assert choices(build_parser(), "train") == sorted(REWARD_SETS) == ["checked", "layout"]
    assert choices(study_parser(), "control") == sorted(CONTROL_REWARD_SETS)
    assert sorted(ALL_REWARD_SETS) == sorted([*REWARD_SETS, *CONTROL_REWARD_SETS])


def test_control_command_trains_the_main_job_with_the_control_rewards(fake_pipeline, tmp_path):
    from cpu_study.control_rewards import CONTROL_REWARD_SETS

    argv = ["control", "--rewards", "placebo", "--profile", "cpu", "--output-dir", str(tmp_path)]
    assert study_main(argv) == 0
    [call] = fake_pipeline
    assert call["reward_set"] == "placebo" and call["reward_funcs"] is CONTROL_REWARD_SETS["placebo"]
    assert call["command"] == "python -m cpu_study " + " ".join(argv)


def test_the_course_command_line_offers_no_control_rewards(fake_pipeline, capsys):
    with pytest.raises(SystemExit):
        main(["train", "--profile", "cpu", "--rewards", "placebo"])
    assert "invalid choice: 'placebo'" in capsys.readouterr().err
    assert fake_pipeline == []
