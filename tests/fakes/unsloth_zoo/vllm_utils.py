"""Fake ``unsloth_zoo.vllm_utils``: ``delete_vllm`` as unsloth_zoo 2026.10.9 does it, and records the call.

The real one deletes ``llm.llm_engine.model_executor`` (an ``AttributeError`` when called twice on one
engine), collects garbage and empties torch's cache: memory in vLLM's sleep-mode pools is not
returned (``vllm.device_allocator.cumem``), so the fake engine's pool blocks stay held.
"""

import weakref

from pinned import record


def delete_vllm(*args, **kwargs):
    call = record("unsloth_zoo.vllm_utils.delete_vllm", args, kwargs)
    if call.get("llm") is not None:
        del call["llm"].llm_engine.model_executor
        call["llm"].alive = False
        call["llm"] = weakref.ref(call["llm"])  # the record must not keep the engine alive
