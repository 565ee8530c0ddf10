"""Grade a model's final answer the way a careful human would.

Three steps, each a public function:

1. **Extract** the final answer: ``extract_answer`` (the single ``<answer>`` block, else the
   last ``\\boxed{}``, else ``None``).
2. **Normalize** surface noise away: ``normalize_answer`` (``$1,234`` -> ``1234``,
   ``The answer is twelve.`` -> ``12``, ``1.45 million`` -> ``1450000``); its docstring lists
   every rule with an example.
3. **Compare**: ``is_equivalent``. Plain numbers, and arithmetic on them (``10 + 8``,
   ``3 \\times 6``), are compared as exact fractions (``fractions.Fraction``,
   ``parse_number``), which is fast and has no rounding; everything else goes to
   Math-Verify (https://github.com/huggingface/Math-Verify) in a worker process that is
   killed after a time limit, so a pathological input costs at most ``SYMBOLIC_TIMEOUT_S``
   seconds, from any thread (Math-Verify's own timeout uses ``signal``: main thread only).

Fail-closed rule: whenever we cannot be sure, the answer is *not* equivalent (``False``).
"""

from __future__ import annotations

import math
import re
import unicodedata
import warnings
from fractions import Fraction
from helpers.numbers import FRAC_RE, MAX_ANSWER_CHARS, NUMBER_PATTERN, SCALED_RE, WORD_RE, expand_scaled, frac_to_slash, parse_number, plain_number, words_to_digits
from helpers.symbolic import symbolic_verdict


SYMBOLIC_TIMEOUT_S = 1.0  # time limit for one Math-Verify comparison


class GradingWarning(UserWarning):
    """A gold answer could not be graded against (the comparison failed closed)."""


# --------------------------------------------------------------------------- extraction
_BOX_RE = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])\s*")


_BARE_BOX_RE = re.compile(r"[-+]?[\w.,/]*\w")  # what "\boxed 5" boxes: one bare token


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
            return text[start + 1:i].strip() or None
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
        *cues, after = _CUE_RE.split(text[last_box.end():])
        statement, *rest = _SENTENCE_END_RE.split(_MINERVA_END_RE.sub("", after).strip(), 1)
        if cues and statement and not _DIGIT_RE.search(" ".join(rest)):
            return statement
    return boxed


# ------------------------------------------------------------------------ normalization
_UNICODE = {  # minus signs, special spaces, vulgar fractions
    "\u2212": "-", "\u2013": "-", "\u00a0": " ", "\u2009": " ", "\u202f": " ",
    "\u00bd": " 1/2", "\u00bc": " 1/4", "\u00be": " 3/4", "\u2153": " 1/3", "\u2154": " 2/3",
}


_DROP = ("**", "__", "\\$", "$", "\\(", "\\)", "\\[", "\\]", "\\%", "%", "\\!", "\\,", "\\;",
         "\\:", "^\\circ", "^{\\circ}", "\u00b0", "\\left", "\\right")


_CURRENCY_RE = re.compile(r"\\(?:euro|pounds|yen|text(?:dollar|sterling|euro|yen|cent))"
                          r"(?![A-Za-z])")


_TEXT_RE = re.compile(r"\\(?:text|textbf|textrm|textit|textnormal|textsf|mathrm|mathbf|mathit"
                      r"|mbox)\s*\{([^{}]*)\}")


_CHAT_TOKEN_RE = re.compile(r"<\|[a-z_]+\|>.*", re.DOTALL)  # <|im_end|>, <|im_start|>user ...


_CUE_RE = re.compile(r"\banswer\s*(?:is\b\s*:?|:)|^\s*(?:final\s+)?answer\b\s*:?", re.IGNORECASE)


_MINERVA_END_RE = re.compile(r"\s*I hope it is correct\.?\s*$")  # Minerva's answer format


_CONCLUSION_RE = re.compile(r"(?<![A-Za-z])(?:Therefore|Thus|Hence|So)\b")


_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z$\\])")


_DIGIT_RE = re.compile(r"\d")


_EQUALS_RE = re.compile(r"(?<![<>!])=")  # not the "=" of <=, >=, !=


_LETTER = r"(?<![A-Za-z\\])[A-Za-z](?![A-Za-z])"  # a single letter: not a word, not \command


_ALGEBRA_RE = re.compile(rf"{_LETTER}\s*[-+*/^(]|[-+*/^)]\s*{_LETTER}|\d\s*{_LETTER}")


