"""Estimated times on a Colab T4: nothing in this course has run on one yet.

The one measured number is Unsloth's: its Qwen2.5 (3B) GRPO notebook for a free Colab T4
(``unslothai/notebooks``, ``nb/Qwen2.5_(3B)-GRPO.ipynb``, its saved training output)
ran 250 steps in 1:40:29, 24.1 s a step, at the ``t4`` profile's sizes (4-bit
Qwen2.5-3B-Instruct, vLLM rollouts, LoRA rank 64, 8 completions a step) but with completions cut at
:data:`UNSLOTH_T4_MAX_COMPLETION` = 200 tokens, where the ``t4`` profile allows 512
(:mod:`helpers.training.profiles`). Longer completions cost decoding and training time, so the
measured time is a lower bound and the same time scaled by 512 / 200 (every completion at the cap)
an upper one. Everything else here is derived from it, or assumed and said so: :func:`t4_estimates`
is the table docs/t4.md and notebooks 05/06 quote (``python -m helpers.colab.estimates`` prints it).
"""

from __future__ import annotations

UNSLOTH_T4_STEPS = 250
UNSLOTH_T4_SECONDS = 1 * 3600 + 40 * 60 + 29  # 1:40:29
UNSLOTH_T4_COMPLETIONS_PER_STEP = 8
UNSLOTH_T4_MAX_COMPLETION = 200  # the run's max_completion_length
SOURCE = (
    "Unsloth's Qwen2.5 (3B) GRPO Colab T4 notebook: 250 steps in 1:40:29 "
    "(unslothai/notebooks, nb/Qwen2.5_(3B)-GRPO.ipynb)"
)
# Not measured anywhere: guesses, labelled as such wherever they are quoted.
ASSUMED_INSTALL_S = 5 * 60  # pip: Unsloth + vLLM + torch 2.9 wheels, 4-5 GB
ASSUMED_VLLM_START_S = 3 * 60  # load the 4-bit weights, profile memory, capture CUDA graphs


def seconds_per_step(max_completion_length: int = UNSLOTH_T4_MAX_COMPLETION) -> float:
    """Seconds per GRPO step on a T4: Unsloth's measured 6029 s / 250 = 24.1 s at its 200-token cap;
    for a longer cap the same scaled by ``max_completion_length / 200``, an upper bound (it assumes
    every completion runs to the cap; time grows at most linearly with the tokens generated and
    trained). A shorter cap returns the measured 24.1 s (not less: not measured).

    Raises:
        ValueError: ``max_completion_length < 1``.
    """
    if max_completion_length < 1:
        raise ValueError(f"max_completion_length must be >= 1, got {max_completion_length}")
    measured = UNSLOTH_T4_SECONDS / UNSLOTH_T4_STEPS
    return measured * max(1.0, max_completion_length / UNSLOTH_T4_MAX_COMPLETION)


def generation_upper_bound_s(completions: int, max_completion_length: int = UNSLOTH_T4_MAX_COMPLETION) -> float:
    """An upper bound on the seconds vLLM takes for ``completions`` of up to ``max_completion_length``
    tokens: a training step generates 8 completions *and* trains on them in :func:`seconds_per_step`,
    so 8 completions take at most that; a call of 256 prompts is assumed no slower per completion
    (vLLM runs them concurrently, so expect several times less; not measured).

    Raises:
        ValueError: ``completions < 0``.
    """
    if completions < 0:
        raise ValueError(f"completions must be >= 0, got {completions}")
    return completions / UNSLOTH_T4_COMPLETIONS_PER_STEP * seconds_per_step(max_completion_length)


def hms(seconds: float) -> str:
    """``5400`` -> ``"1 h 30 min"``; under an hour ``"12 min"`` (rounded to the minute)."""
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def t4_estimates(
    train_steps: int = 250, eval_completions_06: int = 2 * 1319, max_completion_length: int | None = None
) -> dict[str, str]:
    """Estimated T4 times, each labelled with where it comes from.

    ``train_steps``: the ``t4`` profile's ``max_steps``; ``eval_completions_06``: notebook 06's
    sampled evaluation, base and base + LoRA on the 1,319 GSM8K test questions;
    ``max_completion_length``: default the ``t4`` profile's cap (512; Unsloth's measured run had 200).
    """
    if max_completion_length is None:
        from helpers.training.profiles import T4

        max_completion_length = T4.max_completion_length
    start = ASSUMED_INSTALL_S + ASSUMED_VLLM_START_S
    measured, capped = seconds_per_step(), seconds_per_step(max_completion_length)
    return {
        "install and vLLM start-up": f"about {hms(start)} (assumed, not measured)",
        "notebook 05, GRPO training": (
            f"between {hms(train_steps * measured)} and {hms(train_steps * capped)} for {train_steps} steps "
            f"(estimate: {measured:.1f} s a step, {SOURCE}, with completions cut at "
            f"{UNSLOTH_T4_MAX_COMPLETION} tokens, a lower bound; {capped:.1f} s if every completion ran to "
            f"the profile's {max_completion_length}, an upper bound)"
        ),
        "notebook 06, section 5": (
            f"at most {hms(generation_upper_bound_s(eval_completions_06, max_completion_length))} for "
            f"{eval_completions_06:,} completions of up to {max_completion_length} tokens (upper bound from "
            f"the same run: 8 completions take at most one step, {capped:.1f} s at this cap; likely several "
            "times less with 256 prompts a call, not measured)"
        ),
    }


if __name__ == "__main__":
    for stage, text in t4_estimates().items():
        print(f"{stage}: {text}")
