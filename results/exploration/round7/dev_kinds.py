"""Round 7: does GRPO trade additions for subtractions on the development set too? (issue #17)

Evaluates the cold start and GRPO adapters greedily on the development set of rounds 5-6 (64 + 64
course-written test problems of seed 12345, 100 tokens, batches of 32: exp5.py's evaluation) and prints
cold start -> GRPO per kind of problem (helpers.pipeline.outcomes_by_kind). Run from the repository root:
    python results/exploration/round7/dev_kinds.py outputs/grpo-cpu/cold_start ADAPTER_DIR [ADAPTER_DIR ...]"""
import sys

import torch

from helpers import profiles
from helpers.comparison import load_with_adapter
from helpers.evaluation import score
from helpers.models import generate, load_model
from helpers.pipeline import outcomes_by_kind
from helpers.problems import make_problems, problems_dataset

cold_dir, adapters = sys.argv[1], sys.argv[2:]
dev = [q for ops in (1, 2) for q in make_problems(64, ops=ops, max_number=20, split="test", seed=12345)]
prompts = list(problems_dataset(dev)["prompt"])


def dev_records(model, tokenizer, stage):
    with torch.random.fork_rng():
        texts = generate(model, tokenizer, prompts, max_new_tokens=100, temperature=0.0, batch_size=32)
    scored = score([""] * len(dev), [q.answer for q in dev], texts)
    return [{"set": "problems", "stage": stage, "index": i, "correct": bool(r["correct"])} for i, r in enumerate(scored)]


model, tokenizer = load_model(profiles.CPU, cold_dir, lora=False)
cold = dev_records(model, tokenizer, "cold_start")
del model
for adapter in adapters:
    model, tokenizer = load_with_adapter(profiles.CPU, adapter, cold_dir)
    grpo = dev_records(model, tokenizer, "grpo")
    rows = outcomes_by_kind(cold + grpo, dev)
    del model
    total = [sum(r[k] for r in rows) for k in ("cold_start", "grpo")]
    print(f"{adapter}: {total[0]} -> {total[1]} of {len(dev)}")
    for row in rows:
        print(f"  {row['ops']} op  {row['kind']:10s} {row['cold_start']:2d} -> {row['grpo']:2d} of {row['n']}"
              f"  ({row['gained']:2d}, {row['lost']:2d}; p = {row['p']:.2g})", flush=True)
    correct = {(r["stage"], r["index"]): r["correct"] for r in cold + grpo}
    cells = []
    for marker in (" buys ", " puts ", " picked "):  # the three wordings of helpers.problems._add
        idx = [i for i, q in enumerate(dev) if q.kind == "add" and marker in q.question]
        cells.append(f"{marker.strip()} {sum(correct['cold_start', i] for i in idx)} -> "
                     f"{sum(correct['grpo', i] for i in idx)} of {len(idx)}")
    print("  additions by wording: " + "; ".join(cells), flush=True)
