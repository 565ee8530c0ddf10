"""Grade a model's final answer the way a careful human would, in four steps, each a public function:

1. **Extract** (:func:`extract_answer`): the single ``<answer>`` block, else the last ``\\boxed{}``,
   else ``None``.
2. **Normalize** (:func:`helpers.normalize.normalize_answer`): ``$1,234`` -> ``1234``, ``The answer is
   twelve.`` -> ``12``, ``1.45 million`` -> ``1450000``; its docstring lists every rule with an example.
3. **Compare** (:func:`is_equivalent`): plain numbers and arithmetic on them (``10 + 8``,
   ``3 \\times 6``) as exact fractions (:func:`helpers.numbers.parse_number`: fast, no rounding);
   everything else with Math-Verify (https://github.com/huggingface/Math-Verify) in a worker process
   (:mod:`helpers.symbolic`) killed after ``SYMBOLIC_TIMEOUT_S`` seconds, from any thread
   (Math-Verify's own timeout uses ``signal``: main thread only).
4. **Judge** (:func:`is_correct`): what a reward or an evaluation counts as right, an *evaluated*
   answer (:func:`is_evaluated`: ``17``, not ``8 + 9``) equivalent to the gold one.
   ``is_equivalent`` alone is math equivalence (``8 + 9`` = ``17``), which majority voting uses.

Fail-closed rule: whenever we cannot be sure, the answer is *not* equivalent (``False``).
"""

from __future__ import annotations

import math
import re
import warnings
from fractions import Fraction

from helpers.normalize import (
    CUE_RE,
    DIGIT_RE,
    EQUALS_RE,
    MATH_WORDS,
    MINERVA_END_RE,
    SENTENCE_END_RE,
    equation_variable,
    normalize_answer,
)
from helpers.numbers import MAX_ANSWER_CHARS, WORD_RE, parse_number
from helpers.symbolic import symbolic_verdict

SYMBOLIC_TIMEOUT_S = 1.0  # time limit for one Math-Verify comparison


class GradingWarning(UserWarning):
    """A gold answer could not be graded against (the comparison failed closed)."""


_BOX_RE = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])\s*")
_BARE_BOX_RE = re.compile(r"[-+]?[\w.,/]*\w")  # what "\boxed 5" boxes: one bare token
_NUMERICISH_RE = re.compile(r"[-+\d.,/\s]+")  # looks numeric but may be malformed ("3,5")
_LITERAL_RE = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)")  # 17, -5, 17.0, .5
_FRACTION_RE = re.compile(r"[-+]?(?:(\d+)\s+)?(\d+)\s*/\s*(\d+)")  # 3/4, 2 1/2


# --------------------------------------------------------------------------- extraction
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
    """The single ``<answer>`` block (:func:`extract_xml_block`), stripped, or ``None``: hedging with
    two answers never pays (``"<answer>\\n7\\n</answer>\\n<answer>\\n18\\n</answer>"`` -> ``None``)."""
    return extract_xml_block(text, "answer")


def extract_boxed(text: str | None) -> str | None:
    """Content of the last ``\\boxed{…}`` or ``\\fbox{…}``, matching braces.

    ``r"\\boxed{\\frac{1}{3}}"`` -> ``r"\\frac{1}{3}"``; escaped braces ``\\{`` ``\\}`` do not
    count. Without braces the box holds one bare token (LaTeX's own rule, stretched to a whole
    number): ``r"2 + 3 = \\boxed 5."`` -> ``"5"``, ``r"\\boxed -1,234"`` -> ``"-1,234"``.
    Returns ``None`` when there is no box, or when the last box is never closed (a truncated
    completion), is empty, or has neither braces nor a bare token (``r"\\boxed \\frac12"``).
    """
    if not isinstance(text, str):
        return None
    matches = list(_BOX_RE.finditer(text))
    if not matches:
        return None
    start = matches[-1].end()
    if not text.startswith("{", start):
        bare = _BARE_BOX_RE.match(text, start)
        return bare.group() if bare else None
    depth, i = 1, start + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2  # skip the escaped character (\{ or \})
            continue
        depth += (ch == "{") - (ch == "}")
        if depth == 0:
            return text[start + 1 : i].strip() or None
        i += 1
    return None


