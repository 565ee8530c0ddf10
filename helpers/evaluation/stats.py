"""The statistics of the course's evaluations, in one place.

* :func:`wilson_interval`: a 95 % interval for an accuracy (Wilson 1927), sound near 0 and 1;
* McNemar's exact test for two evaluations of the same questions (:func:`mcnemar`, :class:`McNemar`;
  :func:`mcnemar_exact_p`, and :func:`mcnemar_chi2` for comparison): only the discordant questions count;

pass@k, which only the CPU study reports, is :mod:`cpu_study.pass_at_k`.
"""

from __future__ import annotations

import math
import numbers
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
