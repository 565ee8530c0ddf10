"""Fake ``vllm.device_allocator``: only ``cumem``, the sleep-mode allocator."""
