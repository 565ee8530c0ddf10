"""Course-written GSM8K-style word problems with a difficulty knob (never GSM8K text).

A 135M model gets almost no GSM8K question right, so GRPO on GSM8K gives it groups where every
completion scores 0: no advantage, nothing learned. These problems start where it can already
succeed sometimes and grow harder (an easy-to-hard curriculum, the course's choice:
:mod:`helpers.data.curriculum`).

* The knob: ``ops`` (1 to 3 arithmetic operations) and ``max_number`` (the largest operand of a
  ``+`` or ``-``; factors and divisors stay at most 12, so a ``x`` is a times-table fact).
* Two families of wordings for the same kinds: ``"varied"`` (:mod:`helpers.data.templates_varied`:
  many wordings per kind, sentence order and distractor facts varied; the default) and ``"fixed"``
  (:mod:`helpers.data.templates_fixed`: 16 wordings in all, which the ``fixed`` recipe's runs used,
:mod:`helpers.evaluation.recipes`).
  A third family with wordings of its own, for transfer, lives in :mod:`helpers.data.transfer`.
* Names, objects and numbers are drawn from :class:`random.Random` seeded with a string:
  the same arguments give the same problems on every machine and Python version.
* **Splits are drawn apart**: every problem's *arithmetic* (its kind and numbers, whatever the
  names or wording) hashes to one split (:func:`split_of`): ``train`` (12 in 16), ``dev`` (1 in 16,
  where recipes are chosen), ``test`` (2 in 16, what ``make train`` reports) and ``sealed`` (1 in 16,
  opened once per reference run, :mod:`helpers.data.sealed`). A problem of one split never shares
  its kind and numbers with another split's, even reworded. The ``"fixed"`` family knows two splits,
  ``train`` and ``test`` (every split but ``train``), as it always had.
* Each :class:`Problem` carries a GSM8K-style worked solution (``... 12 + 5 = 17 ...\\n#### 17``),
  the expression it evaluates (the tests check it against the answer) and its wording's name.

Kinds (``ops``: kinds): 1: ``add``, ``sub``, ``mul``, ``div``; 2: ``add_sub`` (a + b - c),
``mul_add`` (a x b + c), ``more_total`` (a + (a + b)), ``mul_sub`` (a x b - c); 3: ``mul_add_sub``
(a x b + c - d), ``sum_diff`` (a + (a - b) + c), ``add_mul_sub`` ((a + b) x c - d).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import asdict, dataclass

SPLITS = ("train", "dev", "test", "sealed")


FAMILIES = ("varied", "fixed")


_SPLIT_OF_RESIDUE = {0: "sealed", 8: "dev", 4: "test", 12: "test"}  # SHA-256 first byte mod 16; else train


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
    solution ending in ``#### <answer>``; ``expression``: the arithmetic (``"3 * 4 + 5"``);
    ``numbers``: the kind's operands in the order its arithmetic reads them (what :func:`split_of`
    hashes); ``template``: the wording's name (``"add.2"``); ``family``: ``"varied"``, ``"fixed"``
    or ``"transfer"``."""

    question: str
    answer: str
    solution: str
    expression: str
    ops: int
    kind: str
    max_number: int
    numbers: tuple = ()
    template: str = ""
    family: str = "varied"

    def to_dict(self) -> dict:
        return asdict(self)


class Draw:
    """One problem's random choices: numbers, a person, a friend, an object, a container, a wording.

    The templates (:mod:`helpers.data.templates_varied`, :mod:`helpers.data.templates_fixed`,
    :mod:`helpers.data.transfer`) call :meth:`number`, :meth:`factor` and :meth:`wording`; the
    numbers land in :attr:`numbers`, the wording's index in :attr:`template`."""

    def __init__(self, rng: random.Random, max_number: int):
        self.rng, self.max_number = rng, max_number
        (self.name, self.he), (self.friend, self.she) = rng.sample(NAMES, 2)
        self.obj = rng.choice(OBJECTS)
        self.box, self.boxes = rng.choice(CONTAINERS)
        self.numbers: list[int] = []
        self.template = 0

    def number(self, low: int = 2, high: int | None = None) -> int:
        value = self.rng.randint(low, max(low, self.max_number if high is None else high))
        self.numbers.append(value)
        return value

    def factor(self) -> int:
        return self.number(2, min(MAX_FACTOR, max(3, self.max_number)))

    def wording(self, options):
        """One of ``options``, recorded by its index in :attr:`template` (one random draw)."""
        self.template = self.rng.randrange(len(options))
        return options[self.template]

    @property
    def He(self) -> str:  # noqa: N802 - the capitalised pronoun, as written in the templates
        return self.he.capitalize()


