"""What every course-written problem is made of, whatever its family of wordings: the splits
(:func:`split_of`), one problem's random choices (:class:`Draw`), the :class:`Problem` record, and
:func:`draw_distinct`, the one drawer of :func:`helpers.data.problems.make_problems` and
:func:`helpers.data.transfer.make_transfer_problems`. The wordings (:mod:`helpers.data.templates_varied`,
:mod:`helpers.data.templates_fixed`, :mod:`helpers.data.transfer`) import this module, never the reverse.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import asdict, dataclass

SPLITS = ("train", "dev", "test", "sealed")
_SPLIT_OF_RESIDUE = {0: "sealed", 8: "dev", 4: "test", 12: "test"}  # SHA-256 first byte mod 16; else train
MAX_FACTOR = 12
NAMES = (  # (name, pronoun)
    ("Ava", "she"), ("Liam", "he"), ("Mia", "she"), ("Noah", "he"), ("Zoe", "she"), ("Omar", "he"),
    ("Lena", "she"), ("Hugo", "he"), ("Priya", "she"), ("Kenji", "he"), ("Sofia", "she"), ("Mateo", "he"),
    ("Amara", "she"), ("Felix", "he"), ("Nadia", "she"), ("Ravi", "he"), ("Chloe", "she"), ("Tariq", "he"),
    ("Ingrid", "she"), ("Diego", "he"), ("Yuki", "she"), ("Samuel", "he"), ("Leila", "she"), ("Arjun", "he"),
)  # fmt: skip
OBJECTS = (
    "apples", "marbles", "stickers", "cookies", "pencils", "books", "shells", "stamps", "crayons", "beads",
    "coins", "balloons", "cupcakes", "eggs", "flowers", "candies", "blocks", "cards", "buttons", "lemons",
)  # fmt: skip
CONTAINERS = (("box", "boxes"), ("bag", "bags"), ("pack", "packs"), ("jar", "jars"), ("basket", "baskets"))


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
    :mod:`helpers.data.transfer`) call :meth:`number`, :meth:`factor`, :meth:`division` and
    :meth:`wording`; the numbers land in :attr:`numbers`, the wording's index in :attr:`template`."""

    def __init__(self, rng: random.Random, max_number: int):
        self.rng, self.max_number = rng, max_number
        (self.name, self.he), (self.friend, self.she) = rng.sample(NAMES, 2)
        self.obj = rng.choice(OBJECTS)
        self.box, self.boxes = rng.choice(CONTAINERS)
        self.numbers: list[int] = []
        self.template = 0

    def number(self, low: int = 2, high: int | None = None) -> int:
        """A random integer in ``[low, high]`` (``high``: default ``max_number``, at least ``low``), recorded."""
        value = self.rng.randint(low, max(low, self.max_number if high is None else high))
        self.numbers.append(value)
        return value

    def factor(self) -> int:
        """A factor or divisor: :meth:`number` from 2 to ``max_number`` clamped to 3..:data:`MAX_FACTOR`."""
        return self.number(2, min(MAX_FACTOR, max(3, self.max_number)))

    def division(self) -> tuple[int, int, int]:
        """``(a, b, quotient)``: two factors ``b`` and ``quotient`` and ``a = b x quotient``, a division
        with no remainder; :attr:`numbers` records ``a, b``, the order the division reads them."""
        b, quotient = self.factor(), self.factor()
        self.numbers[-2:] = [b * quotient, b]
        return b * quotient, b, quotient

    def wording(self, *options):
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


def draw_distinct(n, rng, templates, kinds, max_number, split, family, ops, exclude=()) -> list[Problem]:
    """``n`` problems from ``templates`` (kind -> template function), kinds in turn, each in ``split``
    and distinct by question text, none in ``exclude`` (texts or ``(kind, numbers)`` pairs); each
    :class:`Problem` records ``family`` and ``ops`` (one number, or a ``{kind: ops}`` mapping when the
    kinds differ). The drawer of :func:`helpers.data.problems.make_problems` and
    :func:`helpers.data.transfer.make_transfer_problems`.

    Raises:
        ValueError: fewer than ``n`` such problems found in ``200 n + 10000`` draws."""
    exclude = set(exclude)  # grows with every question drawn, so no question comes twice
    ops_of = ops if isinstance(ops, dict) else dict.fromkeys(kinds, ops)
    problems, misses = [], 0
    while len(problems) < n:
        kind = kinds[len(problems) % len(kinds)]
        draw = Draw(rng, max_number)
        question, steps, expression, answer = templates[kind](draw)
        numbers = tuple(draw.numbers)
        if not in_split(kind, numbers, split, family) or question in exclude or (kind, numbers) in exclude:
            misses += 1
            if misses > 200 * n + 10_000:
                raise ValueError(
                    f"only {len(problems)} distinct {split} {family} problems found for kinds {', '.join(kinds)} "
                    f"up to {max_number}; ask for fewer or raise max_number"
                )
            continue
        exclude.add(question)
        solution = "\n".join(steps) + f"\n#### {answer}"
        template = f"{kind}.{draw.template}"
        problems.append(
            Problem(
                question, str(answer), solution, expression, ops_of[kind], kind, max_number, numbers, template, family
            )
        )
    return problems