_VARIABLE_RE = re.compile(rf"\s*({_LETTER}(?:_\{{?\w+\}}?)?(?:\({_LETTER}\))?)\s*")  # x, x_1, f(x)


_APPROX_RE = re.compile(r"\\approx(?![A-Za-z])|\u2248")


_GLUED_UNIT_RE = re.compile(r"(?<=\d)(?=[A-Za-z]{2,})")  # 18dollars -> 18 dollars


_UNIT_POWER_RE = re.compile(r"(\d\s*)([A-Za-z]{2,}|m)\s*(?:\^\s*\{?\s*[23]\s*\}?|[\u00b2\u00b3])")


# a variable or function named between words: "the largest n is 34", "the domain of f(x) is 19"
_NAMED_VARIABLE_RE = re.compile(r"(?<=[A-Za-z]{2} )[A-Za-z](?:\([A-Za-z]\))?(?= [A-Za-z]{2})")


_SPACE_THOUSANDS_RE = re.compile(r"[-+]?[1-9]\d{0,2}(?: \d{3})+(?:\.\d+)?")  # 1 000 000


# A number in a sentence: 18, -3, 1,234.5, 3/4, 2 1/2 (a rate unit may follow: 18/hour).
_NUMBER_IN_TEXT_RE = re.compile(rf"(?<![\w.,/])[-+]?(?:\d+\s+\d+\s*/\s*\d+"
                                rf"|{NUMBER_PATTERN}(?:\s*/\s*{NUMBER_PATTERN})?)(?!\w|[.,]\d|\s*/\s*[\d.])")


_SENTENCE_RE = re.compile(r"[A-Za-z'\s\",.;:!?()/-]*")  # what may surround the number(s)


_MATH_WORDS = {"pi", "sqrt", "e", "i", "inf", "infty", "mod", "log", "ln", "sin", "cos", "tan"}


_VALUE_WORDS = {  # they change the number next to them, so a sentence holding one fails closed
    "not", "no", "never", "nor", "cannot", "wrong", "incorrect", "or", "than", "less", "more",
    "fewer", "least", "most", "over", "under", "above", "below", "about", "around", "roughly",
    "approximately", "nearly", "almost", "between", "plus", "minus", "negative", "times",
    "twice", "double", "triple", "half", "halves", "third", "thirds", "quarter", "quarters",
    "square", "squared", "cube", "cubed", "root", "power"}


def _final_statement(s: str) -> str:
    """What a text states as its final answer.

    The text after its last answer cue, "answer is", "answer:" or a leading "Answer"
    (``"Final Answer: The final answer is 18. I hope it is correct."`` -> ``"18."``: the
    closing phrase of Minerva's format is dropped; ``"Answer $9$"`` -> ``"$9$"``); else, in
    any length, the sentence that opens with its last conclusion word (Therefore, Thus, Hence,
    So) when it holds a number and no number follows it (``"... = 2/3 Therefore, she wins
    2/3 of the games."`` -> ``"Therefore, she wins 2/3 of the games."``); else the text.
    The rest of the rules then apply to that part (it must still state one number: hedging
    fails closed).
    """
    s = _MINERVA_END_RE.sub("", s)
    *before, after_cue = _CUE_RE.split(s)
    if before and after_cue.strip():
        return after_cue
    starts = list(_CONCLUSION_RE.finditer(s))
    if starts:
        sentence, *after = _SENTENCE_END_RE.split(s[starts[-1].start():], maxsplit=1)
        if _DIGIT_RE.search(sentence) and not _DIGIT_RE.search(" ".join(after)):
            return sentence
    return s


def _right_hand_side(s: str) -> str:
    """An equation's value: ``"x = 7"`` -> ``"7"``, ``"f(x) = 1"`` -> ``"1"``, ``"12+6=18"`` -> ``"18"``,
    ``"x = 1/3 \\approx 0.33"`` -> ``"1/3"`` (the exact value before an approximation),
    ``"x \\approx 11"`` -> ``"11"`` (only an approximation is given).
    Kept whole when a side is algebra (``"2x = 18"``, ``"x + y = 3"``, ``"7 = 11a + c"``):
    then no side is the value."""
    parts = _EQUALS_RE.split(s)
    if len(parts) == 2 and _VARIABLE_RE.fullmatch(parts[0]) and not _ALGEBRA_RE.search(parts[1]):
        s = parts[1]  # x = 7, f(x) = 1
    elif len(parts) > 1 and not any(_ALGEBRA_RE.search(part) for part in parts):
        s = parts[-1]
    exact, *approximate = _APPROX_RE.split(s)
    if approximate and (not exact.strip() or _VARIABLE_RE.fullmatch(exact)):
        return approximate[-1]  # "x \\approx 11": the value given is the approximation
    return exact