def split_of(kind: str, numbers) -> str:
    """The split of an arithmetic instance, by a SHA-256 of its kind and numbers (not of the wording or
    the names): ``"sealed"``, ``"dev"``, ``"test"`` or ``"train"`` for 1, 1, 2 and 12 instances in 16.
    ``split_of("add", (3, 4))`` is the same on every machine."""
    digest = hashlib.sha256(f"{kind}:{','.join(map(str, numbers))}".encode()).digest()
    return _SPLIT_OF_RESIDUE.get(digest[0] % 16, "train")


def in_split(kind: str, numbers, split: str, family: str = "varied") -> bool:
    """Whether an instance belongs to ``split``; in the ``"fixed"`` family ``"test"`` is every split
    but ``"train"`` (one instance in four, as that family always drew it)."""
    actual = split_of(kind, numbers)
    if family == "fixed" and split == "test":
        return actual != "train"
    return actual == split


def _templates(family: str) -> dict:
    if family == "fixed":
        from helpers.data.templates_fixed import TEMPLATES
    else:
        from helpers.data.templates_varied import TEMPLATES
    return TEMPLATES


def make_problems(
    n: int,
    *,
    ops: int = 1,
    max_number: int = 20,
    split: str = "train",
    seed: int = 0,
    kinds=None,
    family: str = "varied",
    exclude=(),
) -> list[Problem]:
    """``n`` distinct problems of one difficulty, kinds in turn (``add, sub, mul, div, add, ...``).

    Args:
        n: how many problems.
        ops: 1, 2 or 3 arithmetic operations (the kinds of :data:`KINDS`).
        max_number: the largest operand of ``+`` and ``-`` (at least 5); factors and divisors stay
            at most :data:`MAX_FACTOR`.
        split: one of :data:`SPLITS` (:func:`split_of`: no two splits share an arithmetic instance);
            the ``"fixed"`` family takes ``"train"`` or ``"test"``.
        seed: any integer; the same arguments give the same problems.
        kinds: a subset of ``KINDS[ops]`` (default all of them).
        family: ``"varied"`` or ``"fixed"`` (the module docstring says which is which).
        exclude: ``(kind, numbers)`` pairs and question texts no problem may have (to keep two draws
            of one split apart).

    Raises:
        ValueError: ``n < 1``, ``ops`` not 1-3, ``max_number < 5``, an unknown split, kind or family,
            or a request larger than the distinct problems the knob allows (it would never finish).
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if ops not in KINDS:
        raise ValueError(f"ops must be one of {sorted(KINDS)}, got {ops}")
    if max_number < 5:
        raise ValueError(f"max_number must be at least 5, got {max_number}")
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    allowed = ("train", "test") if family == "fixed" else SPLITS
    if split not in allowed:
        raise ValueError(f"split must be one of {allowed} in the {family!r} family, got {split!r}")
    kinds = tuple(kinds or KINDS[ops])
    unknown = [k for k in kinds if k not in KINDS[ops]]
    if unknown:
        raise ValueError(f"kinds {unknown} are not {ops}-operation kinds {KINDS[ops]}")
    salt = "grpo-course problems" if family == "fixed" else "grpo-course varied problems"
    rng = random.Random(f"{salt}|{ops}|{max_number}|{split}|{seed}|{','.join(kinds)}")
    return draw_distinct(n, rng, _templates(family), kinds, max_number, split, family, ops, exclude)


def draw_distinct(n, rng, templates, kinds, max_number, split, family, ops, exclude=()) -> list[Problem]:
    """``n`` problems from ``templates`` (kind -> template function), kinds in turn, each in ``split``
    and distinct by question text, none in ``exclude`` (texts or ``(kind, numbers)`` pairs). The
    machinery of :func:`make_problems` and :func:`helpers.data.transfer.make_transfer_problems`.

    Raises:
        ValueError: fewer than ``n`` such problems found in ``200 n + 10000`` draws."""
    exclude = set(exclude)
    problems, seen, misses = [], set(), 0
    while len(problems) < n:
        kind = kinds[len(problems) % len(kinds)]
        draw = Draw(rng, max_number)
        question, steps, expression, answer = templates[kind](draw)
        numbers = tuple(draw.numbers)
        if (
            not in_split(kind, numbers, split, family)
            or question in seen
            or question in exclude
            or (kind, numbers) in exclude
        ):
            misses += 1
            if misses > 200 * n + 10_000:
                raise ValueError(
                    f"only {len(problems)} distinct {split} problems found for ops={ops}, "
                    f"max_number={max_number}; ask for fewer or raise max_number"
                )
            continue
        seen.add(question)
        solution = "\n".join(steps) + f"\n#### {answer}"
        problems.append(
            Problem(
                question,
                str(answer),
                solution,
                expression,
                ops,
                kind,
                max_number,
                numbers,
                f"{kind}.{draw.template}",
                family,
            )
        )
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