def extract_answer(text: str | None) -> str | None:
    """The final answer of a completion, or ``None``.

    Order: the ``<answer>`` block (a ``\\boxed{}`` inside it is unwrapped:
    ``"<answer>\\boxed{42}</answer>"`` -> ``"42"``); else, when the text has no answer tag at
    all, the last ``\\boxed{}`` (``"\\boxed{2}, no wait, \\boxed{3}"`` -> ``"3"``), unless
    an answer cue follows it and its sentence is the last one holding a number: then that
    sentence (``"\\boxed{255} ... The final answer is $10,455$."`` -> ``"$10,455$."``: the
    last stated answer); else ``None``.
    A malformed or repeated ``<answer>`` block gives ``None`` with no fallback to boxes.
    """
    if not isinstance(text, str):
        return None
    block = extract_xml_answer(text)
    if block is not None:
        return extract_boxed(block) or block
    if "<answer>" in text or "</answer>" in text:
        return None
    boxed = extract_boxed(text)
    if boxed is not None:
        *_, last_box = _BOX_RE.finditer(text)
        *cues, after = CUE_RE.split(text[last_box.end() :])
        statement, *rest = SENTENCE_END_RE.split(MINERVA_END_RE.sub("", after).strip(), 1)
        if cues and statement and not DIGIT_RE.search(" ".join(rest)):
            return statement
    return boxed


# --------------------------------------------------------------------------- comparison
def _braces_balanced(s: str) -> bool:
    depth = 0
    for ch in re.sub(r"\\[{}]", "", s):
        depth += (ch == "{") - (ch == "}")
        if depth < 0:
            return False
    return depth == 0


def _fail_gold(gold: object, why: str, warn: bool) -> bool:
    if warn:
        warnings.warn(f"gold answer {gold!r} {why}; grading fails closed (False)", GradingWarning, stacklevel=3)
    return False


def _rounds_to(pred: str, gold: Fraction) -> bool:
    """Whether ``pred``, a decimal of 6+ places, is ``gold`` rounded (half up) or truncated to
    its places: ``0.0833333333`` and ``0.666667``/``0.666666`` for 1/12 and 2/3; not
    ``0.333334`` for 1/3, nor ``17.999999`` for 18."""
    m = re.fullmatch(r"[-+]?\d*\.(\d{6,})", pred)
    if not m:
        return False
    scale = 10 ** len(m.group(1))
    scaled = abs(gold) * scale
    candidates = {math.floor(scaled + Fraction(1, 2)), math.floor(scaled)}  # rounded, truncated
    return abs(Fraction(pred)) * scale in candidates and (Fraction(pred) < 0) == (gold < 0)


def _is_text(s: str) -> bool:
    """Whether ``s`` still holds words (not LaTeX commands, not ``pi``/``sqrt``/...)."""
    return any(w.lower() not in MATH_WORDS for w in WORD_RE.findall(s))


