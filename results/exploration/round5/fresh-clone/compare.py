"""Compare a run of `make train` with the committed reference run, ignoring times, commit, dates, machine.
Usage: python compare.py REF_RUN_DIR NEW_RUN_DIR   (the reference: results/cpu-curriculum; a run: outputs/grpo-cpu)
Compares summary.json key by key and, per evaluated problem, the outcome fields of eval_outcomes.jsonl
(reference) against eval_records.jsonl (the run; it also holds the completions)."""
import json
import sys
from pathlib import Path

ref_dir, new_dir = map(Path, sys.argv[1:3])
SKIP = {"timings_s", "commit", "created_utc", "machine", "seconds", "seconds_per_question", "heldout/seconds"}


def flat(d, p=""):
    if isinstance(d, dict):
        for k, v in d.items():
            if k not in SKIP:
                yield from flat(v, f"{p}.{k}" if p else k)
    elif isinstance(d, list):
        for i, v in enumerate(d):
            yield from flat(v, f"{p}[{i}]")
    else:
        yield p, d


a, b = (dict(flat(json.loads((d / "summary.json").read_text()))) for d in (ref_dir, new_dir))
diff = [k for k in sorted(set(a) | set(b)) if a.get(k, "<missing>") != b.get(k, "<missing>")]
print(f"summary.json: {len(set(a) | set(b))} keys compared (times, commit, dates, machine skipped); {len(diff)} differ")
for k in diff:
    print(f"  {k}: {a.get(k, '<missing>')} | {b.get(k, '<missing>')}")
KEYS = ("correct", "correct_format_free", "format_strict", "format_valid", "placeholder", "tokens")


def outcomes(path):
    rows = (json.loads(line) for line in path.read_text().splitlines())
    return {(r["set"], r["stage"], r["index"]): tuple(r.get(k) for k in KEYS) for r in rows if "set" in r}


new_records = new_dir / "eval_records.jsonl"
if new_records.exists():
    ro, no = outcomes(ref_dir / "eval_outcomes.jsonl"), outcomes(new_records)
    same = sum(ro[k] == no.get(k) for k in ro)
    print(f"per-problem outcomes {KEYS}: {same} of {len(ro)} identical ({len(no)} records in the run)")
import csv  # noqa: E402

for name in ("metrics.csv", "cold_start_metrics.csv"):
    rows = [list(csv.DictReader(open(d / name))) for d in (ref_dir, new_dir)]
    cells = [(k, x[k], y[k]) for x, y in zip(*rows) for k in x if "time" not in k and "seconds" not in k]
    print(f"{name}: {len(rows[0])} and {len(rows[1])} rows; {sum(u != v for _, u, v in cells)} of {len(cells)} "
          "cells differ (time columns skipped)")
