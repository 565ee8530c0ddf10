"""Before vs. after GRPO: the base model and base + LoRA, paired question by question.

:func:`evaluate_before_after` runs both with one model in memory (PEFT: the base run inside
``model.disable_adapter()``; vLLM: the LoRA passed as ``lora_path`` to the second run only), with the
same prompts, decoding (:func:`decoding`) and seed. :func:`compare` pairs the runs: summaries, reasoning
completeness, McNemar's test (:func:`helpers.evaluation.stats.mcnemar`) and the questions that flipped;
:func:`save_results` keeps them. Loading adapters is :mod:`helpers.evaluation.adapters`; the figures are
in :mod:`helpers.evaluation.plots`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from helpers.evaluation.adapters import is_peft
from helpers.evaluation.scoring import MIN_REASONING_STEPS, EvalResult, evaluate, extended_summary, reasoning_complete
from helpers.evaluation.stats import McNemar, mcnemar
from helpers.training.engine import uses_vllm

# The two runs, as tables, figures and progress bars name them. Not "base": on the CPU the adapter's base model
# is the cold start, while notebook 06's reference runs call the released model "base" (reports.STAGE_LABELS).
RUN_LABELS = {"base": "before GRPO", "lora": "after GRPO"}


# ----------------------------------------------------------------------- comparison table
@dataclass
class Comparison:
    """Base vs. base + LoRA on the same questions.

    ``summaries``: ``{"base": ..., "lora": ...}``, each :func:`helpers.evaluation.scoring.summarize`
    plus ``correct`` (count) and ``reasoning_rate`` (share with :func:`reasoning_complete`).
    ``wrong_to_right`` / ``right_to_wrong``: indices of the questions that flipped.
    """

    base: EvalResult
    lora: EvalResult
    summaries: dict
    mcnemar: McNemar
    wrong_to_right: list[int]
    right_to_wrong: list[int]

    def table(self):
        """The before/after table (pandas ``DataFrame`` of formatted strings)."""
        return comparison_table(self)

    def flips(self, indices: Sequence[int]):
        """``DataFrame`` of some questions with both models' answers and completions."""
        import pandas as pd

        return pd.DataFrame(
            [
                {
                    "question": self.base.records[i]["question"],
                    "gold": self.base.records[i]["gold"],
                    "base answer": self.base.records[i]["extracted"],
                    "LoRA answer": self.lora.records[i]["extracted"],
                    "base completion": self.base.records[i]["completion"],
                    "LoRA completion": self.lora.records[i]["completion"],
                }
                for i in indices
            ],
            index=list(indices),
            dtype=object,
        )  # no answer stays None, not NaN

    def show_flips(self, indices: Sequence[int], title: str, limit: int | None = None) -> None:
        """Print the first ``limit`` (default all) of ``indices``: question, gold, both answers and
        both completions (:meth:`flips`), under a title with the count of ``indices``."""
        print(f"=== {title}: {len(indices)} question(s) ===")
        flips = self.flips(list(indices)[:limit])
        for i, row in zip(flips.index, flips.to_dict("records")):  # iterrows would turn None into NaN
            base, lora = (row[k] if row[k] is not None else "(none)" for k in ("base answer", "LoRA answer"))
            before, after = RUN_LABELS["base"], RUN_LABELS["lora"]
            print(f"\n[{i}] {row['question']}\ngold: {row['gold']}   {before}: {base}   {after}: {lora}")
            print(f"--- {before} ---\n{row['base completion'].strip()}")
            print(f"--- {after} ---\n{row['LoRA completion'].strip()}")
        print()


def compare(base: EvalResult, lora: EvalResult) -> Comparison:
    """Pair two evaluations of the same questions and compare them.

    Raises:
        ValueError: different numbers of records, or record ``i`` is not the same question
            with the same gold answer in both (the pairing would be meaningless).
    """
    if len(base.records) != len(lora.records) or not base.records:
        raise ValueError(
            f"paired evaluations need the same questions: {len(base.records)} vs {len(lora.records)} records"
        )
    for i, (a, b) in enumerate(zip(base.records, lora.records)):
        if (a["question"], str(a["gold"])) != (b["question"], str(b["gold"])):
            raise ValueError(f"record {i} differs between the runs: {a['question'][:60]!r} vs {b['question'][:60]!r}")
    right = [(bool(a["correct"]), bool(b["correct"])) for a, b in zip(base.records, lora.records)]
    return Comparison(
        base,
        lora,
        {"base": extended_summary(base), "lora": extended_summary(lora)},
        mcnemar([a for a, _ in right], [b for _, b in right]),
        [i for i, (a, b) in enumerate(right) if not a and b],
        [i for i, (a, b) in enumerate(right) if a and not b],
    )


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f} %"


