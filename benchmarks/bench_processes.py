"""Time per GRPO step with 1 and with 2 training processes, same size per process (CPU profile).

Three runs of ``--profile cpu --quick --cold-start-examples 0 --max-steps N`` (each process: one
prompt's group of 4 completions x 32 tokens per step; no cold start, the short evaluation after):

* ``python -m helpers train ...`` - 1 process, torch's default threads (one per core);
* the same with ``OMP_NUM_THREADS=1`` - 1 process on one core;
* docs/multi_gpu.md's ``OMP_NUM_THREADS=1 accelerate launch --config_file configs/multi_gpu.yaml
  --num_processes 2 -m helpers train ...`` - 2 processes, one core each, 2 groups per step.

Prints, from each run's ``metrics.csv``, the median ``step_time_s`` of steps 2..N (step 1 warms
up), the completions per step and per second, and the run's wall time.

    GSM8K_DIR=/path/to/gsm8k python benchmarks/bench_processes.py [--steps 5]
"""

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRAIN = ["-m", "helpers", "train", "--profile", "cpu", "--quick", "--cold-start-examples", "0"]
LAUNCH = [
    sys.executable,
    "-m",
    "accelerate.commands.launch",
    "--config_file",
    "configs/multi_gpu.yaml",
    "--num_processes",
    "2",
]


def run(label: str, command: list[str], threads: str | None, out: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("GRPO_QUICK", None)
    if threads:
        env["OMP_NUM_THREADS"] = threads
    else:
        env.pop("OMP_NUM_THREADS", None)
    started = time.perf_counter()
    subprocess.run(command + ["--output-dir", str(out)], cwd=REPO, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - started
    with open(out / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    step = statistics.median(float(r["step_time_s"]) for r in rows[1:])
    return {"label": label, "step_s": step, "steps": len(rows), "wall_s": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    steps = ["--max-steps", str(args.steps)]
    plan = [
        ("1 process, default threads", [sys.executable, *TRAIN, *steps], None, 4),
        ("1 process, OMP_NUM_THREADS=1", [sys.executable, *TRAIN, *steps], "1", 4),
        ("2 processes, OMP_NUM_THREADS=1", [*LAUNCH, *TRAIN, *steps], "1", 8),
    ]
    print(f"{'run':34s} {'s/step':>7s} {'completions/step':>17s} {'completions/s':>14s} {'wall s':>7s}")
    with tempfile.TemporaryDirectory() as tmp:
        for i, (label, command, threads, completions) in enumerate(plan):
            r = run(label, command, threads, Path(tmp) / f"run{i}")
            print(
                f"{label:34s} {r['step_s']:7.2f} {completions:17d} {completions / r['step_s']:14.2f} "
                f"{r['wall_s']:7.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
