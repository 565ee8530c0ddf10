"""Test-only fake of vLLM 0.11.2: ``SamplingParams`` with the pinned keyword arguments only."""

from pinned import record


class SamplingParams:
    def __init__(self, *args, **kwargs):
        self.kwargs = record("vllm.SamplingParams", args, kwargs)
