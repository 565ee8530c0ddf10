"""The READMEs' generated blocks: numbers and tables printed from committed results files, never typed.

A block sits between ``<!-- block:NAME -->`` and ``<!-- /block:NAME -->`` in one of :data:`FILES`;
:data:`BLOCKS` says what prints each. ``python -m cpu_study blocks`` rewrites them in place (:func:`write`),
``python -m cpu_study blocks --check`` lists the files that differ (:func:`stale`), and
``tests/test_blocks.py`` fails when a README and its results files disagree.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

README = ROOT / "README.md"
RESULTS_README = ROOT / "results" / "README.md"
FILES = (README, RESULTS_README)
REFERENCE_RUN = "cpu-varied"  # make train's committed reference run (results/<name>)
SEED_RUNS = ("cpu-varied", "cpu-varied-seed1", "cpu-varied-seed2", "cpu-varied-seed3", "cpu-varied-seed4")


def markdown(frame, index: bool = True) -> str:
    """A ``DataFrame`` of strings or numbers as a GitHub markdown table."""
    head = ([""] if index else []) + [str(c) for c in frame.columns]
    rows = [([str(i)] if index else []) + [str(v) for v in row] for i, row in zip(frame.index, frame.values)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _results(name: str) -> Path:
    from helpers.evaluation.reports import RESULTS_DIR

    return RESULTS_DIR / name


def _link(name: str, up: str = "results/") -> str:
    return f"[`{up}{name}`]({up}{name}/summary.json)"


def time_file(path) -> dict:
    """``/usr/bin/time -v``'s report in ``path``: ``{"wall": "m:ss.ss", "peak_gib": float}``.

    Raises:
        ValueError: the file lacks the wall-clock or the maximum-resident-set line."""
    text = Path(path).read_text()
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text)
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    if not (wall and peak):
        raise ValueError(f"{path} is not a /usr/bin/time -v report")
    return {"wall": wall.group(1), "peak_gib": int(peak.group(1)) / 2**20}


def _make_train_time(up: str = "results/") -> str:
    from helpers.evaluation.reports import load_summary

    summary = load_summary(_results(REFERENCE_RUN))
    t, measured = summary["timings_s"], time_file(_results(REFERENCE_RUN) / "make_train_time.txt")
    return (
        f"On 2 CPU cores the reference run took {t['total_s'] / 60:.1f} minutes and {measured['peak_gib']:.1f} GiB "
        f"of peak memory ({summary['created_utc'][:10]}, {summary['machine']}; `make train` {measured['wall']} "
        f"with its venv check, [`make_train_time.txt`]({up}{REFERENCE_RUN}/make_train_time.txt)): "
        f"cold start {t['cold_start_s'] / 60:.1f} min, GRPO {t['grpo_s'] / 60:.1f} min "
        f"({summary['profile']['max_steps']} steps of {t['grpo_per_step_s']:.0f} s on average, plus "
        f"{t['heldout_s']:.0f} s of held-out evaluations), evaluation {t['evaluation_s'] / 60:.1f} min."
    )


def _accuracy_tables(up: str) -> str:
    from helpers.evaluation.reports import load_summary, problems_table

    summary = load_summary(_results(REFERENCE_RUN))
    parts = []
    for name, title in (
        ("problems", "Course-written test problems, in distribution"),
        ("transfer", "Transfer problems: wordings no training problem uses"),
    ):
        table = problems_table(summary[name])
        keep = [i for i in table.index if i.startswith("accuracy") or i.startswith("valid format")]
        parts.append(f"**{title}**, {_link(REFERENCE_RUN, up)}:\n")
        parts.append(markdown(table.loc[keep]) + "\n")
    return "\n".join(parts)


def _kinds(set_name: str) -> str:
    import pandas as pd

    from helpers.evaluation.reports import load_summary

    kinds = pd.DataFrame(load_summary(_results(REFERENCE_RUN))["kinds"][set_name])
    kinds["p"] = kinds["p"].map("{:.2g}".format)
    return markdown(kinds[["ops", "kind", "n", "cold_start", "grpo", "gained", "lost", "p"]], index=False)


def _results_make_train() -> str:
    from helpers.evaluation.reports import load_summary, stage_table

    summary = load_summary(_results(REFERENCE_RUN))
    gsm8k = stage_table(summary["stages"], summary["mcnemar_start_vs_grpo"])
    return "\n".join(
        [
            _accuracy_tables(""),
            f"**GSM8K test, first {summary['evaluation']['n']} questions**:\n",
            markdown(gsm8k) + "\n",
            "**Per kind, in distribution**:\n",
            _kinds("problems") + "\n",
            "**Per kind, transfer**:\n",
            _kinds("transfer"),
        ]
    )


def _seed_rows() -> list[dict]:
    from cpu_study.seeds import seed_row

    return [seed_row(_results(name)) for name in SEED_RUNS if (_results(name) / "summary.json").exists()]


def _seeds_pooled() -> str:
    from cpu_study.seeds import SETS, pooled_sentence

    rows = _seed_rows()
    if len(rows) < 2:
        return f"Seeds committed so far: {len(rows)} of {len(SEED_RUNS)}; the pooled gain needs two or more."
    return "\n".join(f"- {pooled_sentence(rows, name)}" for name in SETS)


def _format_gain() -> str:
    from helpers.evaluation.reports import format_gain_text

    return format_gain_text()


def _seeds() -> str:
    from cpu_study.seeds import seeds_table

    rows = _seed_rows()
    return markdown(seeds_table(rows)) + "\n\n" + _seeds_pooled()


def _sealed() -> str:
    from cpu_study.sealed_eval import SEALED_SUMMARY_FILE, sealed_rows
    from cpu_study.seeds import SETS, verdict

    opened = [n for n in SEED_RUNS if (_results(n) / SEALED_SUMMARY_FILE).exists()]
    if not opened:
        return "The sealed test set has not been opened yet."
    lines = ["| run | part | cold start | cold start + GRPO | McNemar p (gained, lost) |", "|---|---|---|---|---|"]
    parts = {}
    for name in opened:
        for r in sealed_rows(json.loads((_results(name) / SEALED_SUMMARY_FILE).read_text())):
            lines.append(
                f"| `{name}` | {r['part']} | {r['cold_start']}/{r['n']} | {r['grpo']}/{r['n']} | "
                f"{r['p']:.2g} ({r['gained']}, {r['lost']}) |"
            )
            parts.setdefault(r["part"], []).append(r)
    lines.append("")
    lines += [f"- {verdict(f'sealed, {SETS.get(part, part)}', rows)[0]}" for part, rows in parts.items()]
    return "\n".join(lines)


def _verdict() -> str:
    """Whether the recipe's GRPO stage gains over the seeds and on the sealed set, in plain words."""
    from cpu_study.sealed_eval import SEALED_SUMMARY_FILE, sealed_rows
    from cpu_study.seeds import SETS, verdict

    rows = _seed_rows()
    lines = [verdict(label, [r[name] for r in rows if name in r]) for name, label in SETS.items()]
    sealed = {}
    for name in SEED_RUNS:
        if (_results(name) / SEALED_SUMMARY_FILE).exists():
            for r in sealed_rows(json.loads((_results(name) / SEALED_SUMMARY_FILE).read_text())):
                sealed.setdefault(r["part"], []).append(r)
    lines += [verdict(f"sealed {SETS.get(part, part)}", part_rows) for part, part_rows in sealed.items()]
    transfer = sealed.get("transfer", [])
    significant = sum(r["p"] < 0.01 and r["grpo"] > r["cold_start"] for r in transfer)
    statuses = {status for _, status in lines}
    claim = f"{significant} of {len(transfer)} runs reach McNemar p < 0.01 on the sealed transfer set"
    if transfer and significant == 0 and statuses == {"no change"}:
        claim += (
            ", and every set's interval over runs includes 0: the course does not claim that this recipe's "
            "GRPO stage changes accuracy, in distribution or in transfer. The intervals cover GRPO's spread "
            "over seeds from one cold start, not over cold starts."
        )
    else:
        claim += "; statuses over runs: " + ", ".join(sorted(statuses)) + "."
    order = "Runs in this order: seeds " + ", ".join(str(r["seed"]) for r in rows) + f" (`{REFERENCE_RUN}` first).\n\n"
    return order + "\n".join(f"- {line}" for line, _ in lines) + "\n\n" + claim


