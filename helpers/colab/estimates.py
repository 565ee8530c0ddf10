"""Estimated times on a Colab T4: nothing in this course has run on one yet.

The one measured number is Unsloth's: its Qwen2.5 (3B) GRPO notebook for a free Colab T4
(``unslothai/notebooks``, ``nb/Qwen2.5_(3B)-GRPO.ipynb``, its saved training output)
ran 250 steps in 1:40:29, 24.1 s a step, at the ``t4`` profile's sizes (4-bit
Qwen2.5-3B-Instruct, vLLM rollouts, LoRA rank 64, 8 completions of up to 200 tokens a step).
Everything else here is derived from it, or assumed and said so: :func:`t4_estimates` is the
table docs/t4.md and notebooks 05/06 quote (``python -m helpers.colab.estimates`` prints it).
"""

from __future__ import annotations

UNSLOTH_T4_STEPS = 250
UNSLOTH_T4_SECONDS = 1 * 3600 + 40 * 60 + 29  # 1:40:29
UNSLOTH_T4_COMPLETIONS_PER_STEP = 8
SOURCE = (
    "Unsloth's Qwen2.5 (3B) GRPO Colab T4 notebook: 250 steps in 1:40:29 "
    "(unslothai/notebooks, nb/Qwen2.5_(3B)-GRPO.ipynb)"
)
# Not measured anywhere: guesses, labelled as such wherever they are quoted.
ASSUMED_INSTALL_S = 5 * 60  # pip: Unsloth + vLLM + torch 2.9 wheels, 4-5 GB
ASSUMED_VLLM_START_S = 3 * 60  # load the 4-bit weights, profile memory, capture CUDA graphs


def seconds_per_step() -> float:
    """Unsloth's measured seconds per GRPO step on a T4: 6029 s / 250 = 24.1 s."""
    return UNSLOTH_T4_SECONDS / UNSLOTH_T4_STEPS


def generation_upper_bound_s(completions: int) -> float:
    """An upper bound on the seconds vLLM takes for ``completions`` of up to 200 tokens: a
    training step generates 8 completions *and* trains on them in 24.1 s, so 8 completions take
    at most that; a call of 256 prompts is assumed no slower per completion (vLLM runs them
    concurrently, so expect several times less; not measured).

    Raises:
        ValueError: ``completions < 0``.
    """
    if completions < 0:
        raise ValueError(f"completions must be >= 0, got {completions}")
    return completions / UNSLOTH_T4_COMPLETIONS_PER_STEP * seconds_per_step()


def hms(seconds: float) -> str:
    """``5400`` -> ``"1 h 30 min"``; under an hour ``"12 min"`` (rounded to the minute)."""
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def t4_estimates(train_steps: int = 250, eval_completions_06: int = 2 * 1319) -> dict[str, str]:
    """Estimated T4 times, each labelled with where it comes from.

    ``train_steps``: the ``t4`` profile's ``max_steps``; ``eval_completions_06``: notebook 06's
    sampled evaluation, base and base + LoRA on the 1,319 GSM8K test questions.
    """
    start = ASSUMED_INSTALL_S + ASSUMED_VLLM_START_S
    return {
        "install and vLLM start-up": f"about {hms(start)} (assumed, not measured)",
        "notebook 05, GRPO training": (
            f"about {hms(train_steps * seconds_per_step())} for {train_steps} steps "
            f"(estimate: {seconds_per_step():.1f} s a step, {SOURCE})"
        ),
        "notebook 06, section 5": (
            f"at most {hms(generation_upper_bound_s(eval_completions_06))} for "
            f"{eval_completions_06:,} completions (upper bound from the same run: 8 "
            "completions take at most one 24.1 s step; likely several times less "
            "with 256 prompts a call, not measured)"
        ),
    }


if __name__ == "__main__":
    for stage, text in t4_estimates().items():
        print(f"{stage}: {text}")
