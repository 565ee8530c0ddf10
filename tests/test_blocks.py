"""cpu_study.blocks: the READMEs' generated numbers and tables equal what their results files print."""

import pytest

from cpu_study import blocks
from cpu_study.cli import main

ROOT = blocks.ROOT

EXPECTED = {
    blocks.README: (
        "make-train-time",
        "profiles",
        "make-train-stages",
        "make-test-time",
        "verdict",
        "format-gain",
    ),
    blocks.RESULTS_README: (
        "results-make-train-time",
        "results-make-train",
        "seeds",
        "seed-groups",
        "sealed",
        "recipes",
        "ablation",
    ),
}


@pytest.mark.parametrize("path", blocks.FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_readme_blocks_match_their_results_files(path):
    text = path.read_text()
    for name in EXPECTED[path]:
        assert f"<!-- block:{name} -->" in text
    assert set(blocks.BLOCKS) == {name for names in EXPECTED.values() for name in names}  # no block unused
    assert blocks.render(text) == text, f"{path} drifted from results/: run python -m cpu_study blocks"


def test_a_block_is_rewritten_from_its_source():
    blocks.BLOCKS["demo"] = lambda: "| a |\n|---|"
    try:
        stale = "x\n<!-- block:demo -->\nold\n<!-- /block:demo -->\ny"
        assert blocks.render(stale) == "x\n<!-- block:demo -->\n| a |\n|---|\n<!-- /block:demo -->\ny"
    finally:
        del blocks.BLOCKS["demo"]


def test_a_time_report_gives_its_wall_clock_and_peak_memory(tmp_path):
    report = tmp_path / "time.txt"
    report.write_text(
        'progress bars\n\tCommand being timed: "make train"\n'
        "\tElapsed (wall clock) time (h:mm:ss or m:ss): 17:54.53\n"
        "\tMaximum resident set size (kbytes): 13360716\n"
    )
    measured = blocks.time_file(report)
    assert measured["wall"] == "17:54.53"
    assert measured["peak_gib"] == pytest.approx(12.742, abs=1e-3)  # 13,360,716 KiB / 1024**2
    report.write_text("no report here\n")
    with pytest.raises(ValueError, match="not a /usr/bin/time -v report"):
        blocks.time_file(report)


def test_the_command_checks_and_rewrites_a_stale_block(tmp_path, monkeypatch, capsys):
    readme = tmp_path / "README.md"
    readme.write_text("<!-- block:demo -->\nold\n<!-- /block:demo -->\n")
    monkeypatch.setattr(blocks, "FILES", (readme,))
    monkeypatch.setitem(blocks.BLOCKS, "demo", lambda: "new")
    assert main(["blocks", "--check"]) == 1 and "differs from results/" in capsys.readouterr().out
    assert main(["blocks"]) == 0 and readme.read_text() == "<!-- block:demo -->\nnew\n<!-- /block:demo -->\n"
    assert main(["blocks", "--check"]) == 0


def test_the_committed_format_gain_is_what_the_seeds_summaries_give():
    """results/cpu-varied-format/format_gain.json (notebook 05, make train, README) is recomputed from the
    five runs' summary.json; a stale file fails here."""
    import json

    from cpu_study.blocks import SEED_RUNS
    from cpu_study.seeds import format_gain
    from helpers.evaluation.reports import FORMAT_GAIN_FILE, RESULTS_DIR

    committed = json.loads((RESULTS_DIR / "cpu-varied-format" / FORMAT_GAIN_FILE).read_text())
    assert format_gain([RESULTS_DIR / run for run in SEED_RUNS]) == committed
    gsm8k_format = next(r for r in committed["sets"] if r["set"] == "GSM8K test" and r["measure"] == "valid format")
    assert gsm8k_format["low"] > 0 and len(committed["seeds"]) >= 3


def test_format_gain_counts_each_seeds_change_and_its_t_interval(tmp_path):
    import json

    import pytest

    from cpu_study.seeds import format_gain

    def stage(n, valid, right):
        return {"n": n, "format_rate_valid": valid / n, "accuracy": right / n}

    runs = []
    for seed, (v0, v1) in enumerate([(20, 23), (20, 25), (20, 24)]):
        run = tmp_path / f"run{seed}"
        run.mkdir()
        sets = {"stages": {"cold_start": {"all": stage(8, 4, 1)}, "grpo": {"all": stage(8, 4, 1)}}}
        summary = {
            "profile": {"seed": seed},
            "stages": {"cold_start": stage(32, v0, 0), "grpo": stage(32, v1, 0)},
            "problems": sets,
            "transfer": sets,
        }
        (run / "summary.json").write_text(json.dumps(summary))
        runs.append(run)
    result = format_gain(runs)
    row = result["sets"][0]
    assert (row["set"], row["measure"], row["gains"], row["mean"]) == ("GSM8K test", "valid format", [3, 5, 4], 4.0)
    assert (row["low"], row["high"]) == pytest.approx((4.0 - 4.303 / 3**0.5, 4.0 + 4.303 / 3**0.5), abs=0.01)
    assert "valid format on GSM8K test" in result["reading"] and result["seeds"] == [0, 1, 2]
    with pytest.raises(ValueError, match="at least 2"):
        format_gain(runs[:1])
