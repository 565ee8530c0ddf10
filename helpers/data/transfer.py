"""The transfer family: word problems in wordings, settings and nouns that no training problem uses.

A policy trained on the course's problems (:mod:`helpers.data.templates_varied`) may learn a mapping
from a wording to an operation instead of reading the problem. These problems test whether a gain
transfers: buses and passengers, museums and visitors, points in a game, laps, seeds in rows, money,
bricks, water, chairs; questions asked first or last, in frames the training templates never write.

Kinds (:data:`TRANSFER_KINDS`, kind: operations). Those training has (:data:`IN_TRAINING`) keep
their names and arithmetic: ``add``, ``sub``, ``mul``, ``div``, ``add_sub``, ``mul_add``,
``more_total``, ``mul_sub``. New shapes: ``compare`` (a - b asked as a difference), ``fewer_total``
(a + (a - b)), ``sub_sub`` (a - b - c), ``div_add`` (a / b + c).

Problems are split by :func:`helpers.data.draws.split_of` on the kind and numbers, as training's are,
so a transfer test or sealed problem never shares its kind and numbers with a training problem.
"""

from __future__ import annotations

import random

from helpers.data.draws import SPLITS, Draw, Problem, draw_distinct

TRANSFER_KINDS = {  # kind: operations
    **dict.fromkeys(("add", "sub", "mul", "div", "compare"), 1),
    **dict.fromkeys(("add_sub", "mul_add", "more_total", "mul_sub", "fewer_total", "sub_sub", "div_add"), 2),
}
IN_TRAINING = ("add", "sub", "mul", "div", "add_sub", "mul_add", "more_total", "mul_sub")


def _add(d: Draw):
    a, b = d.number(), d.number()
    n = d.name
    q = d.wording(
        f"A bus leaves the station with {a} passengers. At the first stop {b} people get on. "
        "How many passengers are on the bus after the stop?",
        f"How many laps did {n} swim this week if {d.he} swam {a} laps on Monday and {b} laps on Tuesday?",
        f"A museum counted {a} visitors before noon and {b} visitors after noon. "
        "What is the total number of visitors that day?",
        f"{n} saved {a} dollars in June. In July {d.he} saved another {b} dollars. Find how much {d.he} saved.",
    )
    return q, [f"{a} + {b} = {a + b}."], f"{a} + {b}", a + b


def _sub(d: Draw):
    a = d.number(3)
    b = d.number(1, a - 1)
    n = d.name
    q = d.wording(
        f"A bus leaves the station with {a} passengers. At the first stop {b} people get off. "
        "How many passengers are still on the bus?",
        f"A tank holds {a} liters of water. {n} pours out {b} liters. How many liters remain in the tank?",
        f"How many dollars does {n} keep if {d.he} earns {a} dollars and spends {b} dollars on a ticket?",
        f"A wall needs {a} bricks. The builders have laid {b} of them. Find how many bricks are still to lay.",
    )
    return q, [f"{a} - {b} = {a - b}."], f"{a} - {b}", a - b


def _mul(d: Draw):
    a, b = d.factor(), d.factor()
    n = d.name
    q = d.wording(
        f"A hall has {a} rows of chairs and every row has {b} chairs. What is the total number of chairs?",
        f"{n} plants seeds in {a} rows, {b} seeds to a row. How many seeds does {d.he} plant?",
        f"How many minutes does {n} practice the piano if {d.he} practices {b} minutes daily over {a} days?",
        f"Tickets cost {b} dollars each. Find what {a} tickets cost in dollars.",
    )
    return q, [f"{a} * {b} = {a * b}."], f"{a} * {b}", a * b


