"""The ablation of issue #39: every arm of :data:`cpu_study.arms.ARMS` with each seed, one at a time.

Each run is ``python -m cpu_study ablate`` (:func:`cpu_study.arms.run_arm`) into ``outputs/ablation``;
its light files (:data:`cpu_study.arms.LIGHT_FILES`, no adapter) and the cold start's development-set
outcomes are then copied to ``results/ablation/``. A run whose ``result.json`` is already in
``results/ablation`` is skipped, so the script resumes where it stopped; training is deterministic on one
machine, so a rerun gives the same records. Runs are sequential (two at once would share 2 cores and
distort the costs).

    GSM8K_DIR=... python cpu_study/experiments/ablation.py --cold-start outputs/grpo-cpu/cold_start [--seeds 3407 1 2]
        [--arms beta no_std ...]
"""

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from cpu_study.arms import ARMS, LIGHT_FILES, RESULT_FILE, SEEDS

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--cold-start", required=True)
parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
parser.add_argument("--work", default="outputs/ablation", help="where the runs train")
parser.add_argument("--results", default="results/ablation", help="where their light files are committed")
args = parser.parse_args()

work, results = Path(args.work), Path(args.results)
for seed in args.seeds:
    for arm in args.arms:
        done = results / arm / f"seed{seed}" / RESULT_FILE
        if done.exists():
            print(f"{arm}, seed {seed}: in {done.parent}, skipped", flush=True)
            continue
        command = [sys.executable, "-m", "cpu_study", "ablate", "--arm", arm, "--seed", str(seed)]
        command += ["--cold-start", args.cold_start, "--root", str(work)]
        print(" ".join(command), flush=True)
        subprocess.run(command, check=True)
        (results / arm / f"seed{seed}").mkdir(parents=True, exist_ok=True)
        for name in LIGHT_FILES:
            shutil.copy2(work / arm / f"seed{seed}" / name, results / arm / f"seed{seed}" / name)
        shutil.copytree(work / "cold_start", results / "cold_start", dirs_exist_ok=True)
