"""Cold-start variants: n GSM8K + k1 one-op + k2 two-op worked problems; dev greedy eval + pass@8 on 2-op dev."""
import argparse, json, random, time
from pathlib import Path
from collections import Counter
from datasets import Dataset
from helpers import profiles
from helpers.cold_start import train_cold_start, format_solution, PROBLEMS_SEED
from helpers.data import read_rows, make_prompt, extract_hash_answer
from helpers.problems import make_problems, problems_dataset
from helpers.models import load_model
from helpers.evaluation import evaluate
from helpers.pass_at_k import correct_counts, pass_at_k_summary
p = argparse.ArgumentParser()
p.add_argument("--out", required=True); p.add_argument("--gsm", type=int, default=80)
p.add_argument("--one", type=int, default=40); p.add_argument("--two", type=int, default=40)
p.add_argument("--bs", type=int, default=2); p.add_argument("--lr", type=float, default=3e-4)
p.add_argument("--epochs", type=int, default=1); p.add_argument("--max2", type=int, default=20)
a = p.parse_args()
out = Path(a.out)
rows, _ = read_rows("train")
pairs = [(r["question"], r["answer"]) for r in rows[:a.gsm]]
written = [q for ops, k in ((1, a.one), (2, a.two)) if k for q in make_problems(k, ops=ops, max_number=a.max2 if ops == 2 else 20, split="train", seed=PROBLEMS_SEED)]
pairs += [(q.question, q.solution) for q in written]
random.Random(0).shuffle(pairs)
ds = Dataset.from_dict({"prompt": [make_prompt(q) for q, _ in pairs],
                        "completion": [[{"role": "assistant", "content": format_solution(s)}] for _, s in pairs]})
prof = profiles.CPU.replace(cold_start_batch_size=a.bs, cold_start_learning_rate=a.lr, cold_start_epochs=a.epochs)
t0 = time.perf_counter()
c = train_cold_start(prof, out, dataset=ds)
sft_s = time.perf_counter() - t0
dev = [q for ops in (1, 2) for q in make_problems(64, ops=ops, max_number=20, split="test", seed=12345)]
m, tok = load_model(prof, c.model_dir, lora=False)
r = evaluate(m, tok, problems_dataset(dev), max_new_tokens=100, temperature=0.0, batch_size=32, desc="dev")
by, t = Counter(), Counter()
for q, rec in zip(dev, r.records):
    t[q.kind] += 1; by[q.kind] += rec["correct"]
correct = [bool(x["correct"]) for x in r.records]
(out / "dev_eval.json").write_text(json.dumps({"correct": correct, "kinds": {k: by[k] for k in t}, "format_valid": sum(x["format_valid"] for x in r.records)}))
two = [q.to_dict() for q in dev[64:96]]
counts = correct_counts(m, tok, two, n=8, temperature=0.6, max_new_tokens=100)
res = {"args": vars(a), "sft_s": sft_s, "examples": len(ds), "1op": sum(correct[:64]), "2op": sum(correct[64:]),
       "kinds": {k: by[k] for k in t}, "fv": sum(x["format_valid"] for x in r.records),
       "pass2": pass_at_k_summary(counts, 8), "counts2": counts}
(out / "cold_result.json").write_text(json.dumps(res, indent=1))
print("RESULT", json.dumps({k: v for k, v in res.items() if k != "counts2"}))
