from pathlib import Path

from helpers.__main__ import main
from helpers.training import TrainingRun


def test_train_command_runs_the_pipeline_with_the_chosen_settings(monkeypatch, capsys, tmp_path):
    calls = []

    def fake_train(profile, max_steps=None, output_dir=None):
        calls.append((profile.name, max_steps, output_dir))
        out = Path(output_dir)
        state = type("State", (), {"global_step": max_steps})
        return TrainingRun(out, out / "metrics.csv", out / "lora_adapter", out / "curves.png", 12.5,
                           trainer=type("Trainer", (), {"state": state}))

    monkeypatch.setattr("helpers.training.train", fake_train)
    assert main(["train", "--profile", "cpu", "--max-steps", "2", "--output-dir", str(tmp_path)]) == 0
    assert calls == [("cpu", 2, str(tmp_path))]
    out = capsys.readouterr().out
    assert "GRPO steps:       2" in out and "Seconds per step: 12.5" in out and str(tmp_path / "lora_adapter") in out
