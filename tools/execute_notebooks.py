"""Execute notebooks and save the copies with their outputs: what a learner browsing the repository sees.

    python tools/execute_notebooks.py notebooks/*.ipynb --out notebooks/executed   # make executed

Each notebook runs in its own kernel from the ``notebooks/`` folder (as Jupyter and nbmake run it), with
the environment it is given (``GRPO_QUICK=1`` for smoke size; ``make executed`` runs each at the size it
defaults to on a CPU). The copy is written to ``--out`` under the same name, with a first cell that says
when, where and how it ran and credits GSM8K; a cell that fails stops that notebook and is reported, the
others still run. ``tests/test_executed_notebooks.py`` fails when a copy's cells differ from its notebook's.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

HEADER_ID = "executed-copy"  # the id of the cell this tool puts first in every copy
REDACTED = "[a line of a GSM8K solution: not kept in the executed copy]"
MIN_LINE = 25  # characters: shorter solution lines ("#### 18", "18 + 4 = 22") say nothing of GSM8K's text
_CALC = re.compile(r"<<[^>]*>>")
_TAG = re.compile(r"<[^<>]+>")


def _plain(line: str) -> str:
    """A line as text: HTML entities decoded, GSM8K's calculator annotations and HTML tags removed, stripped."""
    return _TAG.sub("", _CALC.sub("", html.unescape(line))).strip()


def relink(markdown: str) -> str:
    """A notebook's markdown as it reads from ``notebooks/executed/``: links that climb out of
    ``notebooks/`` (``](../results/...)``) climb one folder more; links to sibling notebooks stay, since
    their executed copies sit beside."""
    return markdown.replace("](../", "](../../")


def solution_lines(data_dir=None) -> set[str]:
    """Every line of GSM8K's worked solutions (train and test, ``GSM8K_DIR``) of at least :data:`MIN_LINE`
    characters, calculator annotations removed, stripped: what an executed copy must not show. Empty without
    the data."""
    data_dir = Path(data_dir or os.environ.get("GSM8K_DIR") or "")
    lines = set()
    for split in ("train", "test"):
        path = data_dir / f"{split}.jsonl"
        if data_dir.parts and path.exists():
            for row in path.read_text().splitlines():
                for line in json.loads(row)["answer"].splitlines():
                    line = _plain(line)
                    if len(line) >= MIN_LINE:
                        lines.add(line)
    return lines


def redact(text: str, lines: set[str]) -> str:
    """``text`` with every line that is a GSM8K solution line (:func:`solution_lines`) replaced by
    :data:`REDACTED`: the copies keep the questions the notebooks print (with GSM8K's attribution), no other
    GSM8K text."""
    return "\n".join(REDACTED if _plain(line) in lines else line for line in text.split("\n"))


def redact_outputs(notebook, lines: set[str]) -> int:
    """Redact every text output of ``notebook`` in place; returns how many lines were replaced."""
    count = 0
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            fields = [("text", output)] if "text" in output else []
            fields += [(key, output["data"]) for key in ("text/plain", "text/html", "text/markdown")
                       if key in output.get("data", {})]  # fmt: skip
            for key, holder in fields:
                before = holder[key] if isinstance(holder[key], str) else "".join(holder[key])
                after = redact(before, lines)
                count += after.count(REDACTED) - before.count(REDACTED)
                holder[key] = after
    return count


def header(path: Path, seconds: float, ok: bool) -> str:
    """The copy's first cell: what ran, when, on what machine, at what size, and GSM8K's attribution."""
    import datetime

    from helpers.evaluation.provenance import git_commit, machine

    size = "smoke size (GRPO_QUICK=1)" if os.environ.get("GRPO_QUICK") == "1" else "the size it defaults to"
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"**Executed copy** of [`{path.name}`](../{path.name}), run {when} on {machine()} (no GPU), at {size}, "
        f"commit `{git_commit()}`, in {seconds / 60:.1f} min{'' if ok else ' (a cell FAILED: see below)'}; "
        "made by `make executed`. Open the notebook itself to run it: your numbers will differ where sampling "
        "or hardware does.\n\nQuestions printed from GSM8K (Cobbe et al. 2021, "
        "[MIT licence](https://github.com/openai/grade-school-math/blob/master/LICENSE)) appear below as the "
        "notebook prints them; lines of GSM8K's worked solutions are replaced by a note."
    )


def execute(path: Path, out_dir: Path, timeout: int = 1800) -> bool:
    """Run ``path`` and write it with its outputs to ``out_dir / path.name``; True when every cell ran."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    started, ok = time.perf_counter(), True
    try:
        client.execute()
    except CellExecutionError as error:
        ok = False
        print(f"{path.name}: a cell failed\n{str(error)[:2000]}", file=sys.stderr)
    redacted = redact_outputs(notebook, solution_lines())
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source = relink(cell.source)
    out_dir.mkdir(parents=True, exist_ok=True)
    first = nbformat.v4.new_markdown_cell(header(path, time.perf_counter() - started, ok))
    first["id"] = HEADER_ID
    notebook.cells.insert(0, first)
    nbformat.write(notebook, out_dir / path.name)
    print(
        f"{path.name}: {'ran' if ok else 'FAILED'} in {time.perf_counter() - started:.0f} s -> {out_dir / path.name}"
        f" ({redacted} GSM8K solution lines redacted)"
    )
    return ok


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--timeout", type=int, default=1800, help="seconds a cell may take")
    args = parser.parse_args(argv)
    results = [execute(p.resolve(), args.out, args.timeout) for p in args.notebooks]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
