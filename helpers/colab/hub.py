"""Is the Hugging Face hub usable right now? (Offline machines fall back to local sources.)"""

from __future__ import annotations

import os
import socket


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` is set to 1/true/yes."""
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes")


def hub_reachable(timeout_s: float = 3.0) -> bool:
    """True unless offline mode is on or huggingface.co cannot be reached within ``timeout_s``.

    A plain TCP connect fails fast on a machine without network, where the hub client would
    otherwise retry for tens of seconds.
    """
    if hub_offline():
        return False
    try:
        socket.create_connection(("huggingface.co", 443), timeout=timeout_s).close()
        return True
    except OSError:
        return False
