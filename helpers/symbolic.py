"""Math-Verify in a worker process that is killed after a time limit: the grader's symbolic step.

:func:`helpers.grading.is_equivalent` sends here what exact fractions cannot compare
(``\\frac{\\sqrt{2}}{2}`` against ``1/\\sqrt{2}``). :func:`symbolic_verdict` asks one long-lived
``python -c`` subprocess (:class:`_Worker`), which parses both sides whole (:func:`parse_latex`) and
compares them with Math-Verify (https://github.com/huggingface/Math-Verify). A comparison that runs past
its time limit kills the worker (it restarts on the next call), so a pathological input costs at most
that limit, from any thread: Math-Verify's own timeout uses ``signal``, main thread only. Verdicts are
cached (:data:`VERDICT_CACHE`, bounded).
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import subprocess
import sys
import threading

_WORKER_START_TIMEOUT_S = 60.0  # importing sympy in a fresh process on a busy machine


def parse_latex(s: str):
    """The whole string parsed as LaTeX by Math-Verify's own normaliser and parser, or None.

    Math-Verify's ``parse`` first *searches* the text for an answer and, when the whole does
    not parse, falls back to its last equation, so a part of the input can stand for all of
    it. Here the whole string is normalised (``\\sqrt3`` -> ``\\sqrt{3}``, ``\\cfrac``
    -> ``\\frac``, units dropped) and parsed in one piece by ``latex2sympy`` (the parser
    Math-Verify 0.9.0 calls, pinned by it): anything that does not parse whole (``1 +``,
    ``\\frac{63}{400``) is None, never a part of it.
    """
    from latex2sympy2_extended.latex2sympy2 import latex2sympy, normalize_latex
    from math_verify import LatexExtractionConfig
    from math_verify.grader import should_treat_as_complex
    from sympy import Basic, MatrixBase

    latex = normalize_latex(s, config=LatexExtractionConfig().normalization_config)
    try:
        expr = latex2sympy(
            latex, is_real=not should_treat_as_complex(latex), convert_degrees=False, normalization_config=None
        )
    except Exception:  # noqa: BLE001 - the parser raises many kinds; any of them: no parse
        return None
    return expr if isinstance(expr, (Basic, MatrixBase)) else None


def _mv_compare(pred: str, gold: str) -> str:
    """Runs in the worker: "equal", "not_equal" or "gold_unparseable"."""
    from math_verify import verify

    g = parse_latex(gold)
    if g is None:
        return "gold_unparseable"
    p = parse_latex(pred)
    if p is None:
        return "not_equal"
    return "equal" if verify(g, p, timeout_seconds=None) else "not_equal"


def _serve() -> None:
    """Worker loop: one JSON ``[pred, gold]`` per stdin line, one verdict per stdout line."""
    import logging

    logging.getLogger("math_verify").setLevel(logging.ERROR)  # silence "timeout disabled"
    out = sys.stdout
    sys.stdout = sys.stderr  # stray prints must not corrupt the protocol
    # Warm up before "ready": the first comparison loads Math-Verify's LaTeX grammar and sympy's parsers
    # (over 1 s on a busy machine), which would count against its time limit and grade \sqrt{4} vs 2 wrong.
    _mv_compare("\\sqrt{4}", "2")
    out.write("ready\n")
    out.flush()
    for line in sys.stdin:
        try:
            verdict = _mv_compare(*json.loads(line))
        except Exception:  # noqa: BLE001 - any failure inside Math-Verify fails closed
            verdict = "not_equal"
        out.write(verdict + "\n")
        out.flush()


def _pump(stream, lines: queue.Queue) -> None:
    """Copy a worker's stdout lines into a queue (so reads can have a deadline)."""
    for line in stream:
        lines.put(line.strip())
    lines.put(None)  # the worker exited


class _Worker:
    """One ``python -c`` subprocess running ``_serve``; killed and restarted on timeout."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._lines: queue.Queue = queue.Queue()

    def _start(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self._proc = subprocess.Popen(
            [sys.executable, "-c", "from helpers.symbolic import _serve; _serve()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
            env=env,
        )
        self._lines = queue.Queue()
        threading.Thread(target=_pump, args=(self._proc.stdout, self._lines), daemon=True).start()
        if self._next_line(_WORKER_START_TIMEOUT_S) != "ready":
            self._stop()
            raise RuntimeError("Math-Verify worker did not start")

    def _next_line(self, timeout: float) -> str | None:
        try:
            return self._lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def _stop(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None

    def close(self) -> None:
        with self._lock:
            self._stop()

    def compare(self, pred: str, gold: str, timeout: float) -> str:
        with self._lock:
            try:
                if self._proc is None or self._proc.poll() is not None:
                    self._start()
                self._proc.stdin.write(json.dumps([pred, gold]) + "\n")
                self._proc.stdin.flush()
            except (OSError, RuntimeError):
                self._stop()
                return "no_worker"
            verdict = self._next_line(timeout)
            if verdict is None:  # too slow (or crashed): kill it, restart on next call
                self._stop()
                return "timeout"
            return verdict


_WORKER = _Worker()
atexit.register(_WORKER.close)
VERDICT_CACHE: dict[tuple[str, str], str] = {}  # (pred, gold) -> verdict, bounded below


def symbolic_verdict(pred: str, gold: str, timeout: float) -> str:
    """Math-Verify's verdict on two normalized answers, within ``timeout`` seconds: "equal",
    "not_equal", "gold_unparseable", "timeout" (the worker was killed) or "no_worker"."""
    key = (pred, gold)
    if key in VERDICT_CACHE:
        return VERDICT_CACHE[key]
    verdict = _WORKER.compare(pred, gold, timeout)
    if verdict in ("equal", "not_equal", "gold_unparseable") and len(VERDICT_CACHE) < 100_000:
        VERDICT_CACHE[key] = verdict  # timeouts are not cached: they may be due to machine load
    return verdict
