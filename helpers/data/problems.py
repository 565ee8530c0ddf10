"""Course-written GSM8K-style word problems with a difficulty knob (never GSM8K text).

A 135M model gets almost no GSM8K question right, so GRPO on GSM8K gives it groups where every
completion scores 0: no advantage, nothing learned. These problems start where it can already
succeed sometimes and grow harder, as the R1-style recipe's curriculum "from single-variable
equations upward" does (see :mod:`helpers.data.curriculum`).

* The knob: ``ops`` (1 to 3 arithmetic operations) and ``max_number`` (the largest operand of a
  ``+`` or ``-``; factors and divisors stay at most 12, so a ``x`` is a times-table fact).
* Names, objects and numbers are drawn from :class:`random.Random` seeded with a string:
  the same arguments give the same problems on every machine and Python version.
* **Train and test are drawn apart**: every problem's *arithmetic* (its kind and numbers,
  whatever the names or wording) hashes to one split (:func:`split_of`, one in four to test), so a
  test problem's sums never appear in training, even reworded.
* Each :class:`Problem` carries a GSM8K-style worked solution (``... 12 + 5 = 17 ...\\n#### 17``)
  and the expression it evaluates, which the tests check against the answer.

Kinds (``ops``: kinds): 1: ``add``, ``sub``, ``mul``, ``div``; 2: ``add_sub`` (a + b - c),
``mul_add`` (a x b + c), ``more_total`` (a + (a + b)), ``mul_sub`` (a x b - c); 3: ``mul_add_sub``
(a x b + c - d), ``sum_diff`` (a + (a - b) + c), ``add_mul_sub`` ((a + b) x c - d).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import asdict, dataclass

SPLITS = ("train", "test")


TEST_SHARE = 4  # one arithmetic instance in TEST_SHARE goes to the test split


MAX_FACTOR = 12


NAMES = (
    ("Ava", "she"),
    ("Liam", "he"),
    ("Mia", "she"),
    ("Noah", "he"),
    ("Zoe", "she"),
    ("Omar", "he"),
    ("Lena", "she"),
    ("Hugo", "he"),
    ("Priya", "she"),
    ("Kenji", "he"),
    ("Sofia", "she"),
    ("Mateo", "he"),
    ("Amara", "she"),
    ("Felix", "he"),
    ("Nadia", "she"),
    ("Ravi", "he"),
    ("Chloe", "she"),
    ("Tariq", "he"),
    ("Ingrid", "she"),
    ("Diego", "he"),
    ("Yuki", "she"),
    ("Samuel", "he"),
    ("Leila", "she"),
    ("Arjun", "he"),
)


OBJECTS = (
    "apples",
    "marbles",
    "stickers",
    "cookies",
    "pencils",
    "books",
    "shells",
    "stamps",
    "crayons",
    "beads",
    "coins",
    "balloons",
    "cupcakes",
    "eggs",
    "flowers",
    "candies",
    "blocks",
    "cards",
    "buttons",
    "lemons",
)


CONTAINERS = (("box", "boxes"), ("bag", "bags"), ("pack", "packs"), ("jar", "jars"), ("basket", "baskets"))


KINDS = {
    1: ("add", "sub", "mul", "div"),
    2: ("add_sub", "mul_add", "more_total", "mul_sub"),
    3: ("mul_add_sub", "sum_diff", "add_mul_sub"),
}


@dataclass(frozen=True)
class Problem:
    """One word problem. ``answer``: the integer answer as text; ``solution``: a GSM8K-style worked
    solution ending in ``#### <answer>``; ``expression``: the arithmetic (``"3 * 4 + 5"``)."""

    question: str
    answer: str
    solution: str
    expression: str
    ops: int
    kind: str
    max_number: int

    def to_dict(self) -> dict:
        return asdict(self)


