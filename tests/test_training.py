import csv

from helpers.data import load_gsm8k
from helpers.models import load_model
from helpers.profiles import PROFILES
from helpers.rewards import REWARD_FUNCS
from helpers.training import train


def distinct_characters(completions, **kwargs):
    """Varies across a group, so the advantages (and the LoRA gradients) are not all zero."""
    return [len(set(c[0]["content"])) / 10 for c in completions]


def test_one_grpo_step_on_a_tiny_model_writes_metrics_and_adapter(tiny_model_dir, tmp_path):
    profile = PROFILES["cpu"].replace(max_completion_length=8, max_prompt_length=256)
    model, tokenizer = load_model(profile, tiny_model_dir)
    run = train(profile, max_steps=1, model=model, tokenizer=tokenizer, dataset=load_gsm8k("train", n=4),
                output_dir=tmp_path / "run", reward_funcs=[*REWARD_FUNCS, distinct_characters])
    with open(run.metrics_csv) as f:
        rows = list(csv.DictReader(f))
    assert [r["step"] for r in rows] == ["1"]
    for column in ("reward", "reward_std", "kl", "completions/mean_length", "completions/clipped_ratio",
                   "loss", "grad_norm", "step_time_s", "rewards/correctness_reward_func/mean",
                   "rewards/xmlcount_reward_func/mean"):
        assert rows[0][column] != "", column
    assert float(rows[0]["completions/mean_length"]) <= 8
    assert (run.adapter_dir / "adapter_model.safetensors").exists()
    assert (run.adapter_dir / "adapter_config.json").exists()
    assert run.curves_png.stat().st_size > 10_000
    assert run.seconds_per_step > 0
    # Every LoRA B matrix starts at 0; one step must move all of them (no layer left without gradient).
    lora_b = {n: p for n, p in model.named_parameters() if "lora_B" in n}
    assert lora_b and all(p.abs().sum() > 0 for p in lora_b.values())
