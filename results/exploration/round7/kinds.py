"""Round 7: where the reference runs' gains and losses came from, per problem kind (issue #17).

Prints, for every committed reference run, cold start -> GRPO per kind of test problem
(helpers.pipeline.outcomes_by_kind; counts of problems), and, given the headline run's folder
(`outputs/grpo-cpu`, uncommitted: its records hold the completions), the one-operation addition
problems the cold start got right and GRPO got wrong, with both completions (course-written
problems, no GSM8K text). Run from the repository root:
    python results/exploration/round7/kinds.py [outputs/grpo-cpu] > results/exploration/round7/kinds.txt
The reference runs it read were in results/ then; round 8 moved them to round8/unscaled-reference
(``--root``, the default) and put the std-scaled runs in results/: ``--root results`` reads those
(round8/kinds.txt)."""
import argparse
import json
from pathlib import Path

from helpers.pipeline import eval_problem_set, load_summary, outcomes_by_kind
from helpers.profiles import CPU
from helpers.statistics import mcnemar

parser = argparse.ArgumentParser()
parser.add_argument("run_dir", nargs="?", help="the headline run's folder, whose records hold the completions")
parser.add_argument("--root", default="results/exploration/round8/unscaled-reference")
args = parser.parse_args()
R = Path(args.root)


def records(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


RUNS = ("cpu-curriculum", "cpu-curriculum-seed1", "cpu-curriculum-seed2", "cpu-curriculum-placebo")
OUTCOMES = {run: records(R / run / "eval_outcomes.jsonl") for run in RUNS}  # each file read once

for run in RUNS:
    n = load_summary(R / run)["profile"]["eval_problems"]
    problems = eval_problem_set(CPU, n)
    print(f"{run} ({len(problems)} problems): kind  cold start -> GRPO (gained, lost; McNemar p)")
    for row in outcomes_by_kind(OUTCOMES[run], problems):
        print(f"  {row['ops']} op  {row['kind']:10s} {row['cold_start']:2d} -> {row['grpo']:2d} of {row['n']}"
              f"  ({row['gained']:2d}, {row['lost']:2d}; p = {row['p']:.2g})")
# Each run on the set of earlier versions (the first 64 problems of each kind) and on the next ones
for run in RUNS:
    outcomes = sorted((r for r in OUTCOMES[run] if r["set"] == "problems"),
                      key=lambda r: r["index"])
    per_level = len(outcomes) // 6
    print()
    for name, part in (("first", range(0, per_level // 2)), ("next", range(per_level // 2, per_level))):
        idx = {level * per_level + i for level in (0, 1) for i in part}
        cold, grpo = ([r["correct"] for r in outcomes if r["stage"] == stage and r["index"] in idx]
                      for stage in ("cold_start", "grpo"))
        test = mcnemar(cold, grpo)
        print(f"{run}, the {name} {per_level // 2} + {per_level // 2} problems: {sum(cold)} -> {sum(grpo)} "
              f"of {len(idx)} ({test.lora_only} gained, {test.base_only} lost; p = {test.p_value:.2g})")
# Additions by wording (helpers.problems._add has three): "X has a. He buys b more. ... now?" reads like the
# two-operation a + b - c problems ("X has a. He buys b more and then gives c to Y. ... now?")
WORDINGS = {"buys b more ... now?": " buys ", "puts b more in a box ... now?": " puts ", "picked a and b ... in all?": " picked "}
print()
for run in RUNS:
    n = load_summary(R / run)["profile"]["eval_problems"]
    problems = eval_problem_set(CPU, n)
    correct = {(r["stage"], r["index"]): r["correct"] for r in OUTCOMES[run]
               if r["set"] == "problems"}
    cells = []
    for wording, marker in WORDINGS.items():
        idx = [i for i, p in enumerate(problems) if p.kind == "add" and marker in p.question]
        cells.append(f"{wording} {sum(correct['cold_start', i] for i in idx)} -> "
                     f"{sum(correct['grpo', i] for i in idx)} of {len(idx)}")
    print(f"{run}, additions by wording: " + "; ".join(cells))
# pass@k's one-operation drop (pass_at_k.json: right samples of 8 per problem, the first 32 problems of each
# difficulty) against the greedy outcome of the same problems
passk_file = json.loads((R / "cpu-curriculum" / "pass_at_k.json").read_text())
passk, samples = passk_file["stages"], passk_file["settings"]["n"]
greedy = {(r["stage"], r["index"]): r["correct"] for r in OUTCOMES["cpu-curriculum"]
          if r["set"] == "problems"}
print()
for stage in ("cold_start", "grpo"):
    counts = passk[stage]["1 op up to 20"]["correct_counts"]
    wrong = [i for i in range(len(counts)) if not greedy[stage, i]]
    print(f"pass@k, 1 op, {stage}: {sum(counts)} right samples of {samples * len(counts)}; on the {len(wrong)} problems greedy "
          f"gets wrong {sum(counts[i] for i in wrong)} right samples ({sum(counts[i] > 0 for i in wrong)} problems at least once), "
          f"on the others {sum(counts) - sum(counts[i] for i in wrong)}")
if args.run_dir:
    run_records = [r for r in records(Path(args.run_dir) / "eval_records.jsonl") if r["set"] == "problems"]
    problems = eval_problem_set(CPU, len(run_records) // 6)  # three stages, two levels
    by_stage = {(r["stage"], r["index"]): r for r in run_records}
    lost = [i for i, p in enumerate(problems) if p.kind == "add" and by_stage["cold_start", i]["correct"]
            and not by_stage["grpo", i]["correct"]]
    print(f"\n{args.run_dir}: {len(lost)} addition problems the cold start got right and GRPO got wrong")
    for i in lost:
        print(f"\n[{i}] {problems[i].question}  (answer {problems[i].answer})")
        for stage in ("cold_start", "grpo"):
            print(f"  {stage}: " + by_stage[stage, i]["completion"].replace("\n", " | "))
    print()
    for ops in (1, 2):
        for stage in ("cold_start", "grpo"):
            texts = [by_stage[stage, i]["completion"] for i, p in enumerate(problems) if p.ops == ops]
            two = sum(text.count("=") >= 2 for text in texts)
            print(f"{ops}-operation problems, {stage}: {two} of {len(texts)} completions hold two or more '='")
