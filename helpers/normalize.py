"""Normalize a final answer: surface noise away, one canonical string (the grader's second step).

:func:`normalize_answer` turns ``$1,234`` into ``1234``, ``The answer is twelve.`` into ``12`` and
``1.45 million`` into ``1450000``; its docstring lists every rule with an example. Numbers are read by
:mod:`helpers.numbers`; :func:`helpers.grading.is_equivalent` compares what this returns.
"""

from __future__ import annotations

import re
import unicodedata

from helpers.numbers import (
    FRAC_RE,
    MAX_ANSWER_CHARS,
    NUMBER_PATTERN,
    SCALED_RE,
    expand_scaled,
    frac_to_slash,
    parse_number,
    plain_number,
    words_to_digits,
)

_UNICODE = {  # minus signs, special spaces, vulgar fractions
    **dict.fromkeys("\u2212\u2013", "-"),
    **dict.fromkeys("\u00a0\u2009\u202f", " "),
    **{"\u00bd": " 1/2", "\u00bc": " 1/4", "\u00be": " 3/4", "\u2153": " 1/3", "\u2154": " 2/3"},
}
_DROP = r"** __ \$ $ \( \) \[ \] \% % \! \, \; \: ^\circ ^{\circ} ° \left \right".split()  # removed, in order
_CURRENCY_RE = re.compile(r"\\(?:euro|pounds|yen|text(?:dollar|sterling|euro|yen|cent))(?![A-Za-z])")
_TEXT_RE = re.compile(r"\\(?:text|textbf|textrm|textit|textnormal|textsf|mathrm|mathbf|mathit|mbox)\s*\{([^{}]*)\}")
_CHAT_TOKEN_RE = re.compile(r"<\|[a-z_]+\|>.*", re.DOTALL)  # <|im_end|>, <|im_start|>user ...
CUE_RE = re.compile(r"\banswer\s*(?:is\b\s*:?|:)|^\s*(?:final\s+)?answer\b\s*:?", re.IGNORECASE)
MINERVA_END_RE = re.compile(r"\s*I hope it is correct\.?\s*$")  # Minerva's answer format
_CONCLUSION_RE = re.compile(r"(?<![A-Za-z])(?:Therefore|Thus|Hence|So)\b")
SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z$\\])")
DIGIT_RE = re.compile(r"\d")
EQUALS_RE = re.compile(r"(?<![<>!])=")  # not the "=" of <=, >=, !=
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
_NUMBER_IN_TEXT_RE = re.compile(
    rf"(?<![\w.,/])[-+]?(?:\d+\s+\d+\s*/\s*\d+"
    rf"|{NUMBER_PATTERN}(?:\s*/\s*{NUMBER_PATTERN})?)(?!\w|[.,]\d|\s*/\s*[\d.])"
)
_SENTENCE_RE = re.compile(r"[A-Za-z'\s\",.;:!?()/-]*")  # what may surround the number(s)
MATH_WORDS = {"pi", "sqrt", "e", "i", "inf", "infty", "mod", "log", "ln", "sin", "cos", "tan"}
# Words that change the number next to them, so a sentence holding one fails closed.
_VALUE_WORDS = set(
    "not no never nor cannot wrong incorrect or than less more fewer least most over under above below about"
    " around roughly approximately nearly almost between plus minus negative times twice double triple half"
    " halves third thirds quarter quarters square squared cube cubed root power".split()
)


def final_statement(s: str) -> str:
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
    s = MINERVA_END_RE.sub("", s)
    *before, after_cue = CUE_RE.split(s)
    if before and after_cue.strip():
        return after_cue
    starts = list(_CONCLUSION_RE.finditer(s))
    if starts:
        sentence, *after = SENTENCE_END_RE.split(s[starts[-1].start() :], maxsplit=1)
        if DIGIT_RE.search(sentence) and not DIGIT_RE.search(" ".join(after)):
            return sentence
    return s


def _right_hand_side(s: str) -> str:
    """An equation's value: ``"x = 7"`` -> ``"7"``, ``"f(x) = 1"`` -> ``"1"``, ``"12+6=18"`` -> ``"18"``,
    ``"x = 1/3 \\approx 0.33"`` -> ``"1/3"`` (the exact value before an approximation),
    ``"x \\approx 11"`` -> ``"11"`` (only an approximation is given).
    Kept whole when a side is algebra (``"2x = 18"``, ``"x + y = 3"``, ``"7 = 11a + c"``):
    then no side is the value."""
    parts = EQUALS_RE.split(s)
    if len(parts) == 2 and _VARIABLE_RE.fullmatch(parts[0]) and not _ALGEBRA_RE.search(parts[1]):
        s = parts[1]  # x = 7, f(x) = 1
    elif len(parts) > 1 and not any(_ALGEBRA_RE.search(part) for part in parts):
        s = parts[-1]
    exact, *approximate = _APPROX_RE.split(s)
    if approximate and (not exact.strip() or _VARIABLE_RE.fullmatch(exact)):
        return approximate[-1]  # "x \\approx 11": the value given is the approximation
    return exact


def equation_variable(s: str | None) -> str | None:
    """The variable of ``"x = 7"`` (``"x"``), or None when ``s`` is not ``variable = value``."""
    parts = EQUALS_RE.split(str(s or "").replace("$", ""))
    m = _VARIABLE_RE.fullmatch(parts[0]) if len(parts) == 2 else None
    return m.group(1).replace("{", "").replace("}", "") if m else None


def _unit_power(m: re.Match) -> str:
    """``24 cm^2`` -> ``24 cm``: the power of a unit after a number (not ``2 pi^2``)."""
    return m.group() if m.group(2).lower() in MATH_WORDS else m.group(1) + m.group(2)


def _changes_value(word: str) -> bool:
    """A word that makes a sentence's number unsafe to read: a value word ("not", "about"),
    math (``pi``, ``e``, a single letter but the articles "a", "A" and the pronoun "I")."""
    w = word.lower()
    return word not in ("a", "A", "I") and (w in _VALUE_WORDS or w in MATH_WORDS or w.endswith("n't") or len(w) == 1)


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
    if not numbers or not words or not _SENTENCE_RE.fullmatch(rest) or any(_changes_value(w) for w in words):
        return s
    numbers = [plain_number(n) for n in numbers]
    values = {parse_number(n) for n in numbers}
    return numbers[0] if len(values) == 1 and None not in values else s


def normalize_answer(s: str | None) -> str:
    """Remove the surface noise of a final answer; returns a string ("" for ``None``).

    Rules, in order, with examples (input -> output):

    - a leaked chat token ends the text: ``"18 <|im_end|> ..."`` -> ``"18"``
    - the final statement of a longer text (``final_statement``): what follows the last
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
    s = final_statement(_CHAT_TOKEN_RE.sub("", str(s))).strip()
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
