"""The GPU libraries' call contract, recorded from the pinned releases, and a call recorder.

Each entry: the name the course calls, where it was read (file in the pinned wheel), and the
keyword arguments that function accepts. ``tests/test_gpu_contract.py`` checks the unsloth and
unsloth_zoo rows against the wheels' source when they can be fetched (``pip download --no-deps``).

vLLM 0.11.2 was not downloaded (the wheel is large). Its rows hold the names present both in the
oldest and the newest ``vllm-project/vllm`` source read (``vllm/sampling_params.py`` at commits
db57383 and 00388f6, ``vllm/entrypoints/llm.py`` ``LLM.generate`` at 0012cf6), so they are in
0.11.2 too; the course uses only ``temperature``, ``top_p``, ``max_tokens`` and ``seed``.
``model.fast_generate`` is ``LLM.generate`` itself (unsloth/models/llama.py:
``model.fast_generate = model.vllm_engine.generate``).
"""

UNSLOTH = "unsloth-2026.10.9"
ZOO = "unsloth_zoo-2026.10.9"

PINNED = {
    "FastLanguageModel.from_pretrained": (
        UNSLOTH, "unsloth/models/loader.py", "FastLanguageModel.from_pretrained", frozenset({
            "model_name", "max_seq_length", "dtype", "load_in_4bit", "load_in_8bit", "load_in_16bit",
            "full_finetuning", "token", "device_map", "device_map_planner_kwargs", "rope_scaling",
            "fix_tokenizer", "trust_remote_code", "use_gradient_checkpointing", "resize_model_vocab",
            "revision", "use_exact_model_name", "offload_embedding", "float32_mixed_precision",
            "fast_inference", "gpu_memory_utilization", "float8_kv_cache", "random_state",
            "max_lora_rank", "disable_log_stats", "qat_scheme", "load_in_fp8", "unsloth_tiled_mlp",
            "text_only", "on_model_resolved"})),
    "FastLanguageModel.get_peft_model": (
        UNSLOTH, "unsloth/models/llama.py", "FastLlamaModel.get_peft_model", frozenset({
            "r", "target_modules", "lora_alpha", "lora_dropout", "bias", "layers_to_transform",
            "layers_pattern", "finetune_last_n_layers", "use_gradient_checkpointing", "random_state",
            "max_seq_length", "use_rslora", "modules_to_save", "init_lora_weights", "loftq_config",
            "temporary_location", "qat_scheme", "target_parameters", "ensure_weight_tying",
            "offload_layers", "checkpoint_skip_layers"})),
    "model.save_pretrained_merged": (
        UNSLOTH, "unsloth/save.py", "unsloth_generic_save_pretrained_merged", frozenset({
            "save_directory", "tokenizer", "save_method", "push_to_hub", "token", "is_main_process",
            "state_dict", "save_function", "max_shard_size", "safe_serialization", "variant",
            "save_peft_format", "tags", "temporary_location", "maximum_memory_usage", "datasets",
            "calibration_dataset", "num_calibration_samples", "max_seq_length",
            "install_missing_dependencies", "dtype"})),
    "model.load_lora": (
        ZOO, "unsloth_zoo/vllm_utils.py", "load_lora",
        frozenset({"save_directory", "load_tensors", "lora_request_id"})),
    "unsloth_zoo.vllm_utils.delete_vllm": (
        ZOO, "unsloth_zoo/vllm_utils.py", "delete_vllm", frozenset({"llm"})),
    "vllm.SamplingParams": (
        "vllm (see module docstring)", "vllm/sampling_params.py", "SamplingParams", frozenset({
            "n", "presence_penalty", "frequency_penalty", "repetition_penalty", "temperature", "top_p",
            "top_k", "min_p", "seed", "stop", "stop_token_ids", "ignore_eos", "max_tokens", "min_tokens",
            "logprobs", "prompt_logprobs", "detokenize", "skip_special_tokens",
            "spaces_between_special_tokens", "include_stop_str_in_output", "output_kind", "logit_bias",
            "allowed_token_ids"})),
    "model.fast_generate": (
        "vllm (see module docstring)", "vllm/entrypoints/llm.py", "LLM.generate",
        frozenset({"prompts", "sampling_params", "use_tqdm", "lora_request", "priority"})),
}

CALLS: list[tuple[str, dict]] = []  # (name, keyword arguments) of every call, in order


def record(name: str, args: tuple, kwargs: dict, positional: tuple[str, ...] = ()) -> dict:
    """Check a call against :data:`PINNED` and record it; returns the call as keywords.

    ``positional`` names the positional parameters in order. Raises ``TypeError`` for a keyword
    the pinned release does not accept, as Python would.
    """
    allowed = PINNED[name][3]
    if len(args) > len(positional):
        raise TypeError(f"{name}: {len(args)} positional arguments, the fake knows {positional}")
    call = dict(zip(positional, args))
    unknown = sorted((set(kwargs) | set(call)) - allowed)
    if unknown:
        raise TypeError(f"{name}() got unexpected keyword argument(s) {unknown} "
                        f"(not in {PINNED[name][0]} {PINNED[name][1]})")
    call.update(kwargs)
    CALLS.append((name, call))
    return call


def calls(name: str) -> list[dict]:
    """The recorded calls of one function, in order."""
    return [kwargs for called, kwargs in CALLS if called == name]
