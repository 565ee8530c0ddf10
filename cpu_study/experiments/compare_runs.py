"""Do two `make train` runs agree record for record?

Compares two run folders (``outputs/grpo-cpu`` of two clones, say): every evaluation record of
``eval_records.jsonl`` (all fields but the seconds it took), every row of ``metrics.csv`` (all columns
but wall-clock times), the LoRA adapter's sha256, and the stage counts of ``summary.json``. Prints a
report; exits 1 when anything but the times differs.

    python cpu_study/experiments/compare_runs.py RUN_A RUN_B
"""

import argparse
import csv
import hashlib
import json
import sys
from pathlib import Path

TIMES = ("seconds", "step_time", "time", "runtime", "per_second")


def records(run: Path) -> list[dict]:
    with open(run / "eval_records.jsonl", encoding="utf-8") as f:
        return [{k: v for k, v in json.loads(line).items() if k != "seconds"} for line in f]


def metrics(run: Path) -> list[dict]:
    with open(run / "metrics.csv", newline="") as f:
        return [{k: v for k, v in row.items() if not any(t in k for t in TIMES)} for row in csv.DictReader(f)]


def adapter_sha256(run: Path) -> str:
    return hashlib.sha256((run / "lora_adapter" / "adapter_model.safetensors").read_bytes()).hexdigest()


def stage_counts(run: Path) -> dict:
    summary = json.loads((run / "summary.json").read_text())
    problems = {stage: s["all"]["correct"] for stage, s in summary["problems"]["stages"].items()}
    return {"problems": problems, "gsm8k": {stage: s["correct"] for stage, s in summary["stages"].items()}}


def main(a: Path, b: Path) -> int:
    ra, rb = records(a), records(b)
    differ = sum(x != y for x, y in zip(ra, rb, strict=False)) + abs(len(ra) - len(rb))
    ma, mb = metrics(a), metrics(b)
    metric_rows = sum(x != y for x, y in zip(ma, mb, strict=False)) + abs(len(ma) - len(mb))
    same_adapter = adapter_sha256(a) == adapter_sha256(b)
    print(f"A: {a}\nB: {b}")
    print(f"evaluation records: {len(ra)} and {len(rb)}; differing (all fields but seconds): {differ}")
    print(f"metrics.csv rows: {len(ma)} and {len(mb)}; differing (all columns but times): {metric_rows}")
    print(f"LoRA adapter sha256: {adapter_sha256(a)[:16]}... and {adapter_sha256(b)[:16]}...; same: {same_adapter}")
    print(f"stage counts A: {stage_counts(a)}\nstage counts B: {stage_counts(b)}")
    return 0 if differ == 0 and metric_rows == 0 and same_adapter else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Do two `make train` runs agree record for record? Exit 1 if not.")
    parser.add_argument("run_a", type=Path, help="a run folder (outputs/grpo-cpu of one clone)")
    parser.add_argument("run_b", type=Path, help="the other run folder")
    args = parser.parse_args()
    sys.exit(main(args.run_a, args.run_b))
