import json

import pytest

from helpers.course_format import SYSTEM_PROMPT, extract_hash_answer
from helpers.data.gsm8k import load_gsm8k, sample_rows


@pytest.mark.parametrize("split,rows", [("train", 7473), ("test", 1319)])
def test_loads_real_gsm8k_with_labels_after_hashes(gsm8k_dir, split, rows):
    ds = load_gsm8k(split)
    assert len(ds) == rows
    assert str(gsm8k_dir) in ds.info.description
    raw = [json.loads(line) for line in open(gsm8k_dir / f"{split}.jsonl")]
    for record, row in zip(raw, ds):
        assert row["answer"] == record["answer"].split("####")[1].strip()
        assert row["prompt"] == [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": record["question"]},
        ]


def test_embedded_sample_is_used_offline_without_gsm8k_dir(monkeypatch):
    monkeypatch.delenv("GSM8K_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    train, test = load_gsm8k("train"), load_gsm8k("test")
    assert (len(train), len(test)) == (40, 8)
    assert "not GSM8K" in train.info.description
    assert not set(train["question"]) & set(test["question"])  # few-shot from train never leaks test
    for split, ds in (("train", train), ("test", test)):
        for raw, row in zip(sample_rows(split), ds):
            assert row["answer"] == raw["answer"].split("####")[1].strip() != ""


def test_n_keeps_the_first_rows(gsm8k_dir):
    assert load_gsm8k("test", n=3)["question"] == load_gsm8k("test")["question"][:3]


def test_bad_inputs_raise_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="split"):
        load_gsm8k("validation")
    with pytest.raises(FileNotFoundError, match="train.jsonl"):
        load_gsm8k("train", data_dir=tmp_path)
    with pytest.raises(ValueError, match="####"):
        extract_hash_answer("no label here")
    assert extract_hash_answer("2 + 2 = 4\n#### 1,000") == "1,000"


def test_a_gpu_profile_refuses_to_train_on_the_embedded_sample(monkeypatch):
    """Colab round 4, R5: a failed hub probe made a T4 run of hours train on the 40 sample
    problems (not GSM8K) with only a print. Now the GPU profiles stop; the CPU profile goes on."""
    import pytest

    from helpers.data.problem_sets import grpo_prompts
    from helpers.training.profiles import PROFILES

    monkeypatch.delenv("GSM8K_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for name in ("t4", "bf16"):
        with pytest.raises(RuntimeError, match="not GSM8K"):
            grpo_prompts(PROFILES[name])
    assert len(grpo_prompts(PROFILES["cpu"])) > 0
