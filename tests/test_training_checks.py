"""What train() checks and shows while it builds and runs the trainer (colab-round3 review: items 5-7):
completions cut at the length limit, the effective config after Unsloth's and TRL's rewrites, each
reward function's output length, and a single progress display in a notebook."""

import json
import warnings

import pytest

from helpers.training.profiles import PROFILES

CPU, T4 = PROFILES["cpu"], PROFILES["t4"]


# ----------------------------------------------------------------------- 5: truncation
def test_the_t4_cap_is_above_what_unsloths_own_t4_run_cut(tmp_path):
    """Unsloth's Qwen2.5 (3B) GRPO T4 run (the t4 profile's source) capped completions at 200 tokens:
    the mean length of its first 25 steps was 190.4, and in 93 of its 250 steps every completion reached
    the cap. Its GRPO notebooks with the same format and rewards and a 768-token cap (Llama 3.1 8B,
    Mistral 7B) logged per-step means of at most 413 and 490 tokens. The t4 profile's 512 leaves the
    prompt its 256 within the 1024 of max_seq_length (vLLM's max_model_len)."""
    from tools.t4_memory import t4_memory

    assert T4.max_completion_length == 512 > 490
    assert T4.max_prompt_length + T4.max_completion_length <= T4.max_seq_length
    memory = t4_memory(T4)
    assert memory["trainer_step_tokens"] == 8 * (256 + 512)
    assert memory["trainer_peak_gib"] < memory["free_while_vllm_sleeps_gib"]  # the backward pass
    assert memory["trainer_persistent_gib"] < memory["free_while_vllm_is_awake_gib"]  # the rollouts
    assert memory["kv_tokens_needed"] < memory["kv_tokens"]


def logged(guard, ratios):
    from transformers import TrainerControl, TrainerState

    state = TrainerState()
    for step, ratio in enumerate(ratios, 1):
        state.global_step = step
        guard.on_log(None, state, TrainerControl(), logs={"loss": 0.0, "completions/clipped_ratio": ratio})


