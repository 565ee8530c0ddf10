import pytest

from helpers.training.hardware import GPU
from helpers.training.profiles import PROFILES, Phase, get_profile
from helpers.training.trainer import build_grpo_config

T4_GPU = GPU("Tesla T4", (7, 5), 14.7)
L4_GPU = GPU("NVIDIA L4", (8, 9), 22.5)


def test_auto_pick_without_gpu_is_cpu(monkeypatch, capsys):
    monkeypatch.delenv("GRPO_PROFILE", raising=False)
    monkeypatch.setattr("helpers.training.hardware.gpu_info", lambda: None)
    assert get_profile().name == "cpu"
    assert "CPU profile (no CUDA GPU)" in capsys.readouterr().out


def test_gpu_picks_t4_and_env_and_argument_override(monkeypatch, capsys):
    monkeypatch.setattr("helpers.training.hardware.gpu_info", lambda: T4_GPU)
    monkeypatch.setattr("helpers.training.hardware.unsloth_installed", lambda: True)
    monkeypatch.delenv("GRPO_PROFILE", raising=False)
    assert get_profile().name == "t4"
    assert "Using the t4 profile (Tesla T4 (compute capability 7.5" in capsys.readouterr().out
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
    assert (t4.model_id, t4.backend, t4.load_in_4bit, t4.fast_inference) == (
        "unsloth/Qwen2.5-3B-Instruct",
        "unsloth",
        True,
        True,
    )
    assert (t4.num_generations, t4.max_completion_length, t4.max_steps) == (8, 512, 250)  # 512: not Unsloth's 200
    assert (t4.learning_rate, t4.optim, t4.max_grad_norm, t4.gradient_checkpointing) == (
        5e-6,
        "adamw_8bit",
        0.1,
        "unsloth",
    )
    assert set(t4.lora_target_modules) == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}


@pytest.mark.parametrize("name", ["t4", "bf16", "cuda", "cpu"])
def test_grpo_config_states_the_objective(tmp_path, name):
    profile = PROFILES[name]
    config = build_grpo_config(profile, tmp_path)
    assert (config.loss_type, config.beta, config.epsilon, config.scale_rewards) == (
        ("grpo", 0.0, 0.2, "group") if name == "cpu" else ("grpo", 0.04, 0.2, "group")
    )
    assert (config.num_generations, config.max_completion_length) == (
        profile.num_generations,
        profile.max_completion_length,
    )
    assert config.report_to == []  # "none": nothing is sent anywhere unless asked


def test_report_to_is_opt_in(tmp_path):
    assert build_grpo_config(PROFILES["cpu"], tmp_path, report_to="tensorboard").report_to == ["tensorboard"]


def test_t4_config_is_fp16_with_vllm(tmp_path):
    config = build_grpo_config(PROFILES["t4"], tmp_path)
    assert config.fp16 and not config.bf16  # the T4 has no bf16
    assert config.use_vllm


def test_cpu_profile_is_the_measured_learning_run():
    cpu = PROFILES["cpu"]
    assert (
        cpu.cold_start_examples,
        cpu.cold_start_problems,
        cpu.cold_start_two_op_share,
        cpu.cold_start_batch_size,
        cpu.cold_start_learning_rate,
    ) == (40, 120, 2 / 3, 2, 3e-4)
    assert (cpu.num_generations, cpu.per_device_train_batch_size, cpu.max_completion_length) == (8, 128, 100)
    assert (cpu.max_steps, cpu.learning_rate, cpu.temperature) == (12, 3e-4, 0.6)
    assert (cpu.beta, cpu.scale_rewards, cpu.loss_type) == (0.0, "group", "grpo")
    assert (cpu.eval_questions, cpu.eval_problems, cpu.heldout_problems) == (32, 64, 32)
    assert cpu.eval_levels == ((1, 20), (2, 20), (1, 50), (2, 50)) and cpu.transfer_problems == 8
    assert (cpu.problem_family, cpu.cold_start_max_number) == ("varied", 20)
    assert cpu.fast_rollouts and cpu.curriculum == (Phase(1.0, ((1, 20), (2, 20))),)
    assert PROFILES["t4"].cold_start_examples == 0 and not PROFILES["t4"].curriculum