def _div(d: Draw):
    a, b, quotient = d.division()
    n = d.name
    q = d.wording(
        f"A hall seats {a} people on chairs set out as {b} identical rows. How many chairs stand in one row?",
        f"{n} swims {a} laps over {b} days, an equal count daily. Find the laps {d.he} swims per day.",
        f"{a} visitors arrive at a zoo in {b} full buses that carry equal loads. Find the visitors one bus carries.",
        f"How many dollars does each of {b} friends pay if they split a bill of {a} dollars evenly?",
    )
    return q, [f"{a} / {b} = {quotient}."], f"{a} / {b}", quotient


def _compare(d: Draw):
    a = d.number(3)
    b = d.number(1, a - 1)
    n, f = d.name, d.friend
    q = d.wording(
        f"In a game {n} scored {a} points and {f} scored {b} points. By how many points did {n} beat {f}?",
        f"A red train carries {a} passengers and a blue train carries {b}. "
        "What is the difference between the two numbers of passengers?",
        f"{n} read {a} pages and {f} read {b} pages. Find how many pages separate their totals.",
    )
    return q, [f"{a} - {b} = {a - b}."], f"{a} - {b}", a - b


def _add_sub(d: Draw):
    a, b = d.number(), d.number()
    c = d.number(1, a + b - 1)
    q = d.wording(
        f"A bus leaves the station with {a} passengers. At the first stop {b} people get on "
        f"and at the second stop {c} people get off. How many passengers are on the bus then?",
        f"A tank holds {a} liters of water. {b} liters are poured in, then {c} liters are used. "
        "How many liters remain in the tank?",
        f"What is {d.name}'s score after a round in which {d.he} starts with {a} points, "
        f"wins {b} points and loses {c} points?",
    )
    return q, [f"{a} + {b} = {a + b}.", f"{a + b} - {c} = {a + b - c}."], f"{a} + {b} - {c}", a + b - c


def _mul_add(d: Draw):
    a, b, c = d.factor(), d.factor(), d.number()
    q = d.wording(
        f"A hall is set with {a} rows of {b} chairs, and {c} extra chairs stand by the door. "
        "What is the total number of chairs?",
        f"{d.name} plants {a} rows of {b} seeds and then {c} seeds along the fence. Find how many seeds are planted.",
        f"How many dollars does {d.name} pay for {a} tickets at {b} dollars each and a {c}-dollar meal?",
    )
    return q, [f"{a} * {b} = {a * b}.", f"{a * b} + {c} = {a * b + c}."], f"{a} * {b} + {c}", a * b + c


def _more_total(d: Draw):
    a, b = d.number(), d.number()
    n, f = d.name, d.friend
    q = d.wording(
        f"{n} swam {a} laps. {f} swam {b} laps beyond that. Find the laps the two swam together.",
        f"On Friday a museum had {a} visitors; on Saturday it had {b} visitors on top of Friday's count. "
        "Find the visitors of both days.",
        f"A first train carries {a} passengers and a second one {b} passengers extra. "
        "How many passengers do the two trains carry?",
    )
    return q, [f"{a} + {b} = {a + b}.", f"{a} + {a + b} = {2 * a + b}."], f"{a} + ({a} + {b})", 2 * a + b


def _mul_sub(d: Draw):
    a, b = d.factor(), d.factor()
    c = d.number(1, a * b - 1)
    q = d.wording(
        f"A hall is set with {a} rows of {b} chairs. {c} chairs are taken. How many chairs are free?",
        f"{d.name} plants {a} rows of {b} seeds, and {c} seeds never sprout. Find how many seeds sprout.",
        f"How many dollars remain from {a} weeks of pocket money at {b} dollars a week after {d.he} spends {c}?",
    )
    return q, [f"{a} * {b} = {a * b}.", f"{a * b} - {c} = {a * b - c}."], f"{a} * {b} - {c}", a * b - c