def comparison_table(comparison: Comparison):
    """Rows: accuracy with its Wilson 95 % CI and McNemar's exact p; format (strict / soft layout,
    valid: real reasoning + a number) with McNemar's exact p for the valid format; placeholder
    rate; reasoning completeness; mean completion tokens; seconds per question. Columns: ``before GRPO``,
    ``after GRPO`` and ``change`` (percentage points for rates)."""
    import pandas as pd

    base, lora, m = comparison.summaries["base"], comparison.summaries["lora"], comparison.mcnemar
    valid = mcnemar(*([r["format_valid"] for r in run.records] for run in (comparison.base, comparison.lora)))

    def change(key, scale=100, unit=" pts", digits=1):
        a, b = base[key], lora[key]
        return "n/a" if a is None or b is None else f"{scale * (b - a):+.{digits}f}{unit}"

    def rate(key):
        return [_pct(base[key]), _pct(lora[key]), change(key)]

    def number(key, digits):
        return [
            *("n/a" if x[key] is None else f"{x[key]:.{digits}f}" for x in (base, lora)),
            change(key, 1, "", digits),
        ]

    accuracy = [
        f"{x['correct']}/{x['n']} = {_pct(x['accuracy'])} [{100 * x['ci_low']:.1f}, {100 * x['ci_high']:.1f}]"
        for x in (base, lora)
    ]
    exact = f"p = {m.p_value:.3f} ({m.lora_only} wrong->right, {m.base_only} right->wrong)"
    gained = f"p = {valid.p_value:.3g} ({valid.lora_only} gained, {valid.base_only} lost)"
    rows = {
        "accuracy [Wilson 95 % CI]": [*accuracy, change("accuracy")],
        "paired McNemar, exact": ["", "", exact],
        "format, valid (real reasoning + number)": rate("format_rate_valid"),
        "paired McNemar, valid format": ["", "", gained],
        "format, strict (layout only)": rate("format_rate_strict"),
        "format, soft (layout only)": rate("format_rate_soft"),
        "placeholder / template copy": rate("placeholder_rate"),
        f"reasoning complete (>= {MIN_REASONING_STEPS} steps)": rate("reasoning_rate"),
        "mean completion tokens": number("mean_tokens", 1),
        "seconds per question": number("seconds_per_question", 2),
    }
    return pd.DataFrame.from_dict(rows, orient="index", columns=[RUN_LABELS["base"], RUN_LABELS["lora"], "change"])


# ------------------------------------------------------------------------------ evaluation
def decoding(profile, greedy: bool = False) -> dict:
    """Decoding settings for evaluation: the profile's training sampling by default.

    ``max_new_tokens = profile.max_completion_length``, ``temperature`` and ``top_p`` from the
    profile - what GRPO's rollouts used. ``greedy=True`` keeps the length but sets
    ``temperature=0`` (deterministic, lower variance, but not what the model was trained on).
    """
    return {
        "max_new_tokens": profile.max_completion_length,
        "temperature": 0.0 if greedy else profile.temperature,
        "top_p": profile.top_p,
    }


def run_name(adapter_dir, greedy: bool = False) -> str:
    """Results folder name for an adapter: ``outputs/grpo-cpu/lora_adapter`` -> ``grpo-cpu``
    (the training run's folder), with ``-greedy`` appended for greedy decoding."""
    path = Path(adapter_dir).resolve()
    name = path.parent.name if path.name == "lora_adapter" else path.name
    return name + ("-greedy" if greedy else "")


def evaluate_before_after(
    model,
    tokenizer,
    dataset,
    adapter_dir=None,
    n: int | None = None,
    labels: tuple[str, str] = (RUN_LABELS["base"], RUN_LABELS["lora"]),
    **eval_kwargs,
) -> tuple[EvalResult, EvalResult]:
    """Evaluate the base model, then base + LoRA, on the same questions; returns ``(base, lora)``.

    Both runs use :func:`helpers.evaluation.scoring.evaluate` with its default prompt (the training
    prompt, :func:`helpers.course_format.make_prompt`) and the same ``eval_kwargs`` (decoding, seed,
    batch size); ``labels`` name the two progress bars. With vLLM, the base run passes no LoRA and the second run
    ``lora_path=adapter_dir``. With PEFT, ``model`` must hold the trained adapter
    (:func:`load_with_adapter`); the base run happens inside ``model.disable_adapter()``.

    Raises:
        ValueError: vLLM without ``adapter_dir``, or a plain model without a PEFT adapter.
    """
    if uses_vllm(model):
        if adapter_dir is None:
            raise ValueError("with vLLM, pass adapter_dir: the LoRA is applied from disk")
        base = evaluate(model, tokenizer, dataset, n=n, desc=labels[0], **eval_kwargs)
        lora = evaluate(model, tokenizer, dataset, n=n, lora_path=str(adapter_dir), desc=labels[1], **eval_kwargs)
        return base, lora
    if not is_peft(model):
        raise ValueError("model has no LoRA adapter: load it with load_with_adapter(profile, adapter_dir)")
    with model.disable_adapter():
        base = evaluate(model, tokenizer, dataset, n=n, desc=labels[0], **eval_kwargs)
    lora = evaluate(model, tokenizer, dataset, n=n, desc=labels[1], **eval_kwargs)
    return base, lora


# ---------------------------------------------------------------------------------- saving
def save_results(comparison: Comparison, out_dir, **run_info) -> tuple[Path, Path]:
    """Write ``summary.json`` and ``records.jsonl`` into ``out_dir``; returns both paths.

    ``summary.json``: ``run_info`` (profile, adapter, decoding, ...), both summaries, the
    McNemar table and p-values, the flipped question indices and a UTC timestamp.
    ``records.jsonl``: one line per (model, question) with ``model`` (``"base"`` / ``"lora"``),
    ``index`` and ``reasoning_complete`` added to the evaluation record.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = {
        **run_info,
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "base": comparison.summaries["base"],
        "lora": comparison.summaries["lora"],
        "mcnemar": comparison.mcnemar.as_dict(),
        "wrong_to_right": comparison.wrong_to_right,
        "right_to_wrong": comparison.right_to_wrong,
    }
    summary_path = out_dir / "summary.json"
    summary_path.write_text(json.dumps(summary, indent=2, default=str) + "\n")
    records_path = out_dir / "records.jsonl"
    with open(records_path, "w", encoding="utf-8") as f:
        for name, result in (("base", comparison.base), ("lora", comparison.lora)):
            for i, record in enumerate(result.records):
                complete = reasoning_complete(record["completion"])
                row = {"model": name, "index": i, **record, "reasoning_complete": complete}
                f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
    return summary_path, records_path
