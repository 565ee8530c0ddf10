"""Does a change to the cpu recipe's GRPO stage gain more on the development set?

From `make train`'s merged cold start, GRPO with the cpu profile changed by the flags (steps, iterations
per batch, seed, group size, prompts a step, learning rate, the mix of operations, beta, std scaling),
judged by greedy accuracy on the development set (:func:`helpers.data.problem_sets.dev_problem_set`:
64 + 64 course-written test-split problems of its own draw, 100 tokens) before and after, with McNemar's
exact test. ``--mid N`` also evaluates after step N (with a constant learning rate and the prompts in
order that equals an N-step run). Writes ``<out>/result.json`` and prints it.

    GSM8K_DIR=... python experiments/grpo_recipe.py --out outputs/recipe/g8-s11 --gen 8 --seed 11

Each run takes about one `make train` GRPO stage; docs/LOG.md has the runs made with it and their verdicts.
"""

import argparse
import json
import time
from pathlib import Path

import torch
from transformers import AutoTokenizer, TrainerCallback

from helpers.data.curriculum import Phase
from helpers.data.problem_sets import dev_problem_set, grpo_prompts
from helpers.data.problems import problems_dataset
from helpers.evaluation.scoring import score
from helpers.evaluation.stats import mcnemar
from helpers.training.generation import generate
from helpers.training.models import load_model
from helpers.training.profiles import CPU
from helpers.training.trainer import train

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--out", required=True)
parser.add_argument("--cold", default="outputs/grpo-cpu/cold_start", help="the merged cold start (make train's)")
parser.add_argument("--steps", type=int, default=CPU.max_steps)
parser.add_argument("--iters", type=int, default=CPU.num_iterations, help="GRPO's mu: steps per batch of rollouts")
parser.add_argument("--seed", type=int, default=CPU.seed)
parser.add_argument("--mid", type=int, default=0, help="also evaluate after this step (0: no)")
parser.add_argument("--gen", type=int, default=CPU.num_generations, help="the group size G")
parser.add_argument(
    "--prompts", type=int, default=CPU.per_device_train_batch_size // CPU.num_generations, help="groups a step"
)
parser.add_argument("--lr", type=float, default=CPU.learning_rate)
parser.add_argument(
    "--mix", default="", help='operations of the prompts taken in turn, e.g. "1,1,2" (default: the profile\'s)'
)
parser.add_argument("--beta", type=float, default=CPU.beta, help="the k3 KL's weight (DeepSeekMath eq. 3-4)")
parser.add_argument("--scale", default=CPU.scale_rewards, help='"group" (divide by the group std) or "none"')
args = parser.parse_args()

out = Path(args.out)
out.mkdir(parents=True, exist_ok=True)
profile = CPU.replace(
    max_steps=args.steps,
    num_iterations=args.iters,
    seed=args.seed,
    num_generations=args.gen,
    per_device_train_batch_size=args.prompts * args.gen,
    learning_rate=args.lr,
    beta=args.beta,
    scale_rewards=args.scale,
)
if args.mix:
    profile = profile.replace(curriculum=(Phase(1.0, tuple((int(ops), 20) for ops in args.mix.split(","))),))
dev = dev_problem_set()
levels = [f"{p.ops}op" for p in dev]
prompts = list(problems_dataset(dev)["prompt"])


def dev_correct(model, tokenizer) -> list[bool]:
    """Greedy right/wrong on each development problem; the global random state is left as it was."""
    with torch.random.fork_rng():
        texts = generate(model, tokenizer, prompts, max_new_tokens=100, temperature=0.0, batch_size=32)
    return [bool(r["correct"]) for r in score([""] * len(dev), [p.answer for p in dev], texts)]


cache = Path(args.cold).parent / "dev_eval.json"  # the cold start's outcomes, computed once
if not cache.exists():
    model, tokenizer = load_model(profile, args.cold, lora=False)
    cache.write_text(json.dumps(dev_correct(model, tokenizer)))
    del model
cold = json.loads(cache.read_text())
mid_tokenizer = AutoTokenizer.from_pretrained(args.cold)


class Mid(TrainerCallback):
    """The development outcomes after step ``--mid``."""

    correct = None

    def on_step_end(self, args_, state, control, model=None, **kwargs):
        if state.global_step == args.mid:
            training = model.training
            self.correct = dev_correct(model, mid_tokenizer)
            model.train(training)
            print("MID", sum(self.correct), flush=True)


mid = Mid()
started = time.perf_counter()
run = train(
    profile,
    output_dir=out,
    dataset=grpo_prompts(profile),
    model_path=args.cold,
    heldout=None,
    resume=False,
    callbacks=(mid,),
)
seconds = time.perf_counter() - started
after = dev_correct(run.trainer.model, run.trainer.processing_class)
test = mcnemar(cold, after)
stages = [cold, after] if mid.correct is None else [cold, mid.correct, after]


def count(outcomes, level):
    return sum(x for x, lv in zip(outcomes, levels, strict=True) if lv == level)


result = {
    "mix": args.mix or "profile",
    "seed": args.seed,
    "steps": args.steps,
    "iters": args.iters,
    "prompts": args.prompts,
    "G": args.gen,
    "lr": args.lr,
    "beta": args.beta,
    "scale_rewards": args.scale,
    "train_s": round(seconds, 1),
    "per_step_s": round(run.seconds_per_step, 1),
    "cold": sum(cold),
    "after": sum(after),
    "p": test.p_value,
    "gained": test.lora_only,
    "lost": test.base_only,
    "by_level": {lv: [count(xs, lv) for xs in stages] for lv in sorted(set(levels))},
}  # before, [mid,] after
if mid.correct is not None:
    result["mid"] = {
        "step": args.mid,
        "correct": sum(mid.correct),
        "vs_cold": vars(mcnemar(cold, mid.correct)),
        "vs_mid": vars(mcnemar(mid.correct, after)),
    }
(out / "result.json").write_text(json.dumps(result, indent=1))
print("RESULT", json.dumps(result), flush=True)
