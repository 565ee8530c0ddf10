"""Completions for batches of chat prompts from a loaded policy: :func:`generate` (and :func:`chat_texts`)."""

from __future__ import annotations

import os

from helpers.training.engine import lora_request, uses_vllm


def chat_texts(tokenizer, prompts: list[list[dict]]) -> list[str]:
    """Apply the chat template (with the assistant turn opened) to each prompt."""
    return [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in prompts]


def generate(
    model,
    tokenizer,
    prompts: list[list[dict]],
    *,
    max_new_tokens: int = 200,
    temperature: float = 1.0,
    top_p: float = 1.0,
    seed: int = 0,
    lora_path: str | os.PathLike | None = None,
    batch_size: int = 8,
) -> list[str]:
    """Generate one completion per chat prompt; returns the decoded completions (no prompt).

    ``temperature=0`` means greedy decoding. On a model loaded with vLLM (Unsloth ``fast_inference``) this
    calls ``model.fast_generate`` with ``SamplingParams``, applying the LoRA saved at ``lora_path`` if given
    (one request per folder, :func:`lora_request`); otherwise batches of
    :func:`helpers.training.fast_rollouts.sample` (left padding; greedy output is HF ``generate``'s token for
    token, sampling is HF's without top-k, as TRL's rollouts; its own generator seeded with ``seed``), where
    ``lora_path`` must be None: the adapter already lives in the model.

    Raises:
        ValueError: ``lora_path`` given for a plain HF model.
    """
    texts = chat_texts(tokenizer, prompts)
    if uses_vllm(model):
        return _generate_vllm(model, texts, max_new_tokens, temperature, top_p, seed, lora_path)
    if lora_path is not None:
        raise ValueError("lora_path is for vLLM; for an HF model load the adapter into the model")
    return _generate_hf(model, tokenizer, texts, max_new_tokens, temperature, top_p, seed, batch_size)


def _generate_vllm(model, texts, max_new_tokens, temperature, top_p, seed, lora_path):
    from vllm import SamplingParams

    params = SamplingParams(temperature=temperature, top_p=top_p, max_tokens=max_new_tokens, seed=seed)
    request = lora_request(model, lora_path) if lora_path else None
    outputs = model.fast_generate(texts, sampling_params=params, lora_request=request, use_tqdm=False)
    return [o.outputs[0].text for o in outputs]


def _generate_hf(model, tokenizer, texts, max_new_tokens, temperature, top_p, seed, batch_size):
    import torch

    from helpers.grpo import stop_token_ids
    from helpers.training.fast_rollouts import sample

    tokenizer.padding_side = "left"
    # its own stream: the same draws as seeding torch's global one, without moving the caller's
    generator = torch.Generator(device=model.device).manual_seed(seed)
    completions: list[str] = []
    stop_ids = stop_token_ids(tokenizer, getattr(model, "generation_config", None))
    model.eval()
    for start in range(0, len(texts), batch_size):
        batch = tokenizer(
            texts[start : start + batch_size], return_tensors="pt", padding=True, add_special_tokens=False
        ).to(model.device)
        new_tokens = sample(
            model,
            batch["input_ids"],
            batch["attention_mask"],
            max_new_tokens=max_new_tokens,
            eos_token_id=stop_ids,
            pad_token_id=tokenizer.pad_token_id,
            temperature=temperature,
            top_p=top_p,
            generator=generator,
        )
        completions += tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
    return completions
