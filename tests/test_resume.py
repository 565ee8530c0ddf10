"""Resume after a Colab disconnect: which checkpoint counts (all the state a resume restores, every file
readable), and the Drive configuration itself, where a fallback must survive a bad newest checkpoint
(colab-round3 review: fix 5, R5)."""

import pytest
from test_trainer import distinct_characters, write_checkpoint

from helpers.data.gsm8k import load_gsm8k
from helpers.rewards import REWARD_FUNCS
from helpers.training.checkpoints import checkpoint_problem, last_checkpoint
from helpers.training.models import load_model
from helpers.training.profiles import PROFILES
from helpers.training.trainer import train


@pytest.mark.parametrize(
    "missing, problem",
    [
        ("scheduler.pt", "no scheduler state"),
        ("rng_state.pth", "no random state"),
        ("adapter_config.json", "no adapter config"),
        ("optimizer.pt", "no optimizer state"),
    ],
)
def test_a_checkpoint_resumes_only_with_all_its_state(tmp_path, missing, problem):
    """Transformers 4.56 loads the optimizer and the scheduler only when both files exist
    (Trainer._load_optimizer_and_scheduler) and the random state only when rng_state.pth does, and
    otherwise resumes silently with a fresh AdamW, a warm-up restarted at step N and a new random
    stream; a PEFT adapter's weights do not load without adapter_config.json. Such a checkpoint is
    skipped for the previous one."""
    older = write_checkpoint(tmp_path / "checkpoint-25", 25)
    newer = write_checkpoint(tmp_path / "checkpoint-50", 50)
    (newer / missing).unlink()
    assert checkpoint_problem(newer).startswith(problem)
    assert last_checkpoint(tmp_path, verbose=False) == older


def test_a_multi_process_checkpoint_has_one_random_state_per_process(tmp_path):
    checkpoint = write_checkpoint(tmp_path / "checkpoint-5", 5)
    (checkpoint / "rng_state.pth").rename(checkpoint / "rng_state_0.pth")
    assert checkpoint_problem(checkpoint) is None  # rng_state_<rank>.pth under accelerate launch


@pytest.mark.slow
def test_on_drive_a_bad_newest_checkpoint_falls_back_to_the_one_before(tiny_model_dir, tmp_path, monkeypatch, capsys):
    """The Drive configuration itself (train() into a folder on Drive): it kept one checkpoint, so a
    newest one cut off mid-upload left nothing to resume and the run started over at step 0. Two are
    kept now; with the newest unreadable the run resumes from the other and ends where it should."""
    from helpers.colab.persist import DRIVE_CHECKPOINTS

    profile = PROFILES["cpu"].replace(
        max_completion_length=8, save_steps=1, max_steps=3, per_device_train_batch_size=16
    )  # 4 prompts x 4
    monkeypatch.setenv("GRPO_DRIVE_DIR", str(tmp_path / "drive"))
    out, data, funcs = tmp_path / "drive" / "run", load_gsm8k("train", n=4), [*REWARD_FUNCS, distinct_characters]
    model, tokenizer = load_model(profile, tiny_model_dir)
    run = train(profile, model=model, tokenizer=tokenizer, dataset=data, output_dir=out, reward_funcs=funcs)
    assert run.trainer.args.save_total_limit == DRIVE_CHECKPOINTS == 2 and profile.save_total_limit == 2
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-2", "checkpoint-3"]
    optimizer = out / "checkpoint-3" / "optimizer.pt"
    optimizer.write_bytes(optimizer.read_bytes()[:100])  # the disconnect came mid-upload
    assert last_checkpoint(out, verbose=False) == out / "checkpoint-2"

    model, tokenizer = load_model(profile, tiny_model_dir)  # the new runtime
    run = train(profile, model=model, tokenizer=tokenizer, dataset=data, output_dir=out, reward_funcs=funcs)
    printed = capsys.readouterr().out
    assert "Skipping checkpoint-3" in printed and "Resuming from" in printed and "checkpoint-2" in printed
    assert run.trainer.state.global_step == 3 and checkpoint_problem(out / "checkpoint-3") is None
