"""The GPU libraries' call contract, recorded from the pinned releases' source, and a call recorder.

Each row: the release, the file in its wheel, the function as defined there, its parameters in
order (positional-or-keyword, then keyword-only) and whether it also takes ``**kwargs``.
``tests/test_gpu_contract.py`` checks every row against the wheels' source (unsloth and
unsloth_zoo 2026.10.9, ``pip download``-ed by ``tests/pinned_wheels.py``; vllm 0.11.2 against the
table extracted from its 370 MB wheel and committed, ``tests/data/vllm_table.json``, and against the
wheel itself when it is in the wheel cache), and that the fakes take their keywords from here alone.

The fakes accept exactly these names. Two deliberate differences, both stricter than the real
functions: a name that would only reach a real ``**kwargs`` (handed on to transformers or PEFT
unchecked) is refused, and ``SamplingParams`` (a ``msgspec.Struct`` in 0.11.2) takes keywords
only, without its three underscore fields, which vLLM fills in itself.
``model.fast_generate`` is ``LLM.generate`` itself (unsloth/models/llama.py:
``model.fast_generate = model.vllm_engine.generate``).
"""

from typing import NamedTuple


class Row(NamedTuple):
    release: str
    path: str
    qualified: str
    params: tuple[str, ...]  # in order; the first ``positional`` may be passed by position
    positional: int
    var_keyword: bool  # the real function also has **kwargs


UNSLOTH, ZOO, VLLM = "unsloth-2026.10.9", "unsloth_zoo-2026.10.9", "vllm-0.11.2"

PINNED = {
    "FastLanguageModel.from_pretrained": Row(
        UNSLOTH,
        "unsloth/models/loader.py",
        "FastLanguageModel.from_pretrained",
        (
            "model_name",
            "max_seq_length",
            "dtype",
            "load_in_4bit",
            "load_in_8bit",
            "load_in_16bit",
            "full_finetuning",
            "token",
            "device_map",
            "device_map_planner_kwargs",
            "rope_scaling",
            "fix_tokenizer",
            "trust_remote_code",
            "use_gradient_checkpointing",
            "resize_model_vocab",
            "revision",
            "use_exact_model_name",
            "offload_embedding",
            "float32_mixed_precision",
            "fast_inference",
            "gpu_memory_utilization",
            "float8_kv_cache",
            "random_state",
            "max_lora_rank",
            "disable_log_stats",
            "qat_scheme",
            "load_in_fp8",
            "unsloth_tiled_mlp",
            "text_only",
            "on_model_resolved",
        ),
        29,
        True,
    ),
    "FastLanguageModel.get_peft_model": Row(
        UNSLOTH,
        "unsloth/models/llama.py",
        "FastLlamaModel.get_peft_model",
        (
            "r",
            "target_modules",
            "lora_alpha",
            "lora_dropout",
            "bias",
            "layers_to_transform",
            "layers_pattern",
            "finetune_last_n_layers",
            "use_gradient_checkpointing",
            "random_state",
            "max_seq_length",
            "use_rslora",
            "modules_to_save",
            "init_lora_weights",
            "loftq_config",
            "temporary_location",
            "qat_scheme",
            "target_parameters",
            "ensure_weight_tying",
            "offload_layers",
            "checkpoint_skip_layers",
        ),
        21,
        True,
    ),
    "model.save_pretrained_merged": Row(
        UNSLOTH,
        "unsloth/save.py",
        "unsloth_generic_save_pretrained_merged",
        (
            "save_directory",
            "tokenizer",
            "save_method",
            "push_to_hub",
            "token",
            "is_main_process",
            "state_dict",
            "save_function",
            "max_shard_size",
            "safe_serialization",
            "variant",
            "save_peft_format",
            "tags",
            "temporary_location",
            "maximum_memory_usage",
            "datasets",
            "calibration_dataset",
            "num_calibration_samples",
            "max_seq_length",
            "install_missing_dependencies",
            "dtype",
        ),
        21,
        False,
    ),
    "model.load_lora": Row(
        ZOO, "unsloth_zoo/vllm_utils.py", "load_lora", ("save_directory", "load_tensors", "lora_request_id"), 3, False
    ),
    "unsloth_zoo.vllm_utils.delete_vllm": Row(ZOO, "unsloth_zoo/vllm_utils.py", "delete_vllm", ("llm",), 1, False),
    "vllm.SamplingParams": Row(
        VLLM,
        "vllm/sampling_params.py",
        "SamplingParams",
        (
            "n",
            "best_of",
            "presence_penalty",
            "frequency_penalty",
            "repetition_penalty",
            "temperature",
            "top_p",
            "top_k",
            "min_p",
            "seed",
            "stop",
            "stop_token_ids",
            "ignore_eos",
            "max_tokens",
            "min_tokens",
            "logprobs",
            "prompt_logprobs",
            "detokenize",
            "skip_special_tokens",
            "spaces_between_special_tokens",
            "logits_processors",
            "include_stop_str_in_output",
            "truncate_prompt_tokens",
            "output_kind",
            "output_text_buffer_length",
            "structured_outputs",
            "guided_decoding",
            "logit_bias",
            "allowed_token_ids",
            "extra_args",
            "bad_words",
            "skip_reading_prefix_cache",
        ),
        0,
        False,
    ),
    "model.fast_generate": Row(
        VLLM,
        "vllm/entrypoints/llm.py",
        "LLM.generate",
        ("prompts", "sampling_params", "use_tqdm", "lora_request", "priority"),
        2,
        False,
    ),
    "vllm.LLM.sleep": Row(VLLM, "vllm/entrypoints/llm.py", "LLM.sleep", ("level",), 1, False),
    "vllm.LLM.wake_up": Row(VLLM, "vllm/entrypoints/llm.py", "LLM.wake_up", ("tags",), 1, False),
}

CALLS: list[tuple[str, dict]] = []  # (name, keyword arguments) of every call, in order


def record(name: str, args: tuple, kwargs: dict, positional: tuple[str, ...] | None = None) -> dict:
    """Check a call against :data:`PINNED` and record it; returns the call as keywords.

    Raises ``TypeError`` as Python would for the real signature: too many positional arguments,
    a parameter given twice, or a keyword the pinned release does not declare. ``positional``
    (optional) is a fake's own list of leading parameters, checked against the row, never used.
    """
    row = PINNED[name]
    if positional is not None and tuple(positional) != row.params[: len(positional)]:
        raise AssertionError(f"fake of {name}: positional {positional} differ from the pinned {row.params}")
    if len(args) > row.positional:
        raise TypeError(f"{name}() takes {row.positional} positional arguments but {len(args)} were given")
    call = dict(zip(row.params, args))
    twice = sorted(set(call) & set(kwargs))
    if twice:
        raise TypeError(f"{name}() got multiple values for {twice}")
    unknown = sorted(set(kwargs) - set(row.params))
    if unknown:
        raise TypeError(f"{name}() got unexpected keyword argument(s) {unknown} (not in {row.release} {row.path})")
    call.update(kwargs)
    CALLS.append((name, call))
    return call


def calls(name: str) -> list[dict]:
    """The recorded calls of one function, in order."""
    return [kwargs for called, kwargs in CALLS if called == name]
