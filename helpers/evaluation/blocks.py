"""The READMEs' generated blocks: numbers and tables printed from committed results files, never typed.

A block sits between ``<!-- block:NAME -->`` and ``<!-- /block:NAME -->`` in one of :data:`FILES`;
:data:`BLOCKS` says what prints each. ``python tools/readme_blocks.py`` rewrites them in place;
``tests/test_readme_blocks.py`` fails when a README and its results files disagree.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

README = ROOT / "README.md"
RESULTS_README = ROOT / "results" / "README.md"
FILES = (README, RESULTS_README)
REFERENCE_RUN = "cpu-varied"  # make train's committed reference run (results/<name>)
SEED_RUNS = ("cpu-varied", "cpu-varied-seed1", "cpu-varied-seed2", "cpu-varied-seed3", "cpu-varied-seed4")


def markdown(frame, index: bool = True) -> str:
    """A ``DataFrame`` of strings or numbers as a GitHub markdown table."""
    head = ([""] if index else []) + [str(c) for c in frame.columns]
    rows = [([str(i)] if index else []) + [str(v) for v in row] for i, row in zip(frame.index, frame.values)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _results(name: str) -> Path:
    from helpers.evaluation.reports import RESULTS_DIR

    return RESULTS_DIR / name


def _link(name: str, up: str = "results/") -> str:
    return f"[`{up}{name}`]({up}{name}/summary.json)"


def time_file(path) -> dict:
    """``/usr/bin/time -v``'s report in ``path``: ``{"wall": "m:ss.ss", "peak_gib": float}``.

    Raises:
        ValueError: the file lacks the wall-clock or the maximum-resident-set line."""
    text = Path(path).read_text()
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text)
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    if not (wall and peak):
        raise ValueError(f"{path} is not a /usr/bin/time -v report")
    return {"wall": wall.group(1), "peak_gib": int(peak.group(1)) / 2**20}


def _make_train_time(up: str = "results/") -> str:
    from helpers.evaluation.reports import load_summary

    summary = load_summary(_results(REFERENCE_RUN))
    t, measured = summary["timings_s"], time_file(_results(REFERENCE_RUN) / "make_train_time.txt")
    return (
        f"On 2 CPU cores the reference run took {t['total_s'] / 60:.1f} minutes and {measured['peak_gib']:.1f} GiB "
        f"of peak memory ({summary['created_utc'][:10]}, {summary['machine']}; `make train` {measured['wall']} "
        f"with its venv check, [`make_train_time.txt`]({up}{REFERENCE_RUN}/make_train_time.txt)): "
        f"cold start {t['cold_start_s'] / 60:.1f} min, GRPO {t['grpo_s'] / 60:.1f} min "
        f"({summary['profile']['max_steps']} steps of {t['grpo_per_step_s']:.0f} s on average, plus "
        f"{t['heldout_s']:.0f} s of held-out evaluations), evaluation {t['evaluation_s'] / 60:.1f} min."
    )


def _accuracy_tables(up: str) -> str:
    from helpers.evaluation.reports import load_summary, problems_table

    summary = load_summary(_results(REFERENCE_RUN))
    parts = []
    for name, title in (
        ("problems", "Course-written test problems, in distribution"),
        ("transfer", "Transfer problems: wordings no training problem uses"),
    ):
        table = problems_table(summary[name])
        keep = [i for i in table.index if i.startswith("accuracy") or i.startswith("valid format")]
        parts.append(f"**{title}**, {_link(REFERENCE_RUN, up)}:\n")
        parts.append(markdown(table.loc[keep]) + "\n")
    return "\n".join(parts)


def _kinds(set_name: str) -> str:
    import pandas as pd

    from helpers.evaluation.reports import load_summary

    kinds = pd.DataFrame(load_summary(_results(REFERENCE_RUN))["kinds"][set_name])
    kinds["p"] = kinds["p"].map("{:.2g}".format)
    return markdown(kinds[["ops", "kind", "n", "cold_start", "grpo", "gained", "lost", "p"]], index=False)


def _make_train() -> str:
    title = "\n**Transfer, per kind** (cold start -> cold start + GRPO):\n\n"
    return _accuracy_tables("results/") + title + _kinds("transfer")


def _results_make_train() -> str:
    from helpers.evaluation.reports import load_summary, stage_table

    summary = load_summary(_results(REFERENCE_RUN))
    gsm8k = stage_table(summary["stages"], summary["mcnemar_start_vs_grpo"])
    return "\n".join(
        [
            _accuracy_tables(""),
            f"**GSM8K test, first {summary['evaluation']['n']} questions**:\n",
            markdown(gsm8k) + "\n",
            "**Per kind, in distribution**:\n",
            _kinds("problems") + "\n",
            "**Per kind, transfer**:\n",
            _kinds("transfer"),
        ]
    )


def _seed_rows() -> list[dict]:
    from helpers.evaluation.seeds import seed_row

    return [seed_row(_results(name)) for name in SEED_RUNS if (_results(name) / "summary.json").exists()]


def _make_train_reading() -> str:
    from helpers.evaluation.reports import gain_reading, load_summary

    return gain_reading(load_summary(_results(REFERENCE_RUN)))


def _seeds_pooled() -> str:
    from helpers.evaluation.seeds import SETS, pooled_sentence

    rows = _seed_rows()
    if len(rows) < 2:
        return f"Seeds committed so far: {len(rows)} of {len(SEED_RUNS)}; the pooled gain needs two or more."
    return "\n".join(f"- {pooled_sentence(rows, name)}" for name in SETS)


def _seeds() -> str:
    from helpers.evaluation.seeds import seeds_table

    rows = _seed_rows()
    return markdown(seeds_table(rows)) + "\n\n" + _seeds_pooled()


def _sealed() -> str:
    from helpers.evaluation.sealed_eval import SEALED_SUMMARY_FILE, sealed_rows

    opened = [n for n in SEED_RUNS if (_results(n) / SEALED_SUMMARY_FILE).exists()]
    if not opened:
        return "The sealed test set has not been opened yet."
    lines = ["| run | part | cold start | cold start + GRPO | McNemar p (gained, lost) |", "|---|---|---|---|---|"]
    for name in opened:
        for r in sealed_rows(json.loads((_results(name) / SEALED_SUMMARY_FILE).read_text())):
            lines.append(
                f"| `{name}` | {r['part']} | {r['cold_start']}/{r['n']} | {r['grpo']}/{r['n']} | "
                f"{r['p']:.2g} ({r['gained']}, {r['lost']}) |"
            )
    return "\n".join(lines)


BLOCKS = {
    "make-train-time": _make_train_time,
    "results-make-train-time": lambda: _make_train_time(""),
    "make-train": _make_train,
    "make-train-reading": _make_train_reading,
    "seeds-pooled": _seeds_pooled,
    "results-make-train": _results_make_train,
    "seeds": _seeds,
    "sealed": _sealed,
}


def render(text: str) -> str:
    """``text`` with every block's body replaced by what :data:`BLOCKS` prints now.

    Raises:
        KeyError: a block name with no entry in :data:`BLOCKS`."""

    def fill(m: re.Match) -> str:
        return f"{m.group(1)}\n{BLOCKS[m.group(2)]()}\n{m.group(4)}"

    return re.sub(r"(<!-- block:([\w-]+) -->)\n(?:(.*?)\n)?(<!-- /block:\2 -->)", fill, text, flags=re.S)


if __name__ == "__main__":
    for path in FILES:
        path.write_text(render(path.read_text()))
        print(f"rewrote the generated blocks of {path}")
