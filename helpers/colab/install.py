"""Install the course's pinned stack into the running Python (Colab's install cell calls this).

Run from a clone's root as ``python -m helpers.colab.install``; the install cell calls
:func:`install_once`. Neither imports torch, so the kernel can still import the freshly installed
versions. Three stacks (:func:`choose_stack`), each a list of pip commands (:func:`pip_commands`):

* ``unsloth`` (a T4, or a bf16 GPU with >= 20 GiB: the ``t4`` and ``bf16`` profiles):
  ``requirements.txt`` (Unsloth + vLLM 0.11.2, torch 2.9, ``torchao<0.18``), then
  ``requirements/nodeps.txt`` with ``--no-deps``.
* ``trl`` (any other CUDA GPU, or ``GRPO_PROFILE=cuda`` / ``GRPO_STACK=trl``): the shared pins and
  trl only, keeping the runtime's own CUDA torch: no Unsloth, no vLLM.
* ``cpu`` (no GPU, or a notebook that needs none, ``tools/notebook_cells.py``'s ``CPU_NOTEBOOKS``): the
  shared pins and SmolLM2, keeping the installed torch (on your own machine use ``make`` instead).

Every stack pins the runtime's own numpy and pillow (:func:`runtime_pins`), as Unsloth's Colab T4
notebook does: a new version on disk under a loaded module breaks later imports; a version the stack
cannot take (:data:`STACK_BOUNDS`) is left to pip, and :func:`install_once` asks for a restart. trl is
held at ``requirements/nodeps.txt``'s pin in every step (``-c``), so that Unsloth's ``trl<=1.15`` does
not pull the newest trl first. Last, the course package itself, editable, without dependencies.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = ".installed"
STACKS = ("unsloth", "trl", "cpu")
PINNED_FROM_RUNTIME = ("numpy", "pillow")
# What a stack's pinned wheels allow of PINNED_FROM_RUNTIME; a runtime version outside is not pinned.
# vllm 0.11.2 requires numba==0.61.2 (its METADATA), numba 0.61.2 requires numpy>=1.24,<2.3.
STACK_BOUNDS = {"unsloth": {"numpy": ">=1.24,<2.3"}}
CONSTRAINTS = "requirements/nodeps.txt"  # trl==0.22.2, held in the resolving step too (-c)
# {module: distribution} of the modules that, once loaded in the kernel, need a restart when the install changes them.
WATCHED = {m: m for m in "numpy torch scipy pandas pyarrow matplotlib transformers tokenizers safetensors".split()}
WATCHED |= {"datasets": "datasets", "triton": "triton", "PIL": "pillow", "huggingface_hub": "huggingface-hub"}
VLLM_PYTHON_BELOW = (3, 14)  # vllm 0.11.2's METADATA: Requires-Python <3.14,>=3.10


class RestartRequired(RuntimeError):
    """The install changed a package this kernel had already loaded."""


def _check_stack(stack: str) -> None:
    if stack not in STACKS:
        raise ValueError(f"unknown stack {stack!r}; choose one of {STACKS}")


def gpu_from_smi():
    """The first NVIDIA GPU from ``nvidia-smi`` as a :class:`helpers.training.hardware.GPU`, or None."""
    from helpers.training.hardware import GPU

    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,compute_cap,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
        )
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


def choose_stack(gpu, asked: str | None = None) -> str:
    """``"unsloth"``, ``"trl"`` or ``"cpu"``: ``asked`` (a notebook's need) or ``GRPO_STACK`` if
    set, else ``GRPO_PROFILE``'s stack, else the hardware pick
    (:func:`helpers.training.hardware.pick_profile_name`).

    Raises:
        ValueError: an unknown stack asked for.
    """
    from helpers.training.hardware import pick_profile_name

    asked = asked or os.environ.get("GRPO_STACK")
    if asked:
        if asked not in STACKS:
            raise ValueError(f"GRPO_STACK={asked!r}; choose one of {STACKS}")
        return asked
    profile = os.environ.get("GRPO_PROFILE") or pick_profile_name(gpu)[0]
    return {"t4": "unsloth", "bf16": "unsloth", "cuda": "trl"}.get(profile, "cpu")


def runtime_pins(stack: str, versions: dict[str, str] | None = None) -> list[str]:
    """``["numpy==<installed>", "pillow==<installed>"]`` for those installed here whose version
    the stack allows (:data:`STACK_BOUNDS`; a pin outside it makes pip fail with ``ResolutionImpossible``,
    left out pip picks one that fits); ``versions`` replaces the installed ones (tests).

    Raises:
        ValueError: unknown stack.
    """
    try:
        from packaging.specifiers import SpecifierSet
    except ImportError:  # a bare Python: pip carries its own copy
        from pip._vendor.packaging.specifiers import SpecifierSet

    _check_stack(stack)
    pins = []
    for dist in PINNED_FROM_RUNTIME:
        try:
            version = versions[dist] if versions is not None else importlib.metadata.version(dist)
        except (KeyError, importlib.metadata.PackageNotFoundError):
            continue
        bound = STACK_BOUNDS.get(stack, {}).get(dist)
        if bound is None or SpecifierSet(bound).contains(version, prereleases=True):
            pins.append(f"{dist}=={version}")
        else:
            print(f"{dist} {version} is outside what the {stack} stack allows ({bound}): pip chooses")
    return pins


def pip_commands(stack: str, pins=()) -> list[list[str]]:
    """The pip invocations for a stack, in order; ``pins`` are added to the first one.

    Raises:
        ValueError: unknown stack.
    """
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    held = ["-c", CONSTRAINTS]  # trl's pin in the resolving step as well as in the --no-deps one
    first = {
        "unsloth": [pip + ["-r", "requirements.txt"] + held],
        "trl": [pip + ["-r", "requirements/common.txt"] + held],
        "cpu": [
            pip + ["-r", "requirements/common.txt", "gguf", "sentencepiece"] + held,
            pip + ["--no-deps", "-r", "requirements/cpu-nodeps.txt"],
        ],
    }
    _check_stack(stack)
    commands = first[stack]
    commands[0] = commands[0] + list(pins)
    return commands + [pip + ["--no-deps", "-r", "requirements/nodeps.txt"], pip + ["--no-deps", "-e", "."]]


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


def check_python(stack: str, python=sys.version_info) -> None:
    """Stop before pip when the Unsloth stack cannot install on this Python (vllm 0.11.2, Unsloth's
    T4 pin, needs Python < 3.14); no-op for the other stacks.

    Raises:
        RuntimeError: ``stack`` is ``"unsloth"`` and ``python`` is 3.14 or later.
    """
    if stack == "unsloth" and tuple(python[:2]) >= VLLM_PYTHON_BELOW:
        raise RuntimeError(
            f"This runtime runs Python {python[0]}.{python[1]}, and vllm 0.11.2 (the one vLLM Unsloth keeps for "
            "the T4) installs only on Python 3.10-3.13, so the install would fail halfway. In Colab pick an "
            "older runtime version (Runtime > Change runtime type > Runtime version), or set "
            "GRPO_PROFILE=cuda to train with plain TRL (no Unsloth, no vLLM)."
        )


def install_once(root=ROOT, run=subprocess.run, modules=None, stack: str | None = None, python=None) -> bool:
    """What the install cell does in Colab: install once per runtime (a ``.installed`` marker in
    ``root`` naming the stack), then stop if the kernel must restart. Returns False when already
    installed. ``run`` runs the installer (``subprocess.run``); ``modules``: what the kernel has
    loaded (``sys.modules``); ``stack="cpu"`` for a notebook that needs no GPU (else the hardware
    pick). Any stack serves a ``cpu`` notebook; a GPU notebook after a ``cpu`` one installs its own.

    Raises:
        ValueError: an unknown ``stack``.
        RuntimeError: torch is already imported in this kernel (restart, run this cell first); or the
            Unsloth stack on Python 3.14 or later (:func:`check_python`), before pip runs.
        RestartRequired: a package this kernel had loaded (:data:`WATCHED`) changed version: "Run all"
            stops here instead of running on with mixed versions, and skips the install after a restart.
    """
    root, modules = Path(root), sys.modules if modules is None else modules
    if stack is not None:
        _check_stack(stack)
    marker = root / MARKER
    done = marker.read_text().strip() if marker.exists() else None
    if done is not None and (stack == "cpu" or done != "cpu"):  # "" (older marker) or "gpu": all installed
        return False
    if "torch" in modules:
        raise RuntimeError("torch is already imported: Runtime > Restart session, then run this cell first.")
    check_python(stack or choose_stack(gpu_from_smi()), python or sys.version_info)
    before = loaded_versions(modules)
    run([sys.executable, "-m", "helpers.colab.install"] + (["--stack", stack] if stack else []), cwd=root, check=True)
    marker.write_text(stack or "gpu")
    changed = changed_versions(before)
    if changed:
        listed = ", ".join(f"{dist} {old} -> {new}" for dist, (old, new) in sorted(changed.items()))
        raise RestartRequired(
            f"The install changed packages this kernel had already loaded ({listed}). "
            "Runtime > Restart session, then Run all again: the install is done and "
            "will be skipped."
        )
    return True


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m helpers.colab.install", description=__doc__.splitlines()[0])
    parser.add_argument("--stack", choices=STACKS, help="default: GRPO_STACK, else the hardware pick")
    args = parser.parse_args(argv)
    gpu = gpu_from_smi()
    stack = choose_stack(gpu, args.stack)
    print(f"GPU: {gpu.describe() if gpu else 'none'}; installing the {stack} stack")
    for cmd in pip_commands(stack, runtime_pins(stack)):
        print("$", " ".join(cmd[2:]))
        subprocess.run(cmd, cwd=ROOT, check=True)
    print("Installed.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
