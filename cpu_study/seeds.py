"""One recipe over several seeds: a row per run and the gain pooled over the seeds.

A single run's McNemar test says whether *that* run's GRPO changed what it gets right; whether the
recipe helps is a question about runs, so the unit here is the seed. :func:`seed_row` reads one run
(``summary.json`` + ``metrics.csv``), :func:`pooled_gain` averages the per-seed gain with a Student-t
interval over seeds (:func:`pooled_sentence` says it in a sentence), and :func:`seeds_table` puts the
rows side by side. :func:`verdict` says in one line whether a change on one set holds over runs (seeds or
sealed evaluations), so that a notebook's reading of the runs is printed from the files.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from scipy import stats

from helpers.evaluation.reports import load_summary
from helpers.training.run_files import METRICS_FILE

SETS = {"problems": "in distribution", "transfer": "transfer"}


REWARD_COLUMN = "rewards/correctness_reward_func/mean"  # metrics.csv: mean correctness reward (0 or 2.0 each)


def start_vs_grpo(part: dict) -> dict:
    """The cold start against cold start + GRPO on one problem set of a summary (``summary["problems"]``,
    ``summary["transfer"]``, a sealed part), in problems: ``{"n", "cold_start", "grpo", "gained", "lost",
    "p"}``, ``p`` McNemar's exact p (:func:`helpers.evaluation.stats.mcnemar`)."""
    test, stages = part["mcnemar_start_vs_grpo"]["all"]["correct"], part["stages"]
    return {
        "n": test["n"],
        "cold_start": round(stages["cold_start"]["all"]["accuracy"] * test["n"]),
        "grpo": round(stages["grpo"]["all"]["accuracy"] * test["n"]),
        "gained": test["lora_only"],
        "lost": test["base_only"],
        "p": test["p_value"],
    }


def _mean(values):
    return sum(values) / len(values)


def _metrics(run_dir: Path) -> list[dict]:
    with open(run_dir / METRICS_FILE, encoding="utf-8") as f:
        return [row for row in csv.DictReader(f) if row.get("reward")]


