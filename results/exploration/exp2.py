"""Recipe search, round 2: `make train`'s pipeline with a changed GRPO recipe, judged on the
development set (course-written test problems of seed 12345, not the reported seed 0).

    python results/exploration/exp2.py --out outputs/e6 --sched "1:1/20" --steps 12

``--sched`` is the curriculum: phases ``share:ops/max+ops/max`` separated by commas (``0/0`` is a
GSM8K train question). The cold start is reused (``--cold``), so only GRPO differs.
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from helpers import pipeline, profiles  # noqa: E402
from helpers.curriculum import Phase  # noqa: E402

DEV_SEED = 12345
parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
parser.add_argument("--cold", default="outputs/grpo-cpu/cold_start")
parser.add_argument("--sched", required=True)
parser.add_argument("--steps", type=int, default=12)
parser.add_argument("--lr", type=float, default=5e-4)
parser.add_argument("--seed", type=int, default=3407)
args = parser.parse_args()

_eval_problem_set = pipeline.eval_problem_set


def dev_problem_set(profile, n=None, seed=pipeline.EVAL_SEED):
    return _eval_problem_set(profile, n, DEV_SEED if seed == pipeline.EVAL_SEED else seed)


pipeline.eval_problem_set = dev_problem_set
phases = tuple(Phase(float(share), tuple(tuple(int(v) for v in src.split("/")) for src in sources.split("+")))
               for share, sources in (phase.split(":") for phase in args.sched.split(",")))
profile = profiles.CPU.replace(curriculum=phases, max_steps=args.steps, learning_rate=args.lr, seed=args.seed)
run = pipeline.run_pipeline(profile, args.out, cold_start_dir=args.cold, command=" ".join(sys.argv))
print(json.dumps(run.summary.get("problems", {}), indent=1)[:3000])
