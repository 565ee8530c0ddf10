"""Numbers in answers, read exactly: the grader's parsing of numbers (:mod:`helpers.grading`).

* :func:`parse_number`: a plain number, a fraction, a mixed number or arithmetic on them (``10 + 8``,
  ``3 \\times 6``) as an exact ``fractions.Fraction``, or None;
* :func:`words_to_digits`: number words to digits (``twelve`` -> ``12``, text2num);
* :func:`expand_scaled`: ``1.45 million`` -> ``1450000``; :func:`plain_number`: ``1,234`` -> ``1234``;
  :func:`frac_to_slash`: ``\\frac{3}{4}`` -> ``3/4``.

Answers longer than :data:`MAX_ANSWER_CHARS` are not read (fail closed).
"""

from __future__ import annotations

import ast
import operator
import re
from decimal import Decimal, localcontext
from fractions import Fraction

from text_to_num import Token, find_numbers

MAX_ANSWER_CHARS = 500  # longer answers are not graded (fail closed)
FRAC_RE = re.compile(r"\\[dt]?frac\s*(?:\{\s*([-+]?\d+)\s*\}|(\d))\s*(?:\{\s*(\d+)\s*\}|(\d))")
_THOUSANDS_RE = re.compile(r"[-+]?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?")  # not 0,500: a decimal
_DECIMAL_COMMA_RE = re.compile(r"[-+]?\d+,\d+")  # one comma, not thousands: 3,5  0,111  1000,99
# 1,234.5 (proper groups), 18, 2,74 (a decimal comma), .5
NUMBER_PATTERN = r"(?:(?:[1-9]\d{0,2}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?|\d+,\d+|\.\d+)"
_MAGNITUDES = {"hundred": 100, "thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12, "dozen": 12}
SCALED_RE = re.compile(
    rf"(?<![\w.,])({NUMBER_PATTERN})(?:[eE]([-+]?\d{{1,3}})(?![\w.])"
    rf"|((?:\s*(?:{'|'.join(_MAGNITUDES)})s?\b)+))",
    re.IGNORECASE,
)
WORD_RE = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}")  # a word; LaTeX commands are not words
_NUMBER_RE = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)")
_MIXED_RE = re.compile(r"([-+]?)(\d+)\s+(\d+)\s*/\s*(\d+)")
_OPERATORS = {"\\times": "*", "\\cdot": "*", "\u00d7": "*", "\u22c5": "*", "\\div": "/", "\u00f7": "/"}
_ARITHMETIC_RE = re.compile(r"[\d.\s()+\-*/]+")
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def plain_number(n: str) -> str:
    """A number as written -> as parsed: thousands commas dropped (``1,234`` -> ``1234``), a
    decimal comma made a point (``2,74`` -> ``2.74``, ``0,500`` -> ``0.500``), spaces squeezed."""
    n = " ".join(n.split())
    if _THOUSANDS_RE.fullmatch(n):
        return n.replace(",", "")
    return n.replace(",", ".") if _DECIMAL_COMMA_RE.fullmatch(n) else n


def frac_to_slash(m: re.Match) -> str:
    """A :data:`FRAC_RE` match as a slash: ``\\frac{3}{4}`` -> ``3/4``; ``2\\frac12`` -> ``2 1/2``."""
    num, den = m.group(1) or m.group(2), m.group(3) or m.group(4)
    before = m.string[: m.start()].rstrip()
    return (" " if before[-1:].isdigit() else "") + f"{num}/{den}"  # 2\frac12 is 2 1/2


def expand_scaled(m: re.Match) -> str:
    """``1.2e3`` -> ``1200``, ``1.45 million`` -> ``1450000``: exact decimal arithmetic."""
    with localcontext() as ctx:
        ctx.prec = 2 * MAX_ANSWER_CHARS  # enough digits for any answer that is graded
        value = Decimal(plain_number(m.group(1))).scaleb(int(m.group(2) or 0))
        for word in (m.group(3) or "").lower().split():
            value *= _MAGNITUDES[word.removesuffix("s")]
        return format(value.normalize(), "f")


class _Token(Token):
    """A word or a punctuation mark of an answer, as text2num's ``find_numbers`` reads it."""

    def __init__(self, match: re.Match) -> None:
        self.match = match

    def text(self) -> str:
        return self.match.group()


def words_to_digits(s: str) -> str:
    """Cardinal number words to digits, with text2num (https://github.com/allo-media/text2num):
    ``"twelve"`` -> ``"12"``, ``"one hundred and five"`` -> ``"105"``, ``"The answer is one"``
    -> ``"The answer is 1"``. Ordinals stay words (``"18 per second"``)."""
    if not WORD_RE.search(s):
        return s
    tokens = [_Token(m) for m in re.finditer(r"\w+|[^\w\s]", s)]
    for number in reversed(find_numbers(tokens, "en", threshold=0)):  # right to left: spans hold
        if not number.is_ordinal:
            start, end = tokens[number.start].match.start(), tokens[number.end - 1].match.end()
            s = s[:start] + number.text + s[end:]
    return s


def _arithmetic(node: ast.AST, source: str) -> Fraction:
    """Exact value of a parsed expression of numbers, + - * / and parentheses; else ValueError."""
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _arithmetic(node.left, source), _arithmetic(node.right, source)
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        value = _arithmetic(node.operand, source)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return Fraction(ast.get_source_segment(source, node))  # from the digits: no float rounding
    raise ValueError("not an arithmetic expression of numbers")


def parse_number(s: str | None) -> Fraction | None:
    """Exact value of a *normalized* plain number, or of arithmetic on plain numbers, else ``None``.

    Accepts integers and decimals (``"-3"``, ``"18.00"``, ``".5"``), mixed numbers
    (``"2 1/2"`` -> 5/2), and the four operations with parentheses, every operator by the same
    rule: ``"1/2"`` -> 1/2, ``"10 + 8"`` -> 18, ``"18 - 2"`` -> 16, ``"3 \\times 6"`` -> 18,
    ``"(1 + 2) \\div 4"`` -> 3/4 (also ``*``, ``\\cdot``, ``\u00d7``, ``\u00f7``). Commas,
    exponents, words and other LaTeX give ``None``, as does a zero denominator or a string
    longer than ``MAX_ANSWER_CHARS``.
    """
    if not isinstance(s, str) or len(s) > MAX_ANSWER_CHARS:
        return None
    s = s.strip()
    try:
        if _NUMBER_RE.fullmatch(s):
            return Fraction(s)
        if m := _MIXED_RE.fullmatch(s):
            value = int(m.group(2)) + Fraction(int(m.group(3)), int(m.group(4)))
            return -value if m.group(1) == "-" else value
        for old, new in _OPERATORS.items():
            s = s.replace(old, new)
        if _ARITHMETIC_RE.fullmatch(s):
            return _arithmetic(ast.parse(s, mode="eval").body, s)
    except (ValueError, ZeroDivisionError, SyntaxError, RecursionError):  # also > 4300 digits
        return None
    return None