def seed_row(run_dir, alpha: float = 0.05) -> dict:
    """One GRPO run on one seed, as numbers to compare across seeds.

    Args:
        run_dir: a finished run (``outputs/<run>`` or ``results/<run>``) with ``summary.json`` and
            ``metrics.csv`` (one row per GRPO step).
        alpha: the level below which a kind's McNemar p counts as a significant loss.

    Returns:
        ``{"run", "seed", <set>: {"n", "cold_start", "grpo", "gained", "lost", "p"}, "kinds_lost": [...],
        "heldout": [accuracy per held-out evaluation], "flat_first", "flat_last", "reward_first",
        "reward_last"}`` for each set of :data:`SETS` the summary has; counts are problems,
        ``kinds_lost`` the ``"<set>/<kind>"`` whose right answers fell with p < ``alpha``;
        ``flat_*`` the mean share of groups whose completions all earned the same reward
        (``frac_reward_zero_std``: advantage 0, no learning signal) and ``reward_*`` the mean
        correctness reward per completion (:data:`REWARD_COLUMN`; the total reward where a run has
        none), over the first and the last third of the GRPO steps.

    Raises:
        FileNotFoundError: no ``summary.json`` or ``metrics.csv``.
        ValueError: ``metrics.csv`` has no GRPO step.
    """
    run_dir = Path(run_dir)
    summary = load_summary(run_dir)
    if not (run_dir / METRICS_FILE).exists():
        raise FileNotFoundError(f"{run_dir / METRICS_FILE} not found: is {run_dir} a finished GRPO run?")
    steps = _metrics(run_dir)
    if not steps:
        raise ValueError(f"{run_dir / METRICS_FILE} has no GRPO step (no row with a reward)")
    row = {"run": run_dir.name, "seed": summary["profile"]["seed"]}
    for name in SETS:
        if name not in summary:
            continue
        row[name] = start_vs_grpo(summary[name])
    row["kinds_lost"] = [
        f"{name}/{k['kind']}"
        for name, kinds in summary.get("kinds", {}).items()
        for k in kinds
        if k["lost"] > k["gained"] and k["p"] < alpha
    ]
    row["heldout"] = [h["heldout/accuracy"] for h in summary.get("heldout", [])]
    third = max(1, len(steps) // 3)
    reward = REWARD_COLUMN if REWARD_COLUMN in steps[0] else "reward"
    for column, key in (("frac_reward_zero_std", "flat"), (reward, "reward")):
        row[f"{key}_first"] = _mean([float(s[column]) for s in steps[:third]])
        row[f"{key}_last"] = _mean([float(s[column]) for s in steps[-third:]])
    return row


def t_interval(values) -> tuple[float, float, float]:
    """Mean of ``values`` and its two-sided 95 % Student-t interval, ``(mean, low, high)``:
    mean +- t_{0.975, n-1} * s / sqrt(n), s the sample standard deviation (n - 1 in the denominator),
    the quantile from ``scipy.stats.t.ppf``.

    Raises:
        ValueError: fewer than 2 values.
    """
    values = [float(v) for v in values]
    if len(values) < 2:
        raise ValueError(f"need at least 2 values for a t interval, got {len(values)}")
    mean = _mean(values)
    half = float(stats.t.ppf(0.975, len(values) - 1) * stats.sem(values))
    return mean, mean - half, mean + half


def pooled_gain(rows: list[dict], set_name: str = "problems") -> dict:
    """The gain in right answers (GRPO minus cold start, in problems) pooled over seeds.

    Args:
        rows: :func:`seed_row` of each seed's run; each must hold ``set_name``.
        set_name: a key of :data:`SETS`.

    Returns:
        ``{"seeds", "n", "gains": [per seed], "mean", "low", "high", "gained_runs", "significant_runs"}``:
        ``low``/``high`` the 95 % t interval of the mean gain (:func:`t_interval`), ``gained_runs`` the
        seeds whose gain is above 0, ``significant_runs`` those with McNemar p < 0.01 and a gain.

    Raises:
        ValueError: a row lacks ``set_name``, the rows' problem counts differ, or too few or many rows.
    """
    missing = [r["run"] for r in rows if set_name not in r]
    if missing:
        raise ValueError(f"runs {missing} have no {set_name!r} evaluation")
    return {"seeds": [r["seed"] for r in rows], **_pool([r[set_name] for r in rows], set_name)}


def _pool(runs: list[dict], label: str, alpha: float = 0.01) -> dict:
    """The gains of ``runs`` (dicts with ``n``, ``cold_start``, ``grpo``, ``p``), their mean and 95 % t
    interval (NaN with one run), how many gained and how many with McNemar p < ``alpha``."""
    counts = {run["n"] for run in runs}
    if not runs or len(counts) != 1:
        raise ValueError(f"{label!r}: no runs, or runs on different numbers of problems: {sorted(counts)}")
    gains = [run["grpo"] - run["cold_start"] for run in runs]
    mean, low, high = t_interval(gains) if len(gains) > 1 else (float(gains[0]), math.nan, math.nan)
    return {
        "n": counts.pop(),
        "gains": gains,
        "mean": mean,
        "low": low,
        "high": high,
        "gained_runs": sum(g > 0 for g in gains),
        "significant_runs": sum(g > 0 and run["p"] < alpha for g, run in zip(gains, runs)),
    }


def pooled_sentence(rows: list[dict], set_name: str = "problems") -> str:
    """:func:`pooled_gain` of ``rows`` on ``set_name`` in one sentence, of the form ``"<set>: mean gain
    <mean> of <n> over <k> seeds (seeds <list>), 95 % t interval [<low>, <high>] (includes 0 | excludes 0);
    <g> of <k> seeds gained, <s> with p < 0.01."``

    Raises:
        ValueError: as :func:`pooled_gain`."""
    g = pooled_gain(rows, set_name)
    return (
        f"{SETS[set_name]}: mean gain {g['mean']:+.1f} of {g['n']} over {len(rows)} seeds (seeds "
        f"{', '.join(map(str, g['seeds']))}), 95 % t interval [{g['low']:+.1f}, {g['high']:+.1f}] "
        f"({'includes' if g['low'] <= 0 <= g['high'] else 'excludes'} 0); "
        f"{g['gained_runs']} of {len(rows)} seeds gained, {g['significant_runs']} with p < 0.01."
    )


VERDICTS = ("gain", "loss", "no change", "unknown")


def verdict(label: str, runs: list[dict], alpha: float = 0.01) -> tuple[str, str]:
    """Whether GRPO's change on one set of problems holds over runs, in one line.

    Args:
        label: the set's name at the start of the line (e.g. ``"transfer"``).
        runs: one dict per run with ``"n"``, ``"cold_start"`` and ``"grpo"`` (right answers of n) and
            ``"p"`` (McNemar's p between them): ``row[set_name]`` of :func:`seed_row` rows, or the rows of
            :func:`cpu_study.sealed_eval.sealed_rows` for one part.
        alpha: the level a single run's McNemar p must be below to count as significant.

    Returns:
        ``(line, status)``: the line gives each run's gain, how many runs gained with p < ``alpha`` and,
        from two runs on, the mean gain with its 95 % t interval (:func:`t_interval`); ``status`` (one
        of :data:`VERDICTS`) is ``"gain"`` when the interval lies above 0, ``"loss"`` below 0, ``"no
        change"`` when it includes 0, ``"unknown"`` with a single run.

    Raises:
        ValueError: no runs, more than 11, or runs on different numbers of problems.
    """
    g = _pool(runs, label, alpha)
    line = (
        f"{label}, {g['n']} problems: gain per run {g['gains']}, {g['significant_runs']} of {len(runs)} "
        f"with p < {alpha}"
    )
    if len(runs) < 2:
        return line + "; one run, no interval yet.", "unknown"
    status = "gain" if g["low"] > 0 else "loss" if g["high"] < 0 else "no change"
    return (
        line + f"; mean {g['mean']:+.1f}, 95 % t interval [{g['low']:+.1f}, {g['high']:+.1f}]: {status} over runs.",
        status,
    )


def seeds_table(rows: list[dict]):
    """The rows of :func:`seed_row` as a ``DataFrame`` of strings, one row per seed: for each set
    cold start -> GRPO of n, McNemar p (gained, lost); the held-out accuracies; the share of flat
    groups and the correctness reward over the first and last third of the steps; kinds lost with
    p < 0.05."""
    import pandas as pd

    table = {}
    for r in rows:
        cells = {}
        for name, label in SETS.items():
            if name in r:
                s = r[name]
                cells[label] = f"{s['cold_start']} -> {s['grpo']} of {s['n']}"
                cells[f"{label}: p (gained, lost)"] = f"{s['p']:.2g} ({s['gained']}, {s['lost']})"
        cells["held-out accuracy by step"] = " ".join(f"{a:.2f}" for a in r["heldout"])
        cells["flat groups, first -> last third"] = f"{r['flat_first']:.2f} -> {r['flat_last']:.2f}"
        cells["correctness reward, first -> last third"] = f"{r['reward_first']:.2f} -> {r['reward_last']:.2f}"
        cells["kinds lost (p < 0.05)"] = ", ".join(r["kinds_lost"]) or "none"
        table[f"seed {r['seed']}"] = cells
    return pd.DataFrame.from_dict(table, orient="index")


def format_gain(run_dirs) -> dict:
    """What the CPU recipe's GRPO changes over seeds: per set (GSM8K test, the course-written test
    problems, the transfer problems), the gain in completions with a valid format and in right answers
    (GRPO minus cold start, counted on the same problems), each seed's gain, their mean and 95 % t
    interval (:func:`t_interval`). Read from each run's ``summary.json`` (``stages`` for GSM8K,
    ``problems``/``transfer`` otherwise). Returns ``{"runs", "seeds", "sets": [rows], "reading"}``.

    Raises:
        ValueError: fewer than 2 runs (no interval), or runs with different problem counts.
    """
    summaries = [load_summary(d) for d in run_dirs]
    stages = {
        "GSM8K test": [s["stages"] for s in summaries],
        "course-written test problems": [s["problems"]["stages"] for s in summaries],
        "transfer problems": [s["transfer"]["stages"] for s in summaries],
    }
    rows = []
    for name, per_run in stages.items():
        for measure, key in (("valid format", "format_rate_valid"), ("right answers", "accuracy")):
            counts = []
            for st in per_run:
                start = st["cold_start"].get("all", st["cold_start"])
                after = st["grpo"].get("all", st["grpo"])
                counts.append((start["n"], round(start[key] * start["n"]), round(after[key] * after["n"])))
            if len({n for n, _, _ in counts}) != 1:
                raise ValueError(f"{name}: the runs have different numbers of problems {[n for n, _, _ in counts]}")
            gains = [after - start for _, start, after in counts]
            mean, low, high = t_interval(gains)
            rows.append(
                {"set": name, "n": counts[0][0], "measure": measure, "gains": gains,
                 "mean": round(mean, 2), "low": round(low, 2), "high": round(high, 2)}
            )  # fmt: skip
    above = [f"{r['measure']} on {r['set']}" for r in rows if r["low"] > 0]
    reading = (
        f"Over {len(summaries)} seeds the 95 % interval of the gain lies above 0 for: {', '.join(above) or 'nothing'}; "
        "every other interval includes 0 (or lies below it)."
    )
    return {
        "runs": [Path(d).name for d in run_dirs],
        "seeds": [s["profile"]["seed"] for s in summaries],
        "sets": rows,
        "reading": reading,
    }