def _seed_groups() -> str:
    """The group log of each seed (:func:`cpu_study.groups.groups_table`) beside its gains."""
    from cpu_study.groups import groups_table, seeds_groups_reading
    from helpers.training.run_files import GROUPS_FILE

    rows = {f"seed {r['seed']}": r for r in _seed_rows() if (_results(r["run"]) / GROUPS_FILE).exists()}
    if not rows:
        return "No seed's group log is committed yet."
    table = groups_table({label: _results(r["run"]) for label, r in rows.items()})
    gains = {label: r["problems"]["grpo"] - r["problems"]["cold_start"] for label, r in rows.items()}
    table.insert(0, "in-distribution gain", [f"{g:+d}" for g in gains.values()])
    try:
        reading = seeds_groups_reading(table, gains)
    except ValueError as e:
        reading = f"No comparison yet: {e}."
    return markdown(table) + "\n\n" + reading


def _ablation() -> str:
    """The committed arms of ``results/ablation`` (:mod:`cpu_study.ablation`): seeds, the mean
    difference against the baseline on both development sets, its interval, McNemar's p, the cost (and its
    ratio to the baseline's of the same seed)."""
    from cpu_study import ablation

    try:
        runs = ablation.read_arms(_results("ablation"))
    except FileNotFoundError:
        return "No arm is committed yet."
    seeds = sorted({(arm, seed) for arm, seed in runs if arm != "cold_start"})
    lines = ["Committed: " + ", ".join(f"`{arm}` seed {seed}" for arm, seed in seeds) + "."]
    if len({arm for arm, _ in seeds}) < 2:
        return lines[0] + " An arm is compared with the baseline of its seed; none has both yet."
    tables = {name: ablation.pooled(runs, name) for name in ablation.SETS}
    table = tables["dev"][["knob", "seeds"]].copy()
    for name, label in ablation.SETS.items():
        for c in ("diff", "low", "high"):
            table[f"{label}: {c}"] = tables[name][c].map(lambda v: "" if v != v else f"{v:+.1f}")
        table[f"{label}: p per seed"] = tables[name]["p_seeds"]
    table["s/step"] = tables["dev"]["seconds_per_step"].map("{:.0f}".format)
    table["x baseline's s/step"] = tables["dev"]["step_ratio"].map("{:.2f}".format)
    table["peak GiB"] = tables["dev"]["peak_rss_gib"].map("{:.1f}".format)
    return lines[0] + "\n\n" + markdown(table)


