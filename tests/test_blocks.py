"""helpers.evaluation.blocks: the READMEs' generated numbers and tables equal what their results files print."""

import pytest

from helpers.cli import main
from helpers.evaluation import blocks

ROOT = blocks.ROOT

EXPECTED = {
    blocks.README: (
        "make-train-time",
        "make-train",
        "make-train-reading",
        "seeds-pooled",
        "sealed",
        "profiles",
        "make-train-stages",
        "make-test-time",
        "verdict",
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
    assert blocks.render(text) == text, f"{path} drifted from results/: run python -m helpers blocks"


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
