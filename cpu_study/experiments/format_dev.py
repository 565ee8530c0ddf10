"""Does the cpu recipe's GRPO raise the valid format on questions it never trains on? A development check.

Trains the cpu profile's cold start once (or reuses ``--cold``), then, for each seed, the cpu
profile's GRPO stage from it, and evaluates the cold start (adapter off) and cold start + GRPO
greedily on a development slice of GSM8K *train*: rows ``--first`` to ``--first + --n`` (the cold
start reads rows 0-39; GRPO trains on course-written problems only). Never the test or sealed sets.
Writes ``<out>/seed<S>/outcomes.jsonl`` (right, valid format, tokens; no text) and ``<out>/result.json``
(per seed: valid format and right answers before and after, McNemar's exact p).

    GSM8K_DIR=... python cpu_study/experiments/format_dev.py --out outputs/format-dev --seeds 3407 1 2

docs/LOG.md has the run made with it and its verdict.
"""

import argparse
import json
import time
from pathlib import Path

from helpers.data.gsm8k import load_gsm8k
from helpers.data.problem_sets import grpo_prompts
from helpers.evaluation.before_after import decoding, evaluate_before_after
from helpers.evaluation.provenance import git_commit, machine
from helpers.evaluation.stats import mcnemar_exact_p
from helpers.training.cold_start import train_cold_start
from helpers.training.profiles import CPU
from helpers.training.trainer import train

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--out", required=True)
parser.add_argument("--cold", help="a merged cold start to reuse (default: train one into <out>/cold_start)")
parser.add_argument("--seeds", type=int, nargs="+", default=[CPU.seed, 1, 2])
parser.add_argument("--first", type=int, default=1000, help="first GSM8K train row of the development slice")
parser.add_argument("--n", type=int, default=128, help="questions in the development slice")
args = parser.parse_args()

out = Path(args.out)
out.mkdir(parents=True, exist_ok=True)
cold_dir = args.cold or train_cold_start(CPU, out).model_dir
dev = load_gsm8k("train").select(range(args.first, args.first + args.n))
result = {
    "command": "python cpu_study/experiments/format_dev.py "
    + " ".join(f"--{k} {' '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in vars(args).items() if v),
    "commit": git_commit(),
    "machine": machine(),
    "set": f"GSM8K train rows {args.first}-{args.first + args.n - 1} (development)",
    "seeds": {},
}
for seed in args.seeds:
    started = time.perf_counter()
    profile = CPU.replace(seed=seed)
    run_dir = out / f"seed{seed}"
    run = train(profile, output_dir=run_dir, dataset=grpo_prompts(profile), model_path=cold_dir, heldout=None)
    start, grpo = evaluate_before_after(
        run.trainer.model,
        run.trainer.processing_class,
        dev,
        run.adapter_dir,
        **decoding(profile, greedy=True),
        batch_size=32,
        labels=(f"cold start (seed {seed})", f"GRPO (seed {seed})"),
    )
    row = {}
    for key in ("format_valid", "correct"):
        before = [bool(r[key]) for r in start.records]
        after = [bool(r[key]) for r in grpo.records]
        gained = sum(a and not b for a, b in zip(after, before))
        lost = sum(b and not a for a, b in zip(after, before))
        row[key] = {
            "cold_start": sum(before),
            "grpo": sum(after),
            "gained": gained,
            "lost": lost,
            "p": mcnemar_exact_p(gained, lost),
        }
    row["seconds"] = round(time.perf_counter() - started, 1)
    result["seeds"][str(seed)] = row
    with open(run_dir / "outcomes.jsonl", "w") as f:
        for stage, r in (("cold_start", start), ("grpo", grpo)):
            for i, rec in enumerate(r.records):
                f.write(
                    json.dumps(
                        {
                            "stage": stage,
                            "index": i,
                            "correct": rec["correct"],
                            "format_valid": rec["format_valid"],
                            "tokens": rec.get("tokens"),
                        }
                    )
                    + "\n"
                )
    (out / "result.json").write_text(json.dumps(result, indent=1) + "\n")
    print("RESULT", seed, json.dumps(row), flush=True)