class _Draw:
    """One problem's random choices: numbers, a person, a friend, an object, a container."""

    def __init__(self, rng: random.Random, max_number: int):
        self.rng, self.max_number = rng, max_number
        (self.name, self.he), (self.friend, _) = rng.sample(NAMES, 2)
        self.obj = rng.choice(OBJECTS)
        self.box, self.boxes = rng.choice(CONTAINERS)
        self.numbers: list[int] = []

    def number(self, low: int = 2, high: int | None = None) -> int:
        value = self.rng.randint(low, max(low, self.max_number if high is None else high))
        self.numbers.append(value)
        return value

    def factor(self) -> int:
        return self.number(2, min(MAX_FACTOR, max(3, self.max_number)))

    @property
    def He(self) -> str:  # noqa: N802 - the capitalised pronoun, as written in the templates
        return self.he.capitalize()


def _add(d: _Draw):
    a, b = d.number(), d.number()
    q = d.rng.choice(
        (
            f"{d.name} has {a} {d.obj}. {d.He} buys {b} more {d.obj}. How many {d.obj} does {d.name} have now?",
            f"{d.name} picked {a} {d.obj} in the morning and {b} {d.obj} in the afternoon. "
            f"How many {d.obj} did {d.name} pick in all?",
            f"There are {a} {d.obj} in a {d.box}. {d.name} puts {b} more {d.obj} in it. "
            f"How many {d.obj} are in the {d.box} now?",
        )
    )
    return q, [f"{d.name} has {a} + {b} = {a + b} {d.obj}."], f"{a} + {b}", a + b


def _sub(d: _Draw):
    a = d.number(3)
    b = d.number(1, a - 1)
    q = d.rng.choice(
        (
            f"{d.name} has {a} {d.obj}. {d.He} gives {b} {d.obj} to {d.friend}. "
            f"How many {d.obj} does {d.name} have left?",
            f"{d.name} had {a} {d.obj}. {d.He} lost {b} of them. How many {d.obj} does {d.name} have now?",
            f"A shop had {a} {d.obj}. It sold {b} of them. How many {d.obj} does the shop have left?",
        )
    )
    return q, [f"{a} - {b} = {a - b} {d.obj} are left."], f"{a} - {b}", a - b


def _mul(d: _Draw):
    a, b = d.factor(), d.factor()
    q = d.rng.choice(
        (
            f"{d.name} buys {a} {d.boxes} of {d.obj}. Each {d.box} holds {b} {d.obj}. "
            f"How many {d.obj} does {d.name} buy?",
            f"There are {a} tables with {b} {d.obj} on each table. How many {d.obj} are there in total?",
            f"{d.name} reads {b} pages every day. How many pages does {d.he} read in {a} days?",
        )
    )
    return q, [f"{a} * {b} = {a * b}."], f"{a} * {b}", a * b


def _div(d: _Draw):
    b, quotient = d.factor(), d.factor()
    a = b * quotient
    d.numbers[-2:] = [a, b]
    q = d.rng.choice(
        (
            f"{d.name} has {a} {d.obj} and shares them equally among {b} friends. "
            f"How many {d.obj} does each friend get?",
            f"{d.name} puts {a} {d.obj} into {d.boxes} of {b}. How many {d.boxes} does {d.he} fill?",
            f"{a} {d.obj} are split equally into {b} {d.boxes}. How many {d.obj} are in each {d.box}?",
        )
    )
    return q, [f"{a} / {b} = {quotient}."], f"{a} / {b}", quotient


def _add_sub(d: _Draw):
    a, b = d.number(), d.number()
    c = d.number(1, a + b - 1)
    q = (
        f"{d.name} has {a} {d.obj}. {d.He} buys {b} more and then gives {c} to {d.friend}. "
        f"How many {d.obj} does {d.name} have now?"
    )
    return (
        q,
        [
            f"After buying, {d.name} has {a} + {b} = {a + b} {d.obj}.",
            f"After giving some away, {d.he} has {a + b} - {c} = {a + b - c} {d.obj}.",
        ],
        f"{a} + {b} - {c}",
        a + b - c,
    )


def _mul_add(d: _Draw):
    a, b, c = d.factor(), d.factor(), d.number()
    q = (
        f"{d.name} buys {a} {d.boxes} of {d.obj} with {b} {d.obj} in each {d.box}. "
        f"{d.He} already had {c} {d.obj}. How many {d.obj} does {d.name} have now?"
    )
    return (
        q,
        [f"The {d.boxes} hold {a} * {b} = {a * b} {d.obj}.", f"{d.name} has {a * b} + {c} = {a * b + c} {d.obj}."],
        f"{a} * {b} + {c}",
        a * b + c,
    )


