"""helpers.data.curriculum: the schedule's steps, its order, and the trainer reading it in that order."""

import pytest

from helpers.data.curriculum import curriculum_dataset, phase_steps
from helpers.training.profiles import GSM8K, Phase


def test_phase_steps_round_and_give_the_rest_to_the_last_phase():
    assert phase_steps((Phase(0.5), Phase(0.5)), 5) == [3, 2]
    assert phase_steps((Phase(0.4), Phase(0.4), Phase(0.2, (GSM8K,))), 30) == [12, 12, 6]
    assert phase_steps((Phase(0.4), Phase(0.4), Phase(0.2, (GSM8K,))), 2) == [1, 1, 0]
    with pytest.raises(ValueError, match="sum to 1"):
        phase_steps((Phase(0.5), Phase(0.4)), 10)
    with pytest.raises(ValueError, match="at least one phase"):
        phase_steps((), 10)


def test_curriculum_rows_come_easy_to_hard_then_gsm8k(gsm8k_dir):
    from helpers.data.gsm8k import load_gsm8k

    schedule = (Phase(0.25), Phase(0.5, ((2, 50),)), Phase(0.25, ((1, 20), GSM8K)))
    ds = curriculum_dataset(schedule, batches=4, prompts_per_batch=4, seed=5, gsm8k_skip=10)
    assert len(ds) == 16
    assert ds["phase"] == ["1 op up to 20"] * 4 + ["2 ops up to 50"] * 8 + ["1 op up to 20 + GSM8K train"] * 4
    gsm8k = load_gsm8k("train")["question"]
    assert ds["question"][13::2] == gsm8k[10:12]  # mixed in turn, after the cold start's rows
    one_op = ds["question"][:4] + ds["question"][12::2]
    assert len(set(one_op)) == 6  # the last phase takes new one-operation problems, not the first phase's
    assert all(p[-1]["content"] == q for p, q in zip(ds["prompt"], ds["question"]))
    assert (
        "1 batches of 1 op up to 20, then 2 batches of 2 ops up to 50, then 1 batches of 1 op up to 20 + GSM8K train"
    ) in ds.info.description
    assert (
        ds["question"]
        == curriculum_dataset(schedule, batches=4, prompts_per_batch=4, seed=5, gsm8k_skip=10)["question"]
    )  # deterministic


def test_the_trainer_reads_a_curriculum_in_order(tmp_path):
    """With a curriculum, GRPOConfig.shuffle_dataset is False, and TRL's sampler then yields the rows in
    the dataset's order, each repeated num_generations times (the group)."""
    from trl.trainer.grpo_trainer import RepeatSampler

    from helpers.training.profiles import PROFILES
    from helpers.training.trainer import build_grpo_config

    cpu = PROFILES["cpu"]
    assert cpu.curriculum and not build_grpo_config(cpu, tmp_path).shuffle_dataset
    assert build_grpo_config(cpu.replace(curriculum=()), tmp_path).shuffle_dataset
    order = list(RepeatSampler(list(range(6)), mini_repeat_count=2, batch_size=3, repeat_count=1, shuffle=False))
    assert order == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