def _equation_variable(s: str | None) -> str | None:
    """The variable of ``"x = 7"`` (``"x"``), or None when ``s`` is not ``variable = value``."""
    parts = _EQUALS_RE.split(str(s or "").replace("$", ""))
    m = _VARIABLE_RE.fullmatch(parts[0]) if len(parts) == 2 else None
    return m.group(1).replace("{", "").replace("}", "") if m else None


def _unit_power(m: re.Match) -> str:
    """``24 cm^2`` -> ``24 cm``: the power of a unit after a number (not ``2 pi^2``)."""
    return m.group() if m.group(2).lower() in _MATH_WORDS else m.group(1) + m.group(2)


def _changes_value(word: str) -> bool:
    """A word that makes a sentence's number unsafe to read: a value word ("not", "about"),
    math (``pi``, ``e``, a single letter but the articles "a", "A" and the pronoun "I")."""
    w = word.lower()
    if word in ("a", "A", "I"):
        return False
    return w in _VALUE_WORDS or w in _MATH_WORDS or w.endswith("n't") or len(w) == 1


def _single_number(s: str) -> str:
    """The number a sentence states, when all its numbers agree; else ``s`` unchanged.

    A sentence is words (2+ letters, as ``it's`` or ``km/h``, or "a"/"I") and punctuation
    around numbers. It stays unchanged, so graded False against a number, when a word changes
    the value (``_VALUE_WORDS``: "not 18", "about 18", "half of 18"), when it holds math
    (``pi``, a single letter, a LaTeX command, an operator) or when its numbers differ
    ("20 apples, 2 eaten").
    """
    numbers = _NUMBER_IN_TEXT_RE.findall(s)
    rest = _NAMED_VARIABLE_RE.sub(" ", _NUMBER_IN_TEXT_RE.sub(" ", s))
    words = re.findall(r"[A-Za-z]+(?:['/.][A-Za-z]+)*", rest)  # it's, km/h
    if (not numbers or not words or not _SENTENCE_RE.fullmatch(rest)
            or any(_changes_value(w) for w in words)):
        return s
    numbers = [plain_number(n) for n in numbers]
    values = {parse_number(n) for n in numbers}
    return numbers[0] if len(values) == 1 and None not in values else s