def _more_total(d: _Draw):
    a, b = d.number(), d.number()
    q = (
        f"{d.name} has {a} {d.obj}. {d.friend} has {b} more {d.obj} than {d.name}. "
        f"How many {d.obj} do they have together?"
    )
    return (
        q,
        [f"{d.friend} has {a} + {b} = {a + b} {d.obj}.", f"Together they have {a} + {a + b} = {2 * a + b} {d.obj}."],
        f"{a} + ({a} + {b})",
        2 * a + b,
    )


def _mul_sub(d: _Draw):
    a, b = d.factor(), d.factor()
    c = d.number(1, a * b - 1)
    q = (
        f"{d.name} bakes {a} trays of {d.obj} with {b} {d.obj} on each tray. {d.He} gives {c} of them "
        f"to {d.friend}. How many {d.obj} does {d.name} have left?"
    )
    return (
        q,
        [f"{d.name} bakes {a} * {b} = {a * b} {d.obj}.", f"{d.He} has {a * b} - {c} = {a * b - c} {d.obj} left."],
        f"{a} * {b} - {c}",
        a * b - c,
    )


def _mul_add_sub(d: _Draw):
    a, b, c = d.factor(), d.factor(), d.number()
    e = d.number(1, a * b + c - 1)
    q = (
        f"{d.name} buys {a} {d.boxes} of {d.obj} with {b} {d.obj} in each {d.box}. {d.friend} gives "
        f"{d.name} {c} more {d.obj}, and {d.he} uses {e} of them. How many {d.obj} does {d.name} have now?"
    )
    return (
        q,
        [
            f"The {d.boxes} hold {a} * {b} = {a * b} {d.obj}.",
            f"With the gift {d.name} has {a * b} + {c} = {a * b + c} {d.obj}.",
            f"After using some, {d.he} has {a * b + c} - {e} = {a * b + c - e} {d.obj}.",
        ],
        f"{a} * {b} + {c} - {e}",
        a * b + c - e,
    )


def _sum_diff(d: _Draw):
    a = d.number(3)
    b = d.number(1, a - 1)
    c = d.number()
    q = (
        f"{d.name} collects {a} {d.obj} on Monday, {b} fewer {d.obj} on Tuesday than on Monday, "
        f"and {c} {d.obj} on Wednesday. How many {d.obj} does {d.name} collect in the three days?"
    )
    return (
        q,
        [
            f"On Tuesday {d.name} collects {a} - {b} = {a - b} {d.obj}.",
            f"Monday and Tuesday make {a} + {a - b} = {2 * a - b} {d.obj}.",
            f"With Wednesday, {2 * a - b} + {c} = {2 * a - b + c} {d.obj}.",
        ],
        f"{a} + ({a} - {b}) + {c}",
        2 * a - b + c,
    )


