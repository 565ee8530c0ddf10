"""Is the Hugging Face hub usable right now? (Offline machines fall back to local sources.)"""

from __future__ import annotations

import os
import socket


def hub_reachable(timeout_s: float = 3.0) -> bool:
    """True unless offline mode is on (``HF_HUB_OFFLINE`` set to 1/true/yes) or huggingface.co cannot be
    reached within ``timeout_s``. A plain TCP connect fails fast on a machine without network, where the
    hub client would otherwise retry for tens of seconds."""
    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes"):
        return False
    try:
        socket.create_connection(("huggingface.co", 443), timeout=timeout_s).close()
        return True
    except OSError:
        return False
