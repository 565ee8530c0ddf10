"""The course's problem sets, each defined once: GRPO's prompts (:func:`grpo_prompts`), the final
evaluation's test problems (:func:`eval_problem_set`, seed :data:`EVAL_SEED`), the held-out set of the
training curve (:func:`heldout_problems`, seed :data:`HELDOUT_SEED`), and the development set on which
recipes are chosen (:func:`dev_problem_set`, seed :data:`DEV_SEED`). All are course-written problems
(:mod:`helpers.data.problems`); the test draws come from its test split, never trained on.
"""

from __future__ import annotations

from helpers.data.problems import make_problems
from helpers.training.profiles import Profile

# Course-written test problems: the final evaluation and the held-out curve use their own draws.
EVAL_SEED, HELDOUT_SEED = 0, 1
DEV_SEED = 12345  # the development set: where a recipe is chosen, never the reported test problems


def grpo_prompts(profile: Profile):
    """GRPO's prompts: the profile's curriculum in training order (:func:`helpers.data.curriculum.curriculum_dataset`,
    GSM8K rows after the cold start's), or without one the GSM8K train questions the cold start has not
    seen (shuffled by the trainer)."""
    import math

    from helpers.data.gsm8k import load_gsm8k
    from helpers.training.distributed import prompts_per_step

    train_rows = load_gsm8k("train")
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
    )


def eval_problem_set(profile: Profile, n: int | None = None, seed: int = EVAL_SEED) -> list:
    """``n`` (default ``profile.eval_problems``) course-written *test* problems of each difficulty in
    ``profile.eval_levels``, in that order (:func:`helpers.data.problems.make_problems`; never trained on)."""
    n = profile.eval_problems if n is None else n
    if n < 1:
        return []
    return [
        p
        for ops, top in profile.eval_levels
        for p in make_problems(n, ops=ops, max_number=top, split="test", seed=seed)
    ]


def heldout_problems(profile: Profile) -> list[dict]:
    """The held-out set of the training curve: ``profile.heldout_problems`` course-written test problems,
    split evenly over ``profile.eval_levels`` (their own draw, :data:`HELDOUT_SEED`); [] when off."""
    if profile.heldout_problems < 1:
        return []
    per_level = max(1, profile.heldout_problems // len(profile.eval_levels))
    return [p.to_dict() for p in eval_problem_set(profile, per_level, HELDOUT_SEED)]


def dev_problem_set(n: int = 64, levels=((1, 20), (2, 20)), seed: int = DEV_SEED) -> list:
    """The development set: ``n`` course-written *test-split* problems of each ``(ops, max_number)`` level
    in ``levels``, in that order, drawn with :data:`DEV_SEED` (a draw of its own, apart from
    :func:`eval_problem_set`'s and :func:`heldout_problems`'). Recipes are compared on it
    (``experiments/grpo_recipe.py``); the reported numbers come from :func:`eval_problem_set`."""
    return [p for ops, top in levels for p in make_problems(n, ops=ops, max_number=top, split="test", seed=seed)]
