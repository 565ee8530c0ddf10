"""Fake ``vllm.device_allocator.cumem``: vLLM 0.11.2's sleep-mode allocator as Unsloth patches it.

What it models, from the pinned wheels (rows in ``tests/data/vllm_table.json``):

* one ``CuMemAllocator`` per process (``get_instance``, a class attribute: ``cumem.py``), created by
  the first engine with sleep mode (``UNSLOTH_VLLM_STANDBY=1`` -> ``enable_sleep_mode=True``);
* an engine with sleep mode allocates its weights (tag ``"weights"``) and KV cache (``"kv_cache"``)
  in the allocator's memory pools, which keep every block until the process ends: PyTorch's
  ``empty_cache`` does not return a live pool's memory and the free callback that would pop
  ``pointer_to_data`` never runs, so deleting the engine frees nothing and ``get_current_usage``
  stays above 0;
* ``sleep`` as ``unsloth_zoo.vllm_utils.patch_vllm_enable_sleep_mode`` replaces it: every allocation
  except the weights (which Unsloth shares with the trainer) is unmapped, so its memory goes back to
  the GPU; ``wake_up`` maps it again. ``get_current_usage`` counts mapped and unmapped blocks alike;
* ``vllm/v1/worker/gpu_worker.py``: an engine with sleep mode starts only while
  ``get_current_usage() == 0``, else ``AssertionError("Sleep mode can only be used for one instance
  per process.")``.

Sizes are bytes and nothing is allocated: :meth:`CuMemAllocator.mapped_bytes` (not in vLLM) is what
the fake GPU (``tests/gpu_fakes.py``) counts as used.
"""

ONE_INSTANCE = "Sleep mode can only be used for one instance per process."


class AllocationData:
    def __init__(self, size: int, tag: str):
        self.handle = (0, size)  # (device, bytes), as vLLM's handle[1] is the size
        self.tag = tag
        self.mapped = True


class CuMemAllocator:
    instance = None
    default_tag = "default"

    @staticmethod
    def get_instance():
        if CuMemAllocator.instance is None:
            CuMemAllocator.instance = CuMemAllocator()
        return CuMemAllocator.instance

    def __init__(self):
        self.pointer_to_data: dict[int, AllocationData] = {}
        self._next_pointer = 1

    def allocate(self, tag: str, size: int) -> int:
        """A block of ``size`` bytes made inside ``use_memory_pool(tag)``; never freed (see the module)."""
        pointer, self._next_pointer = self._next_pointer, self._next_pointer + 1
        self.pointer_to_data[pointer] = AllocationData(size, tag)
        return pointer

    def sleep(self, offload_tags=None) -> None:
        for data in self.pointer_to_data.values():
            if data.tag != "weights":  # Unsloth's patch: weights stay (the trainer uses them)
                data.mapped = False

    def wake_up(self, tags=None) -> None:
        for data in self.pointer_to_data.values():
            if data.tag != "weights" and (tags is None or data.tag in tags):
                data.mapped = True

    def get_current_usage(self) -> int:
        return sum(data.handle[1] for data in self.pointer_to_data.values())

    def mapped_bytes(self, tag: str | None = None) -> int:
        """Bytes the GPU really holds for the pools (all tags, or one)."""
        return sum(d.handle[1] for d in self.pointer_to_data.values() if d.mapped and tag in (None, d.tag))


def start_engine(weights_bytes: int, kv_cache_bytes: int) -> None:
    """What an engine with sleep mode does at start: the check of ``gpu_worker.py``, then its blocks."""
    allocator = CuMemAllocator.get_instance()
    assert allocator.get_current_usage() == 0, ONE_INSTANCE
    allocator.allocate("weights", weights_bytes)
    allocator.allocate("kv_cache", kv_cache_bytes)
