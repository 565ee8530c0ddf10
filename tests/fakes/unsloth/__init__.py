"""Test-only fake of unsloth 2026.10.9 (never installed; tests put tests/fakes on the path).

``FastLanguageModel.from_pretrained`` loads a tiny real Llama from ``MODEL_DIR`` (set by the test)
in the requested dtype and, with ``fast_inference=True``, gives it a fake vLLM engine:
``fast_generate``, ``load_lora`` and ``vllm_engine``, as Unsloth does. Every call is checked
against the pinned keyword arguments (``fakes.pinned``) and recorded.

Import order: like the real package (unsloth/_gpu_init.py), it notes which of trl, transformers
and peft were imported before it (``IMPORTED_BEFORE``); with ``FAKE_UNSLOTH_STRICT=1`` that is
an ImportError, so a subprocess test fails on the wrong order.
"""

import os
import sys

IMPORTED_BEFORE = [name for name in ("trl", "transformers", "peft") if name in sys.modules]
if IMPORTED_BEFORE and os.environ.get("FAKE_UNSLOTH_STRICT") == "1":
    raise ImportError(f"fake unsloth imported after {IMPORTED_BEFORE}: Unsloth could not patch them")

from ._model import FastLanguageModel  # noqa: E402

MODEL_DIR = None  # a tiny checkpoint the fake loads instead of the hub model
CAPABILITY = (7, 5)  # the fake GPU's compute capability (a T4; the tests set it)

__all__ = ["FastLanguageModel"]
