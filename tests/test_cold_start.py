"""Cold start: GSM8K solutions in the course format, SFT on the assistant turn, merged checkpoint."""

import json

import pytest

from helpers.course_format import extract_hash_answer, format_solution
from helpers.rewards import REWARD_FUNCS, completion_texts
from helpers.training.cold_start import COLD_START_DIR, build_sft_dataset, train_cold_start
from helpers.training.profiles import PROFILES, shortened

SOLUTION = "She has 3 + 4 = <<3+4=7>>7 cats.\nSo 7 * 2 = <<7*2=14>>14 paws... of kittens.\n#### 14"


def test_format_solution_drops_calculator_notes_and_keeps_the_label():
    assert format_solution(SOLUTION) == (
        "<reasoning>\nShe has 3 + 4 = 7 cats.\nSo 7 * 2 = 14 paws... of kittens.\n</reasoning>\n<answer>\n14\n</answer>"
    )
    with pytest.raises(ValueError, match="####"):
        format_solution("no label")
    with pytest.raises(ValueError, match="no worked steps"):
        format_solution("<<1+1=2>>\n#### 2")


def test_every_gsm8k_train_solution_formats_to_a_completion_with_full_reward(gsm8k_dir):
    rows = [json.loads(line) for line in open(gsm8k_dir / "train.jsonl")]
    texts = [format_solution(r["answer"]) for r in rows]
    assert not [t for t in texts if "<<" in t or ">>" in t]
    golds = [extract_hash_answer(r["answer"]) for r in rows]
    conv = [[{"role": "assistant", "content": t}] for t in texts]
    totals = [sum(v) for v in zip(*(f(completions=conv, answer=golds) for f in REWARD_FUNCS))]
    perfect = sum(t == 4.0 for t in totals)
    assert perfect / len(rows) > 0.99, f"only {perfect} of {len(rows)} solutions earn the full 4.0"


def test_sft_dataset_is_prompt_completion_with_the_grpo_prompt(gsm8k_dir):
    from helpers.data.gsm8k import load_gsm8k

    ds = build_sft_dataset(3)
    assert ds.column_names == ["prompt", "completion", "question", "answer"]
    assert ds["prompt"] == load_gsm8k("train", n=3)["prompt"]
    assert [c[0]["role"] for c in ds["completion"]] == ["assistant"] * 3
    assert completion_texts(ds["completion"])[0].endswith(f"<answer>\n{ds['answer'][0]}\n</answer>")
    for bad in (0, 10**6):
        with pytest.raises(ValueError, match="between 1 and"):
            build_sft_dataset(bad)


@pytest.mark.slow
def test_cold_start_trains_the_assistant_turn_only_and_saves_a_merged_model(tiny_model_dir, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    from helpers.training.models import load_model

    profile = shortened(PROFILES["cpu"]).replace(cold_start_problems=0)  # 4 GSM8K rows only: one step
    cold = train_cold_start(profile, tmp_path, n=4, model_path=tiny_model_dir)
    assert cold.model_dir == tmp_path / COLD_START_DIR and cold.examples == 4
    assert (cold.model_dir / "model.safetensors").exists() and (cold.model_dir / "tokenizer.json").exists()
    assert not (cold.model_dir / "adapter_config.json").exists(), "the LoRA must be merged"
    rows = cold.metrics_csv.read_text().splitlines()
    assert rows[0].startswith("step,loss") and len(rows) == 1 + 1  # 4 examples / batch 4 = 1 step
    merged = AutoModelForCausalLM.from_pretrained(cold.model_dir)
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    moved = [n for n, p in merged.named_parameters() if not torch.equal(p, base.get_parameter(n))]
    assert any("q_proj" in n for n in moved) and not any("embed" in n for n in moved)
    model, tokenizer = load_model(profile, cold.model_dir)  # the GRPO policy starts here
    assert tokenizer.padding_side == "left"


def test_labels_cover_only_the_assistant_turn(gsm8k_dir, smollm2_dir):
    """TRL's SFT tokenisation: the prompt is masked (-100), the completion ends with <|im_end|>."""
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer
    from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

    tokenizer = AutoTokenizer.from_pretrained(smollm2_dir)
    ds = build_sft_dataset(2)
    args = SFTConfig(output_dir="/tmp/unused", completion_only_loss=True, report_to="none", use_cpu=True)
    processed = SFTTrainer._prepare_dataset(
        None, ds, tokenizer, args, packing=False, formatting_func=None, dataset_name="train"
    )
    row = processed[0]
    batch = DataCollatorForLanguageModeling(pad_token_id=tokenizer.pad_token_id)([row])
    labels = [t for t in batch["labels"][0].tolist() if t != -100]
    text = tokenizer.decode(labels)
    assert text.startswith("<|im_start|>assistant\n<reasoning>\n") and text.rstrip().endswith("</answer><|im_end|>")
    prompt_ids = tokenizer.apply_chat_template(ds[0]["prompt"])  # system + user turns, no BOS added
    assert batch["input_ids"][0][: len(prompt_ids)].tolist() == prompt_ids
    assert batch["labels"][0][: len(prompt_ids)].eq(-100).all()
    assert (batch["labels"][0][len(prompt_ids) :] != -100).all()


def test_sft_dataset_mixes_in_course_written_problems_that_earn_the_full_reward(gsm8k_dir):
    from helpers.data.problems import make_problems

    ds = build_sft_dataset(4, problems=6)
    gsm8k = build_sft_dataset(4)
    assert len(ds) == 10 and set(gsm8k["question"]) <= set(ds["question"])
    written = [q for q in ds["question"] if q not in gsm8k["question"]]
    expected = [p.question for ops, k in ((1, 3), (2, 3)) for p in make_problems(k, ops=ops, split="train", seed=1000)]
    assert sorted(written) == sorted(expected)  # half one-operation, half two-operation, train split
    totals = [
        sum(v)
        for v in zip(
            *(f(prompts=ds["prompt"], completions=ds["completion"], answer=ds["answer"]) for f in REWARD_FUNCS)
        )
    ]
    assert all(t == 4.0 for q, t in zip(ds["question"], totals) if q in written)
    assert build_sft_dataset(4, problems=6)["question"] == ds["question"]  # a fixed order


def test_sft_dataset_splits_its_problems_by_the_two_operation_share(gsm8k_dir):
    from helpers.data.problems import make_problems

    ds = build_sft_dataset(2, problems=12, two_op_share=2 / 3)
    two_op = {p.question for p in make_problems(8, ops=2, split="train", seed=1000)}
    one_op = {p.question for p in make_problems(4, ops=1, split="train", seed=1000)}
    written = set(ds["question"][:]) - set(build_sft_dataset(2)["question"])
    assert written == two_op | one_op and len(ds) == 14  # 4 one-operation + 8 two-operation
    assert (
        len(
            set(build_sft_dataset(2, problems=120, two_op_share=2 / 3)["question"])
            & {p.question for p in make_problems(80, ops=2, split="train", seed=1000)}
        )
        == 80
    )
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match="two_op_share"):
            build_sft_dataset(2, problems=4, two_op_share=bad)
