"""Notebook 01's prompting strategies, measured on the CPU where SmolLM2 can answer: course-written problems.

On a CPU, notebook 01 runs SmolLM2-135M-Instruct (the ``cpu`` profile) on a handful of GSM8K test
questions, where it scores about 0: a smoke run that tells the strategies nothing apart. This script
compares the same strategies on problems SmolLM2 sometimes gets right, and writes the comparison that
the notebook prints (section 5.1).

* **Model**: as the notebook loads it on a CPU: ``import_backend(CPU)``, then
  ``load_model(CPU, lora=False)`` (SmolLM2-135M-Instruct, fp32, transformers).
* **Problems** (:func:`draw_problems`): course-written *test*-split problems of the ``varied`` family,
  ``--per-level`` of each level, one operation up to 20 then two operations up to 20:
  ``helpers.data.problem_sets.level_problems(((1, 20), (2, 20)), per_level, split="test", seed=0,
  family="varied")`` (seed 0 is ``EVAL_SEED``, the draw of ``make train``'s test problems). Never trained on
  (GRPO's prompts and the cold start come from the train split) and never GSM8K text.
* **Strategies and budgets** (:data:`SIZES`, the notebook's ``SIZES["cpu"]``, which a test compares):
  ``direct`` (32 tokens), ``few-shot`` (2 GSM8K *train* examples), ``cot``, ``zero-shot-cot``, ``long-cot``
  (128 tokens each), all greedy, as the notebook's section 4; then self-consistency: the CoT prompt and
  budget sampled 3 times at T = 0.7 (seeds 0, 1, 2) and majority-voted.
* **Statistics**: per strategy the Wilson 95 % interval of its accuracy, and McNemar's exact test against
  ``direct`` on the same problems (``gained``: direct wrong, the strategy right; ``lost``: the reverse).

Writes ``<out>/summary.json`` (default ``results/cot-prompting-cpu``): command, commit, machine, date,
the draw with the problems (course-written), the sizes, and per strategy n, correct, accuracy, Wilson
interval, answer_rate, mean_tokens, seconds, the per-problem outcomes (``"0110..."``) and McNemar against
``direct``. No prompt and no completion is written (the few-shot examples are GSM8K train text).

Run (repository root; the file records the run's seconds, ``total_seconds``; 50 problems: :data:`PER_LEVEL`):

    GSM8K_DIR=../shared/data/gsm8k python tools/cot_prompting_cpu.py
    OMP_NUM_THREADS=1 python tools/cot_prompting_cpu.py --smoke --out /tmp/cot-smoke   # 2 problems, tiny budgets
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from helpers.data.problem_sets import EVAL_SEED, level_problems  # noqa: E402
from helpers.evaluation.provenance import git_commit, machine  # noqa: E402
from helpers.evaluation.stats import mcnemar, wilson_interval  # noqa: E402

# Notebook 01's sizes on the cpu profile (its SIZES["cpu"]) and its sampling settings.
SIZES = dict(n=10, k_shots=2, sc_samples=3, batch_size=10, direct_budget=32, budget=128, long_budget=128)
SC_TEMPERATURE = 0.7
SEED = 0
SMOKE_SIZES = dict(SIZES, sc_samples=2, batch_size=2, direct_budget=8, budget=16, long_budget=16)
LEVELS = ((1, 20), (2, 20))  # (operations, largest number): where SmolLM2 is sometimes right
# Problems per level in the full run: 50 in all, sized to take about 10 minutes on 2 cores (the committed run's
# time is its summary's total_seconds).
PER_LEVEL = 25
BASELINE = "direct"
OUT = ROOT / "results" / "cot-prompting-cpu"


def draw_problems(per_level: int) -> tuple[list, dict]:
    """The problems and a description of their draw (the call that makes them, and the problems)."""
    problems = level_problems(LEVELS, per_level, split="test", seed=EVAL_SEED, family="varied")
    draw = {
        "source": "course-written problems (helpers.data.problems), not GSM8K",
        "call": f"helpers.data.problem_sets.level_problems({LEVELS}, {per_level}, split='test', "
        f"seed={EVAL_SEED}, family='varied')",
        "levels": [list(level) for level in LEVELS],
        "per_level": per_level,
        "split": "test",
        "seed": EVAL_SEED,
        "family": "varied",
        "n": len(problems),
        "problems": [
            {"question": p.question, "answer": p.answer, "kind": p.kind, "ops": p.ops, "max_number": p.max_number}
            for p in problems
        ],
    }
    return problems, draw


def budgets(sizes: dict) -> dict:
    """Each strategy's completion budget, as the notebook's ``BUDGET``."""
    reasoning = {name: sizes["budget"] for name in ("few-shot", "cot", "zero-shot-cot")}
    return {"direct": sizes["direct_budget"], **reasoning, "long-cot": sizes["long_budget"]}


def self_consistency_name(sizes: dict) -> str:
    return f"self-consistency (k={sizes['sc_samples']})"


def run_strategies(model, tokenizer, problems, sizes: dict = SIZES, *, seed: int = SEED, generate_fn=None):
    """Every strategy of notebook 01 on the same problems, as its section 4 runs them.

    Returns ``(results, seconds)``: ``{strategy: EvalResult}`` and ``{strategy: wall seconds}``, in the
    notebook's order, self-consistency last. ``generate_fn`` replaces the model (tests)."""
    from helpers.data.prompting import strategies
    from helpers.evaluation.scoring import evaluate

    rows = [{"question": p.question, "answer": p.answer} for p in problems]
    budget = budgets(sizes)
    common = dict(seed=seed, batch_size=sizes["batch_size"], generate_fn=generate_fn)
    results, seconds = {}, {}
    chosen = strategies(k_shots=sizes["k_shots"], seed=seed)
    for name, strategy in chosen.items():
        start = time.perf_counter()
        results[name] = evaluate(
            model,
            tokenizer,
            rows,
            strategy.build_prompt,
            max_new_tokens=budget[name],
            temperature=0.0,
            extract=strategy.extract,
            desc=name,
            **common,
        )
        seconds[name] = time.perf_counter() - start
    name = self_consistency_name(sizes)
    start = time.perf_counter()
    results[name] = evaluate(
        model,
        tokenizer,
        rows,
        chosen["cot"].build_prompt,
        max_new_tokens=budget["cot"],
        temperature=SC_TEMPERATURE,
        samples=sizes["sc_samples"],
        desc=name,
        **common,
    )
    seconds[name] = time.perf_counter() - start
    return results, seconds


