import csv
import json

import pytest

from helpers.data.gsm8k import load_gsm8k
from helpers.rewards import REWARD_FUNCS
from helpers.training.models import load_model
from helpers.training.profiles import PROFILES
from helpers.training.run_files import GROUPS_FILE
from helpers.training.trainer import train


def distinct_characters(completions, **kwargs):
    """Varies across a group, so the advantages (and the LoRA gradients) are not all zero."""
    return [len(set(c[0]["content"])) / 10 for c in completions]


def test_one_grpo_step_on_a_tiny_model_writes_metrics_and_adapter(tiny_model_dir, tmp_path):
    profile = PROFILES["cpu"].replace(
        max_completion_length=8, max_prompt_length=256, per_device_train_batch_size=16
    )  # 2 prompts x 8
    model, tokenizer = load_model(profile, tiny_model_dir)
    run = train(
        profile,
        max_steps=1,
        model=model,
        tokenizer=tokenizer,
        dataset=load_gsm8k("train", n=4),
        output_dir=tmp_path / "run",
        reward_funcs=[*REWARD_FUNCS, distinct_characters],
    )
    with open(run.metrics_csv) as f:
        rows = list(csv.DictReader(f))
    assert [r["step"] for r in rows] == ["1"]
    for column in (
        "reward",
        "reward_std",
        "completions/mean_length",
        "completions/clipped_ratio",
        "loss",
        "grad_norm",
        "step_time_s",
        "rewards/correctness_reward_func/mean",
        "rewards/xmlcount_reward_func/mean",
    ):
        assert rows[0][column] != "", column
    assert float(rows[0]["completions/mean_length"]) <= 8 and "kl" not in rows[0]  # beta = 0: no KL
    assert (run.adapter_dir / "adapter_model.safetensors").exists()
    assert (run.adapter_dir / "adapter_config.json").exists()
    assert run.curves_png.stat().st_size > 10_000
    assert run.seconds_per_step > 0
    # groups.jsonl: the step's 2 groups of 8, and the flat ones are those TRL counted
    groups = [json.loads(line) for line in open(run.output_dir / GROUPS_FILE)]
    assert [(g["step"], g["group"]) for g in groups] == [(1, 0), (1, 1)]
    assert {g["row"] for g in groups} <= {0, 1, 2, 3} and "kind" not in groups[0]  # GSM8K: no kind column
    totals = [[sum(v) for v in zip(*g["rewards"].values())] for g in groups]
    assert all(len(t) == 8 and len(g["advantages"]) == 8 for t, g in zip(totals, groups))
    assert set(groups[0]["rewards"]) == {f.__name__ for f in (*REWARD_FUNCS, distinct_characters)}
    flat = [max(t) - min(t) < 1e-6 for t in totals]
    assert sum(flat) / 2 == pytest.approx(float(rows[0]["frac_reward_zero_std"]))
    assert all(all(a == 0 for a in g["advantages"]) for g, f in zip(groups, flat) if f)
    # Every LoRA B matrix starts at 0; one step must move all of them (no layer left without gradient).
    lora_b = {n: p for n, p in model.named_parameters() if "lora_B" in n}
    assert lora_b and all(p.abs().sum() > 0 for p in lora_b.values())


class Disconnect(Exception):
    """A Colab runtime that goes away."""


