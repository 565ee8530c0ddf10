"""Tests for helpers.grading: extraction, normalization, equivalence, time limit."""

import time
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import pytest

from helpers.grading import (
    GradingWarning,
    extract_answer,
    extract_boxed,
    extract_xml_answer,
    is_equivalent,
    normalize_answer,
    parse_number,
)


@pytest.mark.parametrize("text, expected", [
    ("<answer>\n18\n</answer>", "18"),
    ("x <answer> 3 </answer> y", "3"),
    ("no tags", None),
    ("<answer></answer>", None),
    ("<answer>\n \n</answer>", None),
    ("<answer>\n7\n</answer>\n<answer>\n18\n</answer>\n", None),  # hedging
    ("<answer>7<answer>18</answer>", None),
    ("<answer>18", None),  # unclosed
    ("</answer>18<answer>", None),  # reversed
    (None, None),
])
def test_extract_xml_answer(text, expected):
    assert extract_xml_answer(text) == expected


@pytest.mark.parametrize("text, expected", [
    (r"\boxed{\frac{1}{3}}", r"\frac{1}{3}"),
    (r"Guess \boxed{2}, no wait, it is \boxed{3}.", "3"),
    (r"\fbox{7}", "7"),
    (r"\boxed {12}", "12"),
    (r"\boxed{\{1, 2\}}", r"\{1, 2\}"),  # escaped braces do not count
    (r"\boxed{2} then \boxed{\frac{1}{3}", None),  # last box truncated
    (r"\boxed{}", None),
    ("18", None),
])
def test_extract_boxed(text, expected):
    assert extract_boxed(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("<answer>\n\\boxed{42}\n</answer>", "42"),
    ("<answer>\nso \\boxed{42}.\n</answer>", "42"),
    ("The answer is \\boxed{5}", "5"),
    ("<answer>\n7\n</answer><answer>\\boxed{18}</answer>", None),  # no fallback to boxes
    ("\\boxed{5} <answer></answer>", None),
    ("just 18", None),
])
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


@pytest.mark.parametrize("raw, expected", [
    ("$1,234", "1234"),
    ("\\$1,234,567", "1234567"),
    ("3,5", "3,5"),
    ("2,50", "2,50"),
    ("1,2345", "1,2345"),
    ("\u22123", "-3"),
    ("**18**", "18"),
    ("\\text{18}", "18"),
    ("5 \\text{ dollars}", "5"),
    ("18 apples", "18"),
    ("60 miles/hour", "60"),
    ("7x", "7x"),
    ("2 pi", "2 pi"),
    ("18.", "18"),
    ("25%", "25"),
    ("25\\%", "25"),
    ("\\frac{1}{2}", "1/2"),
    ("\\dfrac{3}{4}", "3/4"),
    ("-\\frac12", "-1/2"),
    ("2\\frac{1}{2}", "2 1/2"),
    ("x = 7", "7"),
    ("12+6 = 18", "18"),
    ("90^\\circ", "90"),
    ("\u00bd", "1/2"),
    (None, ""),
])
def test_normalize_answer(raw, expected):
    assert normalize_answer(raw) == expected


@pytest.mark.parametrize("s, expected", [
    ("18", Fraction(18)), ("-3", Fraction(-3)), ("18.00", Fraction(18)), (".5", Fraction(1, 2)),
    ("1/2", Fraction(1, 2)), ("2 1/2", Fraction(5, 2)), ("-2 1/2", Fraction(-5, 2)),
    ("1/0", None), ("3,5", None), ("1e5", None), ("x", None), ("", None), ("9" * 5000, None),
])
def test_parse_number(s, expected):
    assert parse_number(s) == expected


@pytest.mark.parametrize("pred, gold", [
    ("18", "18"), ("0.5", "1/2"), ("18.00", "18"), ("29.00", "29"), ("18.", "18"),
    ("$1,234", "1234"), ("1234", "1,234"), ("2 1/2", "2.5"), ("2\\frac{1}{2}", "5/2"),
    ("\\frac{1}{2}", "0.5"), ("x = 7", "7"), ("\u22123", "-3"), ("+5", "5"),
    ("\\sqrt{4}", "2"), ("3 \\times 6", "18"), ("x^2", "x^{2}"),
])
def test_equivalent(pred, gold):
    assert is_equivalent(pred, gold)


@pytest.mark.parametrize("pred, gold", [
    ("18.0001", "18"), ("-3", "3"), ("3,5", "35"), ("2,50", "250"), ("1/2", "1/3"),
    ("\\frac{1}{3}", "\\frac{1}{2}"), ("1 - \\sqrt{2}", "1"), ("7x", "7"), ("\\pi", "3.14159"),
    (None, "18"), ("", "18"), ("1" * 600, "1" * 6),
])
def test_not_equivalent(pred, gold):
    assert not is_equivalent(pred, gold)


@pytest.mark.parametrize("gold", ["\\frac{63}{400", "", None, "(1+2"])
def test_unparseable_gold_fails_closed_with_warning(gold):
    with pytest.warns(GradingWarning):
        assert is_equivalent("\\frac{64}{400}", gold) is False


def test_pathological_input_times_out_in_a_thread():
    assert is_equivalent("\\sqrt{9}", "3")  # warm the worker (its start is not time-limited)
    start = time.monotonic()
    with ThreadPoolExecutor(1) as pool:  # not the main thread: no signal-based timeouts
        result = pool.submit(is_equivalent, "9^{9^{9^{9}}}", "18", 1.0).result(timeout=60)
    assert result is False
    assert time.monotonic() - start < 5  # hang guard, not a speed test
    assert is_equivalent("\\sqrt{16}", "4")  # the worker was replaced
