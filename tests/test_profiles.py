import pytest

from helpers.profiles import PROFILES, get_profile
from helpers.training import build_grpo_config


def test_auto_pick_without_gpu_is_cpu(monkeypatch, capsys):
    monkeypatch.delenv("GRPO_PROFILE", raising=False)
    monkeypatch.setattr("helpers.profiles.has_cuda", lambda: False)
    assert get_profile().name == "cpu"
    assert "CPU profile" in capsys.readouterr().out


def test_gpu_picks_t4_and_env_and_argument_override(monkeypatch):
    monkeypatch.setattr("helpers.profiles.has_cuda", lambda: True)
    monkeypatch.delenv("GRPO_PROFILE", raising=False)
    assert get_profile().name == "t4"
    monkeypatch.setenv("GRPO_PROFILE", "cpu")
    assert get_profile(verbose=False).name == "cpu"
    assert get_profile("t4").name == "t4"
    with pytest.raises(ValueError, match="unknown profile"):
        get_profile("a100")


def test_overrides_replace_single_settings():
    assert get_profile("cpu", verbose=False, max_steps=2).max_steps == 2
    with pytest.raises(TypeError):
        get_profile("cpu", verbose=False, no_such_setting=1)


def test_t4_profile_is_unsloths_recipe():
    t4 = PROFILES["t4"]
    assert (t4.model_id, t4.backend, t4.load_in_4bit, t4.fast_inference) == \
        ("unsloth/Qwen2.5-3B-Instruct", "unsloth", True, True)
    assert (t4.num_generations, t4.max_completion_length, t4.max_steps) == (8, 200, 250)
    assert (t4.learning_rate, t4.optim, t4.max_grad_norm, t4.gradient_checkpointing) == \
        (5e-6, "adamw_8bit", 0.1, "unsloth")
    assert set(t4.lora_target_modules) == {"q_proj", "k_proj", "v_proj", "o_proj",
                                           "gate_proj", "up_proj", "down_proj"}


@pytest.mark.parametrize("name", ["t4", "cpu"])
def test_grpo_config_states_the_objective(tmp_path, name):
    profile = PROFILES[name]
    config = build_grpo_config(profile, tmp_path)
    assert (config.loss_type, config.beta, config.epsilon, config.scale_rewards) == ("grpo", 0.04, 0.2, "group")
    assert (config.num_generations, config.max_completion_length) == \
        (profile.num_generations, profile.max_completion_length)
    assert config.report_to == []  # "none": nothing is sent anywhere unless asked


def test_report_to_is_opt_in(tmp_path):
    assert build_grpo_config(PROFILES["cpu"], tmp_path, report_to="tensorboard").report_to == ["tensorboard"]


def test_t4_config_is_fp16_with_vllm(tmp_path):
    config = build_grpo_config(PROFILES["t4"], tmp_path)
    assert config.fp16 and not config.bf16  # the T4 has no bf16
    assert config.use_vllm


def test_cpu_profile_is_the_measured_learning_run():
    cpu = PROFILES["cpu"]
    assert (cpu.cold_start_examples, cpu.cold_start_batch_size, cpu.cold_start_learning_rate) == (160, 2, 3e-4)
    assert (cpu.num_generations, cpu.max_completion_length, cpu.max_steps, cpu.learning_rate) == (8, 160, 20, 3e-4)
    assert cpu.eval_questions == 64 and PROFILES["t4"].cold_start_examples == 0


@pytest.mark.parametrize("name", ["t4", "cpu"])
def test_shortened_keeps_the_objective_and_a_valid_group_shape(tmp_path, name):
    from helpers.profiles import shortened

    full, quick = PROFILES[name], shortened(PROFILES[name])
    assert quick.name == f"{name}-quick" and quick.max_steps == 2 and quick.eval_questions == 4
    assert quick.cold_start_examples == min(full.cold_start_examples, 8)
    assert (quick.loss_type, quick.beta, quick.epsilon) == (full.loss_type, full.beta, full.epsilon)
    assert quick.per_device_train_batch_size % quick.num_generations == 0


def test_quick_is_requested_by_the_environment(monkeypatch):
    from helpers.profiles import quick_requested

    for value, expected in (("1", True), ("yes", True), ("0", False), ("", False)):
        monkeypatch.setenv("GRPO_QUICK", value)
        assert quick_requested() is expected
    monkeypatch.delenv("GRPO_QUICK")
    assert quick_requested() is False


def test_sft_config_trains_the_completion_in_the_profiles_precision(tmp_path):
    from helpers.cold_start import build_sft_config

    config = build_sft_config(PROFILES["cpu"], tmp_path)
    assert config.completion_only_loss is True and not config.bf16 and not config.fp16
    assert (config.learning_rate, config.per_device_train_batch_size, config.num_train_epochs) == (3e-4, 2, 1)
    assert config.max_length == 256 + 160 and config.report_to == []
