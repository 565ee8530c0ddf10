"""The course's CPU recipes, one name each: the glossary the notebooks, the READMEs and the log use.

A *recipe* is a cold start plus a GRPO stage (data, group size, advantages, steps); its runs are the
``results/`` folders below. The names are those of the folders, so that a name says where its numbers
are. Oldest first:

* ``format`` - the first recipe (:func:`helpers.training.profiles.format_recipe`): a cold start on GSM8K
  solutions, then GRPO on GSM8K prompts. It taught the answer format, not the arithmetic.
* ``g4`` - course-written problems of the *fixed* family (:mod:`helpers.data.templates_fixed`, 16
  wordings shared by training and test), groups of 4, advantages not divided by the group's std. Its
  runs are only at commit ``22a31b9`` (an ancestor of ``main``).
* ``unscaled`` - as ``g4`` with groups of 8.
* ``fixed`` - as ``unscaled`` with the advantages divided by the group's std (DeepSeekMath §4.1.2). Its
  gain on its own test problems did not transfer to other wordings.
* ``varied`` - ``make train`` today: the *varied* family (:mod:`helpers.data.templates_varied`, many
  wordings per kind), tested in distribution, on transfer problems and on the sealed set.

:data:`RECIPES` holds them; :func:`recipe_table` prints them with their folders.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Recipe:
    """One recipe: its ``name``, what it is (``what``) and its run folders under ``results/``
    (``runs``; empty when they are kept only at commit ``22a31b9``, ``archive``)."""

    name: str
    what: str
    runs: tuple[str, ...] = ()
    archive: str = ""


RECIPES = {
    r.name: r
    for r in (
        Recipe(
            "format",
            "cold start on 160 GSM8K solutions, then 20 GRPO steps of 1 GSM8K prompt x 8 completions",
            ("cpu-cold96-layout", "cpu-cold96-checked", "cpu-cold160-layout", "cpu-cold160-checked"),
        ),
        Recipe(
            "g4",
            "fixed family (16 wordings), 16 prompts x 4 completions, advantages r - mean",
            archive="results/exploration/round6/g4-reference",
        ),
        Recipe(
            "unscaled",
            "fixed family, 16 prompts x 8 completions, advantages r - mean",
            (
                "cpu-curriculum-unscaled",
                "cpu-curriculum-unscaled-seed1",
                "cpu-curriculum-unscaled-seed2",
                "cpu-curriculum-unscaled-placebo",
            ),
        ),
        Recipe(
            "fixed",
            "fixed family, 16 prompts x 8 completions, advantages (r - mean) / std",
            ("cpu-curriculum", "cpu-curriculum-seed1", "cpu-curriculum-seed2", "cpu-curriculum-placebo"),
        ),
        Recipe(
            "varied",
            "varied family (many wordings), 16 prompts x 8 completions, advantages (r - mean) / std; make train",
            ("cpu-varied", *(f"cpu-varied-seed{s}" for s in range(1, 5))),
        ),
    )
}


CURRENT = "varied"  # the recipe `make train` runs


def recipe_of(run: str) -> str:
    """The name of the recipe whose runs include the ``results/`` folder ``run``.

    Raises:
        KeyError: no recipe lists ``run``."""
    for recipe in RECIPES.values():
        if run in recipe.runs:
            return recipe.name
    raise KeyError(f"no recipe lists the run {run!r}")


def recipe_table():
    """:data:`RECIPES` as a ``DataFrame``: one row per recipe (oldest first), what it is and its runs."""
    import pandas as pd

    return pd.DataFrame(
        [
            {
                "recipe": r.name,
                "what": r.what,
                "runs (results/)": ", ".join(r.runs) or f"commit 22a31b9: {r.archive}",
            }
            for r in RECIPES.values()
        ]
    ).set_index("recipe")
