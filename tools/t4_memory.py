"""GPU memory on a Colab T4 during a GRPO step of the ``t4`` profile: estimates from sizes, not measured.

Nothing in this course has run on a T4 yet. The sizes come from the model's shapes, the profile,
unsloth_zoo 2026.10.9's vLLM settings, and the memory lines of Unsloth's own Qwen2.5 (3B) GRPO T4
run (``unslothai/notebooks``, ``nb/Qwen2.5_(3B)-GRPO.ipynb``: "Loading model weights took 2.2160 GB",
"PyTorch activation peak memory takes 1.05GiB", CUDA graphs "took 0.62 GiB", "Max memory: 14.741 GB").
With ``UNSLOTH_VLLM_STANDBY=1`` vLLM takes :func:`helpers.training.engine.standby_gpu_memory_utilization`
of the card while it generates and sleeps (its KV cache unmapped) while the trainer computes
log-probabilities and gradients, so a step has two phases, each with its own free memory:
:func:`t4_memory` (``python -m tools.t4_memory`` prints it; docs/t4.md quotes it).
"""

from __future__ import annotations

TOTAL_GIB = 14.74  # a T4 as torch sees it
CONTEXT_GIB = 0.4  # CUDA context outside torch (typical, not measured)
WEIGHTS_GIB = 2.22  # Qwen2.5-3B-Instruct in Unsloth's dynamic 4-bit, shared by vLLM and the trainer
LORA_SLOTS_GIB = 0.22  # vLLM's LoRA slots: one adapter of rank 64, fp16
ACTIVATION_PEAK_GIB = 1.05  # vLLM's profiling run, part of its budget, freed after start
CUDA_GRAPHS_GIB = 0.62  # outside vLLM's budget
KV_BYTES_PER_TOKEN = 2 * 36 * 2 * 128 * 2  # K and V x 36 layers x 2 KV heads x 128 x fp16: 36 KiB
MAX_NUM_SEQS = 48  # vLLM's concurrent sequences on a T4 (unsloth_zoo load_vllm)
# Qwen2.5-3B-Instruct: 36 layers, hidden 2048, MLP 11008, 16 query and 2 KV heads of 128, vocabulary 151,936.
LAYERS, HIDDEN, MLP, KV_DIM, VOCAB = 36, 2048, 11008, 256, 151936
# Chunked log-probabilities: at most 0.6 GB for 3,648 tokens a step (colab-round3 review, its memory table).
LOGPROB_BYTES_PER_TOKEN = 0.6e9 / 3648
WORKSPACE_GIB = 0.5  # cuBLAS, the allocator's fragmentation, the reference pass (no gradient)


def lora_parameters(rank: int) -> int:
    """LoRA parameters on Qwen2.5-3B's seven projections at ``rank``: rank x (in + out) per matrix."""
    per_layer = 2 * (HIDDEN + HIDDEN) + 2 * (HIDDEN + KV_DIM) + 3 * (HIDDEN + MLP)
    return LAYERS * rank * per_layer


def t4_memory(profile, total_gib: float = TOTAL_GIB) -> dict:
    """The T4's memory in the two phases of a GRPO step for ``profile`` (GiB unless named otherwise).

    * ``free_while_vllm_is_awake_gib``: the card less the context, vLLM's weights, LoRA slots, KV cache
      and CUDA graphs; the trainer holds only its persistent state then (``trainer_persistent_gib``:
      the LoRA in fp32 and AdamW's two moments, 1 byte each in 8-bit).
    * ``free_while_vllm_sleeps_gib``: the KV cache unmapped; the trainer's step then peaks at
      ``trainer_peak_gib``: its persistent state, fp32 gradients, one decoder layer recomputed
      (gradient checkpointing; Unsloth keeps the other layers' inputs in CPU memory), the chunked
      log-probabilities of ``trainer_step_tokens`` = batch x (prompt + completion) tokens, a workspace.
    * ``kv_tokens``: what vLLM's KV cache holds; ``kv_tokens_needed``: 48 sequences at full length.

    Raises:
        ValueError: ``profile`` is not of Qwen2.5-3B-Instruct (the sizes are that model's).
    """
    from helpers.colab.persist import OPTIMIZER_BYTES
    from helpers.training.engine import standby_gpu_memory_utilization
    from helpers.training.profiles import QWEN_3B

    if profile.model_id != QWEN_3B:
        raise ValueError(f"t4_memory holds Qwen2.5-3B-Instruct's sizes, not {profile.model_id}'s")
    gib = 2**30
    vllm_budget = standby_gpu_memory_utilization(total_gib) * total_gib
    kv = vllm_budget - WEIGHTS_GIB - LORA_SLOTS_GIB - ACTIVATION_PEAK_GIB
    lora = lora_parameters(profile.lora_rank)
    persistent = lora * (4 + OPTIMIZER_BYTES.get(profile.optim, 8)) / gib
    tokens = profile.per_device_train_batch_size * (profile.max_prompt_length + profile.max_completion_length)
    recompute = tokens * MLP * 2 * 3 / gib  # gate, up and their product, 16-bit
    peak = persistent + 4 * lora / gib + recompute + tokens * LOGPROB_BYTES_PER_TOKEN / gib + WORKSPACE_GIB
    held = CONTEXT_GIB + WEIGHTS_GIB + LORA_SLOTS_GIB + CUDA_GRAPHS_GIB
    return {
        "total_gib": round(total_gib, 2),
        "vllm_budget_gib": round(vllm_budget, 2),
        "kv_cache_gib": round(kv, 2),
        "kv_tokens": int(kv * gib / KV_BYTES_PER_TOKEN),
        "kv_tokens_needed": MAX_NUM_SEQS * (profile.max_prompt_length + profile.max_completion_length),
        "free_while_vllm_is_awake_gib": round(total_gib - held - kv, 2),
        "free_while_vllm_sleeps_gib": round(total_gib - held, 2),
        "trainer_persistent_gib": round(persistent, 2),
        "trainer_step_tokens": tokens,
        "trainer_peak_gib": round(peak, 2),
    }


if __name__ == "__main__":
    from helpers.training.profiles import PROFILES

    for name, value in t4_memory(PROFILES["t4"]).items():
        print(f"{name}: {value}")
