"""Where a run came from, recorded in every run's summary: the commit (:func:`git_commit`) and the machine
(:func:`machine`)."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path


def git_commit() -> str | None:
    """The current commit (``+dirty`` with uncommitted changes), or None outside a git clone."""
    root = Path(__file__).resolve().parents[2]

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()

    try:
        return git("rev-parse", "HEAD") + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def cpu_count() -> int:
    """The CPU cores this process may run on (its affinity where the OS has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def machine() -> str:
    """The machine in one line, e.g. ``"x86_64, 2 CPU cores, python 3.12.3"``."""
    return f"{platform.machine()}, {cpu_count()} CPU cores, python {platform.python_version()}"
