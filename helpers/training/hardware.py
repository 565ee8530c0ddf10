"""The machine: which GPU there is (:func:`gpu_info`), and which profile it gets (:func:`pick_profile_name`).
The precision a profile trains in on it is :func:`helpers.training.profiles.precision`. Importing this
module does not import torch.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

BF16_MIN_GB = 20.0  # GiB of GPU memory the bf16 profile needs (see helpers.training.profiles.BF16)


@dataclass(frozen=True)
class GPU:
    """One CUDA device: ``capability`` is (major, minor), ``memory_gb`` the total in GiB."""

    name: str
    capability: tuple[int, int]
    memory_gb: float

    @property
    def bf16(self) -> bool:
        """Native bf16 (Ampere, capability 8.0, and newer). ``torch.cuda.is_bf16_supported()``
        answers True on a T4 too, counting slow emulation, so the capability decides here."""
        return tuple(self.capability) >= (8, 0)

    def describe(self) -> str:
        major, minor = self.capability
        return (
            f"{self.name} (compute capability {major}.{minor}, {self.memory_gb:.1f} GiB, "
            f"{'bf16' if self.bf16 else 'no bf16'})"
        )


def gpu_info() -> GPU | None:
    """The first CUDA GPU as torch sees it, or None without one (imports torch)."""
    import torch

    if not torch.cuda.is_available():
        return None
    props = torch.cuda.get_device_properties(0)
    return GPU(props.name, (props.major, props.minor), props.total_memory / 2**30)


def unsloth_installed() -> bool:
    """True when the ``unsloth`` package can be imported (found without importing it)."""
    return importlib.util.find_spec("unsloth") is not None


def pick_profile_name(gpu: GPU | None, unsloth: bool = True) -> tuple[str, str]:
    """``(profile name, reason)`` for this hardware: a T4 (compute capability 7.5, no bf16) -> ``t4``; a bf16
    GPU (capability >= 8.0) with at least :data:`BF16_MIN_GB` -> ``bf16``; any other CUDA GPU -> ``cuda``
    (plain TRL); none -> ``cpu``. ``unsloth``: whether Unsloth is installed; without it ``t4`` and ``bf16``
    become ``cuda``."""
    if gpu is None:
        return "cpu", "no CUDA GPU"
    if tuple(gpu.capability) == (7, 5):
        name, reason = "t4", f"{gpu.describe()}: a T4-class GPU"
    elif gpu.bf16 and gpu.memory_gb >= BF16_MIN_GB:
        name, reason = "bf16", f"{gpu.describe()}: bf16 and >= {BF16_MIN_GB:.0f} GiB"
    else:
        return "cuda", f"{gpu.describe()}: plain TRL (not a T4, not a bf16 GPU with >= {BF16_MIN_GB:.0f} GiB)"
    if not unsloth:
        return "cuda", f"{reason}, but Unsloth is not installed: plain TRL instead"
    return name, reason
