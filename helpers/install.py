"""Install the course's pinned stack into the running Python (Colab's install cell calls this).

Run from a clone's root as ``python -m helpers.install``; the install cell calls
:func:`install_once`. Neither imports torch, so the notebook kernel that started it can still
import the freshly installed versions. Three stacks (:func:`choose_stack`):

* ``unsloth`` (a T4, or a bf16 GPU with >= 20 GiB: the ``t4`` and ``bf16`` profiles):
  ``requirements.txt`` (Unsloth + vLLM 0.11.2, torch 2.9, ``torchao<0.18``), then
  ``requirements-nodeps.txt`` with ``--no-deps``.
* ``trl`` (any other CUDA GPU, or ``GRPO_PROFILE=cuda`` / ``GRPO_STACK=trl``): the shared pins and
  trl only, keeping the runtime's own CUDA torch: no Unsloth, no vLLM.
* ``cpu`` (no GPU): the shared pins and SmolLM2, keeping the torch already installed (Colab's CPU
  runtime has one; on your own machine use ``make`` instead, which builds a venv with torch 2.13 CPU).

Every stack pins the runtime's own numpy and pillow (:func:`runtime_pins`), as Unsloth's Colab
T4 notebook does: the kernel has usually loaded them already, and a new version on disk under a
loaded module breaks later imports. Finally the course package itself, editable, without
dependencies.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARKER = ".installed"
STACKS = ("unsloth", "trl", "cpu")
PINNED_FROM_RUNTIME = ("numpy", "pillow")
# Modules that, once loaded in the kernel, need a restart when the install changes their version.
WATCHED = {"numpy": "numpy", "PIL": "pillow", "torch": "torch", "scipy": "scipy", "pandas": "pandas",
           "pyarrow": "pyarrow", "matplotlib": "matplotlib", "transformers": "transformers",
           "tokenizers": "tokenizers", "safetensors": "safetensors", "huggingface_hub": "huggingface-hub",
           "datasets": "datasets", "triton": "triton"}


class RestartRequired(RuntimeError):
    """The install changed a package this kernel had already loaded."""


def gpu_from_smi():
    """The first NVIDIA GPU from ``nvidia-smi`` as a :class:`helpers.hardware.GPU`, or None."""
    from .hardware import GPU

    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,compute_cap,memory.total",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        return None
    name, cap, memory = (part.strip() for part in (lines[0].split(",") + ["", ""])[:3])
    try:
        capability = tuple(int(x) for x in cap.split("."))
    except ValueError:  # an old driver without compute_cap
        capability = (7, 5) if "T4" in name else (0, 0)
    try:
        memory_gb = float(memory) / 1024  # MiB
    except ValueError:
        memory_gb = 0.0
    return GPU(name, capability, memory_gb)


def choose_stack(gpu) -> str:
    """``"unsloth"``, ``"trl"`` or ``"cpu"``: ``GRPO_STACK`` if set, else ``GRPO_PROFILE``'s
    stack, else the hardware pick (:func:`helpers.hardware.pick_profile_name`).

    Raises:
        ValueError: an unknown ``GRPO_STACK``.
    """
    from .hardware import pick_profile_name

    asked = os.environ.get("GRPO_STACK")
    if asked:
        if asked not in STACKS:
            raise ValueError(f"GRPO_STACK={asked!r}; choose one of {STACKS}")
        return asked
    profile = os.environ.get("GRPO_PROFILE") or pick_profile_name(gpu)[0]
    return {"t4": "unsloth", "bf16": "unsloth", "cuda": "trl"}.get(profile, "cpu")


def runtime_pins() -> list[str]:
    """``["numpy==<installed>", "pillow==<installed>"]`` for those installed here."""
    pins = []
    for dist in PINNED_FROM_RUNTIME:
        try:
            pins.append(f"{dist}=={importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            pass
    return pins


def pip_commands(stack: str, pins=()) -> list[list[str]]:
    """The pip invocations for a stack, in order; ``pins`` are added to the first one.

    Raises:
        ValueError: unknown stack.
    """
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    first = {"unsloth": [pip + ["-r", "requirements.txt"]],
             "trl": [pip + ["-r", "requirements-common.txt"]],
             "cpu": [pip + ["-r", "requirements-common.txt", "gguf", "sentencepiece"],
                     pip + ["--no-deps", "-r", "requirements-cpu-nodeps.txt"]]}
    if stack not in first:
        raise ValueError(f"unknown stack {stack!r}; choose one of {STACKS}")
    commands = first[stack]
    commands[0] = commands[0] + list(pins)
    return commands + [pip + ["--no-deps", "-r", "requirements-nodeps.txt"], pip + ["--no-deps", "-e", "."]]


def loaded_versions(modules=None) -> dict[str, str]:
    """``{distribution: version}`` of the :data:`WATCHED` modules already imported here (the
    loaded module's ``__version__``, else the installed metadata)."""
    modules = sys.modules if modules is None else modules
    found = {}
    for module, dist in WATCHED.items():
        if modules.get(module) is not None:
            version = getattr(modules[module], "__version__", None)
            try:
                found[dist] = str(version or importlib.metadata.version(dist))
            except importlib.metadata.PackageNotFoundError:
                pass
    return found


def changed_versions(before: dict[str, str]) -> dict[str, tuple[str, str]]:
    """``{distribution: (loaded, now installed)}`` for those of ``before`` that changed on disk."""
    importlib.invalidate_caches()
    changed = {}
    for dist, old in before.items():
        try:
            new = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            new = "removed"
        if new.split("+")[0] != old.split("+")[0]:
            changed[dist] = (old, new)
    return changed


def install_once(root=ROOT, run=subprocess.run, modules=None) -> bool:
    """What the install cell does in Colab: install once per runtime (a ``.installed`` marker in
    ``root``), then stop if the kernel must restart. Returns False when already installed.
    ``run`` runs the installer (``subprocess.run``); ``modules`` is what the kernel has loaded
    (``sys.modules``).

    Raises:
        RuntimeError: torch is already imported in this kernel (restart, run this cell first).
        RestartRequired: a package this kernel had loaded (:data:`WATCHED`) changed version.
            "Run all" stops here instead of running on with mixed versions; after a restart,
            "Run all" again skips the install.
    """
    root, modules = Path(root), sys.modules if modules is None else modules
    if (root / MARKER).exists():
        return False
    if "torch" in modules:
        raise RuntimeError("torch is already imported: Runtime > Restart session, then run this cell first.")
    before = loaded_versions(modules)
    run([sys.executable, "-m", "helpers.install"], cwd=root, check=True)
    (root / MARKER).touch()
    changed = changed_versions(before)
    if changed:
        listed = ", ".join(f"{dist} {old} -> {new}" for dist, (old, new) in sorted(changed.items()))
        raise RestartRequired(f"The install changed packages this kernel had already loaded ({listed}). "
                              "Runtime > Restart session, then Run all again: the install is done and "
                              "will be skipped.")
    return True


def main() -> int:
    gpu = gpu_from_smi()
    stack = choose_stack(gpu)
    print(f"GPU: {gpu.describe() if gpu else 'none'}; installing the {stack} stack")
    for cmd in pip_commands(stack, runtime_pins()):
        print("$", " ".join(cmd[2:]))
        subprocess.run(cmd, cwd=ROOT, check=True)
    print("Installed.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
