"""The machine: which GPU there is, which profile it gets, and the one precision a run trains in.

* :func:`gpu_info` - the first CUDA GPU (name, compute capability, memory), or None.
* :func:`pick_profile_name` - the hardware pick of :func:`helpers.training.profiles.get_profile`:
  a T4 (compute capability 7.5, no bf16) -> ``t4``; a bf16 GPU (capability >= 8.0) with at least
  :data:`BF16_MIN_GB` -> ``bf16``; any other CUDA GPU -> ``cuda`` (plain TRL, no Unsloth or vLLM);
  no GPU -> ``cpu``. An Unsloth profile falls back to ``cuda`` when Unsloth is not installed.
* :func:`precision` - the single source of a run's precision. The model's dtype
  (:func:`torch_dtype`, passed to ``from_pretrained``) and the trainers' ``fp16``/``bf16`` flags
  (:func:`mixed_precision_flags`, GRPOConfig and SFTConfig) both come from it, so they always
  agree. Unsloth refuses a mismatch at ``GRPOTrainer(...)`` ("Model is in bfloat16 precision but
  you want to use float16", unsloth 2026.10.9, ``unsloth/models/rl.py``), and left to itself it
  loads in bf16 on any GPU that has it.

Importing this module does not import torch; the functions that need it import it.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass

BF16_MIN_GB = 20.0  # GiB of GPU memory the bf16 profile needs (see helpers.training.profiles.BF16)


PRECISIONS = ("fp32", "fp16", "bf16", "auto")


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
    """``(profile name, reason)`` for this hardware; ``unsloth``: whether Unsloth is installed."""
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


def precision(profile, gpu: GPU | None = None) -> str:
    """``"fp32"``, ``"fp16"`` or ``"bf16"``: what a run of ``profile`` trains in.

    ``profile.precision`` ``"auto"`` means bf16 on a GPU that has it, fp16 on another GPU and
    fp32 without one. ``gpu`` defaults to :func:`gpu_info`. Without a GPU a fixed fp16/bf16 is
    returned as is, so that configs can be built (and tested) on a CPU.

    Raises:
        ValueError: an unknown precision, or ``"bf16"`` on a GPU without bf16 (a T4).
    """
    wanted = profile.precision
    if wanted not in PRECISIONS:
        raise ValueError(f"profile {profile.name}: unknown precision {wanted!r}; choose one of {PRECISIONS}")
    gpu = gpu_info() if gpu is None else gpu
    if wanted == "auto":
        return "fp32" if gpu is None else ("bf16" if gpu.bf16 else "fp16")
    if wanted == "bf16" and gpu is not None and not gpu.bf16:
        raise ValueError(
            f"profile {profile.name} trains in bf16, which {gpu.describe()} lacks: "
            "use GRPO_PROFILE=t4 (fp16) or GRPO_PROFILE=cuda"
        )
    return wanted


def torch_dtype(profile, gpu: GPU | None = None):
    """The ``torch.dtype`` the model is loaded in: :func:`precision` as a dtype."""
    import torch

    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[precision(profile, gpu)]


def mixed_precision_flags(profile, gpu: GPU | None = None) -> dict:
    """``{"fp16": bool, "bf16": bool}`` for ``GRPOConfig``/``SFTConfig``, from :func:`precision`.

    Also sets ``ACCELERATE_MIXED_PRECISION`` to match (``"fp16"``, ``"bf16"`` or ``"no"``).
    transformers 4.56's ``TrainingArguments`` writes that variable when ``fp16``/``bf16`` is True and
    keeps any earlier value when both are False, and accelerate reads it: without this, a bf16 config
    built earlier in the same process (another profile, a test) makes a later fp32 run train under
    bf16 autocast, and the model it returns keeps that autocast in its ``forward``.
    """
    chosen = precision(profile, gpu)
    os.environ["ACCELERATE_MIXED_PRECISION"] = chosen if chosen in ("fp16", "bf16") else "no"
    return {"fp16": chosen == "fp16", "bf16": chosen == "bf16"}
