"""Round 5, from make train's cold start, judged by greedy accuracy on the development set (seed 12345,
64 + 64, 100 tokens) before and after GRPO: does GRPO's mu (``--iters 2``: each batch of rollouts trained on
twice, the clip ratio active) gain more than the profile's single pass at about the same wall time; and
does training longer help (``--steps 20 --mid 12``: the development set is also evaluated after step 12,
which equals a 12-step run: constant lr, curriculum drawn in order)? Round 6: a larger group (``--gen 8``) or more
prompts a step (``--prompts 32``), i.e. more groups with rewards that differ in each step's loss."""
import argparse, json, time
from pathlib import Path
import torch
from helpers import profiles
from helpers.problems import make_problems
from helpers.models import generate, load_model
from helpers.evaluation import score
from helpers.training import train
from helpers.pipeline import grpo_prompts
from helpers.statistics import mcnemar

p = argparse.ArgumentParser()
p.add_argument("--out", required=True); p.add_argument("--cold", default="outputs/grpo-cpu/cold_start")
p.add_argument("--steps", type=int, default=12); p.add_argument("--iters", type=int, default=1)
p.add_argument("--seed", type=int, default=3407); p.add_argument("--mid", type=int, default=0)  # 0: no evaluation mid-run
G = profiles.CPU.num_generations  # round 6: --gen is the group size G, --prompts the groups a step
p.add_argument("--prompts", type=int, default=profiles.CPU.per_device_train_batch_size // G); p.add_argument("--gen", type=int, default=G)
p.add_argument("--lr", type=float, default=profiles.CPU.learning_rate)
# round 7: the operations of the prompts taken in turn in every batch, e.g. "1,1,2" (2/3 one-operation); default the profile's
p.add_argument("--mix", default="")
# round 8: the KL penalty's weight (DeepSeekMath eq. 3-4, k3 to the cold start); default the profile's 0
p.add_argument("--beta", type=float, default=profiles.CPU.beta)
# round 8: advantages divided by the group's std ("group", DeepSeekMath eq. 3; the profile's since round 8) or not ("none")
p.add_argument("--scale", default=profiles.CPU.scale_rewards)
a = p.parse_args()
out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
prof = profiles.CPU.replace(max_steps=a.steps, num_iterations=a.iters, seed=a.seed, num_generations=a.gen,
                            per_device_train_batch_size=a.prompts * a.gen, learning_rate=a.lr,
                            beta=a.beta, scale_rewards=a.scale)
if a.mix:
    from helpers.curriculum import Phase
    prof = prof.replace(curriculum=(Phase(1.0, tuple((int(ops), 20) for ops in a.mix.split(","))),))
dev = [q for ops in (1, 2) for q in make_problems(64, ops=ops, max_number=20, split="test", seed=12345)]
kinds = ["1op"] * 64 + ["2op"] * 64
from helpers.problems import problems_dataset
prompts = list(problems_dataset(dev)["prompt"])

def dev_correct(model, tok):
    with torch.random.fork_rng():
        texts = generate(model, tok, prompts, max_new_tokens=100, temperature=0.0, batch_size=32)
    recs = score([""] * len(dev), [q.answer for q in dev], texts)
    return [bool(r["correct"]) for r in recs]

cache = Path(a.cold).parent / "dev_eval_r5.json"
if not cache.exists():
    m, tok = load_model(prof, a.cold, lora=False)
    cache.write_text(json.dumps(dev_correct(m, tok))); del m
cold = json.loads(cache.read_text())
from transformers import AutoTokenizer, TrainerCallback
class Mid(TrainerCallback):
    correct = None
    def on_step_end(self, args, state, control, model=None, **kw):
        if state.global_step == a.mid:
            training = model.training
            self.correct = dev_correct(model, tok_for_mid); model.train(training)
            print("MID", sum(self.correct), flush=True)
tok_for_mid = AutoTokenizer.from_pretrained(a.cold)
mid = Mid()
t0 = time.perf_counter()
run = train(prof, output_dir=out, dataset=grpo_prompts(prof), model_path=a.cold, heldout=None, resume=False, callbacks=(mid,))
secs = time.perf_counter() - t0
after = dev_correct(run.trainer.model, run.trainer.processing_class)
t = mcnemar(cold, after)
stages = [cold, after] if mid.correct is None else [cold, mid.correct, after]
by = lambda xs, k: sum(x for x, kk in zip(xs, kinds) if kk == k)
res = {"mix": a.mix or "profile", "seed": a.seed, "steps": a.steps, "iters": a.iters, "prompts": a.prompts, "G": a.gen, "lr": a.lr, "beta": a.beta, "scale_rewards": a.scale, "train_s": round(secs, 1), "per_step_s": round(run.seconds_per_step, 1),
       "cold": sum(cold), "after": sum(after), "p": t.p_value,
       "gained": sum((not c) and d for c, d in zip(cold, after)), "lost": sum(c and not d for c, d in zip(cold, after)),
       "by_kind": {k: [by(xs, k) for xs in stages] for k in sorted(set(kinds))}}  # before, [step --mid,] after
if mid.correct is not None:
    res["mid"] = {"step": a.mid, "correct": sum(mid.correct), "vs_cold": vars(mcnemar(cold, mid.correct)),
                  "vs_mid": vars(mcnemar(mid.correct, after))}
(out / "result.json").write_text(json.dumps(res, indent=1))
print("RESULT", json.dumps(res), flush=True)
