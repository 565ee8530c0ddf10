"""The course's problem sets, each defined once. Every one is course-written (never GSM8K text) and drawn
from its own split (:func:`helpers.data.draws.split_of`), so no two share a kind and its numbers:

* GRPO's prompts (:func:`grpo_prompts`) and the cold start's worked problems: the ``train`` split;
* the development sets, where a recipe is chosen: :func:`dev_problem_set` (in distribution) and
  :func:`dev_transfer_set` (the transfer family, :mod:`helpers.data.transfer`), split ``dev``;
* what ``make train`` reports: :func:`eval_problem_set` (in distribution) and
  :func:`transfer_problem_set`, and the training curve's :func:`heldout_problems`, split ``test``;
* the sealed set (:mod:`cpu_study.sealed`), split ``sealed``, opened once per reference run.

"In distribution" means the profile's own family of wordings (``profile.problem_family``) at its
``eval_levels``; the transfer family has wordings no training problem uses, kinds training has and
kinds it has not (:data:`helpers.data.transfer.IN_TRAINING`), at numbers up to each of
:data:`TRANSFER_RANGES`.
"""

from __future__ import annotations

import math

from helpers.training.profiles import Profile

EVAL_SEED, HELDOUT_SEED = 0, 1  # make train's test problems and the training curve's: draws of their own
DEV_SEED = 12345  # the development sets: where a recipe is chosen, never the reported test problems
TRANSFER_RANGES = (20, 60)  # the transfer family's number ranges: the training range, and beyond it
DEV_LEVELS = ((1, 20), (2, 20), (1, 50), (2, 50))


def grpo_prompts(profile: Profile):
    """GRPO's prompts: the profile's curriculum in training order (:func:`helpers.data.curriculum.curriculum_dataset`,
    GSM8K rows after the cold start's), or without one the GSM8K train questions the cold start has not
    seen (shuffled by the trainer).

    Raises:
        RuntimeError: a GPU (Unsloth) profile, and GSM8K could not be loaded: only the embedded
            sample, which is not GSM8K, is there (a CPU profile trains on it and says so).
    """
    from helpers.data.gsm8k import load_gsm8k
    from helpers.training.distributed import prompts_per_step

    train_rows = load_gsm8k("train")
    if profile.backend == "unsloth" and train_rows.info.description.startswith("embedded"):
        raise RuntimeError(
            "GSM8K could not be loaded (no GSM8K_DIR, and the hub did not answer), so only the embedded "
            "sample is here: 40 course-written problems that are not GSM8K. A GPU run of hours must not "
            "train on them. Check the runtime's internet (or set GSM8K_DIR to a folder with train.jsonl), "
            "then run this cell again."
        )
    skip = profile.cold_start_examples if profile.cold_start_examples < len(train_rows) else 0
    if not profile.curriculum:
        rows = train_rows.select(range(skip, len(train_rows)))
        rows.info.description = f"{train_rows.info.description} (row {skip} on)"
        return rows
    from helpers.data.curriculum import curriculum_dataset

    return curriculum_dataset(
        profile.curriculum,
        batches=math.ceil(profile.max_steps / profile.num_iterations),
        prompts_per_batch=prompts_per_step(profile),
        seed=profile.seed,
        gsm8k_skip=skip,
        family=profile.problem_family,
    )


def level_problems(levels, n: int, *, split: str, seed: int, family: str = "varied") -> list:
    """``n`` problems of each ``(ops, max_number)`` level in ``levels``, in that order
    (:func:`helpers.data.problems.make_problems`), no question twice."""
    from helpers.data.problems import make_problems  # the CPU stand-in's problems: a T4 run never imports them

    problems = []
    for ops, top in levels:
        taken = {p.question for p in problems}
        problems += make_problems(n, ops=ops, max_number=top, split=split, seed=seed, family=family, exclude=taken)
    return problems


def eval_problem_set(profile: Profile, n: int | None = None, seed: int = EVAL_SEED) -> list:
    """``n`` (default ``profile.eval_problems``) *test* problems of the profile's family at each level of
    ``profile.eval_levels``, in that order (never trained on)."""
    n = profile.eval_problems if n is None else n
    if n < 1:
        return []
    return level_problems(profile.eval_levels, n, split="test", seed=seed, family=profile.problem_family)


def transfer_problems(n: int, *, split: str, seed: int, ranges=TRANSFER_RANGES, exclude=()) -> list:
    """``n`` transfer-family problems of every kind at each number range of ``ranges``: all kinds at
    the first range, then all at the next (:func:`helpers.data.transfer.make_transfer_problems`), no
    question twice and none in ``exclude``."""
    from helpers.data.transfer import TRANSFER_KINDS, make_transfer_problems

    kinds, problems = tuple(TRANSFER_KINDS), []
    for top in ranges:
        taken = set(exclude) | {p.question for p in problems}
        problems += make_transfer_problems(
            n * len(kinds), kinds=kinds, max_number=top, split=split, seed=seed, exclude=taken
        )
    return problems


def transfer_problem_set(profile: Profile, n: int | None = None, seed: int = EVAL_SEED) -> list:
    """``n`` (default ``profile.transfer_problems``) transfer *test* problems of every kind at each of
    :data:`TRANSFER_RANGES`; [] when ``n`` is 0."""
    n = profile.transfer_problems if n is None else n
    return transfer_problems(n, split="test", seed=seed) if n > 0 else []


def heldout_problems(profile: Profile) -> list[dict]:
    """The held-out set of the training curve: ``profile.heldout_problems`` *test* problems of the
    profile's family, split evenly over ``profile.eval_levels`` (their own draw, :data:`HELDOUT_SEED`);
    [] when off."""
    if profile.heldout_problems < 1:
        return []
    per_level = max(1, profile.heldout_problems // len(profile.eval_levels))
    return [p.to_dict() for p in eval_problem_set(profile, per_level, HELDOUT_SEED)]


def dev_problem_set(n: int = 32, levels=DEV_LEVELS, seed: int = DEV_SEED, family: str = "varied") -> list:
    """The in-distribution development set: ``n`` *dev*-split problems of each ``(ops, max_number)`` level
    in ``levels``, in that order. Recipes are compared on it and on :func:`dev_transfer_set`
    (``cpu_study/experiments/grpo_recipe.py``); the reported numbers come from the test and sealed sets."""
    return level_problems(levels, n, split="dev", seed=seed, family=family)


def dev_transfer_set(n: int = 6, seed: int = DEV_SEED) -> list:
    """The transfer development set: ``n`` *dev*-split transfer problems of every kind at each of
    :data:`TRANSFER_RANGES` (apart from the sealed transfer set by split)."""
    return transfer_problems(n, split="dev", seed=seed)


def test_sets(profile: Profile) -> dict:
    """The course-written test sets of a profile as ``datasets.Dataset`` (rows with ``question``,
    ``prompt``, ``answer``; :func:`helpers.data.problems.problems_dataset`), by name:
    ``"course-written test problems"`` (:func:`eval_problem_set`) and ``"transfer problems"``
    (:func:`transfer_problem_set`); a set the profile has none of is left out (the GPU profiles: ``{}``)."""
    from helpers.data.problems import problems_dataset

    drawn = {
        "course-written test problems": eval_problem_set(profile),
        "transfer problems": transfer_problem_set(profile),
    }
    return {name: problems_dataset(problems) for name, problems in drawn.items() if problems}