def normalize_answer(s: str | None) -> str:
    """Remove the surface noise of a final answer; returns a string ("" for ``None``).

    Rules, in order, with examples (input -> output):

    - a leaked chat token ends the text: ``"18 <|im_end|> ..."`` -> ``"18"``
    - the final statement of a longer text (``_final_statement``): what follows the last
      "answer is" / "answer:" (``"The answer is 18."`` -> ``"18"``), else a closing
      "Therefore, ..." sentence
    - unicode minus and spaces: ``"\u22123"`` -> ``"-3"``; ``"\u00bd"`` -> ``"1/2"``
    - LaTeX thousands separators: ``"32{,}349"``, ``"32,\\! 349"`` -> ``"32,349"``
    - markdown bold, math delimiters, percent, degrees, LaTeX spacing:
      ``"**18**"`` -> ``"18"``, ``"25\\%"`` -> ``"25"``
    - currency signs, all of them (Unicode's currency symbols, LaTeX's ``\\$``, ``\\euro``,
      ``\\pounds``, ...): ``"$18"``, ``"\u20ac18"``, ``"\u00a318"``, ``"\\pounds 18"`` -> ``"18"``
    - ``\\text{…}`` (and ``\\textnormal``, ``\\textit``, ``\\mathrm``, ``\\mbox``, …)
      unwrapped: ``"125\\textnormal{ miles}"`` -> ``"125 miles"``
    - an equation keeps its right-hand side when no side is algebra: ``"x = 7"`` -> ``"7"``,
      ``"12+6=18"`` -> ``"18"``; ``"2x = 18"`` and ``"x >= 7"`` stay (``_right_hand_side``);
      of ``"1/3 \\approx 0.33"`` the exact value stays: ``"1/3"``
    - trailing period: ``"18."`` -> ``"18"``
    - a unit's power and a unit glued to its number: ``"24 cm^2"`` -> ``"24 cm"``,
      ``"18dollars"`` -> ``"18 dollars"``
    - a number times a power of ten or a magnitude word (hundred, thousand, million, billion,
      trillion, dozen) is multiplied out, exactly: ``"1.2e3"`` -> ``"1200"``,
      ``"1.45 million"`` -> ``"1450000"``, ``"2 dozen"`` -> ``"24"``
    - number words become digits: ``"twelve"`` -> ``"12"``, ``"two million"`` -> ``"2000000"``
    - ``\\frac``/``\\dfrac``/``\\tfrac`` of integers: ``"\\dfrac{3}{4}"`` -> ``"3/4"``; mixed
      numbers: ``"2\\frac{1}{2}"`` -> ``"2 1/2"``
    - words around one number (units, a rate unit after ``/``, a sentence) keep the number:
      ``"18 apples"`` -> ``"18"``, ``"18/hour"`` -> ``"18"``, ``"She has 18 left"`` -> ``"18"``,
      ``"5 \\text{ dollars}"`` -> ``"5"``, ``"The largest n is 34"`` -> ``"34"`` (a variable
      named between words); ``"3/4"`` stays a fraction: no word after the ``/``.
      Kept whole, so not equal to a number, when the numbers differ (``"20 apples, 2 eaten"``),
      when a word changes the value (``"not 18"``, ``"about 18"``, ``"half of 18"``) or when
      it holds math: ``"7x"``, ``"2 pi"``, ``"18/x"``
    - thousands separators only in proper groups with a leading group of 1-9:
      ``"1,234,567"``, ``"1 234 567"`` -> ``"1234567"``; one other comma is a decimal comma
      (as Math-Verify reads it): ``"3,5"`` -> ``"3.5"``, ``"0,500"`` -> ``"0.500"`` (never 500)

    Strings longer than ``MAX_ANSWER_CHARS`` are only stripped.
    """
    if s is None:
        return ""
    s = _final_statement(_CHAT_TOKEN_RE.sub("", str(s))).strip()
    if len(s) > MAX_ANSWER_CHARS:  # not a final answer; is_equivalent rejects it anyway
        return s
    for old, new in _UNICODE.items():
        s = s.replace(old, new)
    s = re.sub(r"(?:\{,\}|,\\!)\s*", ",", s)  # 32{,}349 and 32,\! 349: one number
    for token in _DROP:
        s = s.replace(token, "")
    s = _CURRENCY_RE.sub("", s)
    if not s.isascii():
        s = "".join(ch for ch in s if unicodedata.category(ch) != "Sc")  # € £ ¥ ₹ ¢ ...
    s = _TEXT_RE.sub(r"\1", s)
    s = _right_hand_side(s)
    s = " ".join(s.split()).rstrip(".").strip()
    s = _UNIT_POWER_RE.sub(_unit_power, s)
    s = _GLUED_UNIT_RE.sub(" ", s)
    s = SCALED_RE.sub(expand_scaled, s)
    s = words_to_digits(s)
    s = FRAC_RE.sub(frac_to_slash, s).strip()
    s = _single_number(s)
    if _SPACE_THOUSANDS_RE.fullmatch(s):
        s = s.replace(" ", "")
    return plain_number(s)


_NUMERICISH_RE = re.compile(r"[-+\d.,/\s]+")  # looks numeric but may be malformed ("3,5")


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
        warnings.warn(f"gold answer {gold!r} {why}; grading fails closed (False)", GradingWarning,
                      stacklevel=3)
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
    return any(w.lower() not in _MATH_WORDS for w in WORD_RE.findall(s))


def is_equivalent(pred: str | None, gold: str | None, timeout: float = SYMBOLIC_TIMEOUT_S,
                  warn: bool = True) -> bool:
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
    (``_final_statement``: after the last "answer is"/"Answer:", else a closing "Therefore,
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
    p_var, g_var = _equation_variable(pred), _equation_variable(gold)
    still_equation = bool(_EQUALS_RE.search(p)) != bool(_EQUALS_RE.search(g))  # 2x = 18 vs 18
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
        warnings.warn("Math-Verify worker could not start; symbolic answers grade False",
                      GradingWarning, stacklevel=2)
    return verdict == "equal"


