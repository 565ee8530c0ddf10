"""Source files of the pinned GPU wheels (unsloth, unsloth_zoo, vllm), read without installing them.

The versions come from ``requirements.txt``. A wheel is looked for in ``$GRPO_WHEELS_DIR``, then in
``<GRPO cache>/wheels``, else fetched there once with ``pip download --no-deps`` (PyPI, about 30 MB
for unsloth and unsloth_zoo); without network the calling test is skipped, with the reason. vllm's
wheel (370 MB) is only read where it already is: ``pip download --no-deps -d
~/.cache/grpo-course/wheels vllm==0.11.2`` once; CI reads its rows from a committed table instead
(``tests/wheel_signatures.py``). Nothing is installed or imported.
"""

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def pinned_version(dist: str) -> str:
    """The ``dist==version`` pin of ``requirements.txt``."""
    match = re.search(rf"(?m)^{re.escape(dist)}==(\S+)", (REPO / "requirements.txt").read_text())
    assert match, f"{dist} is not pinned in requirements.txt"
    return match.group(1)


NOT_FETCHED = {"vllm": "370 MB"}  # read only where already downloaded


def wheel_places() -> list[Path]:
    """Where wheels are looked for: ``$GRPO_WHEELS_DIR`` (if set), then ``<GRPO cache>/wheels``."""
    from helpers.training.models import cache_dir

    places = [Path(os.environ["GRPO_WHEELS_DIR"])] if os.environ.get("GRPO_WHEELS_DIR") else []
    return [*places, cache_dir() / "wheels"]


def cached_wheel(dist: str) -> Path | None:
    """The pinned wheel of ``dist`` where it already is (:func:`wheel_places`), or None; nothing is fetched."""
    for place in wheel_places():
        found = sorted(place.glob(f"{dist}-{pinned_version(dist)}-*.whl"))
        if found:
            return found[0]
    return None


def wheel(dist: str) -> Path:
    """The pinned wheel of ``dist`` on disk (downloaded once, except :data:`NOT_FETCHED`); skips
    the test if unavailable."""
    pattern = f"{dist}-{pinned_version(dist)}-*.whl"
    places = wheel_places()
    if cached_wheel(dist) is not None:
        return cached_wheel(dist)
    if dist in NOT_FETCHED:
        pytest.skip(
            f"{pattern} ({NOT_FETCHED[dist]}) is not in {places[-1]}: pip download --no-deps "
            f"-d {places[-1]} {dist}=={pinned_version(dist)}"
        )
    name = f"{dist}-{pinned_version(dist)}-py3-none-any.whl"
    places[-1].mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "-q",
            "-d",
            str(places[-1]),
            f"{dist}=={pinned_version(dist)}",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if not (places[-1] / name).exists():
        pytest.skip(f"cannot fetch {name} (set GRPO_WHEELS_DIR to a folder holding it): {result.stderr.strip()[-300:]}")
    return places[-1] / name


def source(dist: str, path: str) -> str:
    """The text of ``path`` inside the pinned wheel of ``dist``."""
    with zipfile.ZipFile(wheel(dist)) as archive:
        return archive.read(path).decode("utf-8")