def is_equivalent(pred: str | None, gold: str | None, timeout: float = SYMBOLIC_TIMEOUT_S, warn: bool = True) -> bool:
    """Whether the predicted final answer equals the gold answer.

    Both sides go through ``normalize_answer`` first. Then:

    - two equations naming different variables: False (``x = 2`` != ``y = 2``; ``x = 18``
      = ``18``). An equation normalisation kept whole (a side is algebra) against a value:
      False (``2x = 18`` != ``18``: Math-Verify would compare its right-hand side).
    - two plain numbers, or arithmetic on plain numbers (``parse_number``): exact rational
      comparison. ``0.5`` = ``1/2``, ``18.00`` = ``18``, ``$1,234`` = ``1234``,
      ``3 \\times 6`` = ``10 + 8`` = ``18``; ``18.0001`` != ``18``, ``-3`` != ``3``. A
      decimal of 6 or more places also equals the gold it rounds or truncates
      (``0.0833333`` = ``1/12``, a float printed; ``0.33`` != ``1/3``).
    - a gold number against a prediction that looks numeric but is malformed (``3,5,7``) or
      is text that did not reduce to one number (``"20 apples, 2 eaten"``, ``"not 18"``): False.
    - anything else: Math-Verify's parser on the whole string, as LaTeX (``parse_latex``).
      ``\\sqrt{4}`` = ``2``, ``\\sqrt3`` = ``\\sqrt{3}``, ``\\cfrac{3}{4}`` = ``0.75``;
      ``\\sqrt 324`` is ``24\\sqrt{3}`` as in TeX (one token), not 18. An expression that
      only partly parses never matches. Equations whose left side is algebra are compared whole
      (``5x - 7y + 11z + 4 = 0`` != ``x + y - z + 2 = 0``). A comparison running longer than
      ``timeout`` seconds returns False; this works in any thread.

    Free text: a prediction of several sentences is graded on its final statement
    (``final_statement``: after the last "answer is"/"Answer:", else a closing "Therefore,
    ..." sentence). Fails closed on purpose, where Math-Verify reads a number: a sentence
    with two different numbers (``"not 10 but 1,000.99"``), a word that changes the value,
    or math other than a named variable (``"the domain of f(x) is 19"``).

    Fails closed: ``pred`` None/empty/over ``MAX_ANSWER_CHARS`` -> False. A gold that is empty,
    has unbalanced braces or cannot be parsed -> False and a ``GradingWarning`` (none with
    ``warn=False``, for comparing two predictions, as majority voting does).
    """
    g = normalize_answer(gold)
    if not g or not _braces_balanced(g) or len(g) > MAX_ANSWER_CHARS:
        return _fail_gold(gold, "is empty, unbalanced or too long", warn)
    p = normalize_answer(pred)
    if not p or not _braces_balanced(p) or len(p) > MAX_ANSWER_CHARS:
        return False
    p_var, g_var = equation_variable(pred), equation_variable(gold)
    still_equation = bool(EQUALS_RE.search(p)) != bool(EQUALS_RE.search(g))  # 2x = 18 vs 18
    if (p_var and g_var and p_var != g_var) or still_equation:  # or x = 2 vs y = 2
        return False
    g_num = parse_number(g)
    if g_num is not None:
        p_num = parse_number(p)
        if p_num is not None:
            return p_num == g_num or _rounds_to(p, g_num)
        if _NUMERICISH_RE.fullmatch(p) or _is_text(p):
            return False
    verdict = symbolic_verdict(p, g, timeout)
    if verdict == "gold_unparseable":
        return _fail_gold(gold, "cannot be parsed by Math-Verify", warn)
    if verdict == "no_worker":
        warnings.warn("Math-Verify worker could not start; symbolic answers grade False", GradingWarning, stacklevel=2)
    return verdict == "equal"


# --------------------------------------------------------------------------- verdict
def is_evaluated(pred: str | None) -> bool:
    """Whether the answer is worked out: one number, not arithmetic left for the grader to do.

    After ``normalize_answer``, an answer that ``parse_number`` reads (a number or arithmetic
    on numbers) is evaluated only when it is a single number literal: an integer or decimal
    with an optional sign (``17``, ``-5``, ``17.0``, ``.5``, ``$1,234``), a fraction ``p/q`` in
    lowest terms with ``q > 1`` (``3/4``, ``\\frac{3}{4}``), or a mixed number with a proper
    fraction in lowest terms (``2 1/2``). ``8 + 9``, ``(8+9)``, ``8 \\times 2``, ``8/2``,
    ``\\frac{8}{2}``, ``2 2/4`` -> False. An equation is judged on what normalization keeps:
    ``8 + 9 = 17`` -> True (the last side, ``17``), ``x = 8+9`` -> False (``8+9``).
    Anything else (symbolic, ``\\sqrt{3}``, or text) -> True: it is left to ``is_equivalent``.
    ``None`` or empty -> False.
    """
    p = normalize_answer(pred)
    if not p:
        return False
    if parse_number(p) is None:
        return True
    if _LITERAL_RE.fullmatch(p):
        return True
    m = _FRACTION_RE.fullmatch(p)
    if not m:
        return False
    whole, num, den = m.group(1), int(m.group(2)), int(m.group(3))
    return den > 1 and math.gcd(num, den) == 1 and (whole is None or num < den)


def is_correct(pred: str | None, gold: str | None, timeout: float = SYMBOLIC_TIMEOUT_S, warn: bool = True) -> bool:
    """What a reward or an evaluation counts as right: an evaluated answer equivalent to the gold one.

    ``is_equivalent(pred, gold, timeout, warn) and is_evaluated(pred)``: ``17`` for ``17`` ->
    True, ``$17.00`` -> True; ``8 + 9`` for ``17`` -> False (equivalent, but the arithmetic is
    not done: a reward paying it pays a policy for not doing the arithmetic). The gold is checked
    first, so a gold that cannot be graded warns whatever the prediction.
    """
    return is_equivalent(pred, gold, timeout=timeout, warn=warn) and is_evaluated(pred)
