"""The README's generated blocks: tables printed from committed results files, never typed by hand.

A block sits between ``<!-- block:NAME -->`` and ``<!-- /block:NAME -->`` in ``README.md``;
:data:`BLOCKS` says what prints each. ``python tools/readme_blocks.py`` rewrites them in place;
``tests/test_readme_blocks.py`` fails when the README and its results files disagree.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

README = ROOT / "README.md"
REFERENCE_RUN = "cpu-varied"  # make train's committed reference run (results/<name>)


def markdown(frame, index: bool = True) -> str:
    """A ``DataFrame`` of strings or numbers as a GitHub markdown table."""
    head = ([""] if index else []) + [str(c) for c in frame.columns]
    rows = [([str(i)] if index else []) + [str(v) for v in row] for i, row in zip(frame.index, frame.values)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _make_train() -> str:
    import pandas as pd

    from helpers.evaluation.reports import RESULTS_DIR, load_summary, problems_table

    summary = load_summary(RESULTS_DIR / REFERENCE_RUN)
    parts = []
    for name, title in (("problems", "In distribution"), ("transfer", "Transfer (wordings never trained on)")):
        table = problems_table(summary[name])
        keep = [i for i in table.index if i.startswith("accuracy") or i.startswith("valid format")]
        parts.append(f"**{title}**, [`results/{REFERENCE_RUN}`](results/{REFERENCE_RUN}/summary.json):\n")
        parts.append(markdown(table.loc[keep]) + "\n")
    kinds = pd.DataFrame(summary["kinds"]["transfer"])
    kinds["p"] = kinds["p"].map("{:.2g}".format)
    parts.append("**Transfer, per kind** (right of `n`, cold start -> cold start + GRPO):\n")
    parts.append(markdown(kinds[["kind", "n", "cold_start", "grpo", "gained", "lost", "p"]], index=False))
    return "\n".join(parts)


BLOCKS = {"make-train": _make_train}


def render(text: str) -> str:
    """``text`` with every block's body replaced by what :data:`BLOCKS` prints now.

    Raises:
        KeyError: a block name with no entry in :data:`BLOCKS`."""

    def fill(m: re.Match) -> str:
        return f"{m.group(1)}\n{BLOCKS[m.group(2)]()}\n{m.group(4)}"

    return re.sub(r"(<!-- block:([\w-]+) -->)\n(.*?)\n(<!-- /block:\2 -->)", fill, text, flags=re.S)


if __name__ == "__main__":
    README.write_text(render(README.read_text()))
    print(f"rewrote the generated blocks of {README}")
