"""The course's first problem family, ``"fixed"``: 16 wordings in all (three for each one-operation kind,
one for each two- and three-operation kind), differing only in names, objects and numbers. The previous
reference runs (``results/cpu-curriculum*``) trained and were evaluated on it; the ``"varied"`` family
(:mod:`helpers.data.templates_varied`) replaces it.

Each template takes a :class:`helpers.data.draws.Draw` and returns ``(question, steps, expression,
answer)``; the draw records the numbers in the order the kind's arithmetic reads them.
"""

from __future__ import annotations

from helpers.data.draws import MAX_FACTOR, Draw


def _add(d: Draw):
    a, b = d.number(), d.number()
    q = d.wording(
        f"{d.name} has {a} {d.obj}. {d.He} buys {b} more {d.obj}. How many {d.obj} does {d.name} have now?",
        f"{d.name} picked {a} {d.obj} in the morning and {b} {d.obj} in the afternoon. "
        f"How many {d.obj} did {d.name} pick in all?",
        f"There are {a} {d.obj} in a {d.box}. {d.name} puts {b} more {d.obj} in it. "
        f"How many {d.obj} are in the {d.box} now?",
    )
    return q, [f"{d.name} has {a} + {b} = {a + b} {d.obj}."], f"{a} + {b}", a + b


def _sub(d: Draw):
    a = d.number(3)
    b = d.number(1, a - 1)
    q = d.wording(
        f"{d.name} has {a} {d.obj}. {d.He} gives {b} {d.obj} to {d.friend}. How many {d.obj} does {d.name} have left?",
        f"{d.name} had {a} {d.obj}. {d.He} lost {b} of them. How many {d.obj} does {d.name} have now?",
        f"A shop had {a} {d.obj}. It sold {b} of them. How many {d.obj} does the shop have left?",
    )
    return q, [f"{a} - {b} = {a - b} {d.obj} are left."], f"{a} - {b}", a - b


def _mul(d: Draw):
    a, b = d.factor(), d.factor()
    q = d.wording(
        f"{d.name} buys {a} {d.boxes} of {d.obj}. Each {d.box} holds {b} {d.obj}. How many {d.obj} does {d.name} buy?",
        f"There are {a} tables with {b} {d.obj} on each table. How many {d.obj} are there in total?",
        f"{d.name} reads {b} pages every day. How many pages does {d.he} read in {a} days?",
    )
    return q, [f"{a} * {b} = {a * b}."], f"{a} * {b}", a * b


def _div(d: Draw):
    a, b, quotient = d.division()
    q = d.wording(
        f"{d.name} has {a} {d.obj} and shares them equally among {b} friends. How many {d.obj} does each friend get?",
        f"{d.name} puts {a} {d.obj} into {d.boxes} of {b}. How many {d.boxes} does {d.he} fill?",
        f"{a} {d.obj} are split equally into {b} {d.boxes}. How many {d.obj} are in each {d.box}?",
    )
    return q, [f"{a} / {b} = {quotient}."], f"{a} / {b}", quotient


def _add_sub(d: Draw):
    a, b = d.number(), d.number()
    c = d.number(1, a + b - 1)
    q = (
        f"{d.name} has {a} {d.obj}. {d.He} buys {b} more and then gives {c} to {d.friend}. "
        f"How many {d.obj} does {d.name} have now?"
    )
    steps = [
        f"After buying, {d.name} has {a} + {b} = {a + b} {d.obj}.",
        f"After giving some away, {d.he} has {a + b} - {c} = {a + b - c} {d.obj}.",
    ]
    return q, steps, f"{a} + {b} - {c}", a + b - c


def _mul_add(d: Draw):
    a, b, c = d.factor(), d.factor(), d.number()
    q = (
        f"{d.name} buys {a} {d.boxes} of {d.obj} with {b} {d.obj} in each {d.box}. "
        f"{d.He} already had {c} {d.obj}. How many {d.obj} does {d.name} have now?"
    )
    steps = [f"The {d.boxes} hold {a} * {b} = {a * b} {d.obj}.", f"{d.name} has {a * b} + {c} = {a * b + c} {d.obj}."]
    return q, steps, f"{a} * {b} + {c}", a * b + c


