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
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

HEADER_ID = "executed-copy"  # the id of the cell this tool puts first in every copy


def header(path: Path, seconds: float, ok: bool) -> str:
    """The copy's first cell: what ran, when, on what machine, at what size, and GSM8K's attribution."""
    import datetime
    import os

    from helpers.evaluation.provenance import git_commit, machine

    size = "smoke size (GRPO_QUICK=1)" if os.environ.get("GRPO_QUICK") == "1" else "the size it defaults to"
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"**Executed copy** of [`{path.name}`](../{path.name}), run {when} on {machine()} (no GPU), at {size}, "
        f"commit `{git_commit()}`, in {seconds / 60:.1f} min{'' if ok else ' (a cell FAILED: see below)'}; "
        "made by `make executed`. Open the notebook itself to run it: your numbers will differ where sampling "
        "or hardware does.\n\nQuestions printed from GSM8K (Cobbe et al. 2021, "
        "[MIT licence](https://github.com/openai/grade-school-math/blob/master/LICENSE)) appear below as the "
        "notebook prints them."
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
    out_dir.mkdir(parents=True, exist_ok=True)
    first = nbformat.v4.new_markdown_cell(header(path, time.perf_counter() - started, ok))
    first["id"] = HEADER_ID
    notebook.cells.insert(0, first)
    nbformat.write(notebook, out_dir / path.name)
    print(f"{path.name}: {'ran' if ok else 'FAILED'} in {time.perf_counter() - started:.0f} s -> {out_dir / path.name}")
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
