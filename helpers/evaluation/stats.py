"""The statistics of the course's evaluations, from :mod:`scipy.stats`: :func:`wilson_interval`, a 95 %
interval for an accuracy (Wilson 1927), and McNemar's exact test for two evaluations of the same questions
(:func:`mcnemar`; :func:`mcnemar_exact_p`, and :func:`mcnemar_chi2` for comparison). pass@k, which only
the CPU study reports, is :mod:`cpu_study.pass_at_k`.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (Wilson 1927), from
    ``scipy.stats.binomtest(successes, n).proportion_ci(confidence, method="wilson")``.

    Unlike the normal ("Wald") interval it never leaves [0, 1] and is not zero-width at 0/n or n/n:
    ``wilson_interval(8, 10)`` -> ``(0.490, 0.943)``; ``wilson_interval(0, 10)`` -> ``(0.0, 0.278)``.

    Raises:
        ValueError: ``n < 1``, ``successes`` outside ``0..n``, or ``confidence`` outside (0, 1).
    """
    if n < 1 or not 0 <= successes <= n or not 0 < confidence < 1:
        raise ValueError(f"need n >= 1, 0 <= successes <= n, 0 < confidence < 1; got {successes}, {n}, {confidence}")
    ci = stats.binomtest(int(successes), int(n)).proportion_ci(confidence, method="wilson")
    return float(ci.low), float(ci.high)


def mcnemar_exact_p(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts ``b`` and ``c`` (McNemar 1947, exact
    conditional form): under H0 each of the ``b + c`` discordant questions favours either model with
    probability 1/2, so ``p = scipy.stats.binomtest(b, b + c, 0.5).pvalue``
    ``= min(1, 2 * sum_{k <= min(b, c)} C(n, k) / 2^n)`` with ``n = b + c``. ``b = c = 0`` gives 1;
    ``b=1, c=6`` -> 0.125.

    Raises:
        ValueError: a negative or non-integer count (``bool`` and ``1.5`` included).
    """
    b, c = _check_counts(b, c)
    return 1.0 if b + c == 0 else float(stats.binomtest(b, b + c, 0.5).pvalue)


def mcnemar_chi2(b: int, c: int) -> tuple[float, float]:
    """McNemar's chi-square with Edwards' continuity correction and its p-value (1 d.o.f.):
    ``chi2 = (|b - c| - 1)^2 / (b + c)`` floored at 0 (McNemar 1947; Edwards 1948),
    ``p = scipy.stats.chi2.sf(chi2, 1)``. ``b = c = 0`` gives ``(0.0, 1.0)``; ``b=1, c=6`` -> ``(2.286, 0.131)``.
    Only trustworthy for ``b + c >= 25`` or so; :func:`mcnemar` reports the exact p-value.

    Raises:
        ValueError: a negative or non-integer count (``bool`` and ``1.5`` included).
    """
    b, c = _check_counts(b, c)
    if b + c == 0:
        return 0.0, 1.0
    chi2 = max(abs(b - c) - 1, 0) ** 2 / (b + c)
    return chi2, float(stats.chi2.sf(chi2, 1))


def _check_counts(b, c) -> tuple[int, int]:
    """``(b, c)`` as Python ints: any integer type counts (``numpy.int64`` included), bools do not."""
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