def compare(outcomes: dict, *, answer_rates=None, mean_tokens=None, seconds=None, baseline: str = BASELINE) -> dict:
    """Per strategy: n, correct, accuracy, Wilson 95 % interval and McNemar's exact test against ``baseline``.

    ``outcomes``: ``{strategy: [right or wrong per problem]}``, the same problems in the same order for
    every strategy. ``gained``: problems the baseline got wrong and the strategy right; ``lost``: the
    reverse. The baseline's own ``mcnemar_vs_direct`` is None.

    Raises:
        ValueError: strategies with different numbers of problems, or no ``baseline`` among them.
    """
    if baseline not in outcomes:
        raise ValueError(f"no {baseline!r} outcomes to compare with")
    sizes = {name: len(v) for name, v in outcomes.items()}
    if len(set(sizes.values())) != 1:
        raise ValueError(f"the strategies answered different numbers of problems: {sizes}")
    base = [bool(x) for x in outcomes[baseline]]
    table = {}
    for name, right in outcomes.items():
        right = [bool(x) for x in right]
        n, correct = len(right), sum(right)
        low, high = wilson_interval(correct, n)
        test = None
        if name != baseline:
            paired = mcnemar(base, right)
            test = {"p": paired.p_value, "gained": paired.lora_only, "lost": paired.base_only}
        table[name] = {
            "n": n,
            "correct": correct,
            "accuracy": correct / n,
            "wilson_95": [low, high],
            "answer_rate": (answer_rates or {}).get(name),
            "mean_tokens": (mean_tokens or {}).get(name),
            "seconds": None if seconds is None or name not in seconds else round(seconds[name], 1),
            "outcomes": "".join("1" if x else "0" for x in right),
            "mcnemar_vs_direct": test,
        }
    return table


