"""The hardware pick and the single source of precision (helpers.training.hardware), on CPU with fake GPUs."""

import pytest

from helpers.training.hardware import GPU, pick_profile_name
from helpers.training.profiles import PROFILES, get_profile, mixed_precision_flags, precision, torch_dtype
from helpers.training.trainer import build_grpo_config

T4 = GPU("Tesla T4", (7, 5), 14.7)
L4 = GPU("NVIDIA L4", (8, 9), 22.5)
A100 = GPU("NVIDIA A100-SXM4-40GB", (8, 0), 39.4)
A4000 = GPU("NVIDIA RTX A4000", (8, 6), 15.7)  # bf16, but under 20 GiB
V100 = GPU("Tesla V100-SXM2-16GB", (7, 0), 15.8)


@pytest.mark.parametrize(
    "gpu, unsloth, expected",
    [
        (None, True, "cpu"),
        (T4, True, "t4"),
        (L4, True, "bf16"),
        (A100, True, "bf16"),
        (A4000, True, "cuda"),
        (V100, True, "cuda"),
        (T4, False, "cuda"),
        (L4, False, "cuda"),  # Unsloth not installable: plain TRL still trains
    ],
)
def test_hardware_pick(gpu, unsloth, expected):
    name, reason = pick_profile_name(gpu, unsloth)
    assert name == expected and reason


def test_pick_is_printed_with_its_reason(monkeypatch, capsys):
    monkeypatch.delenv("GRPO_PROFILE", raising=False)
    monkeypatch.setattr("helpers.training.hardware.gpu_info", lambda: L4)
    monkeypatch.setattr("helpers.training.hardware.unsloth_installed", lambda: True)
    assert get_profile().name == "bf16"
    out = capsys.readouterr().out
    assert "Using the bf16 profile (NVIDIA L4 (compute capability 8.9, 22.5 GiB, bf16)" in out


def test_t4_has_no_native_bf16_even_if_torch_says_emulated():
    assert not T4.bf16 and L4.bf16 and A100.bf16 and not V100.bf16


@pytest.mark.parametrize(
    "name, gpu, expected",
    [
        ("t4", T4, "fp16"),
        ("t4", L4, "fp16"),  # t4 asked for on an L4: fp16 model + fp16 flags
        ("bf16", L4, "bf16"),
        ("cuda", L4, "bf16"),
        ("cuda", T4, "fp16"),
        ("cuda", None, "fp32"),
        ("cpu", None, "fp32"),
        ("cpu", L4, "fp32"),
    ],
)
def test_one_precision_for_model_dtype_and_trainer_flags(name, gpu, expected):
    import torch

    profile = PROFILES[name]
    assert precision(profile, gpu) == expected
    dtype = torch_dtype(profile, gpu)
    flags = mixed_precision_flags(profile, gpu)
    # Unsloth's check (unsloth/models/rl.py): bf16 model + fp16 flag, or fp16 model + bf16 flag, raises.
    assert not (dtype == torch.bfloat16 and flags["fp16"]) and not (dtype == torch.float16 and flags["bf16"])
    assert flags == {"fp16": expected == "fp16", "bf16": expected == "bf16"}


def test_bf16_profile_on_a_t4_is_a_clear_error():
    with pytest.raises(ValueError, match="bf16, which Tesla T4 .* lacks: use GRPO_PROFILE=t4"):
        precision(PROFILES["bf16"], T4)


def test_bug_bf16_gpu_got_fp16_config_while_unsloth_loads_bf16(monkeypatch, tmp_path):
    """Bug: the profile forced fp16=True while Unsloth loads bf16 where the GPU has it.
    Now the GRPOConfig flags follow helpers.training.profiles.precision, as the model's dtype does."""
    monkeypatch.setattr("helpers.training.hardware.gpu_info", lambda: L4)
    config = build_grpo_config(PROFILES["bf16"], tmp_path)
    assert config.bf16 and not config.fp16
    config = build_grpo_config(PROFILES["cuda"], tmp_path)
    assert config.bf16 and not config.fp16
    monkeypatch.setattr("helpers.training.hardware.gpu_info", lambda: T4)
    config = build_grpo_config(PROFILES["cuda"], tmp_path)
    assert config.fp16 and not config.bf16


def test_unknown_precision_is_an_error():
    with pytest.raises(ValueError, match="unknown precision 'fp8'"):
        precision(PROFILES["cpu"].replace(precision="fp8"), None)
