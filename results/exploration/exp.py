"""Recipe search: GRPO from a cold start on course-written problems, eval on held-out problems."""
import argparse, json, re, time, sys, os
sys.path.insert(0, "/work/main")
p = argparse.ArgumentParser()
p.add_argument("--cold", default="/tmp/exp/cold160/cold_start")
p.add_argument("--out", required=True)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--P", type=int, default=4)   # prompts per step
p.add_argument("--G", type=int, default=8)
p.add_argument("--T", type=float, default=1.0)
p.add_argument("--lr", type=float, default=3e-4)
p.add_argument("--beta", type=float, default=0.04)
p.add_argument("--maxlen", type=int, default=128)
p.add_argument("--rewards", default="checked")
p.add_argument("--mix", default="1:0.5,2:0.5")  # ops:share
p.add_argument("--seed", type=int, default=3407)
p.add_argument("--eval_n", type=int, default=64)  # per level
p.add_argument("--eval_only", action="store_true")
p.add_argument("--sched", default="")  # e.g. "0.4:1:20,0.6:2:20" share:ops:max
p.add_argument("--heldout_every", type=int, default=0)
p.add_argument("--G4", action="store_true")
a = p.parse_args()
import torch
from helpers.profiles import CPU
from helpers.problems import make_problems, problems_dataset
from helpers.models import load_model, generate
from helpers.grading import extract_answer, is_equivalent
from helpers.prompting import last_number
from helpers.rewards import strict_layout, content_checked, prompt_texts
from helpers.data import make_prompt
import helpers.rewards as R

def evaluate(model, tok, tag):
    out = {}
    for ops in (1, 2):
        probs = make_problems(a.eval_n, ops=ops, split="test", seed=12345)
        t = time.time()
        comps = generate(model, tok, [make_prompt(p.question) for p in probs], max_new_tokens=a.maxlen,
                         temperature=0, batch_size=32)
        recs = []
        for pr, c in zip(probs, comps):
            recs.append(dict(strict=bool(is_equivalent(extract_answer(c), pr.answer)),
                             free=bool(is_equivalent(last_number(c), pr.answer)),
                             valid=strict_layout(c) and content_checked(c, prompt_texts(None)+[pr.question])))
        out[ops] = recs
        print(tag, f"ops={ops}", {k: sum(r[k] for r in recs) for k in ("strict","free","valid")},
              f"{time.time()-t:.0f}s", flush=True)
        print("   e.g.", repr(comps[0][:200]), "| gold", probs[0].answer)
    return out

profile = CPU.replace(max_completion_length=a.maxlen, temperature=a.T, learning_rate=a.lr, beta=a.beta,
                      per_device_train_batch_size=a.P * a.G, num_generations=a.G, max_steps=a.steps, seed=a.seed)
os.makedirs(a.out, exist_ok=True)
model, tok = load_model(profile, a.cold)
cache = "/tmp/exp/cold_eval_%d_%d_%s.json" % (a.eval_n, a.maxlen, a.cold.strip("/").replace("/", "_"))
if os.path.exists(cache):
    before = {int(k): v for k, v in json.load(open(cache)).items()}
else:
    with model.disable_adapter():
        before = evaluate(model, tok, "cold")
    json.dump(before, open(cache, "w"))
if a.eval_only: sys.exit()
# training prompts: mix by share, interleaved
import random
mix = [(int(k), float(v)) for k, v in (x.split(":") for x in a.mix.split(","))]
n = a.steps * a.P
if a.sched:
    from helpers.curriculum import Phase, curriculum_dataset
    phases = tuple(Phase(float(x.split(":")[0]), tuple(tuple(int(v) for v in src.split("/")) for src in x.split(":")[1].split("+")))
                   for x in a.sched.split(","))
    profile = profile.replace(curriculum=phases)
    ds = curriculum_dataset(phases, batches=a.steps, prompts_per_batch=a.P, seed=a.seed, gsm8k_skip=160)
    print(ds.info.description)
else:
    probs = []
    for ops, share in mix:
        probs += make_problems(max(1, round(n * share)) + 8, ops=ops, split="train", seed=a.seed)
    random.Random(a.seed).shuffle(probs)
    ds = problems_dataset(probs[:n + 8])
heldout = None
if a.heldout_every:
    profile = profile.replace(heldout_every=a.heldout_every)
    heldout = [p.to_dict() for ops in (1, 2) for p in make_problems(32, ops=ops, split="test", seed=1)]
funcs = {"checked": R.REWARD_FUNCS}[a.rewards] if a.rewards in ("checked",) else None
if funcs is None:
    sys.path.insert(0, "/tmp/exp"); import exp_rewards; funcs = exp_rewards.SETS[a.rewards]
from helpers.training import train
t = time.time()
run = train(profile, output_dir=a.out, dataset=ds, model=model, tokenizer=tok, reward_funcs=funcs, resume=False, heldout=heldout)
print("heldout", [(s, round(v["heldout/accuracy"], 3), round(v["heldout/seconds"])) for s, v in run.heldout], flush=True)
print("train s/step", run.seconds_per_step, flush=True)
after = evaluate(run.trainer.model, tok, "grpo")
from helpers.comparison import mcnemar
res = {}
for key in ("strict", "free", "valid"):
    b = [r[key] for ops in (1, 2) for r in before[ops]]; c = [r[key] for ops in (1, 2) for r in after[ops]]
    m = mcnemar(b, c)
    res[key] = dict(before=sum(b), after=sum(c), p=m.p_value, gained=m.lora_only, lost=m.base_only,
                    per_ops={ops: (sum(r[key] for r in before[ops]), sum(r[key] for r in after[ops])) for ops in (1, 2)})
    print(key, res[key])
json.dump(dict(args=vars(a), res=res, s_per_step=run.seconds_per_step), open(a.out + "/result.json", "w"), indent=1)
