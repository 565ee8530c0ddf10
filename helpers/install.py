"""Install the course's pinned stack into the running Python (Colab's install cell calls this).

Run from a clone's root as ``python -m helpers.install``. It never imports torch, so the
notebook kernel that started it can still import the freshly installed versions.

* GPU (``nvidia-smi`` answers): ``requirements.txt`` (Unsloth + vLLM 0.11.2, the T4 recipe), then
  ``requirements-nodeps.txt`` with ``--no-deps``.
* No GPU: the shared pins and SmolLM2, keeping the torch already installed (Colab's CPU runtime
  has one; on your own machine use ``make`` instead, which builds a venv with torch 2.13.0 CPU).

Finally the course package itself, editable and without dependencies.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def gpu_name() -> str | None:
    """The first GPU's name from ``nvidia-smi``, or None without an NVIDIA GPU."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    name = out.stdout.strip().splitlines()
    return name[0] if out.returncode == 0 and name else None


def pip_commands(gpu: str | None) -> list[list[str]]:
    """The pip invocations for this machine, in order."""
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    if gpu:
        stack = [pip + ["-r", "requirements.txt"]]
    else:
        stack = [pip + ["-r", "requirements-common.txt", "gguf", "sentencepiece"],
                 pip + ["--no-deps", "-r", "requirements-cpu-nodeps.txt"]]
    return stack + [pip + ["--no-deps", "-r", "requirements-nodeps.txt"],
                    pip + ["--no-deps", "-e", "."]]


def main() -> int:
    gpu = gpu_name()
    print(f"GPU: {gpu or 'none (CPU profile)'}")
    if gpu and "T4" not in gpu:
        print("Note: the pinned vLLM 0.11.2 targets the T4; other GPUs usually work too.")
    for cmd in pip_commands(gpu):
        print("$", " ".join(cmd[2:]))
        subprocess.run(cmd, cwd=ROOT, check=True)
    print("Installed.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