def test_interrupted_run_resumes_from_its_checkpoint_and_continues_the_csv(tiny_model_dir, tmp_path, capsys):
    """Checkpoints every save_steps steps; a second train() into the same folder (a new
    runtime, a freshly loaded model) resumes: the step counter and metrics.csv continue."""
    from transformers import TrainerCallback

    class DisconnectAfterFirstCheckpoint(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            if state.global_step == 1:
                raise Disconnect

    profile = PROFILES["cpu"].replace(
        max_completion_length=8, save_steps=1, max_steps=2, per_device_train_batch_size=16
    )  # 4 prompts x 4
    data, out = load_gsm8k("train", n=4), tmp_path / "run"
    funcs = [*REWARD_FUNCS, distinct_characters]
    model, tokenizer = load_model(profile, tiny_model_dir)
    try:
        train(
            profile,
            model=model,
            tokenizer=tokenizer,
            dataset=data,
            output_dir=out,
            reward_funcs=funcs,
            callbacks=[DisconnectAfterFirstCheckpoint()],
        )
        raise AssertionError("the run should have been interrupted")
    except Disconnect:
        pass
    with open(out / "metrics.csv") as f:
        before = list(csv.DictReader(f))
    assert [r["step"] for r in before] == ["1"] and (out / "checkpoint-1" / "trainer_state.json").exists()

    model, tokenizer = load_model(profile, tiny_model_dir)  # the new runtime starts from the base model
    run = train(profile, model=model, tokenizer=tokenizer, dataset=data, output_dir=out, reward_funcs=funcs)
    assert "Resuming from" in capsys.readouterr().out and run.trainer.state.global_step == 2
    with open(run.metrics_csv) as f:
        after = list(csv.DictReader(f))
    assert [r["step"] for r in after] == ["1", "2"]
    assert after[0] == {key: before[0].get(key, "") for key in after[0]}  # step 1's row kept as written
    assert (out / "checkpoint-2").exists() and (run.adapter_dir / "adapter_model.safetensors").exists()


def write_checkpoint(folder, step):
    """The files a trainer checkpoint holds (small, real formats)."""
    import json

    import torch
    from safetensors.torch import save_file

    folder.mkdir()
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    save_file({"lora_A": torch.ones(4, 8)}, str(folder / "adapter_model.safetensors"))
    optimizer = {"state": {0: {"exp_avg": torch.randn(64, 64)}}, "param_groups": [{"lr": 1e-5}]}
    torch.save(optimizer, folder / "optimizer.pt")
    torch.save({"last_epoch": step}, folder / "scheduler.pt")
    torch.save({"python": (3, (1, 2), None), "cpu": torch.random.get_rng_state()}, folder / "rng_state.pth")
    (folder / "adapter_config.json").write_text(json.dumps({"r": 4}))
    return folder


def test_the_newest_complete_checkpoint_is_the_one_resumed(tmp_path):
    from helpers.training.checkpoints import last_checkpoint

    assert last_checkpoint(tmp_path) is None
    for step in (5, 25, 10):
        write_checkpoint(tmp_path / f"checkpoint-{step}", step)
    (tmp_path / "checkpoint-99").mkdir()  # half-written: no trainer state, never resumed from
    assert last_checkpoint(tmp_path).name == "checkpoint-25"


def test_a_checkpoint_counts_only_if_it_loads(tmp_path, capsys):
    """Over Drive a disconnect mid-upload can leave trainer_state.json beside a truncated
    optimizer.pt; resume trusted the state file alone and crashed in torch.load. Now such a checkpoint
    is skipped, with the reason, and the previous one is resumed."""
    from helpers.training.checkpoints import checkpoint_problem, last_checkpoint

    older, newer = write_checkpoint(tmp_path / "checkpoint-25", 25), write_checkpoint(tmp_path / "checkpoint-50", 50)
    assert checkpoint_problem(newer) is None and last_checkpoint(tmp_path) == newer
    optimizer = (newer / "optimizer.pt").read_bytes()
    (newer / "optimizer.pt").write_bytes(optimizer[: len(optimizer) // 2])
    assert last_checkpoint(tmp_path) == older
    assert "Skipping checkpoint-50, it does not load: optimizer.pt" in capsys.readouterr().out
    (newer / "optimizer.pt").write_bytes(optimizer[:100] + bytes([optimizer[100] ^ 0xFF]) + optimizer[101:])
    assert "bad CRC" in checkpoint_problem(newer)  # same length, a flipped byte
    (newer / "optimizer.pt").write_bytes(optimizer)
    weights = (newer / "adapter_model.safetensors").read_bytes()
    (newer / "adapter_model.safetensors").write_bytes(weights[:-10])
    assert checkpoint_problem(newer).startswith("adapter_model.safetensors: SafetensorError")
    (newer / "adapter_model.safetensors").write_bytes(weights)
    (newer / "trainer_state.json").write_text('{"global_step": 5')
    assert checkpoint_problem(newer).startswith("trainer_state.json: JSONDecodeError")
    (newer / "trainer_state.json").unlink()
    (older / "optimizer.pt").unlink()
    assert checkpoint_problem(newer).startswith("no trainer state")
    assert checkpoint_problem(older).startswith("no optimizer state")
    assert last_checkpoint(tmp_path) is None


def test_a_bf16_config_built_before_does_not_make_the_cpu_run_bf16(tmp_path, monkeypatch):
    """Bug found by CI: transformers 4.56's TrainingArguments writes ACCELERATE_MIXED_PRECISION=bf16
    for a bf16 config and keeps it for a later config with bf16=fp16=False, and accelerate reads it:
    the CPU run after it trained under bf16 autocast (a scratch-vs-TRL grad norm of 10.95 against
    10.47, a merged model 3e-3 off its adapter model in the GPU check). The profile now sets it."""
    from accelerate.utils import parse_choice_from_env

    from helpers.training.cold_start import build_sft_config
    from helpers.training.trainer import build_grpo_config

    for build in (build_grpo_config, build_sft_config):
        monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", "bf16")  # what a bf16 config leaves behind
        config = build(PROFILES["cpu"], tmp_path / build.__name__)
        assert not (config.bf16 or config.fp16)
        assert parse_choice_from_env("ACCELERATE_MIXED_PRECISION", "no") == "no", build.__name__


def test_a_dataset_smaller_than_one_step_is_refused(tiny_model_dir, tmp_path):
    """Bug: 4 prompts for a 16-prompt step ran no step and wrote no metrics.csv."""
    profile = PROFILES["cpu"].replace(max_completion_length=8)
    model, tokenizer = load_model(profile, tiny_model_dir)
    with pytest.raises(ValueError, match="4 prompts, fewer than the 16 a step draws"):
        train(
            profile,
            max_steps=1,
            model=model,
            tokenizer=tokenizer,
            dataset=load_gsm8k("train", n=4),
            output_dir=tmp_path / "run",
        )
