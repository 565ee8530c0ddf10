"""The course's training family, ``"varied"``: every kind in many wordings, so that a policy that maps a
wording to an operation instead of reading the problem gains little.

Per problem, in this order on the draw's random stream: the kind's numbers, one of the kind's wordings
(3 to 8), the order of facts that do not depend on each other (where a wording has such facts), and with
probability :data:`DISTRACTOR_SHARE` a distractor: one more fact with a number the answer does not use
(``Liam is 9 years old.``), placed among the facts.

Each template takes a :class:`helpers.data.draws.Draw` and returns ``(question, steps, expression,
answer)``; a wording is a list of sentences, the question last. The transfer family
(:mod:`helpers.data.transfer`) uses none of these wordings.
"""

from __future__ import annotations

from helpers.data.draws import OBJECTS, Draw

DISTRACTOR_SHARE = 1 / 3


def _distractor(d: Draw) -> str:
    k = d.rng.randint(2, max(20, d.max_number))
    other = d.rng.choice([o for o in OBJECTS if o != d.obj])
    return d.rng.choice(
        (
            f"{d.friend} is {k} years old.",
            f"The {d.box} is {k} centimeters tall.",
            f"{d.name}'s school is {k} minutes away.",
            f"{d.friend} keeps {k} {other} in a drawer.",
            f"It is {k} degrees outside.",
            f"{d.name} lives at number {k}.",
        )
    )


def _pick(d: Draw, *wordings, any_order=()) -> str:
    """One of ``wordings`` (each its facts, then the question), composed: the facts shuffled when the
    wording's index is in ``any_order`` (facts that do not depend on each other), maybe a distractor
    among them, then the question."""
    *facts, question = d.wording(*wordings)
    if d.template in any_order:
        d.rng.shuffle(facts)
    if d.rng.random() < DISTRACTOR_SHARE:
        facts.insert(d.rng.randint(0, len(facts)), _distractor(d))
    return " ".join([*facts, question])


def _add(d: Draw):
    a, b = d.number(), d.number()
    n, o, he, He = d.name, d.obj, d.he, d.He
    q = _pick(
        d,
        [f"{n} has {a} {o}.", f"{He} buys {b} more {o}.", f"How many {o} does {n} have now?"],
        [f"{n} picked {a} {o} in the morning and {b} {o} in the afternoon.", f"How many {o} did {n} pick in all?"],
        [f"There are {a} {o} in a {d.box}.", f"{n} puts {b} more {o} in it.", f"How many {o} are in the {d.box} now?"],
        [
            f"{n} found {a} {o} on Saturday.",
            f"On Sunday {he} found {b} {o}.",
            f"How many {o} did {n} find over the weekend?",
        ],
        [f"{n} has {a} red {o} and {b} blue {o}.", f"How many {o} does {he} have altogether?"],
        [f"{d.friend} gave {n} {b} {o}.", f"Before that, {n} had {a} {o}.", f"How many {o} does {n} have now?"],
        [f"One {d.box} holds {a} {o}.", f"Another {d.box} holds {b} {o}.", f"How many {o} are in the two {d.boxes}?"],
        [f"{n} won {a} {o} at the fair and then won {b} more.", f"What is the number of {o} {n} won?"],
        any_order=(3, 6),
    )
    return q, [f"{a} + {b} = {a + b} {o}."], f"{a} + {b}", a + b


def _sub(d: Draw):
    a = d.number(3)
    b = d.number(2, a - 1)
    n, o, He = d.name, d.obj, d.He
    q = _pick(
        d,
        [f"{n} has {a} {o}.", f"{He} gives {b} {o} to {d.friend}.", f"How many {o} does {n} have left?"],
        [f"{n} had {a} {o}.", f"{He} lost {b} of them.", f"How many {o} does {n} have now?"],
        [f"A shop had {a} {o}.", f"It sold {b} of them.", f"How many {o} does the shop have left?"],
        [f"There were {a} {o} on the table.", f"{n} took {b} of them.", f"How many {o} are still on the table?"],
        [f"{n} needs {a} {o} for a project.", f"{He} already has {b}.", f"How many more {o} does {n} need?"],
        [f"{n} brought {a} {o} to school and handed out {b} of them.", f"How many {o} did {n} bring home?"],
        [f"Of the {a} {o} in a {d.box}, {b} are broken.", f"How many {o} in the {d.box} are not broken?"],
    )
    return q, [f"{a} - {b} = {a - b} {o} are left."], f"{a} - {b}", a - b