def _make_train_stages() -> str:
    """What ``make train``'s three stages do, every size read from the ``cpu`` profile."""
    from helpers.data.problem_sets import TRANSFER_RANGES
    from helpers.data.transfer import TRANSFER_KINDS
    from helpers.training.profiles import CPU

    p = CPU
    one_op = round(p.cold_start_problems * (1 - p.cold_start_two_op_share))
    levels = " and ".join(phase.name for phase in p.curriculum)
    eval_levels = len(p.eval_levels)
    ranges = " and up to ".join(map(str, TRANSFER_RANGES))
    return "\n".join(
        [
            f"1. **cold start**: SFT of SmolLM2-135M-Instruct on {p.cold_start_examples} GSM8K *train* solutions and "
            f"{p.cold_start_problems} course-written worked problems ({one_op} with one operation, "
            f"{p.cold_start_problems - one_op} with two, numbers up to {p.cold_start_max_number}), in the "
            "`<reasoning>/<answer>` format (LoRA, merged);",
            f"2. **GRPO**: {p.max_steps} steps of {p.per_device_train_batch_size // p.num_generations} prompts x "
            f"{p.num_generations} completions x {p.max_completion_length} tokens at temperature {p.temperature}, "
            f"course-written word problems ({levels}) in every batch, LoRA rank {p.lora_rank} on top of the cold "
            f"start; beta = {p.beta:g} and advantages divided by the group's std (`scale_rewards="
            f"{p.scale_rewards!r}`, DeepSeekMath §4.1.2); **held-out accuracy** on {p.heldout_problems} test problems "
            f"before step 1 and every {p.heldout_every} steps;",
            f"3. **evaluation**, greedy: the cold start and cold start + GRPO on {p.eval_problems * eval_levels} "
            f"course-written *test* problems ({p.eval_problems} at each of {eval_levels} levels: "
            + ", ".join(f"{o} op{'s' * (o > 1)} up to {m}" for o, m in p.eval_levels)
            + f") and on {p.transfer_problems * len(TRANSFER_KINDS) * len(TRANSFER_RANGES)} *transfer* problems "
            f"({p.transfer_problems} of each of {len(TRANSFER_KINDS)} kinds at numbers up to {ranges}), and all "
            f"three stages, the base model included, on the first {p.eval_questions} GSM8K *test* questions.",
        ]
    )


def _make_test_time() -> str:
    """``make test``'s time from a clean clone: the last lines of ``results/benchmarks/ci_run.txt``."""
    text = (_results("benchmarks") / "ci_run.txt").read_text()
    head = text.splitlines()[0].lstrip("# ")
    wall = re.search(r"CI wall time: (\d+) s", text)
    if not wall:
        raise ValueError("results/benchmarks/ci_run.txt has no 'CI wall time' line")
    return (
        f"From a clean clone it took {int(wall.group(1)) / 60:.1f} minutes, venv included ({head}; "
        "[`ci_run.txt`](results/benchmarks/ci_run.txt))."
    )


