"""The statistics of the course's evaluations, in one place.

* :func:`wilson_interval`: a 95 % interval for an accuracy (Wilson 1927), sound near 0 and 1;
* McNemar's exact test for two evaluations of the same questions (:func:`mcnemar`, :class:`McNemar`;
  :func:`mcnemar_exact_p`, and :func:`mcnemar_chi2` for comparison): only the discordant questions count;
* pass@k (:func:`pass_at_k`, the unbiased estimator of Chen et al. 2021, eq. 1) over problems with a
  percentile bootstrap interval (:func:`bootstrap_interval`, :func:`pass_at_k_summary`): the problem is
  the unit that was sampled, and the per-problem estimates are bounded and skewed, so no normal
  approximation.
"""

from __future__ import annotations

import math
import numbers
import random
from collections.abc import Sequence
from dataclasses import dataclass


# ------------------------------------------------------------------------------ statistics
def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (Wilson 1927); ``z=1.96`` gives 95 %.

    Better than the normal ("Wald") interval for small ``n`` or accuracies near 0 or 1: it
    never leaves [0, 1] and is not zero-width at 0/n or n/n. ``wilson_interval(8, 10)`` ->
    ``(0.490, 0.943)``; ``wilson_interval(0, 10)`` -> ``(0.0, 0.278)``.

    Formula: centre ``(p + z^2/2n) / (1 + z^2/n)``, half-width
    ``z * sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n)`` with ``p = successes / n``.

    Raises:
        ValueError: ``n < 1``, ``successes`` outside ``0..n``, or ``z <= 0``.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be between 0 and n={n}, got {successes}")
    if z <= 0:
        raise ValueError(f"z must be positive, got {z}")
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def mcnemar_exact_p(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts ``b`` and ``c``.

    Under H0 (both models equally accurate) each of the ``n = b + c`` discordant questions is
    equally likely to favour either model, so ``min(b, c) ~ Binomial(n, 1/2)``:
    ``p = min(1, 2 * sum_{k <= min(b, c)} C(n, k) / 2^n)`` (McNemar 1947, in its exact
    conditional form). ``b = c = 0`` gives 1. Example: ``b=1, c=6`` -> ``2 * (1 + 7) / 128 = 0.125``.

    Args:
        b, c: discordant counts, any integer type (``int``, ``numpy.int64``, ...).

    Raises:
        ValueError: a negative or non-integer count (``bool`` and ``1.5`` included).
    """
    b, c = _check_counts(b, c)
    n, k = b + c, min(b, c)
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n)


def mcnemar_chi2(b: int, c: int) -> tuple[float, float]:
    """McNemar's chi-square with Edwards' continuity correction, and its p-value (1 d.o.f.).

    ``chi2 = (|b - c| - 1)^2 / (b + c)`` (McNemar 1947; correction: Edwards 1948), floored at 0;
    ``p = P(X^2_1 >= chi2) = erfc(sqrt(chi2 / 2))``. ``b = c = 0`` gives ``(0.0, 1.0)``.
    Only trustworthy for ``b + c >= 25`` or so; :func:`mcnemar` reports the exact p-value.
    Example: ``b=1, c=6`` -> ``16 / 7 = 2.286``, ``p = 0.131``.

    Args:
        b, c: discordant counts, any integer type (``int``, ``numpy.int64``, ...).

    Raises:
        ValueError: a negative or non-integer count (``bool`` and ``1.5`` included).
    """
    b, c = _check_counts(b, c)
    if b + c == 0:
        return 0.0, 1.0
    chi2 = max(abs(b - c) - 1, 0) ** 2 / (b + c)
    return chi2, math.erfc(math.sqrt(chi2 / 2))


def _check_counts(b, c) -> tuple[int, int]:
    """``(b, c)`` as Python ints: any integer type counts (``numpy.int64`` from
    ``np.sum``/``pandas`` included; Python ints also keep ``2**n`` exact), bools do not."""
    for name, value in (("b", b), ("c", c)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer count, got {value!r}")
    return int(b), int(c)


@dataclass(frozen=True)
class McNemar:
    """Paired 2 x 2 table of two models on the same questions, and McNemar's test.

    ``base_only``: right before, wrong after (b); ``lora_only``: wrong before, right after (c).
    ``p_value`` is the exact two-sided p-value (the one reported); ``chi2`` / ``p_chi2`` the
    continuity-corrected chi-square version, for reference.
    """

    both_right: int
    base_only: int
    lora_only: int
    both_wrong: int
    p_value: float
    chi2: float
    p_chi2: float

    @property
    def n(self) -> int:
        return self.both_right + self.base_only + self.lora_only + self.both_wrong

    def as_dict(self) -> dict:
        return {**self.__dict__, "n": self.n, "method": "exact binomial, two-sided (McNemar 1947)"}


def mcnemar(base_correct: Sequence[bool], lora_correct: Sequence[bool]) -> McNemar:
    """McNemar's test on paired right/wrong outcomes (question ``i`` in both lists).

    Raises:
        ValueError: the lists differ in length or are empty.
    """
    if len(base_correct) != len(lora_correct) or not base_correct:
        raise ValueError(f"need two non-empty paired lists, got {len(base_correct)} and {len(lora_correct)} outcomes")
    pairs = [(bool(a), bool(b)) for a, b in zip(base_correct, lora_correct)]
    b, c = pairs.count((True, False)), pairs.count((False, True))
    chi2, p_chi2 = mcnemar_chi2(b, c)
    return McNemar(pairs.count((True, True)), b, c, pairs.count((False, False)), mcnemar_exact_p(b, c), chi2, p_chi2)


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
