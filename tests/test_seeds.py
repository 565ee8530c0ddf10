"""cpu_study.seeds: per-seed rows and the gain pooled over seeds."""

import json
import math

import pytest

from cpu_study import seeds
from helpers.evaluation.reports import RESULTS_DIR


def test_a_committed_run_reads_as_its_summary_says():
    row = seeds.seed_row(RESULTS_DIR / "cpu-curriculum")
    assert row["seed"] == 3407
    counts = {key: row["problems"][key] for key in ("n", "cold_start", "grpo", "gained", "lost")}
    assert counts == {"n": 256, "cold_start": 84, "grpo": 119, "gained": 48, "lost": 13}
    assert row["problems"]["p"] == pytest.approx(7.665e-6, rel=1e-3)
    assert row["heldout"] == [0.4375, 0.375, 0.46875, 0.5]
    assert "transfer" not in row and row["kinds_lost"] == []
    # steps 1-4 and 9-12 of the committed metrics.csv, correctness reward and flat groups
    import pandas as pd

    steps = pd.read_csv(RESULTS_DIR / "cpu-curriculum" / "metrics.csv").dropna(subset=["reward"])
    assert row["reward_first"] == pytest.approx(steps[seeds.REWARD_COLUMN].head(4).mean())
    assert row["flat_last"] == pytest.approx(steps["frac_reward_zero_std"].tail(4).mean())


def _run(tmp_path, name, seed, cold, grpo, gained, lost, p, n=10, kinds=()):
    run = tmp_path / name
    run.mkdir()
    stages = {"cold_start": {"all": {"accuracy": cold / n}}, "grpo": {"all": {"accuracy": grpo / n}}}
    test = {"n": n, "lora_only": gained, "base_only": lost, "p_value": p}
    summary = {
        "profile": {"seed": seed},
        "problems": {"stages": stages, "mcnemar_start_vs_grpo": {"all": {"correct": test}}},
        "kinds": {"transfer": list(kinds)},
        "heldout": [{"heldout/accuracy": 0.25}],
    }
    (run / "summary.json").write_text(json.dumps(summary))
    (run / "metrics.csv").write_text(
        "step,heldout/accuracy,reward,frac_reward_zero_std\n0,0.25,,\n1,,1.5,0.5\n2,,2.5,0.25\n"
    )
    return run


def test_a_row_takes_the_first_and_last_step_and_the_kinds_lost(tmp_path):
    kinds = [
        {"kind": "div", "gained": 0, "lost": 6, "p": 0.03125},
        {"kind": "add", "gained": 0, "lost": 5, "p": 0.0625},
        {"kind": "mul", "gained": 6, "lost": 0, "p": 0.03125},
    ]
    row = seeds.seed_row(_run(tmp_path, "s1", 1, 3, 5, 3, 1, 0.625, kinds=kinds))
    assert row["problems"] == {"n": 10, "cold_start": 3, "grpo": 5, "gained": 3, "lost": 1, "p": 0.625}
    assert row["kinds_lost"] == ["transfer/div"]
    assert (row["reward_first"], row["reward_last"], row["flat_first"], row["flat_last"]) == (1.5, 2.5, 0.5, 0.25)


def test_the_pooled_gain_is_the_mean_with_a_student_t_interval(tmp_path):
    rows = [
        seeds.seed_row(_run(tmp_path, f"s{s}", s, 3, 3 + g, g, 0, p))
        for s, g, p in ((1, 1, 1.0), (2, 2, 0.5), (3, 3, 0.005))
    ]
    pooled = seeds.pooled_gain(rows)
    half = 4.303 * 1.0 / math.sqrt(3)  # t_{0.975, 2} * sd / sqrt(n), sd of (1, 2, 3) = 1
    assert pooled["gains"] == [1, 2, 3] and pooled["mean"] == 2
    assert (pooled["low"], pooled["high"]) == (pytest.approx(2 - half, abs=1e-3), pytest.approx(2 + half, abs=1e-3))
    assert (pooled["gained_runs"], pooled["significant_runs"]) == (3, 1)
    assert seeds.pooled_sentence(rows) == (
        f"in distribution: mean gain +2.0 of 10 over 3 seeds (seeds 1, 2, 3), 95 % t interval "
        f"[{2 - half:+.1f}, {2 + half:+.1f}] (includes 0); 3 of 3 seeds gained, 1 with p < 0.01."
    )
    table = seeds.seeds_table(rows)
    assert table.loc["seed 3", "in distribution"] == "3 -> 6 of 10"
    assert table.loc["seed 3", "in distribution: p (gained, lost)"] == "0.005 (3, 0)"