def _add_mul_sub(d: _Draw):
    a, b = d.number(1, max(2, MAX_FACTOR // 2)), d.number(1, max(2, MAX_FACTOR // 2))
    c = d.factor()
    e = d.number(1, (a + b) * c - 1)
    q = (
        f"A class has {a} boys and {b} girls. Each child gets {c} {d.obj}. {e} of the {d.obj} are "
        f"broken. How many {d.obj} are not broken?"
    )
    return (
        q,
        [
            f"The class has {a} + {b} = {a + b} children.",
            f"They get {a + b} * {c} = {(a + b) * c} {d.obj}.",
            f"Not broken: {(a + b) * c} - {e} = {(a + b) * c - e} {d.obj}.",
        ],
        f"({a} + {b}) * {c} - {e}",
        (a + b) * c - e,
    )


_TEMPLATES = {
    "add": _add,
    "sub": _sub,
    "mul": _mul,
    "div": _div,
    "add_sub": _add_sub,
    "mul_add": _mul_add,
    "more_total": _more_total,
    "mul_sub": _mul_sub,
    "mul_add_sub": _mul_add_sub,
    "sum_diff": _sum_diff,
    "add_mul_sub": _add_mul_sub,
}


def split_of(kind: str, numbers) -> str:
    """``"test"`` for one arithmetic instance in :data:`TEST_SHARE` (by a SHA-256 of the kind and its
    numbers, not of the wording or the names), else ``"train"``. ``split_of("add", (3, 4))`` is the same
    on every machine."""
    digest = hashlib.sha256(f"{kind}:{','.join(map(str, numbers))}".encode()).digest()
    return "test" if digest[0] % TEST_SHARE == 0 else "train"


def make_problems(
    n: int, *, ops: int = 1, max_number: int = 20, split: str = "train", seed: int = 0, kinds=None
) -> list[Problem]:
    """``n`` distinct problems of one difficulty, kinds in turn (``add, sub, mul, div, add, ...``).

    Args:
        n: how many problems.
        ops: 1, 2 or 3 arithmetic operations (the kinds of :data:`KINDS`).
        max_number: the largest operand of ``+`` and ``-`` (at least 5); factors and divisors stay
            at most :data:`MAX_FACTOR`.
        split: ``"train"`` or ``"test"`` (:func:`split_of`: the two never share an arithmetic instance).
        seed: any integer; the same arguments give the same problems.
        kinds: a subset of ``KINDS[ops]`` (default all of them).

    Raises:
        ValueError: ``n < 1``, ``ops`` not 1-3, ``max_number < 5``, an unknown split or kind, or a
            request larger than the distinct problems the knob allows (it would never finish).
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if ops not in KINDS:
        raise ValueError(f"ops must be one of {sorted(KINDS)}, got {ops}")
    if max_number < 5:
        raise ValueError(f"max_number must be at least 5, got {max_number}")
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    kinds = tuple(kinds or KINDS[ops])
    unknown = [k for k in kinds if k not in KINDS[ops]]
    if unknown:
        raise ValueError(f"kinds {unknown} are not {ops}-operation kinds {KINDS[ops]}")
    rng = random.Random(f"grpo-course problems|{ops}|{max_number}|{split}|{seed}|{','.join(kinds)}")
    problems, seen, misses = [], set(), 0
    while len(problems) < n:
        kind = kinds[len(problems) % len(kinds)]
        draw = _Draw(rng, max_number)
        question, steps, expression, answer = _TEMPLATES[kind](draw)
        if split_of(kind, draw.numbers) != split or question in seen:
            misses += 1
            if misses > 200 * n + 10_000:
                raise ValueError(
                    f"only {len(problems)} distinct {split} problems found for ops={ops}, "
                    f"max_number={max_number}; ask for fewer or raise max_number"
                )
            continue
        seen.add(question)
        solution = "\n".join(steps) + f"\n#### {answer}"
        problems.append(Problem(question, str(answer), solution, expression, ops, kind, max_number))
    return problems


def problems_dataset(problems, system_prompt: str | None = None):
    """Problems as a ``datasets.Dataset`` shaped like :func:`helpers.data.gsm8k.load_gsm8k`'s: ``question``,
    ``prompt`` (the training chat), ``answer`` (the label), plus ``ops`` and ``kind``; its
    ``info.description`` names the difficulty."""
    from datasets import Dataset, DatasetInfo

    from helpers.course_format import SYSTEM_PROMPT, make_prompt

    problems = list(problems)
    if not problems:
        raise ValueError("no problems")
    system_prompt = system_prompt or SYSTEM_PROMPT
    levels = sorted({(p.ops, p.max_number) for p in problems})
    description = "course-written problems (not GSM8K), " + ", ".join(
        f"{ops} op{'s' * (ops > 1)} up to {top}" for ops, top in levels
    )
    return Dataset.from_dict(
        {
            "question": [p.question for p in problems],
            "prompt": [make_prompt(p.question, system_prompt) for p in problems],
            "answer": [p.answer for p in problems],
            "ops": [p.ops for p in problems],
            "kind": [p.kind for p in problems],
        },
        info=DatasetInfo(description=description),
    )