def summarize_results(results: dict, seconds: dict) -> dict:
    """:func:`compare` on :func:`run_strategies`' results."""
    return compare(
        {name: [r["correct"] for r in result.records] for name, result in results.items()},
        answer_rates={name: result.summary["answer_rate"] for name, result in results.items()},
        mean_tokens={name: result.summary["mean_tokens"] for name, result in results.items()},
        seconds=seconds,
    )


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(OUT), help=f"folder for summary.json (default {OUT.relative_to(ROOT)})")
    parser.add_argument("--per-level", type=int, default=PER_LEVEL, help="problems per level (default %(default)s)")
    parser.add_argument("--smoke", action="store_true", help="2 problems, tiny budgets: checks the script only")
    args = parser.parse_args(argv)
    argv = sys.argv[1:] if argv is None else list(argv)
    data_dir = os.environ.get("GSM8K_DIR")
    if not args.smoke and not (data_dir and (Path(data_dir) / "train.jsonl").exists()):
        # the few-shot examples are GSM8K train rows; without the data the loader would use the course's
        # embedded sample instead, and the file would not measure what it says
        raise SystemExit("set GSM8K_DIR to a folder with GSM8K's train.jsonl (the few-shot examples come from it)")

    from helpers.training.models import import_backend, load_model
    from helpers.training.profiles import CPU

    started = time.perf_counter()
    sizes = SMOKE_SIZES if args.smoke else SIZES
    per_level = 1 if args.smoke else args.per_level
    problems, draw = draw_problems(per_level)
    import_backend(CPU)  # as the notebook: a no-op for the transformers backend
    model, tokenizer = load_model(CPU, lora=False)
    results, seconds = run_strategies(model, tokenizer, problems, sizes)
    summary = {
        "what": "notebook 01's prompting strategies on course-written test problems, SmolLM2-135M-Instruct "
        "(cpu profile), greedy except self-consistency"
        + (" - SMOKE RUN (2 problems, tiny budgets): no conclusions" if args.smoke else ""),
        "smoke": args.smoke,
        "command": " ".join(["python", "tools/cot_prompting_cpu.py", *argv]),
        "commit": git_commit(),
        "machine": machine(),
        "threads": os.environ.get("OMP_NUM_THREADS"),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "few_shot_source": "GSM8K train (GSM8K_DIR)" if data_dir else "the embedded sample (smoke run)",
        "model": CPU.model_id,
        "profile": CPU.name,
        "draw": draw,
        "sizes": {k: v for k, v in sizes.items() if k != "n"},
        "budgets": budgets(sizes),
        "sc_temperature": SC_TEMPERATURE,
        "seed": SEED,
        "baseline": BASELINE,
        "strategies": summarize_results(results, seconds),
        "total_seconds": round(time.perf_counter() - started, 1),
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    for name, row in summary["strategies"].items():
        test = row["mcnemar_vs_direct"]
        versus = f"p = {test['p']:.3f} (+{test['gained']} / -{test['lost']})" if test else "baseline"
        print(
            f"{name:24s} {row['correct']:3d}/{row['n']:<3d} [{row['wilson_95'][0]:.2f}, {row['wilson_95'][1]:.2f}] "
            f"{row['seconds']:7.1f} s  vs direct: {versus}"
        )
    print(f"wrote {out / 'summary.json'} in {summary['total_seconds']:.0f} s")
    return summary


if __name__ == "__main__":
    main()