def _mul(d: Draw):
    a, b = d.factor(), d.factor()
    n, o, he = d.name, d.obj, d.he
    q = _pick(
        d,
        [f"{n} buys {a} {d.boxes} of {o}.", f"Each {d.box} holds {b} {o}.", f"How many {o} does {n} buy?"],
        [f"There are {a} tables with {b} {o} on each table.", f"How many {o} are there in total?"],
        [f"{n} reads {b} pages every day.", f"How many pages does {he} read in {a} days?"],
        [f"{n} lays out {a} rows of {o} with {b} {o} in every row.", f"How many {o} did {he} lay out?"],
        [f"Each of {a} children brings {b} {o} to class.", f"How many {o} do the children bring?"],
        [f"{n} saves {b} {o} a week for {a} weeks.", f"How many {o} has {n} saved?"],
        [f"A {d.box} holds {b} {o}.", f"{n} fills {a} {d.boxes}.", f"How many {o} does {n} use?"],
    )
    return q, [f"{a} * {b} = {a * b}."], f"{a} * {b}", a * b


def _div(d: Draw):
    a, b, quotient = d.division()
    n, o, he = d.name, d.obj, d.he
    q = _pick(
        d,
        [f"{n} has {a} {o} and shares them equally among {b} friends.", f"How many {o} does each friend get?"],
        [f"{n} puts {a} {o} into {d.boxes} of {b}.", f"How many {d.boxes} does {he} fill?"],
        [f"{a} {o} are split equally into {b} {d.boxes}.", f"How many {o} are in each {d.box}?"],
        [f"{n} has {a} {o} and puts {b} in every {d.box}.", f"How many {d.boxes} does {he} need?"],
        [f"{b} children share {a} {o} so that each gets the same number.", "How many does each child get?"],
        [f"{n} read {a} pages in {b} days, the same number every day.", f"How many pages did {he} read a day?"],
        [f"A teacher arranges {a} {o} in {b} equal rows.", f"How many {o} are in each row?"],
    )
    return q, [f"{a} / {b} = {quotient}."], f"{a} / {b}", quotient


def _add_sub(d: Draw):
    a, b = d.number(), d.number()
    c = d.number(1, a + b - 1)
    n, f, o, He = d.name, d.friend, d.obj, d.He
    q = _pick(
        d,
        [f"{n} has {a} {o}.", f"{He} buys {b} more and then gives {c} to {f}.", f"How many {o} does {n} have now?"],
        [f"A {d.box} holds {a} {o}.", f"{n} adds {b} {o} and takes out {c}.", f"How many {o} are in the {d.box} now?"],
        [
            f"There are {a} {o} on a shelf.",
            f"{n} puts {b} more there, then {f} takes {c} away.",
            f"How many {o} are on the shelf now?",
        ],
        [
            f"{n} picked {a} {o} and {f} picked {b}.",
            f"They used {c} of them for a pie.",
            f"How many {o} do they have left?",
        ],
        [
            f"A shop had {a} {o}.",
            f"It got {b} more in a delivery and sold {c}.",
            f"How many {o} does the shop have now?",
        ],
    )
    steps = [f"First {a} + {b} = {a + b} {o}.", f"Then {a + b} - {c} = {a + b - c} {o}."]
    return q, steps, f"{a} + {b} - {c}", a + b - c


def _mul_add(d: Draw):
    a, b, c = d.factor(), d.factor(), d.number()
    n, o, He, he = d.name, d.obj, d.He, d.he
    q = _pick(
        d,
        [
            f"{n} buys {a} {d.boxes} of {o} with {b} {o} in each {d.box}.",
            f"{He} already had {c} {o}.",
            f"How many {o} does {n} have now?",
        ],
        [
            f"{n} has {a} {d.boxes} with {b} {o} in each.",
            f"{He} also has {c} loose {o}.",
            f"How many {o} does {he} have?",
        ],
        [
            f"A table has {a} rows of {b} {o}.",
            f"There are {c} more {o} by the gate.",
            f"How many {o} are there altogether?",
        ],
        [f"{n} reads {b} pages a day for {a} days, then {c} pages on the last day.", f"How many pages does {n} read?"],
        [
            f"A teacher gives each of {a} students {b} {o} and keeps {c} {o}.",
            f"How many {o} did the teacher have at the start?",
        ],
        any_order=(1, 2),
    )
    steps = [f"{a} * {b} = {a * b} {o}.", f"{a * b} + {c} = {a * b + c} {o}."]
    return q, steps, f"{a} * {b} + {c}", a * b + c


def _more_total(d: Draw):
    a, b = d.number(), d.number()
    n, f, o, he = d.name, d.friend, d.obj, d.he
    q = _pick(
        d,
        [f"{n} has {a} {o}.", f"{f} has {b} more {o} than {n}.", f"How many {o} do they have together?"],
        [
            f"{n} scored {a} points.",
            f"{f} scored {b} points more than {n}.",
            "How many points did they score together?",
        ],
        [
            f"A red {d.box} holds {a} {o}.",
            f"A blue {d.box} holds {b} {o} more than the red one.",
            f"How many {o} are in the two {d.boxes}?",
        ],
        [
            f"On Monday {n} made {a} {o}.",
            f"On Tuesday {he} made {b} more than on Monday.",
            f"How many {o} did {he} make on the two days?",
        ],
    )
    steps = [f"The second has {a} + {b} = {a + b} {o}.", f"Together {a} + {a + b} = {2 * a + b} {o}."]
    return q, steps, f"{a} + ({a} + {b})", 2 * a + b


