"""Grade a model's final answer the way a careful human would.

Three steps, each a public function:

1. **Extract** the final answer: ``extract_answer`` (the single ``<answer>`` block, else the
   last ``\\boxed{}``, else ``None``).
2. **Normalize** surface noise away: ``normalize_answer`` (``$1,234`` -> ``1234``).
3. **Compare**: ``is_equivalent``. Plain numbers are compared as exact fractions
   (``fractions.Fraction``), which is fast and has no rounding; everything else goes to
   Math-Verify (https://github.com/huggingface/Math-Verify) in a worker process that is
   killed after a time limit, so a pathological input costs at most ``SYMBOLIC_TIMEOUT_S``
   seconds, from any thread (Math-Verify's own timeout uses ``signal``: main thread only).

Fail-closed rule: whenever we cannot be sure, the answer is *not* equivalent (``False``).
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import re
import subprocess
import sys
import threading
import warnings
from fractions import Fraction

SYMBOLIC_TIMEOUT_S = 1.0  # time limit for one Math-Verify comparison
MAX_ANSWER_CHARS = 500  # longer answers are not graded (fail closed)
_WORKER_START_TIMEOUT_S = 60.0  # importing sympy in a fresh process on a busy machine


class GradingWarning(UserWarning):
    """A gold answer could not be graded against (the comparison failed closed)."""


# --------------------------------------------------------------------------- extraction
_BOX_RE = re.compile(r"\\(?:boxed|fbox)\s*\{")


def extract_xml_block(text: str | None, tag: str) -> str | None:
    """Content of the single ``<tag>…</tag>`` block, stripped; ``None`` (fail closed) when
    there is no block, an empty block, an unclosed block or more than one open/close tag."""
    open_tag, close_tag = f"<{tag}>", f"</{tag}>"
    if not isinstance(text, str) or text.count(open_tag) != 1 or text.count(close_tag) != 1:
        return None
    start, end = text.index(open_tag) + len(open_tag), text.index(close_tag)
    content = text[start:end].strip() if start <= end else ""
    return content or None


def extract_xml_answer(text: str | None) -> str | None:
    """Content of the single ``<answer>…</answer>`` block, stripped.

    Returns ``None`` (fail closed) when there is no block, an empty block, an unclosed block
    or more than one ``<answer>``/``</answer>`` tag, so hedging with two answers never pays:
    ``"<answer>\\n7\\n</answer>\\n<answer>\\n18\\n</answer>"`` -> ``None``.
    """
    return extract_xml_block(text, "answer")


def extract_boxed(text: str | None) -> str | None:
    """Content of the last ``\\boxed{…}`` or ``\\fbox{…}``, matching braces.

    ``r"\\boxed{\\frac{1}{3}}"`` -> ``r"\\frac{1}{3}"``; escaped braces ``\\{`` ``\\}`` do not
    count. Returns ``None`` when there is no box, or when the last box is never closed
    (a truncated completion), or when it is empty.
    """
    if not isinstance(text, str):
        return None
    matches = list(_BOX_RE.finditer(text))
    if not matches:
        return None
    start = matches[-1].end()
    depth, i = 1, start
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2  # skip the escaped character (\{ or \})
            continue
        depth += (ch == "{") - (ch == "}")
        if depth == 0:
            return text[start:i].strip() or None
        i += 1
    return None


def extract_answer(text: str | None) -> str | None:
    """The final answer of a completion, or ``None``.

    Order: the ``<answer>`` block (a ``\\boxed{}`` inside it is unwrapped:
    ``"<answer>\\boxed{42}</answer>"`` -> ``"42"``); else, when the text has no answer tag at
    all, the last ``\\boxed{}`` (``"\\boxed{2}, no wait, \\boxed{3}"`` -> ``"3"``); else ``None``.
    A malformed or repeated ``<answer>`` block gives ``None`` with no fallback to boxes.
    """
    if not isinstance(text, str):
        return None
    block = extract_xml_answer(text)
    if block is not None:
        return extract_boxed(block) or block
    if "<answer>" in text or "</answer>" in text:
        return None
    return extract_boxed(text)


# ------------------------------------------------------------------------ normalization
_UNICODE = {  # minus signs, special spaces, vulgar fractions
    "\u2212": "-", "\u2013": "-", "\u00a0": " ", "\u2009": " ", "\u202f": " ",
    "\u00bd": " 1/2", "\u00bc": " 1/4", "\u00be": " 3/4", "\u2153": " 1/3", "\u2154": " 2/3",
}
_DROP = ("**", "__", "\\$", "$", "\\(", "\\)", "\\[", "\\]", "\\%", "%", "\\!", "\\,", "\\;",
         "\\:", "^\\circ", "^{\\circ}", "\u00b0", "\\left", "\\right")
_TEXT_RE = re.compile(r"\\(?:text|textbf|textrm|mathrm|mathbf|mbox)\s*\{([^{}]*)\}")
_FRAC_RE = re.compile(r"\\[dt]?frac\s*(?:\{\s*([-+]?\d+)\s*\}|(\d))\s*(?:\{\s*(\d+)\s*\}|(\d))")
_UNITS_RE = re.compile(r"([-+]?[\d.,/ ]*\d)\s*([A-Za-z][A-Za-z'/.-]+(?:\s+[A-Za-z'/.-]+)*)")
_MATH_WORDS = {"pi", "sqrt", "e", "i", "inf", "infty", "mod", "log", "ln", "sin", "cos", "tan"}
_THOUSANDS_RE = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_EQ_LHS_RE = re.compile(r"^[^=]*=\s*")


def _frac_to_slash(m: re.Match) -> str:
    num, den = m.group(1) or m.group(2), m.group(3) or m.group(4)
    before = m.string[: m.start()].rstrip()
    return (" " if before[-1:].isdigit() else "") + f"{num}/{den}"  # 2\frac12 is 2 1/2


def normalize_answer(s: str | None) -> str:
    """Remove the surface noise of a final answer; returns a string ("" for ``None``).

    Rules, in order, with examples (input -> output):

    - unicode minus and spaces: ``"\u22123"`` -> ``"-3"``; ``"\u00bd"`` -> ``"1/2"``
    - markdown bold, dollar signs, math delimiters, percent, degrees, LaTeX spacing:
      ``"**$18**"`` -> ``"18"``, ``"\\$5"`` -> ``"5"``, ``"25\\%"`` -> ``"25"``
    - ``\\text{…}`` (and ``\\mathrm``, ``\\mbox``, …) unwrapped: ``"\\text{18}"`` -> ``"18"``
    - an equation keeps its right-hand side: ``"x = 7"`` -> ``"7"``, ``"12+6=18"`` -> ``"18"``
    - trailing period: ``"18."`` -> ``"18"``
    - units words after a number: ``"18 apples"`` -> ``"18"``, ``"5 \\text{ dollars}"`` -> ``"5"``
      (single letters and math words such as ``pi`` are kept: ``"7x"`` stays ``"7x"``)
    - ``\\frac``/``\\dfrac``/``\\tfrac`` of integers: ``"\\dfrac{3}{4}"`` -> ``"3/4"``; mixed
      numbers: ``"2\\frac{1}{2}"`` -> ``"2 1/2"``
    - thousands commas only in proper groups: ``"1,234,567"`` -> ``"1234567"``;
      ``"3,5"`` and ``"2,50"`` are left alone (and then are not numbers)

    Strings longer than ``MAX_ANSWER_CHARS`` are only stripped.
    """
    if s is None:
        return ""
    s = str(s).strip()
    if len(s) > MAX_ANSWER_CHARS:  # not a final answer; is_equivalent rejects it anyway
        return s
    for old, new in _UNICODE.items():
        s = s.replace(old, new)
    s = s.replace("{,}", ",")
    for token in _DROP:
        s = s.replace(token, "")
    s = _TEXT_RE.sub(r"\1", s)
    s = _EQ_LHS_RE.sub("", s.rsplit("=", 1)[-1] if "=" in s else s)
    s = " ".join(s.split()).rstrip(".").strip()
    m = _UNITS_RE.fullmatch(s)
    if m and not set(m.group(2).lower().replace("/", " ").split()) & _MATH_WORDS:
        s = m.group(1).strip()
    s = _FRAC_RE.sub(_frac_to_slash, s).strip()
    if _THOUSANDS_RE.fullmatch(s):
        s = s.replace(",", "")
    return s


_DECIMAL = r"(?:\d+\.?\d*|\.\d+)"
_NUMBER_RE = re.compile(rf"[-+]?{_DECIMAL}")
_RATIO_RE = re.compile(rf"([-+]?{_DECIMAL})\s*/\s*([-+]?{_DECIMAL})")
_MIXED_RE = re.compile(r"([-+]?)(\d+)\s+(\d+)\s*/\s*(\d+)")
_NUMERICISH_RE = re.compile(r"[-+\d.,/\s]+")  # looks numeric but may be malformed ("3,5")


def parse_number(s: str | None) -> Fraction | None:
    """Exact value of a *normalized* plain number, else ``None``.

    Accepts integers and decimals (``"-3"``, ``"18.00"``, ``".5"``), ratios (``"1/2"``) and
    mixed numbers (``"2 1/2"`` -> 5/2). Commas, exponents, words and LaTeX give ``None``,
    as does a zero denominator or a number longer than ``MAX_ANSWER_CHARS``.
    """
    if not isinstance(s, str) or len(s) > MAX_ANSWER_CHARS:
        return None
    s = s.strip()
    try:
        if _NUMBER_RE.fullmatch(s):
            return Fraction(s)
        if m := _RATIO_RE.fullmatch(s):
            return Fraction(m.group(1)) / Fraction(m.group(2))
        if m := _MIXED_RE.fullmatch(s):
            value = int(m.group(2)) + Fraction(int(m.group(3)), int(m.group(4)))
            return -value if m.group(1) == "-" else value
    except (ValueError, ZeroDivisionError):  # zero denominator, > 4300 digits
        return None
    return None


# --------------------------------------------------------------------------- comparison
def _braces_balanced(s: str) -> bool:
    depth = 0
    for ch in re.sub(r"\\[{}]", "", s):
        depth += (ch == "{") - (ch == "}")
        if depth < 0:
            return False
    return depth == 0


def _fail_gold(gold: object, why: str) -> bool:
    warnings.warn(f"gold answer {gold!r} {why}; grading fails closed (False)", GradingWarning,
                  stacklevel=3)
    return False


def is_equivalent(pred: str | None, gold: str | None, timeout: float = SYMBOLIC_TIMEOUT_S) -> bool:
    """Whether the predicted final answer equals the gold answer.

    Both sides go through ``normalize_answer`` first. Then:

    - two plain numbers: exact rational comparison. ``0.5`` = ``1/2``, ``18.00`` = ``18``,
      ``$1,234`` = ``1234``; ``18.0001`` != ``18``, ``-3`` != ``3``, ``3,5`` != ``35``.
    - a gold number against a prediction that looks numeric but is malformed (``3,5``): False.
    - anything else: Math-Verify on the whole string, as LaTeX. ``\\sqrt{4}`` = ``2``,
      ``3 \\times 6`` = ``18``. An expression that only partly parses never matches
      (``1 - \\sqrt{2}`` != ``1``). A comparison running longer than ``timeout`` seconds
      returns False; this works in any thread.

    Fails closed: ``pred`` None/empty/over ``MAX_ANSWER_CHARS`` -> False. A gold that is empty,
    has unbalanced braces or cannot be parsed -> False and a ``GradingWarning``.
    """
    g = normalize_answer(gold)
    if not g or not _braces_balanced(g) or len(g) > MAX_ANSWER_CHARS:
        return _fail_gold(gold, "is empty, unbalanced or too long")
    p = normalize_answer(pred)
    if not p or not _braces_balanced(p) or len(p) > MAX_ANSWER_CHARS:
        return False
    g_num = parse_number(g)
    if g_num is not None:
        p_num = parse_number(p)
        if p_num is not None:
            return p_num == g_num
        if _NUMERICISH_RE.fullmatch(p):
            return False
    verdict = _symbolic_verdict(p, g, timeout)
    if verdict == "gold_unparseable":
        return _fail_gold(gold, "cannot be parsed by Math-Verify")
    if verdict == "no_worker":
        warnings.warn("Math-Verify worker could not start; symbolic answers grade False",
                      GradingWarning, stacklevel=2)
    return verdict == "equal"


# ------------------------------------------------- Math-Verify in a killable worker process
def _mv_parse(s: str):
    """Math-Verify parse of the whole string as LaTeX, or None if it does not fully parse."""
    from math_verify import LatexExtractionConfig, parse
    from sympy import Basic, MatrixBase

    res = parse(f"${s}$", extraction_config=[LatexExtractionConfig()], parsing_timeout=None)
    if len(res) != 2 or not isinstance(res[0], (Basic, MatrixBase)) or res[1].strip() != s:
        return None  # nothing parsed, string fallback only, or only a part of the input
    return res[0]


def _mv_compare(pred: str, gold: str) -> str:
    """Runs in the worker: "equal", "not_equal" or "gold_unparseable"."""
    from math_verify import verify

    g = _mv_parse(gold)
    if g is None:
        return "gold_unparseable"
    p = _mv_parse(pred)
    if p is None:
        return "not_equal"
    return "equal" if verify(g, p, timeout_seconds=None) else "not_equal"


def _serve() -> None:
    """Worker loop: one JSON ``[pred, gold]`` per stdin line, one verdict per stdout line."""
    import logging

    logging.getLogger("math_verify").setLevel(logging.ERROR)  # silence "timeout disabled"
    out = sys.stdout
    sys.stdout = sys.stderr  # stray prints must not corrupt the protocol
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
            [sys.executable, "-c", "from helpers.grading import _serve; _serve()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, bufsize=1, env=env)
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
_VERDICTS: dict[tuple[str, str], str] = {}  # (pred, gold) -> verdict, bounded below


def _symbolic_verdict(pred: str, gold: str, timeout: float) -> str:
    key = (pred, gold)
    if key in _VERDICTS:
        return _VERDICTS[key]
    verdict = _WORKER.compare(pred, gold, timeout)
    if verdict in ("equal", "not_equal", "gold_unparseable") and len(_VERDICTS) < 100_000:
        _VERDICTS[key] = verdict  # timeouts are not cached: they may be due to machine load
    return verdict
