"""pass@k of a finished run: samples ``n`` completions per course-written test problem for the base
model, the cold start and cold start + GRPO (:func:`correct_counts`, :func:`evaluate_run`), and writes
``pass_at_k.json`` with pass@1, 2, 4, 8 and their intervals (:func:`pass_at_k_summary`: Chen et al. 2021's
unbiased estimator, :func:`pass_at_k`, with percentile bootstrap intervals, :func:`bootstrap_interval`).
``python -m cpu_study pass-at-k --run DIR`` runs it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence


def correct_counts(
    model,
    tokenizer,
    problems,
    *,
    n: int = 8,
    temperature: float = 1.0,
    top_p: float = 1.0,
    max_new_tokens: int = 128,
    seed: int = 0,
    batch_size: int = 64,
    build_prompt=None,
    extract=None,
) -> list[int]:
    """Sample ``n`` completions for each problem (rows ``question``/``answer``: a Dataset or dicts)
    and count the correct ones (:func:`helpers.grading.is_correct` on the extracted answer,
    default the ``<answer>`` block). The ``n`` samples of a problem share one prompt pass
    (:func:`helpers.training.fast_rollouts.sample`); ``batch_size`` rows go in one batch (whole problems).

    Raises:
        ValueError: ``n < 1`` or ``temperature <= 0`` (greedy samples would all be the same).
    """
    from tqdm.auto import tqdm

    from helpers.course_format import make_prompt
    from helpers.grading import extract_answer, is_correct
    from helpers.training.generation import generate

    if n < 1 or temperature <= 0:
        raise ValueError(f"need n >= 1 and temperature > 0, got n={n}, temperature={temperature}")
    build_prompt, extract = build_prompt or make_prompt, extract or extract_answer
    rows = [{"question": r["question"], "answer": str(r["answer"])} for r in problems]
    per_batch = max(1, batch_size // n)
    counts = []
    for start in tqdm(range(0, len(rows), per_batch), desc=f"pass@k, {n} samples", unit="batch"):
        chunk = rows[start : start + per_batch]
        prompts = [build_prompt(r["question"]) for r in chunk for _ in range(n)]
        texts = generate(
            model,
            tokenizer,
            prompts,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            top_p=top_p,
            seed=seed + start,
            batch_size=len(prompts),
        )
        for i, row in enumerate(chunk):
            counts.append(
                sum(bool(is_correct(extract(t), row["answer"], warn=False)) for t in texts[i * n : (i + 1) * n])
            )
    return counts


PASS_AT_K_FILE = "pass_at_k.json"


def evaluate_run(
    run_dir, profile, *, n: int = 8, problems: int = 32, temperature: float | None = None, seed: int = 0
) -> dict:
    """pass@k of every stage of a finished ``make train`` run (its ``cold_start/`` and ``lora_adapter/``):
    the base model, the cold start (adapter off) and cold start + GRPO, on ``problems`` course-written
    test problems of each of ``profile.eval_levels`` (the final evaluation's first ones), ``n`` samples
    each at the training temperature (default ``profile.temperature``). Writes and returns
    ``<run_dir>/pass_at_k.json``: ``{"settings": ..., "stages": {stage: {level: pass_at_k_summary}}}``.
    Transformers backend (CPU) only.

    Raises:
        FileNotFoundError: the run has no adapter or no cold start.
        ValueError: an Unsloth profile (evaluate those with vLLM in a notebook).
    """
    import json
    from pathlib import Path

    from helpers.data.problem_sets import eval_problem_set
    from helpers.evaluation.adapters import load_with_adapter
    from helpers.training.models import load_model
    from helpers.training.profiles import level_name

    if profile.backend != "transformers":
        raise ValueError("evaluate_run loads the models with transformers: CPU or the cuda profile")
    run_dir = Path(run_dir)
    if not (run_dir / "cold_start" / "config.json").exists():
        raise FileNotFoundError(f"{run_dir / 'cold_start'} holds no model: is {run_dir} a finished run?")
    temperature = profile.temperature if temperature is None else temperature
    problem_set = eval_problem_set(profile, problems)
    levels = {}
    for p in problem_set:
        levels.setdefault(level_name(p.ops, p.max_number), []).append(p.to_dict())
    settings = dict(
        n=n, temperature=temperature, top_p=profile.top_p, max_new_tokens=profile.max_completion_length, seed=seed
    )
    policy, tokenizer = load_with_adapter(profile, run_dir / "lora_adapter")
    base, base_tokenizer = load_model(profile, lora=False)

    def measure(model, tok):
        counts = {level: correct_counts(model, tok, rows, **settings) for level, rows in levels.items()}
        counts["all"] = [c for level in levels for c in counts[level]]
        return {level: {**pass_at_k_summary(c, n), "correct_counts": c} for level, c in counts.items()}

    stages = {"base": measure(base, base_tokenizer)}
    with policy.disable_adapter():
        stages["cold_start"] = measure(policy, tokenizer)
    stages["grpo"] = measure(policy, tokenizer)
    result = {"settings": {**settings, "problems_per_level": problems, "levels": list(levels)}, "stages": stages}
    (run_dir / PASS_AT_K_FILE).write_text(json.dumps(result, indent=2) + "\n")
    return result


KS = (1, 2, 4, 8)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of pass@k for one problem from ``c`` correct of ``n`` samples (Chen et al.
    2021, eq. 1), in the product form of their code (no huge binomials):
    ``1 - prod_{i = n - c + 1}^{n} (1 - k / i)``. ``pass_at_k(8, 1, 1) = 0.125``,
    ``pass_at_k(8, 1, 8) = 1.0``, ``pass_at_k(8, 0, 8) = 0.0``.

    Raises:
        ValueError: not ``0 <= c <= n`` or not ``1 <= k <= n``.
    """
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got c={c}, n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def bootstrap_interval(
    values: Sequence[float], level: float = 0.95, draws: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (resampled with replacement, ``draws``
    times, from a seeded generator: the same input gives the same interval).

    Raises:
        ValueError: no values, or ``level`` outside (0, 1).
    """
    if not values:
        raise ValueError("no values")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(rng.choices(values, k=n)) / n for _ in range(draws))
    tail = (1 - level) / 2
    return means[int(tail * (draws - 1))], means[int(math.ceil((1 - tail) * (draws - 1)))]


def pass_at_k_summary(correct_counts: Sequence[int], n: int, ks: Sequence[int] = KS) -> dict:
    """pass@k for every ``k`` in ``ks`` from per-problem correct counts (each of ``n`` samples):
    ``{"n": n, "problems": P, "pass@1": {"value", "ci_low", "ci_high"}, ...}``; ``k > n`` is skipped.

    Raises:
        ValueError: no problems, or a count outside ``0..n``.
    """
    if not correct_counts:
        raise ValueError("no problems")
    summary = {"n": n, "problems": len(correct_counts)}
    for k in ks:
        if k > n:
            continue
        per_problem = [pass_at_k(n, c, k) for c in correct_counts]
        low, high = bootstrap_interval(per_problem)
        summary[f"pass@{k}"] = {"value": sum(per_problem) / len(per_problem), "ci_low": low, "ci_high": high}
    return summary
