"""Two processes on CPU: docs/multi_gpu.md's `accelerate launch` command runs data-parallel GRPO at smoke size.

The command is read from docs/multi_gpu.md ("More than one GPU"), so that page shows what CI runs; the
test only adds ``--output-dir``. Rank 1 runs under an audit hook (a ``sitecustomize`` put first on
its path) that logs its start, its normal exit and every file it opens for writing under the
run's folder: that log must say "start", "exit" and nothing else.
"""

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow

# Rank 1 only: log start, exit and each open for writing under GRPO_TEST_WATCHED (Python-level opens:
# json, csv, PNG, adapter and tokenizer configs; safetensors' Rust writer is not seen, its neighbours are).
AUDIT_HOOK = """
import atexit, os, sys
if os.environ.get("RANK") == "1" and os.environ.get("GRPO_TEST_WATCHED"):
    _watched = os.environ["GRPO_TEST_WATCHED"]
    _log = open(os.environ["GRPO_TEST_RANK1_LOG"], "a", buffering=1)
    _log.write("start\\n")
    atexit.register(lambda: _log.write("exit\\n"))
    _WRITING = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

    def _audit(event, args):
        if event != "open" or not isinstance(args[0], (str, bytes, os.PathLike)):
            return
        path, mode, flags = os.fsdecode(args[0]), args[1], args[2] or 0
        writing = any(c in mode for c in "wax+") if isinstance(mode, str) else bool(flags & _WRITING)
        if writing and os.path.abspath(path).startswith(_watched):
            _log.write(f"write {path}\\n")

    sys.addaudithook(_audit)
"""


def readme_cpu_command() -> str:
    """The CPU line of docs/multi_gpu.md ("More than one GPU")."""
    section = (REPO / "docs" / "multi_gpu.md").read_text()
    [line] = re.findall(r"^OMP_NUM_THREADS=1 accelerate launch .*--profile cpu --quick$", section, re.M)
    return line


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory, gsm8k_dir, smollm2_dir):
    """Runs the docs/multi_gpu.md command once (about 1.5 min on 2 cores); returns (result, output dir, rank-1 log)."""
    work = tmp_path_factory.mktemp("two-processes")
    hook, out, log = work / "hook", work / "run", work / "rank1.log"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(AUDIT_HOOK)
    words = shlex.split(readme_cpu_command())
    env = {
        **os.environ,
        **dict(w.split("=", 1) for w in words[:1]),
        "PYTHONPATH": f"{hook}{os.pathsep}{REPO}",
        "GRPO_TEST_WATCHED": str(out),
        "GRPO_TEST_RANK1_LOG": str(log),
    }
    env.pop("GRPO_QUICK", None)
    assert words[1:3] == ["accelerate", "launch"]
    command = [sys.executable, "-m", "accelerate.commands.launch", *words[3:], "--output-dir", str(out)]
    started = time.perf_counter()
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    result.seconds = time.perf_counter() - started
    assert result.returncode == 0, f"{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    return result, out, log


def test_both_ranks_train_and_the_global_batch_is_twice_the_per_process_one(two_processes):
    result, out, log = two_processes
    summary = json.loads((out / "summary.json").read_text())
    assert summary["distributed"] == {
        "processes": 2,
        "per_device_train_batch_size": 4,
        "gradient_accumulation_steps": 1,
        "num_generations": 4,
        "global_batch": 8,
    }
    assert (
        "GRPO ran on 2 processes; global batch 8 completions = 4 per process x 2 processes x 1 "
        "accumulation step (2 prompts x 4 completions)" in result.stdout
    )
    assert log.read_text().splitlines()[0] == "start"  # rank 1 ran ...
    assert log.read_text().splitlines()[-1] == "exit"  # ... to its normal end
    metrics = (out / "metrics.csv").read_text().splitlines()
    assert [row.split(",")[0] for row in metrics[1:]] == ["0", "1", "2"]  # step 0: held-out accuracy before GRPO
    # A hang guard, not a speed test (speed lives in benchmarks/): 196 s was seen on 2 busy cores.
    assert result.seconds < 280, f"the 2-process smoke run took {result.seconds:.0f} s"


def test_the_main_process_alone_writes_every_file(two_processes):
    _, out, log = two_processes
    assert log.read_text().splitlines() == ["start", "exit"], "rank 1 opened files for writing"
    for name in (
        "cold_start/model.safetensors",
        "cold_start_metrics.csv",
        "metrics.csv",
        "training_curves.png",
        "lora_adapter/adapter_model.safetensors",
        "lora_adapter/adapter_config.json",
        "summary.json",
        "eval_records.jsonl",
    ):
        assert (out / name).exists(), name
    adapters = [p for p in out.rglob("adapter_config.json")]
    assert adapters == [out / "lora_adapter" / "adapter_config.json"]  # one adapter, no per-rank copies
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["stages"]) == ["base", "cold_start", "grpo"] and summary["evaluation"]["n"] == 4


def test_each_line_is_printed_once(two_processes):
    result, _, _ = two_processes
    out = result.stdout
    for line in (
        "Using the CPU profile",
        "Stage 1/3 - cold start",
        "Stage 2/3 - GRPO",
        "Stage 3/3 - evaluation",
        "GRPO ran on 2 processes",
        "LoRA adapter:",
    ):
        assert out.count(line) == 1, line
    assert "[rank1]" not in result.stderr
