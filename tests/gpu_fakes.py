"""The fake GPU stack of the contract tests: fakes of the pinned unsloth, unsloth_zoo and vLLM
(``tests/fakes``), importable under their real names, and a fake GPU's memory.

:func:`install` puts the fakes on the path for one test (a fresh process each time: the modules,
and with them vLLM's one-per-process sleep-mode allocator, are imported anew); :class:`FakeGPU` says
how much memory the fake engines hold, for ``torch.cuda.mem_get_info``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from helpers.training.hardware import GPU

FAKES = Path(__file__).resolve().parent / "fakes"


FAKE_MODULES = (
    "pinned",
    "unsloth",
    "unsloth._model",
    "unsloth_zoo",
    "unsloth_zoo.vllm_utils",
    "vllm",
    "vllm.device_allocator",
    "vllm.device_allocator.cumem",
)


T4, L4 = GPU("Tesla T4", (7, 5), 14.7), GPU("NVIDIA L4", (8, 9), 22.5)


GIB = 2**30


def install(monkeypatch, tiny_model_dir, gpu: GPU = T4):
    """Make the fakes importable as unsloth / unsloth_zoo / vllm on ``gpu``, loading ``tiny_model_dir``;
    returns the call recorder (``fakes/pinned.py``). Pair with :func:`uninstall`."""
    monkeypatch.syspath_prepend(str(FAKES))
    uninstall()
    import pinned
    import unsloth
    import unsloth_zoo.vllm_utils  # noqa: F401
    import vllm  # noqa: F401

    unsloth.MODEL_DIR, unsloth.CAPABILITY = str(tiny_model_dir), gpu.capability
    monkeypatch.setattr("helpers.training.hardware.gpu_info", lambda: gpu)
    monkeypatch.delenv("UNSLOTH_VLLM_STANDBY", raising=False)
    return pinned


def uninstall() -> None:
    """Forget the fakes and the engines the course saw loaded (the end of the fake process): a model a
    failed test's traceback still holds is not counted as a live engine by the next test."""
    from helpers.training import engine

    for name in FAKE_MODULES:
        sys.modules.pop(name, None)
    engine._LIVE_VLLM.clear()
    engine._LORA_REQUESTS.clear()


class FakeGPU:
    """A T4 as torch sees it (14.74 GiB), with a CUDA context outside torch (0.4 GiB) and, used besides:
    the fake engines' sleep-mode pool blocks that are mapped, the memory of engines without sleep mode
    until ``delete_vllm``, and ``other`` bytes (CUDA graphs, another process)."""

    def __init__(self, total_gib: float = 14.74, context_gib: float = 0.4, other_gib: float = 0.4):
        self.total, self.context, self.other = (int(g * GIB) for g in (total_gib, context_gib, other_gib))

    def used(self) -> int:
        from unsloth._model import ENGINES
        from vllm.device_allocator.cumem import CuMemAllocator

        pools = CuMemAllocator.instance.mapped_bytes() if CuMemAllocator.instance is not None else 0
        return self.context + self.other + pools + sum(engine.held_bytes() for engine in list(ENGINES))

    def mem_get_info(self, device=None) -> tuple[int, int]:
        """``torch.cuda.mem_get_info``: (free, total) bytes."""
        return self.total - self.used(), self.total

    def patch_torch(self, monkeypatch) -> None:
        """torch.cuda reports this GPU: available, its free memory, an ``empty_cache`` that frees nothing
        of the pools (as PyTorch's does not)."""
        import torch

        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "mem_get_info", self.mem_get_info)
        monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
