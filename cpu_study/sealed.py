"""The sealed test set: drawn once, its digest committed before any model was evaluated on it, opened
once per reference run at the end (``python -m cpu_study sealed``), and never used to choose a recipe.

Two parts, both from the ``sealed`` split (:func:`helpers.data.draws.split_of`), so no problem shares
its kind and numbers with a training, development or test problem, reworded or not:

* ``"problems"``: :data:`PER_LEVEL` problems of the ``varied`` family (the training family's wordings)
  at each of :data:`LEVELS`;
* ``"transfer"``: :data:`TRANSFER_PER_KIND` transfer-family problems (:mod:`helpers.data.transfer`:
  wordings no training problem uses) of every kind at each number range of
  :data:`helpers.data.problem_sets.TRANSFER_RANGES`.

Within a part every question is distinct; one arithmetic instance may come in several wordings
(the ``sealed`` split holds about 8 of the 121 times-table facts, so ``mul`` and ``div`` repeat them).

:data:`DIGEST` is the SHA-256 of :func:`canonical_json` of the two parts. :func:`sealed_problems` checks
it on every draw: a change to the generator that changes the sealed set raises :class:`SealedSetChanged`
instead of silently evaluating on other problems.
"""

from __future__ import annotations

import hashlib
import json

SEED = 20261203
LEVELS = ((1, 20), (2, 20), (1, 50), (2, 50))
PER_LEVEL = 48
TRANSFER_PER_KIND = 12
DIGEST = "b500e08b31d628dd9f6bef5f287697449827fc321477f465af5885f14b70a09c"  # committed before the set was first opened


class SealedSetChanged(RuntimeError):
    """The sealed set drawn now is not the one whose digest was committed."""


def draw() -> dict[str, list]:
    """The sealed set as drawn by the current code: ``{"problems": [...], "transfer": [...]}``
    (:class:`helpers.data.draws.Problem` lists), without the digest check."""
    from helpers.data.problem_sets import level_problems, transfer_problems

    problems = level_problems(LEVELS, PER_LEVEL, split="sealed", seed=SEED, family="varied")
    transfer = transfer_problems(TRANSFER_PER_KIND, split="sealed", seed=SEED)
    return {"problems": problems, "transfer": transfer}


def canonical_json(sets: dict) -> str:
    """The sets as one JSON text with sorted keys (what :data:`DIGEST` hashes)."""
    return json.dumps({name: [p.to_dict() for p in part] for name, part in sets.items()}, sort_keys=True)


def digest(sets: dict) -> str:
    """SHA-256 (hex) of :func:`canonical_json`."""
    return hashlib.sha256(canonical_json(sets).encode()).hexdigest()


def sealed_problems() -> dict[str, list]:
    """The sealed set (:func:`draw`), checked against :data:`DIGEST`.

    Raises:
        SealedSetChanged: the draw's digest is not :data:`DIGEST` (the generator changed)."""
    sets = draw()
    found = digest(sets)
    if found != DIGEST:
        raise SealedSetChanged(
            f"the sealed set drawn now has digest {found}, not the committed {DIGEST}: a change to "
            "helpers.data changed it; the committed digest stands, restore the generator"
        )
    return sets
