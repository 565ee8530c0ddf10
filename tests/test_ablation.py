"""cpu_study.ablation: each arm against the baseline of the same seed, per seed and pooled."""

import json
import math

import pytest

from cpu_study import ablation
from cpu_study.arms import ARMS


def _run(root, arm, seed, correct, seconds=40.0):
    out = root / arm / f"seed{seed}"
    out.mkdir(parents=True)
    result = {"arm": arm, "seed": seed, "knob": ARMS[arm].knob, "predicted": ARMS[arm].predicted}
    result["cost"] = {"seconds_per_step": seconds, "peak_rss_gib": 10.0}
    (out / "result.json").write_text(json.dumps(result))
    rows = [{"set": "dev", "index": i, "correct": c} for i, c in enumerate(correct)]
    (out / "outcomes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in reversed(rows)))  # any order


def test_an_arm_is_compared_with_the_baseline_of_its_seed(tmp_path):
    _run(tmp_path, "baseline", 1, [1, 1, 0, 0, 0, 0])
    _run(tmp_path, "baseline", 2, [1, 0, 0, 0, 0, 0], seconds=30.0)
    _run(tmp_path, "beta", 1, [1, 1, 1, 1, 1, 0], seconds=52.0)  # 3 more right, none lost
    _run(tmp_path, "beta", 2, [0, 1, 1, 0, 0, 0], seconds=48.0)  # +1: 2 gained, 1 lost
    _run(tmp_path, "placebo", 3, [0, 0, 0, 0, 0, 0])  # no baseline of seed 3: left out
    runs = ablation.read_arms(tmp_path)
    seeds = ablation.per_seed(runs)
    assert list(seeds["seed"]) == [1, 2] and list(seeds["diff"]) == [3, 1]
    assert list(seeds["only_arm"]) == [3, 2] and list(seeds["only_baseline"]) == [0, 1]
    assert seeds["p"].iloc[0] == pytest.approx(0.25)  # 2 * (1/2)^3
    table = ablation.pooled(runs)
    beta = table.loc["beta"]
    half = 12.706 * math.sqrt(2) / math.sqrt(2)  # t_{0.975,1} * sd / sqrt(n), sd of (3, 1) = sqrt(2)
    assert (beta["diff"], beta["low"], beta["high"]) == pytest.approx((2.0, 2.0 - half, 2.0 + half), abs=1e-3)
    assert beta["p_seeds"] == "0.25 1"  # per seed: 3 gained, 0 lost; 2 gained, 1 lost (not summed: same problems)
    assert beta["seconds_per_step"] == 50.0 and table.loc["baseline", "seconds_per_step"] == 35.0
    # the cost ratio pairs each seed with its own baseline (52/40, 48/30), not the means (50/35 = 1.43)
    assert list(seeds["step_ratio"]) == [1.3, 1.6] and beta["step_ratio"] == pytest.approx(1.45)
    assert list(table.index) == ["baseline", "beta"]
    ax = ablation.plot_forest(runs)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["beta"]


def test_runs_of_different_problems_are_refused_and_an_empty_folder_is_an_error(tmp_path):
    _run(tmp_path, "baseline", 1, [1, 0])
    _run(tmp_path, "beta", 1, [1, 0, 1])
    with pytest.raises(ValueError, match="not the same set"):
        ablation.per_seed(ablation.read_arms(tmp_path))
    with pytest.raises(FileNotFoundError, match="no arm run"):
        ablation.read_arms(tmp_path / "empty")


def test_the_baseline_alone_gives_an_empty_comparison_not_an_error(tmp_path):
    _run(tmp_path, "baseline", 3407, [1, 0, 1])
    _run(tmp_path, "placebo", 1, [1, 1, 1])  # another seed: nothing to pair with
    runs = ablation.read_arms(tmp_path)
    assert ablation.per_seed(runs).empty and list(ablation.per_seed(runs).columns) == list(ablation.PER_SEED_COLUMNS)
    table = ablation.pooled(runs)
    assert list(table.index) == ["baseline"] and math.isnan(table.loc["baseline", "low"])
    assert ablation.plot_forest(runs).get_yticklabels() == []


def test_one_seed_has_a_mean_but_no_interval(tmp_path):
    _run(tmp_path, "baseline", 3407, [1, 0, 0, 0])
    _run(tmp_path, "placebo", 3407, [1, 1, 1, 0])
    row = ablation.pooled(ablation.read_arms(tmp_path)).loc["placebo"]
    assert row["seeds"] == 1 and row["diff"] == 2 and math.isnan(row["low"]) and math.isnan(row["high"])
    assert row["p_seeds"] == "0.5"  # 2 gained, 0 lost