def test_a_high_clipped_ratio_is_warned_about_once_with_what_to_change():
    """Nothing warned while most completions were cut (Unsloth's T4 log: 93 of 250 steps entirely).
    A cut completion has no answer block and earns no correctness reward (trl#5697, #6263)."""
    from helpers.training.callbacks import TruncationGuard, TruncationWarning

    guard = TruncationGuard(T4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        logged(guard, [0.3, 0.0, 0.05, 0.02, 0.05, 0.05])  # a high step, not a high run
    assert not caught
    with pytest.warns(TruncationWarning, match=r"(?s)24% of completions.*512 tokens.*steps 1-5.*max_completion_length"):
        logged(TruncationGuard(T4), [0.0, 0.0, 0.4, 0.4, 0.4, 0.4, 0.4])
    with pytest.warns(TruncationWarning) as once:
        logged(guard := TruncationGuard(CPU), [1.0] * 12)
    assert len(once) == 1 and guard.warned_at == 5
    assert "up to 256 (max_seq_length 512 - max_prompt_length 256)" in str(once[0].message)
    assert "mask_truncated_completions=True" in str(once[0].message)
    with pytest.raises(ValueError, match="threshold"):
        TruncationGuard(CPU, threshold=1.5)


# --------------------------------------------------------------- 6: the effective config
def test_a_setting_rewritten_after_the_course_chose_it_fails_loudly(tmp_path):
    """Unsloth resets a batch that is not a multiple of G to num_generations with a print
    (unsloth/models/rl.py: the generated GRPOConfig), and an explicit loss_type="dr_grpo" turns
    scale_rewards "group" into False; the run trained what nobody chose."""
    from helpers.training.checks import ConfigRewriteError, check_config, effective_config
    from helpers.training.trainer import build_grpo_config, grpo_settings

    chosen = grpo_settings(CPU, tmp_path)
    args = build_grpo_config(CPU, tmp_path)
    assert check_config(chosen, args) == effective_config(args, chosen)  # TRL's own normalising is no change
    args.per_device_train_batch_size = 8  # what Unsloth does to 12 with G = 8
    args.scale_rewards = False
    with pytest.raises(
        ConfigRewriteError, match=r"(?s)scale_rewards: 'group' -> False.*per_device_train_batch_size: 128 -> 8"
    ):
        check_config(chosen, args)


def test_the_effective_config_is_json_and_names_what_trl_derived(tmp_path):
    from helpers.training.checks import effective_config
    from helpers.training.trainer import build_grpo_config, grpo_settings

    config = effective_config(build_grpo_config(T4, tmp_path), grpo_settings(T4, tmp_path))
    assert json.loads(json.dumps(config)) == config
    assert config["report_to"] == [] and config["lr_scheduler_type"] == "cosine" and config["optim"] == "adamw_8bit"
    assert (config["generation_batch_size"], config["steps_per_generation"]) == (8, 1)
    assert config["mask_truncated_completions"] is False and config["max_completion_length"] == 512


def test_a_reward_function_must_return_one_value_per_completion():
    """TRL 0.22 writes a reward function's list into a column of the rewards tensor: one value is
    broadcast to every completion without an error (trl#6533), a wrong length fails deep in torch."""
    from helpers.training.checks import one_value_per_completion

    def short(completions, **kwargs):
        return [1.0]

    def right(completions, **kwargs):
        return [0.5] * len(completions)

    checked = one_value_per_completion(right)
    assert checked.__name__ == "right" and checked(completions=["a", "b"]) == [0.5, 0.5]
    with pytest.raises(ValueError, match=r"short returned 1 value\(s\) for 4 completions"):
        one_value_per_completion(short)(prompts=[""] * 4, completions=["x"] * 4)
    with pytest.raises(ValueError, match="returned a float"):
        one_value_per_completion(lambda completions, **kw: 1.0)(completions=["x"])
    assert one_value_per_completion(checked) is checked


@pytest.mark.slow
def test_train_checks_shows_and_keeps_the_effective_config(tiny_model_dir, tmp_path, capsys, monkeypatch):
    """One step on the CPU: the effective config is printed, kept in the run (and so in summary.json),
    the reward functions are checked, and the truncation guard watches the run. A GRPOConfig that
    rewrites the batch as Unsloth's does makes train() fail before any step."""
    import trl

    from helpers.data.gsm8k import load_gsm8k
    from helpers.evaluation.reports import pipeline_summary
    from helpers.rewards import REWARD_FUNCS
    from helpers.training.callbacks import TruncationGuard
    from helpers.training.checks import ConfigRewriteError
    from helpers.training.models import load_model
    from helpers.training.run_files import EFFECTIVE_CONFIG_FILE
    from helpers.training.trainer import train

    profile = CPU.replace(max_completion_length=8, per_device_train_batch_size=16)  # 2 prompts x 8
    model, tokenizer = load_model(profile, tiny_model_dir)

    def one_step(out, **settings):
        return train(
            profile,
            max_steps=1,
            model=model,
            tokenizer=tokenizer,
            dataset=load_gsm8k("train", n=4),
            output_dir=tmp_path / out,
            reward_funcs=REWARD_FUNCS,
            **settings,
        )

    run = one_step("run")
    printed = capsys.readouterr().out
    assert "Effective GRPO config" in printed and "per_device_train_batch_size=16" in printed
    assert run.effective_config["per_device_train_batch_size"] == 16 and run.effective_config["num_generations"] == 8
    assert json.loads((run.output_dir / EFFECTIVE_CONFIG_FILE).read_text()) == run.effective_config
    assert any(isinstance(cb, TruncationGuard) for cb in run.trainer.callback_handler.callbacks)
    assert all(hasattr(f, "__wrapped__") for f in run.trainer.reward_funcs)
    summary = pipeline_summary(profile, {}, {}, reward_set="checked", dataset=None, training=run, skipped="test")
    assert summary["effective_config"] == run.effective_config

    class UnslothLikeConfig(trl.GRPOConfig):  # the batch reset Unsloth generates (unsloth/models/rl.py)
        def __init__(self, *args, per_device_train_batch_size=8, num_generations=8, **kwargs):
            if per_device_train_batch_size % num_generations:
                per_device_train_batch_size = num_generations
            super().__init__(
                *args,
                per_device_train_batch_size=per_device_train_batch_size,
                num_generations=num_generations,
                **kwargs,
            )

    monkeypatch.setattr(trl, "GRPOConfig", UnslothLikeConfig)
    with pytest.raises(ConfigRewriteError, match="per_device_train_batch_size: 12 -> 8"):
        one_step("again", per_device_train_batch_size=12)


# ------------------------------------------------------------- 7: one progress display
def test_in_a_notebook_the_trainer_shows_one_progress_display(tiny_model_dir, tmp_path, monkeypatch):
    """In Jupyter and Colab transformers uses NotebookProgressCallback (its HTML table), which
    remove_callback(ProgressCallback) does not match: the learner saw the table and the quiet bar."""
    import transformers.trainer
    from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
    from transformers.trainer_callback import PrinterCallback, ProgressCallback
    from transformers.utils.notebook import NotebookProgressCallback

    from helpers.training.callbacks import QuietProgressCallback, quiet_progress

    monkeypatch.setattr(transformers.trainer, "DEFAULT_PROGRESS_CALLBACK", NotebookProgressCallback)  # Colab's
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    trainer = Trainer(model=model, args=TrainingArguments(str(tmp_path), report_to=[], use_cpu=True))
    quiet_progress(trainer)
    shown = [
        cb
        for cb in trainer.callback_handler.callbacks
        if isinstance(cb, (ProgressCallback, NotebookProgressCallback, PrinterCallback))
    ]
    assert [type(cb) for cb in shown] == [QuietProgressCallback]
