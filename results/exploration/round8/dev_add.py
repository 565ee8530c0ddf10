"""Round 8: does a change keep the additions that GRPO trades for subtractions? (issue #17)

Evaluates the cold start and GRPO adapters greedily (100 tokens, batches of 32: exp5.py's evaluation) on
the development set of rounds 5-7 (64 + 64 course-written test problems of seed 12345) and on 64 more
additions of the same seed (``make_problems(64, kinds=("add",))``, 21-22 of each wording; the development
set holds only 16 additions, 2 worded "buys b more"). Prints both per adapter. Run from the repository root:
    python results/exploration/round8/dev_add.py outputs/grpo-cpu/cold_start ADAPTER_DIR [ADAPTER_DIR ...]"""
import sys

import torch

from helpers import profiles
from helpers.comparison import load_with_adapter
from helpers.evaluation import score
from helpers.models import generate, load_model
from helpers.problems import make_problems, problems_dataset
from helpers.statistics import mcnemar

cold_dir, adapters = sys.argv[1], sys.argv[2:]
dev = [q for ops in (1, 2) for q in make_problems(64, ops=ops, max_number=20, split="test", seed=12345)]
adds = make_problems(64, ops=1, max_number=20, split="test", seed=12345, kinds=("add",))
problems = dev + adds
prompts = list(problems_dataset(problems)["prompt"])
WORDINGS = (" buys ", " puts ", " picked ")  # the three wordings of helpers.problems._add


def correct(model, tokenizer):
    with torch.random.fork_rng():
        texts = generate(model, tokenizer, prompts, max_new_tokens=100, temperature=0.0, batch_size=32)
    return [bool(r["correct"]) for r in score([""] * len(problems), [q.answer for q in problems], texts)]


def line(name, cold, after, idx):
    c, a = [cold[i] for i in idx], [after[i] for i in idx]
    t = mcnemar(c, a)
    return f"{name} {sum(c)} -> {sum(a)} of {len(idx)} ({t.lora_only}, {t.base_only}; p = {t.p_value:.2g})"


model, tokenizer = load_model(profiles.CPU, cold_dir, lora=False)
cold = correct(model, tokenizer)
del model
parts = {"dev all": range(128), "dev 1 op": range(64), "dev 2 ops": range(64, 128), "extra additions": range(128, 192)}
for adapter in adapters:
    model, tokenizer = load_with_adapter(profiles.CPU, adapter, cold_dir)
    after = correct(model, tokenizer)
    del model
    print(adapter)
    for name, idx in parts.items():
        print("  " + line(name, cold, after, list(idx)))
    print("  extra additions by wording: " + "; ".join(
        line(w.strip(), cold, after, [128 + i for i, q in enumerate(adds) if w in q.question]) for w in WORDINGS), flush=True)
