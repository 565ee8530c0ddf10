"""Shared test setup: offline hub, real GSM8K beside the clone, a tiny random model."""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_GSM8K = REPO.parent / "shared" / "data" / "gsm8k"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
if SHARED_GSM8K.exists():
    os.environ.setdefault("GSM8K_DIR", str(SHARED_GSM8K))


@pytest.fixture(scope="session")
def gsm8k_dir() -> Path:
    path = Path(os.environ.get("GSM8K_DIR", SHARED_GSM8K))
    if not (path / "train.jsonl").exists():
        pytest.skip(f"GSM8K not found at {path} (set GSM8K_DIR)")
    return path


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    from helpers.training.models import smollm2_checkpoint

    return smollm2_checkpoint()


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, smollm2_dir) -> Path:
    """The tiny test model (:func:`helpers.training.trl_check.tiny_llama`) with SmolLM2's tokenizer, saved
    like a hub checkpoint."""
    import torch
    from transformers import AutoTokenizer

    from helpers.training.trl_check import tiny_llama

    tokenizer = AutoTokenizer.from_pretrained(smollm2_dir)
    torch.manual_seed(0)
    model = tiny_llama(tokenizer)
    path = tmp_path_factory.mktemp("tiny-llama")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(autouse=True)
def _no_mixed_precision_left_over(monkeypatch):
    """Each test starts without ACCELERATE_MIXED_PRECISION: transformers' TrainingArguments writes it
    for a bf16/fp16 config and keeps it for a later fp32 one, so one test's config would otherwise
    put the next test's trainers (and the subprocesses it starts) under autocast."""
    monkeypatch.delenv("ACCELERATE_MIXED_PRECISION", raising=False)
