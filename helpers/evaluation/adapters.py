"""A trained LoRA adapter on disk: find its base model (:func:`adapter_base`), load base + adapter
(:func:`load_with_adapter`), and merge the LoRA into a plain checkpoint that loads without PEFT
(:func:`save_merged`, :func:`load_merged`; the GPU memory that needs: :func:`merged_4bit_gib`).

Notebook 06's section 8 runs the merge through :func:`merge_once`, which survives a restart: it writes the
merged model and, last, :data:`RECORD_FILE` (the prompt and the LoRA's greedy answer); when both are there
it returns them without loading anything, so the reload has the whole GPU.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

from helpers.colab.persist import check_adapter_dir, merged_dir


def is_peft(model) -> bool:
    """True for a ``peft.PeftModel`` (a model with its LoRA adapter)."""
    from peft import PeftModel

    return isinstance(model, PeftModel)


def adapter_base(adapter_dir, model_path=None):
    """The model an adapter was trained on: ``model_path`` if given, else the run's merged cold
    start (``cold_start/`` beside ``adapter_dir``, as :func:`helpers.training.pipeline.run_pipeline` writes
    it), else the local model folder its ``adapter_config.json`` names (a run that reused another
    run's cold start, ``--cold-start DIR``), else ``None`` (the profile's model)."""
    if model_path is not None:
        return model_path
    cold_start = Path(adapter_dir).parent / "cold_start"
    if (cold_start / "config.json").exists():
        return cold_start
    config = Path(adapter_dir) / "adapter_config.json"
    named = json.loads(config.read_text()).get("base_model_name_or_path") if config.exists() else None
    # A run with --cold-start DIR has no cold_start/ beside its adapter: the adapter's own config names
    # its base, and loading it on the raw base model instead would evaluate garbage.
    return Path(named) if named and (Path(named) / "config.json").exists() else None


def load_with_adapter(profile, adapter_dir, model_path=None):
    """``(model, tokenizer)``: the adapter's base model (:func:`adapter_base`: ``model_path``, the
    run's cold start, or the profile's model) with the trained LoRA from ``adapter_dir``.

    CPU (transformers): ``peft.PeftModel.from_pretrained`` on the base model. GPU (Unsloth):
    the usual policy with a LoRA of the profile's shape, whose weights are then replaced by the
    saved ones (evaluation applies the adapter through vLLM from ``adapter_dir``; the in-memory
    copy is what :func:`save_merged` merges).

    Raises:
        FileNotFoundError: no adapter in ``adapter_dir`` (see :func:`helpers.colab.persist.check_adapter_dir`).
        ValueError: on GPU, the saved adapter's rank differs from the profile's.
    """
    from helpers.training.models import load_model

    adapter_dir = check_adapter_dir(adapter_dir)
    model_path = adapter_base(adapter_dir, model_path)
    if profile.backend != "unsloth":
        from peft import PeftModel

        base, tokenizer = load_model(profile, model_path, lora=False)
        return PeftModel.from_pretrained(base, str(adapter_dir)), tokenizer
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    rank = json.loads((adapter_dir / "adapter_config.json").read_text())["r"]
    if rank != profile.lora_rank:
        raise ValueError(f"adapter rank {rank} != profile {profile.name} rank {profile.lora_rank}")
    model, tokenizer = load_model(profile, model_path, lora=True)
    set_peft_model_state_dict(model, load_file(adapter_dir / "adapter_model.safetensors"))
    return model, tokenizer


def save_merged(model, tokenizer, out_dir) -> Path:
    """Merge the LoRA into the base weights and save a standalone checkpoint in ``out_dir``.

    Unsloth: ``model.save_pretrained_merged(out_dir, tokenizer, save_method="merged_16bit")``
    (16-bit weights; a 4-bit base is de-quantized). PEFT: ``merge_and_unload()`` on a deep copy
    (``model`` keeps its adapter), saved as safetensors in the model's own dtype - fp32 for the
    CPU profile, so that reloading it gives the same greedy output bit for bit.

    Raises:
        ValueError: ``model`` has no LoRA adapter to merge.
    """
    if not is_peft(model):
        raise ValueError("model has no LoRA adapter to merge (expected a peft.PeftModel)")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if hasattr(model, "save_pretrained_merged"):
        model.save_pretrained_merged(str(out_dir), tokenizer, save_method="merged_16bit")
        return out_dir
    merged = copy.deepcopy(model).merge_and_unload()
    merged.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    return out_dir


NF4_BYTES = 0.5 + 1 / 64 + 4 / (64 * 256)  # 4 bits, an 8-bit scale per block of 64, an fp32 one per 256 scales
DEVICE_MAP_SHARE = 0.9  # transformers 4.56 Bnb4BitHfQuantizer.adjust_max_memory: 90 % of the free memory


def safetensors_header(file) -> dict:
    """The tensor table of a ``.safetensors`` file (name -> dtype, shape, offsets), read from its header
    only: nothing is loaded, so a checkpoint of any size costs a few kB.

    Raises:
        ValueError: the file is shorter than its header says (not a safetensors file, or cut off).
    """
    import struct

    with open(file, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise ValueError(f"{file}: not a safetensors file (shorter than 8 bytes)")
        (length,) = struct.unpack("<Q", head)
        text = f.read(length)
    if len(text) < length:
        raise ValueError(f"{file}: its header is cut off ({len(text)} of {length} bytes)")
    header = json.loads(text)
    header.pop("__metadata__", None)
    return header


def merged_4bit_gib(path, headroom_gib: float = 0.5) -> float:
    """GPU memory (GiB) :func:`load_merged` needs for the merged 16-bit checkpoint in ``path`` loaded in
    4-bit: an estimate from the checkpoint's tensor table (:func:`safetensors_header`), not measured.

    * The weights as bitsandbytes keeps them: each linear layer's 2-D weight in NF4 with double
      quantization (:data:`NF4_BYTES`, 0.516 byte a parameter); the embedding, ``lm_head`` (which
      transformers leaves unquantized), norms and biases in 16 bit. Qwen2.5-3B-Instruct: 2.77 B
      linear parameters -> 1.33 GiB, 0.31 B embedding -> 0.58 GiB: 1.92 GiB.
    * ``device_map="auto"`` places them only within :data:`DEVICE_MAP_SHARE` (90 %) of the free
      memory, so at least weights / 0.9 must be free (2.13 GiB for the 3B model).
    * On top of the weights: the largest linear weight, which waits in 16 bit on the GPU to be
      quantized, and ``headroom_gib`` for generating (workspace, KV cache, logits). The 3B model:
      1.92 + 0.04 + 0.5 = 2.46 GiB.

    Returns the larger of the two, in GiB.

    Raises:
        ValueError: a file that is not safetensors.
    """
    weights = largest = 0.0
    for file in Path(path).glob("*.safetensors"):
        for name, tensor in safetensors_header(file).items():
            numel = math.prod(tensor["shape"])
            # Embeddings and the output head stay 16-bit under bitsandbytes (transformers' get_keys_to_not_convert)
            kept_16bit = "embed" in name or "lm_head" in name or "wte" in name
            linear = name.endswith(".weight") and len(tensor["shape"]) == 2 and not kept_16bit
            weights += numel * (NF4_BYTES if linear else 2)
            largest = max(largest, 2 * numel if linear else 0)
    weights, largest = weights / 2**30, largest / 2**30
    return max(weights / DEVICE_MAP_SHARE, weights + largest + headroom_gib)


def load_merged(path, profile):
    """``(model, tokenizer)`` from a merged checkpoint, with plain transformers (no PEFT, no vLLM).

    CPU (transformers backend): :func:`helpers.training.models.load_model` without LoRA, in the profile's
    dtype. Unsloth profiles (T4): the merged 16-bit checkpoint re-quantized to 4-bit on load (bitsandbytes
    NF4, compute in the profile's dtype; about 2.5 GB for the 3B model instead of 6.2 GB in fp16), only
    after the policy's vLLM engine is gone: generate with the LoRA, :func:`save_merged`,
    :func:`helpers.training.engine.release` the policy and ``del`` it, then this. Not run on a GPU yet.

    Raises:
        RuntimeError: an Unsloth model's vLLM engine is still up (release it first).
        helpers.training.engine.GPUMemoryError: less free GPU memory than :func:`merged_4bit_gib` (the
            policy was not dropped, or another process holds the card); the message says how to get
            here after a restart, where notebook 06's section 8 finds the merged model on disk
            (:func:`helpers.evaluation.adapters.merge_once`) and loads no policy.
    """
    from helpers.training.engine import free_gpu_memory, live_vllm_models
    from helpers.training.models import load_model
    from helpers.training.profiles import torch_dtype

    if profile.backend != "unsloth":
        return load_model(profile, path, lora=False)
    if live_vllm_models():
        raise RuntimeError(
            "a vLLM engine still holds most of the GPU: call helpers.training.engine.release(model) "
            "and `del model` before loading the merged model next to it"
        )
    restart = (
        "the install and settings cells, then notebook 06's section 8 from its first cell: the merged "
        f"model and the LoRA's answer are on disk ({path}), so no policy is loaded and the GPU is free for it"
    )
    free_gpu_memory(merged_4bit_gib(path), "the merged model in 4-bit", restart)  # collects the deleted policy first
    from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig

    dtype = torch_dtype(profile)
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"
    quantization = BitsAndBytesConfig(
        load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=dtype
    )
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, quantization_config=quantization, device_map="auto")
    return model, tokenizer


# ------------------------------------------------------- notebook 06's merge, restart-safe
RECORD_FILE = "with_lora.json"


def merge_once(profile, adapter_dir, root, prompt, max_new_tokens: int, *, model=None, tokenizer=None):
    """Merge the adapter in ``adapter_dir`` once, and answer ``prompt`` greedily with base + LoRA once.

    The merged folder is :func:`helpers.colab.persist.merged_dir`. If it already holds a merged checkpoint
    and a :data:`RECORD_FILE` for this adapter (the modification time of its weights), prompt and
    ``max_new_tokens``, that answer is returned and nothing is loaded. Otherwise the answer is generated
    with ``model``, the merged model saved, and the record written last, so that a merge cut short is done
    again. Without ``model`` the policy is loaded here (:func:`load_with_adapter`: one vLLM engine, allowed
    in a fresh session) and released before returning, so that the merged model can be loaded next.

    Args:
        profile: the run's profile. adapter_dir: the saved LoRA. root: the course's folder
            (``/content/grpo-course`` in Colab). prompt: a chat prompt (list of messages).
        max_new_tokens: the greedy answer's length limit. model, tokenizer: the loaded policy, if any.

    Returns:
        ``(merged folder, the LoRA's greedy answer)``.

    Raises:
        FileNotFoundError: ``adapter_dir`` holds no adapter.
        helpers.training.engine.SecondEngineError: no ``model`` given, no merge on disk, and this
            process cannot start the vLLM engine the policy needs (restart the session).
    """
    from helpers.training.engine import release, uses_vllm
    from helpers.training.generation import generate

    adapter_dir = check_adapter_dir(adapter_dir)
    out = merged_dir(adapter_dir, root)
    expected = {"adapter": _adapter_key(adapter_dir), "prompt": prompt, "max_new_tokens": max_new_tokens}
    record = _read_record(out)
    if record is not None and {k: record.get(k) for k in expected} == expected and any(out.glob("*.safetensors")):
        print(f"Found this adapter's merged model and its answer in {out} (an earlier session): nothing to load.")
        return out, record["completion"]
    (out / RECORD_FILE).unlink(missing_ok=True)
    owned = model is None
    if owned:
        model, tokenizer = load_with_adapter(profile, adapter_dir)
    lora = adapter_dir if uses_vllm(model) else None
    completion = generate(model, tokenizer, [prompt], max_new_tokens=max_new_tokens, temperature=0, lora_path=lora)[0]
    save_merged(model, tokenizer, out)
    (out / RECORD_FILE).write_text(json.dumps({**expected, "completion": completion}, indent=1) + "\n")
    if owned and uses_vllm(model):
        release(model)
    del model, tokenizer
    return out, completion


def _adapter_key(adapter_dir: Path) -> str:
    weights = adapter_dir / "adapter_model.safetensors"
    return f"{adapter_dir.resolve()}@{weights.stat().st_mtime_ns if weights.exists() else 0}"


def _read_record(out: Path) -> dict | None:
    try:
        return json.loads((out / RECORD_FILE).read_text())
    except (OSError, ValueError):  # missing, or cut off mid-write: merge again
        return None
