"""Does a change to the cpu recipe gain more on the development sets, in distribution and in transfer?

Trains the cpu profile's cold start (changed by ``--cold-max``) unless ``--cold`` holds one, then GRPO
with the profile changed by the flags (steps, seed, group size, prompts a step, learning rate, the mix
of levels, beta), and evaluates the cold start (adapter off) and cold start + GRPO greedily on the two
development sets only: :func:`helpers.data.problem_sets.dev_problem_set` (in distribution) and
:func:`helpers.data.problem_sets.dev_transfer_set` (the transfer family), per level and per kind, with
McNemar's exact test. Never the test or the sealed sets. Writes ``<out>/result.json`` and prints it.

    GSM8K_DIR=... python cpu_study/experiments/grpo_recipe.py --out outputs/recipe/mix50 --mix 1:50,2:50,3:20

docs/LOG.md has the runs made with it and their verdicts.
"""

import argparse
import json
import time
from pathlib import Path

from helpers.data.problem_sets import dev_problem_set, dev_transfer_set, grpo_prompts
from helpers.data.problems import problems_dataset
from helpers.evaluation.before_after import decoding, evaluate_before_after
from helpers.evaluation.reports import kind_rows, problems_summary, tag_problems
from helpers.training.cold_start import train_cold_start
from helpers.training.profiles import CPU, Phase
from helpers.training.trainer import train

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--out", required=True)
parser.add_argument("--cold", help="a merged cold start to reuse (default: train one into <out>/cold_start)")
parser.add_argument("--cold-max", type=int, default=CPU.cold_start_max_number, help="cold-start operands up to")
parser.add_argument("--steps", type=int, default=CPU.max_steps)
parser.add_argument("--seed", type=int, default=CPU.seed)
parser.add_argument("--gen", type=int, default=CPU.num_generations, help="the group size G")
parser.add_argument(
    "--prompts", type=int, default=CPU.per_device_train_batch_size // CPU.num_generations, help="groups a step"
)
parser.add_argument("--lr", type=float, default=CPU.learning_rate)
parser.add_argument("--mix", default="", help='levels ops:max_number taken in turn, e.g. "1:50,2:50,3:20"')
parser.add_argument("--beta", type=float, default=CPU.beta, help="the k3 KL's weight (DeepSeekMath eq. 3-4)")
args = parser.parse_args()

out = Path(args.out)
out.mkdir(parents=True, exist_ok=True)
profile = CPU.replace(
    max_steps=args.steps,
    seed=args.seed,
    num_generations=args.gen,
    per_device_train_batch_size=args.prompts * args.gen,
    learning_rate=args.lr,
    beta=args.beta,
    cold_start_max_number=args.cold_max,
)
if args.mix:
    levels = tuple(tuple(int(x) for x in level.split(":")) for level in args.mix.split(","))
    profile = profile.replace(curriculum=(Phase(1.0, levels),))
started = time.perf_counter()
cold_dir = args.cold
if cold_dir is None:
    cold_dir = train_cold_start(profile, out).model_dir
cold_s = time.perf_counter() - started
run = train(profile, output_dir=out, dataset=grpo_prompts(profile), model_path=cold_dir, heldout=None, resume=False)
train_s = time.perf_counter() - started - cold_s
result = {
    "flags": vars(args),
    "curriculum": [p.name for p in profile.curriculum],
    "cold_start_s": round(cold_s, 1),
    "grpo_s": round(train_s, 1),
}
settings = {**decoding(profile, greedy=True), "batch_size": 32}
for name, problems in (("dev", dev_problem_set()), ("dev_transfer", dev_transfer_set())):
    start, grpo = evaluate_before_after(
        run.trainer.model,
        run.trainer.processing_class,
        problems_dataset(problems),
        run.adapter_dir,
        **settings,
        labels=(f"cold start ({name})", f"GRPO ({name})"),
    )
    by_stage = {"cold_start": start, "grpo": grpo}
    for r in by_stage.values():
        tag_problems(r, problems)
    summary = problems_summary(by_stage)
    result[name] = {
        level: {
            "cold_start": round(
                summary["stages"]["cold_start"][level]["accuracy"] * summary["stages"]["grpo"][level]["n"]
            ),
            "grpo": round(summary["stages"]["grpo"][level]["accuracy"] * summary["stages"]["grpo"][level]["n"]),
            "n": summary["stages"]["grpo"][level]["n"],
            "p": summary["mcnemar_start_vs_grpo"][level]["correct"]["p_value"],
        }
        for level in ["all", *summary["levels"]]
    }
    result[name + "_kinds"] = kind_rows(by_stage)
    with open(out / f"{name}_outcomes.jsonl", "w") as f:
        for stage, r in by_stage.items():
            for i, record in enumerate(r.records):
                f.write(json.dumps({"stage": stage, "index": i, **record}) + "\n")
result["total_s"] = round(time.perf_counter() - started, 1)
(out / "result.json").write_text(json.dumps(result, indent=1))
print("RESULT", json.dumps({k: v for k, v in result.items() if not k.endswith("_kinds")}), flush=True)
