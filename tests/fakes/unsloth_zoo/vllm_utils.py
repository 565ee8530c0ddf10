"""Fake ``unsloth_zoo.vllm_utils``: ``delete_vllm`` marks the fake engine dead and records the call."""

import weakref

from pinned import record


def delete_vllm(*args, **kwargs):
    call = record("unsloth_zoo.vllm_utils.delete_vllm", args, kwargs)
    if call.get("llm") is not None:
        call["llm"].alive = False
        call["llm"] = weakref.ref(call["llm"])  # the record must not keep the engine alive