def _fewer_total(d: Draw):
    a = d.number(3)
    b = d.number(1, a - 1)
    n, f = d.name, d.friend
    q = d.wording(
        f"{n} scored {a} points in a game and {f} scored {b} points less. What is the score of the two together?",
        f"On Friday a museum had {a} visitors and on Saturday {b} visitors short of Friday's count. "
        "Find the visitors of both days.",
        f"A first tank holds {a} liters and a second tank {b} liters under that. "
        "How many liters do the two tanks hold?",
    )
    return q, [f"{a} - {b} = {a - b}.", f"{a} + {a - b} = {2 * a - b}."], f"{a} + ({a} - {b})", 2 * a - b


def _sub_sub(d: Draw):
    a = d.number(4)
    b = d.number(1, a - 2)
    c = d.number(1, a - b - 1)
    q = d.wording(
        f"A bus leaves the station with {a} passengers. {b} get off at the first stop and {c} at the second. "
        "How many passengers are still on the bus?",
        f"A wall needs {a} bricks. {b} were laid on Monday and {c} on Tuesday. Find how many bricks are still to lay.",
        f"How many dollars does {d.name} keep from {a} dollars after paying {b} for a ticket and {c} for food?",
    )
    return q, [f"{a} - {b} = {a - b}.", f"{a - b} - {c} = {a - b - c}."], f"{a} - {b} - {c}", a - b - c


def _div_add(d: Draw):
    a, b, quotient = d.division()
    c = d.number()
    q = d.wording(
        f"A hall has {a} chairs in {b} equal rows. {c} chairs are added to the first row. "
        "How many chairs stand in the first row?",
        f"{d.name} splits {a} seeds evenly over {b} pots and then drops {c} more seeds into one pot. "
        "Find the seeds in that pot.",
        f"How many dollars does each of {b} friends end with if they share {a} dollars evenly and "
        f"each already had {c} dollars?",
    )
    return q, [f"{a} / {b} = {quotient}.", f"{quotient} + {c} = {quotient + c}."], f"{a} / {b} + {c}", quotient + c


TEMPLATES = {
    "add": _add, "sub": _sub, "mul": _mul, "div": _div, "compare": _compare,
    "add_sub": _add_sub, "mul_add": _mul_add, "more_total": _more_total, "mul_sub": _mul_sub,
    "fewer_total": _fewer_total, "sub_sub": _sub_sub, "div_add": _div_add,
}  # fmt: skip


def make_transfer_problems(
    n: int, *, kinds=None, max_number: int = 20, split: str = "dev", seed: int = 0, exclude=()
) -> list[Problem]:
    """``n`` distinct transfer problems, kinds in turn (``add, sub, mul, ...``), from ``split``.

    ``make_transfer_problems(12, split="test")`` gives one problem of each kind, operands of ``+`` and
    ``-`` up to 20; each :class:`helpers.data.draws.Problem` has ``family="transfer"``, its kind's
    ``ops`` and a ``template`` such as ``"compare.2"``.

    Args:
        n: how many problems.
        kinds: a subset of :data:`TRANSFER_KINDS` (default all, in that order).
        max_number: the largest operand of ``+`` and ``-`` (at least 5); factors stay at most 12.
        split: one of :data:`helpers.data.draws.SPLITS`.
        seed: any integer; the same arguments give the same problems.
        exclude: question texts and ``(kind, numbers)`` pairs no problem may have.

    Raises:
        ValueError: ``n < 1``, an unknown kind or split, ``max_number < 5``, or fewer distinct
            problems than asked for (it never hangs).
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if max_number < 5:
        raise ValueError(f"max_number must be at least 5, got {max_number}")
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    kinds = tuple(kinds or TRANSFER_KINDS)
    unknown = [k for k in kinds if k not in TRANSFER_KINDS]
    if unknown:
        raise ValueError(f"unknown transfer kinds {unknown}; choose from {tuple(TRANSFER_KINDS)}")
    rng = random.Random(f"grpo-course transfer|{max_number}|{split}|{seed}|{','.join(kinds)}")
    return draw_distinct(n, rng, TEMPLATES, kinds, max_number, split, "transfer", TRANSFER_KINDS, exclude)
