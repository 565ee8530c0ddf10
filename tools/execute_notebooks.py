"""Execute notebooks and save the copies with their outputs: what a learner browsing the repository sees.

    python tools/execute_notebooks.py notebooks/05_grpo_training.ipynb --out /tmp/executed

Each notebook runs in its own kernel from the ``notebooks/`` folder (as Jupyter and nbmake run it), with
the environment it is given (``GRPO_QUICK=1`` for smoke size). The copy is written to ``--out`` under the
same name; a cell that fails stops that notebook and is reported, the others still run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


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
