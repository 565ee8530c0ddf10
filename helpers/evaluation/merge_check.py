"""Notebook 06's section 8, merge and check, in a form that survives a restart of the session.

On a T4 the section merges the LoRA into the base weights (:func:`helpers.evaluation.adapters.save_merged`),
releases the policy and reloads the merged model in 4-bit (:func:`helpers.evaluation.adapters.load_merged`),
which stops with :class:`helpers.training.engine.GPUMemoryError` when the GPU is still too full. Its
advice is to restart the session, run the install and settings cells, then section 8 again. After a
restart nothing of sections 2-5 exists (the adapter's folder, the policy, the test questions), so
section 8 rebuilds what it needs from the settings and from disk: :func:`merge_once` writes the
merged model and, last, :data:`RECORD_FILE` (the running example's prompt and the LoRA's greedy
answer to it) into the merged folder; when both are there it returns them without loading anything,
and the reload then has the whole GPU.
"""

from __future__ import annotations

import json
from pathlib import Path

RECORD_FILE = "with_lora.json"


def merge_once(profile, adapter_dir, root, prompt, max_new_tokens: int, *, model=None, tokenizer=None):
    """Merge the adapter in ``adapter_dir`` once, and answer ``prompt`` greedily with base + LoRA once.

    The merged folder is :func:`helpers.colab.persist.merged_dir` (beside the adapter, or under
    ``root`` for an adapter on Drive). If it already holds a merged checkpoint and a
    :data:`RECORD_FILE` for this adapter (the modification time of its weights), prompt and
    ``max_new_tokens``, that answer is returned and nothing is loaded. Otherwise the answer is
    generated with ``model`` (vLLM applies the LoRA from ``adapter_dir``; PEFT's adapter is in memory),
    the merged model saved, and the record written last, so that a merge cut short is done again.
    Without ``model`` the policy is loaded here (:func:`helpers.evaluation.adapters.load_with_adapter`:
    one vLLM engine, allowed in a fresh session) and released before returning, so that the merged
    model can be loaded next.

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
    from helpers.colab.persist import merged_dir
    from helpers.evaluation.adapters import check_adapter_dir, load_with_adapter, save_merged
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