def _more_total(d: Draw):
    a, b = d.number(), d.number()
    q = (
        f"{d.name} has {a} {d.obj}. {d.friend} has {b} more {d.obj} than {d.name}. "
        f"How many {d.obj} do they have together?"
    )
    steps = [f"{d.friend} has {a} + {b} = {a + b} {d.obj}.", f"Together they have {a} + {a + b} = {2 * a + b} {d.obj}."]
    return q, steps, f"{a} + ({a} + {b})", 2 * a + b


def _mul_sub(d: Draw):
    a, b = d.factor(), d.factor()
    c = d.number(1, a * b - 1)
    q = (
        f"{d.name} bakes {a} trays of {d.obj} with {b} {d.obj} on each tray. {d.He} gives {c} of them "
        f"to {d.friend}. How many {d.obj} does {d.name} have left?"
    )
    steps = [f"{d.name} bakes {a} * {b} = {a * b} {d.obj}.", f"{d.He} has {a * b} - {c} = {a * b - c} {d.obj} left."]
    return q, steps, f"{a} * {b} - {c}", a * b - c


def _mul_add_sub(d: Draw):
    a, b, c = d.factor(), d.factor(), d.number()
    e = d.number(1, a * b + c - 1)
    q = (
        f"{d.name} buys {a} {d.boxes} of {d.obj} with {b} {d.obj} in each {d.box}. {d.friend} gives "
        f"{d.name} {c} more {d.obj}, and {d.he} uses {e} of them. How many {d.obj} does {d.name} have now?"
    )
    steps = [
        f"The {d.boxes} hold {a} * {b} = {a * b} {d.obj}.",
        f"With the gift {d.name} has {a * b} + {c} = {a * b + c} {d.obj}.",
        f"After using some, {d.he} has {a * b + c} - {e} = {a * b + c - e} {d.obj}.",
    ]
    return q, steps, f"{a} * {b} + {c} - {e}", a * b + c - e


def _sum_diff(d: Draw):
    a = d.number(3)
    b = d.number(1, a - 1)
    c = d.number()
    q = (
        f"{d.name} collects {a} {d.obj} on Monday, {b} fewer {d.obj} on Tuesday than on Monday, "
        f"and {c} {d.obj} on Wednesday. How many {d.obj} does {d.name} collect in the three days?"
    )
    steps = [
        f"On Tuesday {d.name} collects {a} - {b} = {a - b} {d.obj}.",
        f"Monday and Tuesday make {a} + {a - b} = {2 * a - b} {d.obj}.",
        f"With Wednesday, {2 * a - b} + {c} = {2 * a - b + c} {d.obj}.",
    ]
    return q, steps, f"{a} + ({a} - {b}) + {c}", 2 * a - b + c


def _add_mul_sub(d: Draw):
    a, b = d.number(1, max(2, MAX_FACTOR // 2)), d.number(1, max(2, MAX_FACTOR // 2))
    c = d.factor()
    e = d.number(1, (a + b) * c - 1)
    q = (
        f"A class has {a} boys and {b} girls. Each child gets {c} {d.obj}. {e} of the {d.obj} are "
        f"broken. How many {d.obj} are not broken?"
    )
    steps = [
        f"The class has {a} + {b} = {a + b} children.",
        f"They get {a + b} * {c} = {(a + b) * c} {d.obj}.",
        f"Not broken: {(a + b) * c} - {e} = {(a + b) * c - e} {d.obj}.",
    ]
    return q, steps, f"({a} + {b}) * {c} - {e}", (a + b) * c - e


TEMPLATES = {
    "add": _add, "sub": _sub, "mul": _mul, "div": _div,
    "add_sub": _add_sub, "mul_add": _mul_add, "more_total": _more_total, "mul_sub": _mul_sub,
    "mul_add_sub": _mul_add_sub, "sum_diff": _sum_diff, "add_mul_sub": _add_mul_sub,
}  # fmt: skip