def test_the_t_interval_uses_the_tabled_quantiles():
    # t_{0.975, df} from a printed table (NIST/SEMATECH e-Handbook 1.3.6.7.2): 12.706 (df 1), 2.776 (df 4)
    assert seeds.t_interval([0, 10]) == pytest.approx((5, 5 - 12.706 * 5, 5 + 12.706 * 5), abs=1e-2)
    values = [1, 2, 3, 4, 5]  # sd sqrt(2.5)
    half = 2.776 * math.sqrt(2.5) / math.sqrt(5)
    assert seeds.t_interval(values) == pytest.approx((3, 3 - half, 3 + half), abs=1e-3)


def test_a_t_interval_needs_two_values():
    with pytest.raises(ValueError, match="values for a t interval"):
        seeds.t_interval([1.0])


def test_runs_on_different_problem_counts_do_not_pool(tmp_path):
    rows = [
        seeds.seed_row(_run(tmp_path, "a", 1, 3, 4, 1, 0, 1.0, n=10)),
        seeds.seed_row(_run(tmp_path, "b", 2, 3, 4, 1, 0, 1.0, n=20)),
    ]
    with pytest.raises(ValueError, match="different numbers"):
        seeds.pooled_gain(rows)
    with pytest.raises(ValueError, match="no 'transfer' evaluation"):
        seeds.pooled_gain(rows, "transfer")


def test_a_run_without_steps_is_an_error(tmp_path):
    run = _run(tmp_path, "a", 1, 3, 4, 1, 0, 1.0)
    (run / "metrics.csv").write_text("step,heldout/accuracy,reward\n0,0.25,\n")
    with pytest.raises(ValueError, match="no GRPO step"):
        seeds.seed_row(run)
    (run / "metrics.csv").unlink()
    with pytest.raises(FileNotFoundError, match="metrics.csv"):
        seeds.seed_row(run)


def test_a_verdict_holds_only_when_the_interval_excludes_0():
    def runs(*gains, p=0.5):
        return [{"n": 10, "cold_start": 3, "grpo": 3 + g, "p": p} for g in gains]

    line, status = seeds.verdict("transfer", runs(1, 2, 3))
    half = 4.303 / math.sqrt(3)  # sd of (1, 2, 3) = 1
    assert status == "no change" and 2 - half < 0
    assert line == (
        f"transfer, 10 problems: gain per run [1, 2, 3], 0 of 3 with p < 0.01; mean +2.0, "
        f"95 % t interval [{2 - half:+.1f}, {2 + half:+.1f}]: no change over runs."
    )
    assert seeds.verdict("x", runs(4, 5, 6, 5))[1] == "gain"
    assert seeds.verdict("x", runs(-4, -5, -6, -5))[1] == "loss"
    line, status = seeds.verdict("sealed transfer", runs(2, p=0.004))
    assert status == "unknown" and line.endswith("1 of 1 with p < 0.01; one run, no interval yet.")
    with pytest.raises(ValueError, match="different numbers"):
        seeds.verdict("x", [*runs(1), {"n": 20, "cold_start": 3, "grpo": 4, "p": 1.0}])
    with pytest.raises(ValueError, match="no runs"):
        seeds.verdict("x", [])
