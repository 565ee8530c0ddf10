"""Signatures read from a pinned wheel's source (AST, nothing imported), and vLLM's as a committed table.

vLLM's wheel is 370 MB, too big to download in CI, so its rows of ``fakes/pinned.py`` (and the
facts the fakes model, :data:`VLLM_FACTS`) are extracted once and committed in :data:`VLLM_TABLE`;
``tests/test_gpu_contract.py`` checks the rows against that table in CI, and against the wheel itself
where it is in the wheel cache (then the table must equal a fresh extraction).

Refresh the table (after a change of the vllm pin in ``requirements.txt`` or of a vLLM row)::

    pip download --no-deps -d ~/.cache/grpo-course/wheels vllm==<the pin>
    python tests/wheel_signatures.py ~/.cache/grpo-course/wheels/vllm-<the pin>-*.whl
"""

from __future__ import annotations

import ast
import hashlib
import json
import sys
import zipfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent


VLLM_TABLE = TESTS / "data" / "vllm_table.json"


# Source text the fakes rely on, beyond signatures: (file in the wheel, text it must hold).
VLLM_FACTS = (
    ("vllm/v1/worker/gpu_worker.py", "assert allocator.get_current_usage() == 0, ("),
    ("vllm/v1/worker/gpu_worker.py", '"Sleep mode can only be used for one instance per process."'),
    ("vllm/v1/worker/gpu_worker.py", 'allocator.sleep(offload_tags=("weights",) if level == 1 else tuple())'),
    ("vllm/device_allocator/cumem.py", "def get_current_usage(self) -> int:"),
    ("vllm/device_allocator/cumem.py", 'instance: "CuMemAllocator" = None'),
    ("vllm/device_allocator/cumem.py", "data = self.pointer_to_data.pop(ptr)"),
)


def function(text: str, qualified: str) -> ast.FunctionDef:
    """The definition of ``qualified`` (``"name"`` or ``"Class.name"``) in the module source ``text``."""
    *owner, name = qualified.split(".")
    tree = ast.parse(text)
    scopes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == owner[0]] if owner else [tree]
    [fn] = [n for scope in scopes for n in scope.body if isinstance(n, ast.FunctionDef) and n.name == name]
    return fn


def signature(text: str, qualified: str) -> tuple[tuple[str, ...], int, bool]:
    """(parameters in order, how many may be positional, has **kwargs) as defined in the source;
    a msgspec Struct (vLLM's SamplingParams): its public fields, keyword-only."""
    *owner, name = qualified.split(".")
    classes = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.ClassDef) and n.name == name]
    if not owner and classes:
        fields = [n.target.id for n in classes[0].body if isinstance(n, ast.AnnAssign)]
        return tuple(f for f in fields if not f.startswith("_")), 0, False
    args = function(text, qualified).args
    positional = [a.arg for a in args.posonlyargs + args.args if a.arg not in ("self", "model")]
    return tuple(positional + [a.arg for a in args.kwonlyargs]), len(positional), args.kwarg is not None


def row_key(path: str, qualified: str) -> str:
    return f"{path}::{qualified}"


def extract_vllm_table(wheel: Path, rows) -> dict:
    """The table for ``rows`` (``fakes/pinned.py`` rows of vLLM) and :data:`VLLM_FACTS`, read from ``wheel``.

    Raises:
        AssertionError: a fact's text is not in the wheel (the fakes model something it does not do).
    """
    wheel = Path(wheel)
    with zipfile.ZipFile(wheel) as archive:
        sources = {
            path: archive.read(path).decode("utf-8") for path in {r.path for r in rows} | {p for p, _ in VLLM_FACTS}
        }
    for path, fact in VLLM_FACTS:
        assert fact in sources[path], f"{path} in {wheel.name} no longer holds {fact!r}"
    signatures = {}
    for row in sorted(rows, key=lambda r: (r.path, r.qualified)):
        params, positional, var_keyword = signature(sources[row.path], row.qualified)
        signatures[row_key(row.path, row.qualified)] = {
            "params": list(params),
            "positional": positional,
            "var_keyword": var_keyword,
        }
    return {
        "release": wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1],
        "wheel": wheel.name,
        "wheel_sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
        "sources_sha256": {p: hashlib.sha256(t.encode()).hexdigest() for p, t in sorted(sources.items())},
        "rows": signatures,
        "facts": [list(fact) for fact in VLLM_FACTS],
    }


def vllm_table() -> dict:
    """The committed table (:data:`VLLM_TABLE`)."""
    return json.loads(VLLM_TABLE.read_text())


def vllm_rows() -> list:
    """The rows of ``fakes/pinned.py`` that belong to vLLM."""
    sys.path.insert(0, str(TESTS / "fakes"))
    try:
        import importlib

        pinned = importlib.import_module("pinned")
    finally:
        sys.path.remove(str(TESTS / "fakes"))
    return [row for row in pinned.PINNED.values() if row.release == pinned.VLLM]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    table = extract_vllm_table(Path(sys.argv[1]), vllm_rows())
    VLLM_TABLE.write_text(json.dumps(table, indent=1) + "\n")
    print(f"wrote {VLLM_TABLE} ({len(table['rows'])} rows, {len(table['facts'])} facts) from {sys.argv[1]}")
