"""``tools/gpu_check.py``: its preflight, its failure reporting, and the whole check
run on the CPU at smoke size, as CI runs it, so that it cannot rot before a GPU runs it."""

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "tools" / "gpu_check.py"


@pytest.fixture(scope="module")
def gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _requirement_pins() -> dict:
    pins = {}
    for name in ("requirements/common.txt", "requirements/nodeps.txt"):
        for line in (REPO / name).read_text().splitlines():
            match = re.match(r"^([A-Za-z0-9_.-]+)==([^\s;#]+)", line)
            if match:
                pins[match[1].lower()] = match[2]
    return pins


def test_pinned_stack_is_the_requirements_pins(gpu_check):
    pins, packages = _requirement_pins(), {d: (pin, ok) for d, pin, ok in gpu_check.PACKAGES}
    for dist in ("trl", "transformers", "peft", "datasets"):
        assert packages[dist] == (pins[dist], f"=={pins[dist]}"), dist
    assert packages["accelerate"][0] == pins["accelerate"]


def test_preflight_names_what_is_missing_or_wrong(gpu_check):
    have = {d: pin for d, pin, _ in gpu_check.PACKAGES} | {
        "trl": None,
        "transformers": "5.17.0",
        "huggingface-hub": "1.3.0",
        "fsspec": "2026.1.0",
    }
    missing = gpu_check.missing_packages(lookup=have.get)
    assert [m[0] for m in missing] == ["trl", "transformers", "huggingface-hub", "fsspec"]
    message = gpu_check.missing_message(missing, python="3.12")
    assert "trl " in message and "missing" in message
    assert "installed 5.17.0, needs ==4.56.2" in message
    command = gpu_check.download_command(missing, python="3.12")
    assert command.endswith("trl==0.22.2 transformers==4.56.2 huggingface-hub==0.36.2 fsspec==2025.9.0")
    assert "--python-version 3.12" in command and "peft" not in command


def test_preflight_passes_here(gpu_check):
    assert gpu_check.missing_packages() == []  # the CPU stack is what the check pins


def test_missing_packages_stop_before_any_stage_with_a_summary(gpu_check, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(gpu_check, "missing_packages", lambda: [("trl", "0.22.2", "==0.22.2", None)])
    assert gpu_check.main(["--out", str(tmp_path)]) == 2
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["failed_stage"] == "preflight" and summary["missing"][0]["distribution"] == "trl"
    assert "pip download" in capsys.readouterr().err


def test_no_torch_stops_with_a_summary(gpu_check, tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_check, "_installed_version", lambda dist: None)
    assert gpu_check.main(["--out", str(tmp_path)]) == 2
    assert json.loads((tmp_path / "summary.json").read_text())["error"] == "torch is not installed"


def test_a_failed_stage_is_named_and_the_rest_skipped(gpu_check):
    stages, ran = gpu_check.Stages(cuda=False), []
    assert stages.run("build_model", lambda: ran.append(1) or {"ok": 1}) == {"ok": 1}
    assert stages.run("load", lambda: 1 / 0) is None
    assert stages.run("generate", lambda: ran.append(2)) is None
    assert ran == [1] and stages.failed == "load" and stages.error.startswith("ZeroDivisionError")
    assert list(stages.times) == ["build_model"] and stages.times["build_model"]["peak_gpu_mib"] is None


def test_wheel_sizes(gpu_check, tmp_path):
    (tmp_path / "a-1-py3-none-any.whl").write_bytes(b"x" * 2**20)
    (tmp_path / "b-1-py3-none-any.whl").write_bytes(b"x" * 2**19)
    lines = gpu_check.wheel_sizes(tmp_path).splitlines()
    assert lines[0].split()[0] == "1.00" and lines[1].split()[0] == "0.50"
    assert lines[-1].startswith("    1.50 MiB  total, 2 wheels")


@pytest.mark.slow
def test_gpu_check_runs_on_cpu(tmp_path):
    """The check end to end with no GPU visible: every stage timed, the adapter saved and reloaded,
    8 questions scored, the merged-and-reloaded model equal to the adapter model and not to the base."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["failed_stage"] is None and summary["skipped_stages"] == []
    assert list(summary["stages"]) == [
        "build_model",
        "load",
        "generate",
        "grpo",
        "save_adapter",
        "evaluate",
        "merge_reload",
    ]
    assert all(s["seconds"] > 0 and s["peak_gpu_mib"] is None for s in summary["stages"].values())
    assert summary["peak_gpu_mib"] == "n/a on CPU" and summary["precision"] == "fp32"
    assert summary["versions"]["trl"] == "0.22.2" and summary["hardware"]["gpu"] is None
    for name in summary["stages"]:
        assert re.search(rf"\[gpu_check\] {name} +\d+\.\d+ s +peak GPU memory n/a on CPU", done.stdout), name
    assert summary["load"]["dtype"] == "torch.float32"
    assert summary["grpo"]["steps"] == 3 and summary["grpo"]["metrics_rows"] == 3
    adapter = tmp_path / summary["save_adapter"]["dir"]
    assert (adapter / "adapter_model.safetensors").stat().st_size == summary["save_adapter"]["bytes"] > 0
    assert summary["save_adapter"]["max_abs_lora_b"] > 0  # GRPO moved the LoRA weights off their zero start
    assert summary["evaluate"]["n"] == summary["evaluate"]["records"] == 8
    merge = summary["merge_reload"]
    assert merge["greedy_same"] and merge["max_logp_diff_merged_vs_adapter"] < 1e-4
    assert merge["max_logp_diff_base_vs_adapter"] > 100 * merge["max_logp_diff_merged_vs_adapter"]


@pytest.mark.slow
def test_gpu_check_16_bit_path_on_cpu(gpu_check, tmp_path, monkeypatch):
    """The bf16 branch a GPU takes (model dtype, the trainer's bf16 flag, the 16-bit merge criterion),
    run on the CPU by making helpers.training.profiles.precision answer bf16 for the check's profile."""
    import helpers.training.profiles as profiles

    real = profiles.precision
    monkeypatch.setattr(
        profiles,
        "precision",
        lambda profile, gpu=None: "bf16" if profile.name.startswith("cuda") else real(profile, gpu),
    )
    assert gpu_check.main(["--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["precision"] == "bf16" and summary["load"]["dtype"] == "torch.bfloat16"
    merge = summary["merge_reload"]
    assert merge["tolerance"] == 0.02 and merge["within_tolerance"]
    assert merge["max_logp_diff_merged_vs_adapter"] < merge["max_logp_diff_base_vs_adapter"] / 2