def _mul_sub(d: Draw):
    a, b = d.factor(), d.factor()
    c = d.number(1, a * b - 1)
    n, o, He, he = d.name, d.obj, d.He, d.he
    q = _pick(
        d,
        [
            f"{n} bakes {a} trays of {o} with {b} {o} on each tray.",
            f"{He} gives {c} of them to {d.friend}.",
            f"How many {o} does {n} have left?",
        ],
        [
            f"{n} buys {a} {d.boxes} of {o} with {b} in each {d.box}.",
            f"{c} of the {o} are broken.",
            f"How many {o} are not broken?",
        ],
        [
            f"There are {a} shelves with {b} {o} on each.",
            f"{n} takes {c} {o} away.",
            f"How many {o} are still on the shelves?",
        ],
        [
            f"{n} needs {a} {d.boxes} of {b} {o} for a party.",
            f"{He} has {c} {o} so far.",
            f"How many more {o} does {he} need?",
        ],
    )
    steps = [f"{a} * {b} = {a * b} {o}.", f"{a * b} - {c} = {a * b - c} {o}."]
    return q, steps, f"{a} * {b} - {c}", a * b - c


def _mul_add_sub(d: Draw):
    a, b, c = d.factor(), d.factor(), d.number()
    e = d.number(1, a * b + c - 1)
    n, f, o, he, He = d.name, d.friend, d.obj, d.he, d.He
    q = _pick(
        d,
        [
            f"{n} buys {a} {d.boxes} of {o} with {b} {o} in each {d.box}.",
            f"{f} gives {n} {c} more {o}, and {he} uses {e} of them.",
            f"How many {o} does {n} have now?",
        ],
        [f"{n} bakes {a} trays of {b} {o}, then {c} more {o}.", f"{He} sells {e} of them.", f"How many {o} are left?"],
        [
            f"{n} has {a} {d.boxes} with {b} {o} in each and {c} loose {o}.",
            f"{He} gives {e} {o} to {f}.",
            f"How many {o} does {n} have now?",
        ],
    )
    steps = [
        f"{a} * {b} = {a * b} {o}.",
        f"{a * b} + {c} = {a * b + c} {o}.",
        f"{a * b + c} - {e} = {a * b + c - e} {o}.",
    ]
    return q, steps, f"{a} * {b} + {c} - {e}", a * b + c - e


def _sum_diff(d: Draw):
    a = d.number(3)
    b = d.number(1, a - 1)
    c = d.number()
    n, o, he = d.name, d.obj, d.he
    q = _pick(
        d,
        [
            f"{n} collects {a} {o} on Monday, {b} fewer {o} on Tuesday than on Monday, and {c} {o} on Wednesday.",
            f"How many {o} does {n} collect in the three days?",
        ],
        [
            f"{n} read {a} pages on Monday and {b} fewer pages on Tuesday.",
            f"On Wednesday {he} read {c} pages.",
            f"How many pages did {he} read in the three days?",
        ],
        [
            f"A stand sold {a} {o} in the morning, {b} fewer in the afternoon, and {c} in the evening.",
            f"How many {o} did it sell that day?",
        ],
    )
    steps = [
        f"{a} - {b} = {a - b} {o}.",
        f"{a} + {a - b} = {2 * a - b} {o}.",
        f"{2 * a - b} + {c} = {2 * a - b + c} {o}.",
    ]
    return q, steps, f"{a} + ({a} - {b}) + {c}", 2 * a - b + c


def _add_mul_sub(d: Draw):
    a, b = d.number(1, 6), d.number(1, 6)
    c = d.factor()
    e = d.number(1, (a + b) * c - 1)
    n, f, o = d.name, d.friend, d.obj
    q = _pick(
        d,
        [
            f"A class has {a} boys and {b} girls.",
            f"Each child gets {c} {o}.",
            f"{e} of the {o} are broken.",
            f"How many {o} are not broken?",
        ],
        [
            f"{n} invites {a} friends and {f} invites {b}.",
            f"Each guest gets {c} {o}, and {e} of them are lost.",
            f"How many {o} are not lost?",
        ],
        [
            f"A team has {a} boys and {b} girls.",
            f"Each player needs {c} {o}.",
            f"The coach already has {e}.",
            f"How many more {o} does the coach need?",
        ],
    )
    steps = [
        f"{a} + {b} = {a + b}.",
        f"{a + b} * {c} = {(a + b) * c} {o}.",
        f"{(a + b) * c} - {e} = {(a + b) * c - e} {o}.",
    ]
    return q, steps, f"({a} + {b}) * {c} - {e}", (a + b) * c - e


TEMPLATES = {
    "add": _add, "sub": _sub, "mul": _mul, "div": _div,
    "add_sub": _add_sub, "mul_add": _mul_add, "more_total": _more_total, "mul_sub": _mul_sub,
    "mul_add_sub": _mul_add_sub, "sum_diff": _sum_diff, "add_mul_sub": _add_mul_sub,
}  # fmt: skip
