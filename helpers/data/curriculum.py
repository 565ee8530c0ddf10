"""A curriculum for GRPO: which problems each stretch of steps trains on, easy to hard. Read
:func:`curriculum_dataset` first.

GRPO learns only from groups whose completions score differently (a group all right or all wrong has
zero advantages), so the prompts must sit where the policy succeeds *sometimes*. Easy to hard is the
course's choice, not part of DeepSeek-R1, whose RL stages use no difficulty schedule. The ``cpu``
profile's schedule is one phase, one- and two-operation problems in every batch, and no GSM8K: after
its cold start a 135M model solves a share of one-operation problems, fewer two-operation ones and no
GSM8K question (``results/cpu-varied``), so a GSM8K group is all wrong and costs a rollout for nothing
(the schedules tried: ``docs/LOG.md``). Schedules with more phases are built the same way
(``Phase(1/3, ((1, 20),)), Phase(2/3, ((1, 20), (2, 20), GSM8K))``).

A schedule is a tuple of :class:`helpers.training.profiles.Phase`: each takes a share of the steps and
names its sources (course-written problems of a difficulty, :mod:`helpers.data.problems`, or GSM8K
train). The trainer reads the prompts in order (``shuffle_dataset=False``): step ``s`` trains on the
prompts of the phase that covers it. The schedule is fixed in advance, not adapted to the pass rate
(DAPO's dynamic sampling drops groups whose pass rate is 0 or 1 and samples again; the log's
``frac_reward_zero_std`` shows how often that would have happened).
"""

from __future__ import annotations

import math


def phase_steps(phases, batches: int) -> list[int]:
    """How many generation batches each phase gets: ``share x batches`` rounded, the last phase taking
    what is left, every phase at least one while batches last. ``phase_steps((Phase(0.5), Phase(0.5)), 5)``
    -> ``[3, 2]``.

    Raises:
        ValueError: no phases, a share that is not positive, or shares that do not sum to 1.
    """
    phases = tuple(phases)
    if not phases:
        raise ValueError("a curriculum needs at least one phase")
    if any(p.share <= 0 for p in phases) or not math.isclose(sum(p.share for p in phases), 1.0, abs_tol=1e-6):
        raise ValueError(f"phase shares must be positive and sum to 1, got {[p.share for p in phases]}")
    counts = []  # every phase but the last: its share rounded, at least 1, at most what is left
    for phase in phases[:-1]:
        share = max(1, math.floor(phase.share * batches + 0.5))
        counts.append(max(0, min(batches - sum(counts), share)))
    return [*counts, max(0, batches - sum(counts))]  # the last phase: what is left


def curriculum_dataset(
    phases, *, batches: int, prompts_per_batch: int, seed: int = 0, gsm8k_skip: int = 0, family: str = "varied"
):
    """The GRPO prompts of a schedule in training order: ``batches x prompts_per_batch`` rows.

    Args:
        phases: the schedule (:class:`helpers.training.profiles.Phase` tuple).
        batches: generation batches of the run (``max_steps / num_iterations``, rounded up).
        prompts_per_batch: distinct prompts per batch (global batch / ``num_generations``).
        seed: draws the course-written problems (always the ``train`` split).
        gsm8k_skip: GSM8K train rows to skip (those the cold start trained on).
        family: the course-written problems' family of wordings (:data:`helpers.data.problems.FAMILIES`).

    Returns:
        A ``datasets.Dataset`` with ``question``, ``prompt``, ``answer``, ``phase`` (the phase's
        :attr:`helpers.training.profiles.Phase.name`), ``kind`` and ``template`` (a course-written
        problem's, ``"gsm8k"`` and ``""`` for a GSM8K row), whose ``info.description`` states the schedule.

    Raises:
        ValueError: a bad schedule (:func:`phase_steps`), ``batches`` or ``prompts_per_batch`` < 1.
    """
    from datasets import Dataset, DatasetInfo

    if batches < 1 or prompts_per_batch < 1:
        raise ValueError(f"batches and prompts_per_batch must be >= 1, got {batches}, {prompts_per_batch}")
    counts = phase_steps(phases, batches)
    taken: dict[tuple, int] = {}  # rows used so far from each source: later phases take new ones
    columns = {"question": [], "prompt": [], "answer": [], "phase": [], "kind": [], "template": []}
    parts = []
    for phase, count in zip(phases, counts):
        if count == 0:
            continue
        slots = [phase.sources[i % len(phase.sources)] for i in range(prompts_per_batch)] * count
        rows = {}
        for source in dict.fromkeys(slots):
            need, start = slots.count(source), taken.get(source, 0)
            rows[source] = iter(_source_rows(source, start, need, seed, gsm8k_skip, family))
            taken[source] = start + need
        for source in slots:
            for column, value in zip(("question", "prompt", "answer", "kind", "template"), next(rows[source])):
                columns[column].append(value)
            columns["phase"].append(phase.name)
        parts.append(f"{count} batches of {phase.name}")
    description = f"curriculum, {prompts_per_batch} prompt(s) per batch: " + ", then ".join(parts)
    return Dataset.from_dict(columns, info=DatasetInfo(description=description))


def _source_rows(source: tuple, start: int, n: int, seed: int, gsm8k_skip: int, family: str) -> list[tuple]:
    """Rows ``start .. start + n`` of a source as ``(question, prompt, answer, kind, template)``: GSM8K
    train after the cold start's rows (cycling a short split), or course-written *train* problems."""
    from helpers.course_format import make_prompt
    from helpers.data.gsm8k import load_gsm8k
    from helpers.data.problems import make_problems

    ops, max_number = source
    if ops == 0:
        rows = load_gsm8k("train")
        rows = rows.select([(gsm8k_skip + start + i) % len(rows) for i in range(n)])
        return [(q, p, a, "gsm8k", "") for q, p, a in zip(rows["question"], rows["prompt"], rows["answer"])]
    problems = make_problems(start + n, ops=ops, max_number=max_number, split="train", seed=seed, family=family)[start:]
    return [(p.question, make_prompt(p.question), p.answer, p.kind, p.template) for p in problems]