@pytest.mark.parametrize("name", ["t4", "cpu"])
def test_shortened_keeps_the_objective_and_a_valid_group_shape(tmp_path, name):
    from helpers.training.profiles import shortened

    full, quick = PROFILES[name], shortened(PROFILES[name])
    assert quick.name == f"{name}-quick" and quick.max_steps == 2 and quick.eval_questions == 4
    assert quick.cold_start_examples == min(full.cold_start_examples, 8)
    assert quick.cold_start_problems == min(full.cold_start_problems, 8)
    assert (quick.loss_type, quick.beta, quick.epsilon) == (full.loss_type, full.beta, full.epsilon)
    assert quick.per_device_train_batch_size % quick.num_generations == 0


def test_quick_is_requested_by_the_environment(monkeypatch):
    from helpers.training.profiles import quick_requested

    for value, expected in (("1", True), ("yes", True), ("0", False), ("", False)):
        monkeypatch.setenv("GRPO_QUICK", value)
        assert quick_requested() is expected
    monkeypatch.delenv("GRPO_QUICK")
    assert quick_requested() is False


def test_sft_config_trains_the_completion_in_the_profiles_precision(tmp_path):
    from helpers.training.cold_start import build_sft_config

    config = build_sft_config(PROFILES["cpu"], tmp_path)
    assert config.completion_only_loss is True and not config.bf16 and not config.fp16
    assert (config.learning_rate, config.per_device_train_batch_size, config.num_train_epochs) == (3e-4, 2, 1)
    assert config.max_length == 256 + 100 and config.report_to == []


def test_bf16_profile_is_the_t4_recipe_on_qwen_7b(tmp_path, monkeypatch):
    monkeypatch.setattr("helpers.training.hardware.gpu_info", lambda: L4_GPU)
    bf16, t4 = PROFILES["bf16"], PROFILES["t4"]
    assert (bf16.model_id, bf16.backend, bf16.load_in_4bit, bf16.fast_inference, bf16.precision) == (
        "unsloth/Qwen2.5-7B-Instruct",
        "unsloth",
        True,
        True,
        "bf16",
    )
    assert bf16.replace(name="t4", description=t4.description, model_id=t4.model_id, precision="fp16") == t4
    config = build_grpo_config(bf16, tmp_path)
    assert config.bf16 and not config.fp16 and config.use_vllm
    assert (config.num_generations, config.max_completion_length, config.max_steps) == (8, 512, 250)


def test_cuda_profile_is_plain_trl_with_peft(tmp_path, monkeypatch):
    monkeypatch.setattr("helpers.training.hardware.gpu_info", lambda: T4_GPU)
    cuda = PROFILES["cuda"]
    assert (cuda.model_id, cuda.backend, cuda.load_in_4bit, cuda.fast_inference) == (
        "Qwen/Qwen2.5-0.5B-Instruct",
        "transformers",
        False,
        False,
    )
    assert (cuda.lora_rank, cuda.lora_alpha, cuda.optim) == (16, 64, "adamw_torch")  # no bitsandbytes
    assert cuda.max_completion_length == 200  # not the t4's 512: no gradient checkpointing, not sized for it
    config = build_grpo_config(cuda, tmp_path)
    assert not config.use_vllm and config.fp16 and not config.bf16  # a T4 without Unsloth: fp16
    assert (config.loss_type, config.beta) == ("grpo", 0.04)


@pytest.mark.parametrize("name, steps", [("t4", 25), ("bf16", 25), ("cuda", 25), ("cpu", 0)])
def test_gpu_profiles_save_checkpoints_and_the_cpu_run_does_not(tmp_path, name, steps):
    config = build_grpo_config(PROFILES[name], tmp_path)
    assert PROFILES[name].save_steps == steps
    if steps:
        assert (config.save_strategy, config.save_steps, config.save_total_limit) == ("steps", steps, 2)
    else:
        assert config.save_strategy == "no"


def test_format_recipe_is_the_first_reference_runs_recipe():
    from helpers.training.profiles import format_recipe, shortened

    first = format_recipe(PROFILES["cpu"])
    assert (first.cold_start_examples, first.cold_start_problems, first.curriculum) == (160, 0, ())
    assert (first.per_device_train_batch_size, first.max_completion_length, first.temperature) == (8, 160, 1.0)
    assert (first.num_generations, first.beta, first.scale_rewards) == (8, 0.04, "group")
    assert (first.max_steps, first.learning_rate, first.eval_questions, first.heldout_problems) == (20, 3e-4, 64, 0)
    quick = format_recipe(shortened(PROFILES["cpu"]))  # notebook 05 in CI: still smoke size
    assert quick.name == "cpu-quick" and quick.max_steps == 2 and quick.cold_start_examples == 8