PROFILE_TEXT = {  # the profiles table's rows that are words, not settings
    "picked for": {
        "t4": "compute capability 7.5",
        "bf16": "bf16 GPU with >= 20 GiB",
        "cuda": "other GPUs, or no Unsloth",
        "cpu": "no GPU",
    },
    "checked by": {
        "t4": "built on CPU, contract-tested",
        "bf16": "built on CPU, contract-tested",
        "cuda": "built on CPU; loads and generates without Unsloth/vLLM",
        "cpu": "run on CPU in CI",
    },
    "run on a GPU": {"t4": "not yet", "bf16": "not yet", "cuda": "not yet", "cpu": "no GPU needed"},
}


def _recipes() -> str:
    """The recipe glossary (:func:`cpu_study.recipes.recipe_table`) as a table."""
    from cpu_study.recipes import recipe_table

    return markdown(recipe_table().reset_index(), index=False)


def _profiles() -> str:
    """The README's profiles table: each profile's settings read from :data:`helpers.training.profiles.PROFILES`."""
    from helpers.training.profiles import PROFILES

    names = ("t4", "bf16", "cuda", "cpu")
    heads = {"t4": "Colab T4", "bf16": "L4, A10G, A100, H100", "cuda": "any other CUDA GPU", "cpu": "laptop, CI"}

    def model(p):
        weights = "4-bit" if p.load_in_4bit else {"fp32": "fp32"}.get(p.precision, "16-bit")
        return f"`{p.model_id}`, {weights}"

    def stack(p):
        if p.backend == "unsloth":
            return f"Unsloth + vLLM rollouts, {p.precision}"
        return "transformers + PEFT" if p.name == "cpu" else "TRL + PEFT, bf16 or fp16, no Unsloth or vLLM"

    def grpo(p):
        prompts = p.per_device_train_batch_size // p.num_generations
        lr = f"{p.learning_rate:.0e}".replace("e-0", "e-")
        text = (
            f"{p.max_steps} steps of {prompts} prompt{'s' * (prompts > 1)} x {p.num_generations} completions x "
            f"{p.max_completion_length} tokens, T {p.temperature}, lr {lr}, beta {p.beta:g}, {p.optim}"
        )
        if p.cold_start_examples:
            text = f"cold start ({p.cold_start_examples} GSM8K + {p.cold_start_problems} course-written), then " + text
        return text

    rows = {
        "picked for": lambda p: PROFILE_TEXT["picked for"][p.name],
        "model": model,
        "stack": stack,
        "LoRA": lambda p: f"rank {p.lora_rank}, alpha {p.lora_alpha}, on {len(p.lora_target_modules)} projections",
        "GRPO": grpo,
        "checkpoints": lambda p: f"every {p.save_steps} steps, resumed" if p.save_steps else "none",
        "checked by": lambda p: PROFILE_TEXT["checked by"][p.name],
        "run on a GPU": lambda p: PROFILE_TEXT["run on a GPU"][p.name],
    }
    lines = ["| | " + " | ".join(f"`{n}` ({heads[n]})" for n in names) + " |", "|---" * (len(names) + 1) + "|"]
    lines += [f"| {row} | " + " | ".join(cell(PROFILES[n]) for n in names) + " |" for row, cell in rows.items()]
    return "\n".join(lines)


BLOCKS = {
    "make-train-time": _make_train_time,
    "results-make-train-time": lambda: _make_train_time(""),
    "results-make-train": _results_make_train,
    "seeds": _seeds,
    "sealed": _sealed,
    "seed-groups": _seed_groups,
    "verdict": _verdict,
    "ablation": _ablation,
    "profiles": _profiles,
    "make-train-stages": _make_train_stages,
    "make-test-time": _make_test_time,
    "recipes": _recipes,
    "format-gain": _format_gain,
}


def render(text: str) -> str:
    """``text`` with every block's body replaced by what :data:`BLOCKS` prints now.

    Raises:
        KeyError: a block name with no entry in :data:`BLOCKS`."""

    def fill(m: re.Match) -> str:
        return f"{m.group(1)}\n{BLOCKS[m.group(2)]()}\n{m.group(4)}"

    return re.sub(r"(<!-- block:([\w-]+) -->)\n(?:(.*?)\n)?(<!-- /block:\2 -->)", fill, text, flags=re.S)


def stale() -> list[Path]:
    """The files of :data:`FILES` whose blocks differ from what :func:`render` prints now."""
    return [path for path in FILES if render(path.read_text()) != path.read_text()]


def write() -> list[Path]:
    """Rewrite the blocks of every file of :data:`FILES`; returns the files that changed."""
    changed = stale()
    for path in changed:
        path.write_text(render(path.read_text()))
    return changed
