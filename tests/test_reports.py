"""helpers.evaluation.reports.gain_reading: the sentences agree with the run's own outcomes."""

import json

from helpers.evaluation.reports import RESULTS_DIR, gain_reading, load_summary


def _right(outcomes, set_name, stage):
    return sum(o["correct"] for o in outcomes if o["set"] == set_name and o["stage"] == stage)


def test_the_reading_of_the_reference_run_counts_what_its_outcomes_hold():
    run = RESULTS_DIR / "cpu-varied"
    outcomes = [json.loads(line) for line in (run / "eval_outcomes.jsonl").read_text().splitlines()]
    reading = gain_reading(load_summary(run))
    for set_name, label in (("problems", "In distribution"), ("transfer", "On the transfer problems")):
        n = sum(1 for o in outcomes if o["set"] == set_name and o["stage"] == "grpo")
        cold, grpo = _right(outcomes, set_name, "cold_start"), _right(outcomes, set_name, "grpo")
        assert f"{label} GRPO went {cold} -> {grpo} of {n} (" in reading
    gsm8k = [_right(outcomes, "gsm8k", stage) for stage in ("base", "cold_start", "grpo")]
    assert reading.endswith(f"GSM8K: base {gsm8k[0]}, cold start {gsm8k[1]}, cold start + GRPO {gsm8k[2]} of 32.")


def test_a_kind_below_alpha_is_named():
    summary = load_summary(RESULTS_DIR / "cpu-varied")
    kind = summary["kinds"]["transfer"][0]
    assert f"`{kind['kind']}` (transfer)" in gain_reading(summary, alpha=kind["p"] + 1e-9)
    assert "No kind changed with p < 1e-09" in gain_reading(summary, alpha=1e-9)


def test_a_run_without_transfer_or_kinds_reads_without_them():
    reading = gain_reading(load_summary(RESULTS_DIR / "cpu-curriculum"))
    assert reading.startswith("In distribution GRPO went 84 -> 119 of 256 (McNemar p = 7.7e-06: 48 gained, 13 lost).")
    assert "transfer" not in reading and "kind" not in reading
