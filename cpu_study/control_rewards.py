"""Reward sets for control runs, and the table of every reward set a run can train with.

A gain after GRPO is a gain *from the reward* only if the same budget with a reward that carries no
information about the answer gains less. Three controls, each taking away one thing:

* ``placebo`` - :func:`random_reward_func`: a coin per completion (no signal at all);
* ``format`` - :data:`FORMAT_REWARD_FUNCS`: the course's rewards without the correctness reward (the
  format is paid, being right is not);
* ``shuffled`` - :func:`shuffled_correctness_reward_func` with the format rewards: correctness paid
  against *another* problem's answer (the same amount of reward for "a number in the right place",
  none for this problem's number).

:data:`CONTROL_REWARD_SETS` names these three; :data:`ALL_REWARD_SETS` adds the course's ``checked``
(:data:`helpers.rewards.REWARD_FUNCS`, the default) and ``layout`` (hackable).
"""

from __future__ import annotations

import hashlib

from helpers.rewards import REWARD_FUNCS, REWARD_SETS, completion_texts, correctness_reward_func


def random_reward_func(prompts=None, completions=(), answer=None, **kwargs) -> list[float]:
    """Placebo: 1.0 or 0.0 by a fair coin that knows nothing of the problem (Shao et al. 2025,
    "Spurious Rewards: Rethinking Training Signals in RLVR", random rewards). The coin is the first
    bit of a SHA-256 of the completion text, so the same completion always gets the same reward
    (reproducible, independent of call order) and distinct completions are uncorrelated with being
    right. GRPO with it at the same budget tells what training does with no signal at all."""
    return [float(hashlib.sha256(("placebo|" + t).encode()).digest()[0] & 1) for t in completion_texts(completions)]


def shuffled_correctness_reward_func(prompts=None, completions=(), answer=(), **kwargs) -> list[float]:
    """The correctness reward (2.0 or 0.0, :func:`helpers.rewards.correctness_reward_func`) against the
    label of the *next* problem in the batch (the last problem takes the first's). TRL passes a batch
    of groups, each problem's G completions in a row; a problem starts where the prompt (or, without
    prompts, the label) changes. Every group is so graded against another problem's label, which
    equals its own only by chance. With one problem in the batch there is no other label and it pays
    nothing.

    Raises:
        ValueError: ``answer`` and ``completions`` differ in length."""
    answer = list(answer)
    texts = completion_texts(completions)
    if len(texts) != len(answer):
        raise ValueError(f"{len(texts)} completions but {len(answer)} gold answers")
    keys = [str(p) for p in prompts] if prompts is not None else answer
    starts = [i for i in range(len(answer)) if i == 0 or keys[i] != keys[i - 1]]
    labels = [answer[s] for s in starts]
    if len(starts) < 2:
        return [0.0] * len(texts)
    other = {s: labels[(k + 1) % len(labels)] for k, s in enumerate(starts)}
    shuffled, current = [], None
    for i in range(len(answer)):
        current = other.get(i, current)
        shuffled.append(current)
    return correctness_reward_func(prompts, completions, shuffled)


FORMAT_REWARD_FUNCS = [f for f in REWARD_FUNCS if f is not correctness_reward_func]


CONTROL_REWARD_SETS = {
    "placebo": [random_reward_func],
    "format": FORMAT_REWARD_FUNCS,
    "shuffled": [*FORMAT_REWARD_FUNCS, shuffled_correctness_reward_func],
}
ALL_REWARD_SETS = {**REWARD_SETS, **CONTROL_REWARD_SETS}  # the course's two sets and the three controls
