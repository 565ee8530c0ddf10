"""cpu_study.arms: each arm is the cpu recipe with one knob changed, and runs from a cold start."""

import json

import pytest

from cpu_study import arms
from cpu_study.control_rewards import ALL_REWARD_SETS
from helpers.training.profiles import CPU


@pytest.mark.parametrize("name", list(arms.ARMS))
def test_every_arm_builds_a_grpo_config_that_differs_from_the_baseline_by_its_knob(name, tmp_path):
    from helpers.training.trainer import build_grpo_config

    arm = arms.ARMS[name]
    profile = arms.arm_profile(arm, seed=1)
    config = build_grpo_config(profile, tmp_path, **arm.config)  # a misspelt GRPOConfig field raises here
    baseline = build_grpo_config(arms.arm_profile(arms.ARMS["baseline"], seed=1), tmp_path)
    changed = {k for k, v in config.to_dict().items() if baseline.to_dict()[k] != v}
    assert changed <= {
        *arm.config,
        "beta",
        "scale_rewards",
        "num_generations",
        "per_device_train_batch_size",
        "loss_type",
        "temperature",
        # derived by TRL from the batch size
        "generation_batch_size",
        "steps_per_generation",
    }, changed
    assert arm.rewards in ALL_REWARD_SETS and profile.seed == 1 and profile.heldout_problems == 0
    if name == "baseline":
        assert not changed and arm.rewards == "checked" and profile == CPU.replace(seed=1, heldout_problems=0)
    elif arm.profile.get("lora_rank"):
        assert not changed and profile.lora_rank == arm.profile["lora_rank"]  # the LoRA, not the config
    elif arm.rewards == "checked":
        assert changed, f"{name} changes nothing"


@pytest.mark.slow
def test_an_arm_runs_at_smoke_size_and_reuses_the_cold_starts_evaluation(tiny_model_dir, tmp_path, monkeypatch):
    from helpers.training import models

    loads = []
    original = models.load_model
    monkeypatch.setattr(models, "load_model", lambda *a, **k: loads.append(k.get("lora", True)) or original(*a, **k))
    first = arms.run_arm(arms.ARMS["baseline"], 3407, tiny_model_dir, tmp_path, quick=True, command="pytest")
    second = arms.run_arm(arms.ARMS["placebo"], 3407, tiny_model_dir, tmp_path, quick=True)
    assert loads.count(False) == 1, "the cold start's development-set evaluation is computed once"
    assert first["cold_start_sets"] == second["cold_start_sets"]
    assert first["sets"]["dev"]["n"] == 8 and first["sets"]["dev_transfer"]["n"] == 24
    run = tmp_path / "placebo" / "seed3407"
    assert all((run / name).exists() for name in arms.LIGHT_FILES)
    outcomes = [json.loads(line) for line in open(run / arms.OUTCOMES_FILE)]
    assert [(o["set"], o["index"]) for o in outcomes][:3] == [("dev", 0), ("dev", 1), ("dev", 2)]
    assert sum(o["correct"] for o in outcomes if o["set"] == "dev") == second["sets"]["dev"]["correct"]
    groups = [json.loads(line) for line in open(run / "groups.jsonl")]
    assert set(groups[0]["rewards"]) == {"random_reward_func"}  # the placebo's reward set trained
    assert first["cost"]["grpo_s"] > 0 and first["cost"]["peak_rss_gib"] > 0 and first["command"] == "pytest"
    with pytest.raises(FileNotFoundError, match="model.safetensors"):
        arms.cold_start_outcomes(tmp_path / "nothing", tmp_path, arms.dev_sets(quick=True))
