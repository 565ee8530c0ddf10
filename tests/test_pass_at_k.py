"""cpu_study.pass_at_k, and its estimator in helpers.evaluation.stats: Chen et al.'s unbiased
estimator, its interval, and the sampler behind it."""

import math
from itertools import combinations

import pytest

from cpu_study.pass_at_k import bootstrap_interval, correct_counts, pass_at_k, pass_at_k_summary


@pytest.mark.parametrize("n,c,k", [(8, 0, 1), (8, 1, 1), (8, 3, 2), (8, 3, 4), (8, 5, 4), (8, 8, 8), (5, 2, 3)])
def test_pass_at_k_is_the_share_of_k_subsets_holding_a_correct_sample(n, c, k):
    """The estimator's definition: of all C(n, k) ways to pick k of the n samples, the share that holds
    at least one of the c correct ones (enumerated here, not the formula)."""
    samples = [True] * c + [False] * (n - c)
    subsets = list(combinations(samples, k))
    assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets), abs=1e-12)
    assert pass_at_k(n, c, k) == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k), abs=1e-12)


def test_pass_at_1_is_the_sample_accuracy_and_pass_at_k_grows_with_k():
    assert pass_at_k(8, 3, 1) == pytest.approx(3 / 8, abs=1e-15)
    values = [pass_at_k(8, 2, k) for k in (1, 2, 4, 8)]
    assert values == sorted(values) and values[-1] == 1.0


@pytest.mark.parametrize("args", [(8, 9, 1), (8, -1, 1), (8, 2, 0), (8, 2, 9)])
def test_impossible_counts_raise(args):
    with pytest.raises(ValueError):
        pass_at_k(*args)


def test_summary_and_interval():
    counts = [0, 0, 1, 4, 8, 2, 0, 8]
    s = pass_at_k_summary(counts, n=8, ks=(1, 8, 16))
    assert s["problems"] == 8 and "pass@16" not in s
    assert s["pass@1"]["value"] == pytest.approx(sum(counts) / 64)
    assert s["pass@8"]["value"] == pytest.approx(5 / 8)  # problems with at least one right sample
    for k in ("pass@1", "pass@8"):
        assert s[k]["ci_low"] <= s[k]["value"] <= s[k]["ci_high"]
    assert bootstrap_interval([0.5] * 10) == (0.5, 0.5)
    assert bootstrap_interval([0.0, 1.0] * 20) == bootstrap_interval([0.0, 1.0] * 20)  # seeded
    low, high = bootstrap_interval([0.0, 1.0] * 20)
    assert 0.3 < low < 0.5 < high < 0.7
    with pytest.raises(ValueError):
        pass_at_k_summary([], n=8)


def test_correct_counts_grade_each_problems_n_samples(monkeypatch):
    """Each problem's n samples are consecutive rows of one generate call (they share a prompt pass)."""
    import helpers.training.generation

    calls = []

    def fake_generate(model, tokenizer, prompts, **kwargs):
        calls.append((len(prompts), kwargs["temperature"]))
        return [
            f"<answer>{int(p[-1]['content'].split()[-1]) + (i % 3 != 0)}</answer>" for i, p in enumerate(prompts)
        ]  # rows 0, 3, 6 of each call are right

    monkeypatch.setattr(helpers.training.generation, "generate", fake_generate)
    rows = [{"question": f"what is {a}", "answer": str(a)} for a in (5, 7, 9)]
    counts = correct_counts(None, None, rows, n=4, temperature=0.8, batch_size=8)
    assert calls == [(8, 0.8), (4, 0.8)]  # 2 problems x 4 samples, then the last problem
    assert counts == [2, 1, 2]
    with pytest.raises(ValueError, match="temperature"):
        correct_counts(None, None, rows, n=4, temperature=0.0)
