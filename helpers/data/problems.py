"""Course-written GSM8K-style word problems with a difficulty knob (never GSM8K text); read
:func:`make_problems` first.

A 135M model solves almost no GSM8K question, so GRPO on GSM8K gives groups where every completion
scores 0: no advantage, nothing learned. These problems start where it succeeds sometimes and grow
harder (the course's easy-to-hard curriculum, :mod:`helpers.data.curriculum`).

* The knob: ``ops`` (1 to 3 arithmetic operations, :data:`KINDS`) and ``max_number`` (the largest
  operand of a ``+`` or ``-``; factors and divisors stay at most 12, so a ``x`` is a times-table fact).
* Two families of wordings for the same kinds: ``"varied"`` (:mod:`helpers.data.templates_varied`:
  many wordings per kind, sentence order and distractor facts varied; the default) and ``"fixed"``
  (:mod:`helpers.data.templates_fixed`: 16 wordings in all, which the ``fixed`` recipe's runs used,
  :mod:`cpu_study.recipes`). The transfer family, with wordings of its own, is :mod:`helpers.data.transfer`.
* Names, objects and numbers are drawn from :class:`random.Random` seeded with a string: the same
  arguments give the same problems on every machine and Python version.
* **Splits are drawn apart**: a problem's *arithmetic* (its kind and numbers, whatever the names or
  wording) hashes to one split (:func:`helpers.data.draws.split_of`): ``train`` (12 in 16), ``dev``
  (1 in 16, where recipes are chosen), ``test`` (2 in 16, what ``make train`` reports) and ``sealed``
  (1 in 16, opened once per reference run, :mod:`cpu_study.sealed`). The ``"fixed"`` family knows two
  splits, ``train`` and ``test`` (every split but ``train``), as it always had.
* Each :class:`helpers.data.draws.Problem` carries a GSM8K-style worked solution
  (``... 12 + 5 = 17 ...\\n#### 17``), the expression it evaluates and its wording's name.
"""

from __future__ import annotations

import random

from helpers.data import templates_fixed, templates_varied
from helpers.data.draws import SPLITS, Problem, draw_distinct

FAMILIES = ("varied", "fixed")
_TEMPLATES = {"varied": templates_varied.TEMPLATES, "fixed": templates_fixed.TEMPLATES}
KINDS = {  # ops: kinds
    1: ("add", "sub", "mul", "div"),
    2: ("add_sub", "mul_add", "more_total", "mul_sub"),  # a + b - c, a x b + c, a + (a + b), a x b - c
    3: ("mul_add_sub", "sum_diff", "add_mul_sub"),  # a x b + c - d, a + (a - b) + c, (a + b) x c - d
}


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
            at most :data:`helpers.data.draws.MAX_FACTOR`.
        split: one of :data:`SPLITS` (:func:`helpers.data.draws.split_of`: no two splits share an arithmetic instance);
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
    return draw_distinct(n, rng, _TEMPLATES[family], kinds, max_number, split, family, ops, exclude)


def problems_dataset(problems, system_prompt: str | None = None):
    """Problems as a ``datasets.Dataset`` shaped like :func:`helpers.data.gsm8k.load_gsm8k`'s: ``question``,
    ``prompt`` (the training chat), ``answer`` (the label), plus ``ops`` and ``kind``; its
    ``info.description`` names the difficulty.

    Raises:
        ValueError: no problems."""
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
