"""Exit 1 when a notebook given (or any under notebooks/) holds outputs or execution counts: the course
commits notebooks without outputs, and CI runs them. Used by the pre-commit hook."""

import json
import sys
from pathlib import Path


def with_outputs(paths) -> list[str]:
    """The notebooks among ``paths`` that have a code cell with outputs or an execution count."""
    return [
        str(p)
        for p in paths
        if any(
            c["cell_type"] == "code" and (c.get("outputs") or c.get("execution_count"))
            for c in json.loads(Path(p).read_text())["cells"]
        )
    ]


if __name__ == "__main__":
    bad = with_outputs(sys.argv[1:] or sorted(Path("notebooks").glob("*.ipynb")))
    for path in bad:
        print(f"{path}: has outputs; clear them before committing (Jupyter: Edit > Clear All Outputs)")
    sys.exit(1 if bad else 0)
