"""GRPO recipe probe from a fixed cold start, judged on the dev set (seed 12345, 64+64, greedy 100 tok)."""
import argparse, json, time, sys
from pathlib import Path
from collections import Counter
import torch
from helpers import profiles
from helpers.curriculum import Phase
from helpers.problems import make_problems, problems_dataset
from helpers.models import load_model
from helpers.evaluation import evaluate
from helpers.training import train
from helpers.pipeline import grpo_prompts, heldout_problems
from helpers.statistics import mcnemar
from helpers.rewards import REWARD_SETS

p = argparse.ArgumentParser()
p.add_argument("--out", required=True); p.add_argument("--cold", default="outputs/cold-ref/cold_start")
p.add_argument("--sched", default="0.34:1/20,0.66:1/20+2/20+2/10+0/0")
p.add_argument("--steps", type=int, default=12); p.add_argument("--lr", type=float, default=5e-4)
p.add_argument("--temp", type=float, default=0.6); p.add_argument("--beta", type=float, default=0.04)
p.add_argument("--prompts", type=int, default=4); p.add_argument("--gens", type=int, default=8)
p.add_argument("--maxlen", type=int, default=100); p.add_argument("--seed", type=int, default=3407)
p.add_argument("--loss", default="grpo"); p.add_argument("--scale", default="group")
p.add_argument("--rewards", default="checked"); p.add_argument("--every", type=int, default=4)
p.add_argument("--iters", type=int, default=1); p.add_argument("--clip", type=float, default=0.1)
p.add_argument("--rank", type=int, default=16); p.add_argument("--alpha", type=int, default=16)
p.add_argument("--sched-type", default="constant"); p.add_argument("--warmup", type=float, default=0.0)
p.add_argument("--no-eval-cold", action="store_true")
a = p.parse_args()
out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
phases = tuple(Phase(float(s), tuple(tuple(int(v) for v in src.split("/")) for src in srcs.split("+")))
               for s, srcs in (ph.split(":") for ph in a.sched.split(",")))
prof = profiles.CPU.replace(curriculum=phases, max_steps=a.steps, learning_rate=a.lr, temperature=a.temp, beta=a.beta,
    per_device_train_batch_size=a.prompts * a.gens, num_generations=a.gens, max_completion_length=a.maxlen,
    seed=a.seed, loss_type=a.loss, scale_rewards=a.scale, heldout_every=a.every, num_iterations=a.iters,
    max_grad_norm=a.clip, lora_rank=a.rank, lora_alpha=a.alpha, lr_scheduler_type=a.sched_type, warmup_ratio=a.warmup)
dev = [q for ops in (1, 2) for q in make_problems(64, ops=ops, max_number=20, split="test", seed=12345)]
dev_ds = problems_dataset(dev)

def dev_eval(model, tok, label):
    r = evaluate(model, tok, dev_ds, max_new_tokens=100, temperature=0.0, batch_size=32, desc=label)
    by = Counter(); t = Counter()
    for q, rec in zip(dev, r.records):
        t[q.kind] += 1; by[q.kind] += rec["correct"]
    (out / f"dev_{label}.jsonl").write_text("".join(json.dumps({"kind": q.kind, "expr": q.expression, "answer": q.answer, "completion": x["completion"], "correct": x["correct"]}) + "\n" for q, x in zip(dev, r.records)))
    return [bool(x["correct"]) for x in r.records], {k: by[k] for k in t}, sum(x["format_valid"] for x in r.records)

cold_cache = Path(a.cold).parent / "dev_eval.json"
if not cold_cache.exists():
    m, tok = load_model(prof, a.cold, lora=False)
    c, kinds, fv = dev_eval(m, tok, "cold")
    cold_cache.write_text(json.dumps({"correct": c, "kinds": kinds, "format_valid": fv}))
    del m
cold = json.loads(cold_cache.read_text())
import re as _re
EQ = _re.compile(r"\d\s*[-+*/x×]\s*\d+\s*=\s*\d")
KIND = {q.question: q.kind for ops in (1, 2) for mx in (10, 20) for q in make_problems(400, ops=ops, max_number=mx, split="train", seed=a.seed)}
LOG = open(out / "kinds.jsonl", "w")
def kind_logger(prompts=None, completions=(), answer=(), question=(), **kw):
    from helpers.grading import extract_answer, is_equivalent
    rows = []
    for q, c, g in zip(question, completions, answer):
        t = c[0]["content"]; n = min(len(EQ.findall(t.split("</reasoning>")[0])), 3)
        rows.append({"kind": KIND.get(q, "gsm8k"), "eqs": n, "correct": bool(is_equivalent(extract_answer(t), g, warn=False)), "len": len(t)})
    LOG.write(json.dumps(rows) + "\n"); LOG.flush()
    return [0.0] * len(rows)
t0 = time.perf_counter()
prompts = grpo_prompts(prof)
run = train(prof, output_dir=out, dataset=prompts, reward_funcs=REWARD_SETS[a.rewards] + [kind_logger], model_path=a.cold,
            heldout=heldout_problems(prof), resume=False)
grpo_s = time.perf_counter() - t0
model = run.trainer.model; tok = run.trainer.processing_class
g, kinds, fv = dev_eval(model, tok, "grpo")
mc = mcnemar(cold["correct"], g)
res = {"args": vars(a), "grpo_s": grpo_s, "per_step_s": run.seconds_per_step,
       "cold": {"all": sum(cold["correct"]), "1op": sum(cold["correct"][:64]), "2op": sum(cold["correct"][64:]), "kinds": cold["kinds"], "fv": cold["format_valid"]},
       "grpo": {"all": sum(g), "1op": sum(g[:64]), "2op": sum(g[64:]), "kinds": kinds, "fv": fv},
       "mcnemar": mc.as_dict(), "heldout": [(s, v["heldout/accuracy"]) for s, v in run.heldout]}
(out / "result.json").write_text(json.dumps(res, indent=1))
print("RESULT", json.dumps({k: res[k] for k in ("cold", "grpo", "heldout", "per_step_s")}), "p", mc.p_value, mc.as_dict()["lora_only"], mc.as_dict()["base_only"])
