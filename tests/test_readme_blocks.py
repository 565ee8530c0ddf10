"""tools/readme_blocks.py: the README's generated tables equal what their results files print."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("readme_blocks", ROOT / "tools" / "readme_blocks.py")
blocks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(blocks)


def test_the_readme_blocks_match_their_results_files():
    text = blocks.README.read_text()
    assert "<!-- block:make-train -->" in text
    assert blocks.render(text) == text, "README drifted from results/: run python tools/readme_blocks.py"


def test_a_block_is_rewritten_from_its_source():
    blocks.BLOCKS["demo"] = lambda: "| a |\n|---|"
    try:
        stale = "x\n<!-- block:demo -->\nold\n<!-- /block:demo -->\ny"
        assert blocks.render(stale) == "x\n<!-- block:demo -->\n| a |\n|---|\n<!-- /block:demo -->\ny"
    finally:
        del blocks.BLOCKS["demo"]
