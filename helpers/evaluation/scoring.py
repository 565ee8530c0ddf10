"""Measure a model on a set of questions: accuracy with a confidence interval, format, length, time.

Three steps, each usable alone: :func:`evaluate` generates one completion per question from the training
prompt (:func:`helpers.course_format.make_prompt`), in batches through
:func:`helpers.training.generation.generate` (vLLM on a GPU, batched HF on a CPU; ``samples=k > 1``
majority-votes k completions); :func:`score` grades each one (answer, correctness, XML format);
:func:`summarize` turns the records into rates with a Wilson 95 % interval, so records saved with
:meth:`EvalResult.to_jsonl` can be re-summarized later. :func:`extended_summary` adds reasoning
completeness (:func:`reasoning_complete`). The same model, questions, settings and ``seed`` give the
same completions (sampled decoding seeds each generate call).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from helpers.evaluation.stats import wilson_interval
from helpers.grading import extract_answer, extract_xml_block, is_correct, is_equivalent
from helpers.rewards import content_checked, is_placeholder, prompt_texts, soft_layout, strict_layout

# Prompts per generate call with vLLM: its scheduler batches them itself ("put all of your prompts
# into a single list", vLLM 0.11.2 LLM.generate); 256 keeps a progress bar (1,319 questions: 6 calls).
VLLM_BATCH = 256
HF_BATCH = 8  # rows per padded batch with transformers (memory grows with it)
RECORD_KEYS = ("question", "gold", "completion", "extracted", "correct", "correct_format_free")
RECORD_KEYS += ("format_strict", "format_soft", "format_valid", "placeholder", "tokens", "seconds")


# ---------------------------------------------------------------------------------- scoring
def score(
    questions: list[str],
    golds: list[str],
    completions: list[str],
    *,
    extract: Callable[[str], str | None] | None = None,
    tokens: list[int | None] | None = None,
    seconds: list[float | None] | None = None,
) -> list[dict]:
    """Grade completions; returns one record per question (keys: :data:`RECORD_KEYS`).

    * ``extracted = extract(completion)`` (default :func:`helpers.grading.extract_answer`);
      ``correct = is_correct(extracted, gold)`` (an evaluated answer: ``8 + 9`` for 17 is not correct).
    * ``correct_format_free``: the completion's last number (:func:`helpers.data.prompting.last_number`)
      equals the gold, whatever the format.
    * ``format_strict`` / ``format_soft``: the XML layout (:func:`helpers.rewards.strict_layout` /
      ``soft_layout``); ``format_valid``: the strict layout with real reasoning and a number as the answer
      (what :func:`helpers.rewards.strict_format_reward_func` pays for); ``placeholder``: a block that is a
      placeholder (``...``, text copied from the system prompt or the question,
      :func:`helpers.rewards.is_placeholder`).
    * ``tokens`` (completion tokens) and ``seconds`` (generation time per question): copied through,
      ``None`` when not given.

    Raises:
        ValueError: the lists differ in length.
    """
    n = len(questions)
    tokens = [None] * n if tokens is None else list(tokens)
    seconds = [None] * n if seconds is None else list(seconds)
    lengths = {len(golds), len(completions), len(tokens), len(seconds)}
    if lengths != {n}:
        raise ValueError(
            f"questions, golds, completions, tokens and seconds differ in length: "
            f"{n}, {len(golds)}, {len(completions)}, {len(tokens)}, {len(seconds)}"
        )
    from helpers.data.prompting import last_number

    extract = extract or extract_answer
    records = []
    for i in range(n):
        text, extracted = completions[i], extract(completions[i])
        sources = prompt_texts(None) + [questions[i]]
        strict = strict_layout(text)
        records.append(
            {
                "question": questions[i],
                "gold": golds[i],
                "completion": text,
                "extracted": extracted,
                "correct": bool(is_correct(extracted, golds[i])),
                "correct_format_free": bool(is_equivalent(last_number(text), golds[i], warn=False)),
                "format_strict": strict,
                "format_soft": soft_layout(text),
                "format_valid": strict and content_checked(text, sources),
                "placeholder": (
                    is_placeholder(extract_xml_block(text, "reasoning"), sources)
                    or is_placeholder(extract_xml_block(text, "answer"))
                ),
                "tokens": tokens[i],
                "seconds": seconds[i],
            }
        )
    return records


def _mean(values: Iterable) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def summarize(records: list[dict]) -> dict:
    """Summary of scored records (from :func:`score`, :func:`evaluate` or :func:`read_jsonl`).

    Keys: ``n``; ``accuracy`` (share correct) with ``ci_low`` / ``ci_high`` (95 % Wilson interval);
    ``accuracy_format_free`` (share whose last number is right; None for records saved before it was
    recorded); ``format_rate_strict`` / ``format_rate_soft`` (share in the XML layout);
    ``format_rate_valid`` (strict layout with real reasoning and a number as the answer);
    ``placeholder_rate`` (share with a placeholder block); ``answer_rate`` (share with an extracted
    answer); ``mean_tokens`` (completion tokens per question; summed over the k samples with
    self-consistency); ``seconds_per_question`` (generation wall time per question). Means skip
    ``None`` values and are ``None`` when every value is missing.

    Raises:
        ValueError: no records, or a record lacks ``correct``.
    """
    if not records:
        raise ValueError("no records to summarize")
    missing = [i for i, r in enumerate(records) if "correct" not in r]
    if missing:
        raise ValueError(f"records {missing[:5]} have no 'correct' field; score them first")
    n = len(records)
    correct = sum(bool(r["correct"]) for r in records)
    low, high = wilson_interval(correct, n)
    return {
        "n": n,
        "accuracy": correct / n,
        "ci_low": low,
        "ci_high": high,
        "accuracy_format_free": _mean(r.get("correct_format_free") for r in records),
        "format_rate_strict": _mean(bool(r.get("format_strict")) for r in records),
        "format_rate_soft": _mean(bool(r.get("format_soft")) for r in records),
        "format_rate_valid": _mean(bool(r.get("format_valid")) for r in records),
        "placeholder_rate": _mean(bool(r.get("placeholder")) for r in records),
        "answer_rate": _mean(r.get("extracted") is not None for r in records),
        "mean_tokens": _mean(r.get("tokens") for r in records),
        "seconds_per_question": _mean(r.get("seconds") for r in records),
    }


# ---------------------------------------------------------------------------------- results
@dataclass
class EvalResult:
    """Per-question ``records`` (see :data:`RECORD_KEYS`) and their ``summary``."""

    records: list[dict]
    summary: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.summary and self.records:
            self.summary = summarize(self.records)

    def to_jsonl(self, path: str | os.PathLike) -> Path:
        """Write one JSON record per line (parent folders are created); returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            for record in self.records:
                f.write(json.dumps(record, ensure_ascii=False) + "\n")
        return path

    @classmethod
    def from_jsonl(cls, path: str | os.PathLike) -> EvalResult:
        """Records read back from :meth:`to_jsonl`, with the summary recomputed."""
        return cls(read_jsonl(path))

    def to_frame(self):
        """The records as a pandas ``DataFrame`` (one row per question)."""
        import pandas as pd

        return pd.DataFrame(self.records)


def read_jsonl(path: str | os.PathLike) -> list[dict]:
    """Records written by :meth:`EvalResult.to_jsonl`.

    Raises:
        FileNotFoundError: no such file.
    """
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


# ------------------------------------------------------------------------------- generation
def _rows(dataset, n: int | None) -> tuple[list[str], list[str]]:
    """Questions and gold answers of the first ``n`` rows of a Dataset or list of dicts."""
    if hasattr(dataset, "column_names"):  # datasets.Dataset
        columns = set(dataset.column_names)
    else:
        dataset = list(dataset)
        columns = set(dataset[0]) if dataset else set()
    size = len(dataset)
    if size == 0:
        raise ValueError("the dataset is empty")
    if not {"question", "answer"} <= columns:
        raise ValueError(f"the dataset needs 'question' and 'answer' columns, has {sorted(columns)}")
    if n is None:
        n = size
    if not 1 <= n <= size:
        raise ValueError(f"n must be between 1 and the dataset size {size}, got {n}")
    if hasattr(dataset, "select"):
        head = dataset.select(range(n))
        return list(head["question"]), [str(a) for a in head["answer"]]
    return [r["question"] for r in dataset[:n]], [str(r["answer"]) for r in dataset[:n]]


def _token_count(tokenizer, text: str) -> int | None:
    if tokenizer is None:
        return None
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def evaluate(
    model,
    tokenizer,
    dataset,
    build_prompt: Callable[[str], list[dict]] | None = None,
    n: int | None = None,
    *,
    max_new_tokens: int = 200,
    temperature: float = 0.0,
    top_p: float = 1.0,
    seed: int = 0,
    batch_size: int | None = None,
    lora_path=None,
    extract: Callable[[str], str | None] | None = None,
    samples: int = 1,
    desc: str = "evaluating",
    generate_fn: Callable[..., list[str]] | None = None,
) -> EvalResult:
    """Generate, score and summarize the first ``n`` questions of ``dataset``; returns an :class:`EvalResult`.

    Args:
        model, tokenizer: from :func:`helpers.training.models.load_model`; ``tokenizer`` also counts
            completion tokens (the decoded completion re-tokenized, without special tokens).
        dataset: a ``datasets.Dataset`` or list of dicts with ``question`` and ``answer`` (the gold),
            e.g. :func:`helpers.data.gsm8k.load_gsm8k` ``("test")``.
        build_prompt: ``question -> chat messages``; default :func:`helpers.course_format.make_prompt`.
        n: how many questions, from the start (file order); default all.
        max_new_tokens, temperature, top_p: decoding (``temperature=0``: greedy).
        seed: sample ``j`` of every batch is generated with seed ``seed + j``.
        batch_size: questions per ``generate`` call and progress-bar step; default :func:`default_batch_size`.
        lora_path: a saved LoRA adapter for vLLM (see :func:`helpers.training.generation.generate`).
        extract: ``completion -> answer or None``; default :func:`helpers.grading.extract_answer`.
        samples: completions per question. With ``k > 1`` (self-consistency, needs ``temperature > 0``)
            ``extracted`` is the majority vote of the k answers (:func:`helpers.data.prompting.majority_vote`),
            ``completion`` the first sample giving it (else sample 0), ``tokens`` the sum over the k
            samples, and two more keys hold all ``completions`` and their ``votes``.
        desc: progress-bar label.
        generate_fn: replaces :func:`helpers.training.generation.generate` (tests, other backends):
            ``generate_fn(prompts, *, max_new_tokens, temperature, top_p, seed) -> list[str]``.

    ``seconds`` in each record is its batch's generation wall time divided by the batch size.

    Raises:
        ValueError: bad ``n``, ``batch_size``, ``samples`` or ``max_new_tokens``; a dataset
            without ``question``/``answer``; ``samples > 1`` with greedy decoding; no model
            and no ``generate_fn``; ``lora_path`` together with ``generate_fn``; a generator
            returning the wrong number of completions.
    """
    from tqdm.auto import tqdm

    if batch_size is None:
        batch_size = default_batch_size(model)
    if batch_size < 1 or samples < 1 or max_new_tokens < 1:
        raise ValueError(
            f"batch_size, samples and max_new_tokens must be >= 1, got {batch_size}, {samples}, {max_new_tokens}"
        )
    if samples > 1 and temperature <= 0:
        raise ValueError(
            "self-consistency (samples > 1) needs temperature > 0: greedy decoding "
            "would give the same completion every time"
        )
    if generate_fn is not None and lora_path is not None:
        raise ValueError(
            "lora_path goes to helpers.training.generation.generate; a generate_fn must apply its adapter itself"
        )
    if generate_fn is None:
        if model is None or tokenizer is None:
            raise ValueError("pass a model and tokenizer, or a generate_fn")
        from helpers.training.generation import generate

        def generate_fn(prompts, **kwargs):
            return generate(model, tokenizer, prompts, lora_path=lora_path, batch_size=batch_size, **kwargs)

    if build_prompt is None:
        from helpers.course_format import make_prompt as build_prompt
    questions, golds = _rows(dataset, n)
    extract = extract or extract_answer

    records: list[dict] = []
    with tqdm(total=len(questions), desc=desc, unit="q") as bar:
        for start in range(0, len(questions), batch_size):
            qs, gs = questions[start : start + batch_size], golds[start : start + batch_size]
            prompts = [build_prompt(q) for q in qs]
            t0 = time.perf_counter()
            per_sample = []  # per_sample[j][i]: sample j of question i
            for j in range(samples):
                out = generate_fn(
                    prompts, max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p, seed=seed + j
                )
                if len(out) != len(prompts):
                    raise ValueError(f"generator returned {len(out)} completions for {len(prompts)} prompts")
                per_sample.append(list(out))
            share = (time.perf_counter() - t0) / len(qs)
            records += _score_batch(qs, gs, per_sample, extract, tokenizer, share)
            bar.update(len(qs))
    return EvalResult(records)


def default_batch_size(model) -> int:
    """Questions per generate call: :data:`VLLM_BATCH` (256) for a model with vLLM inside, whose
    engine schedules the sequences itself (small batches leave it mostly idle), else
    :data:`HF_BATCH` (8) padded rows for transformers."""
    from helpers.training.engine import uses_vllm

    return VLLM_BATCH if model is not None and uses_vllm(model) else HF_BATCH


def _score_batch(questions, golds, per_sample, extract, tokenizer, seconds) -> list[dict]:
    """Score one batch; with several samples, vote first and keep every sample."""
    if len(per_sample) == 1:
        completions = per_sample[0]
        tokens = [_token_count(tokenizer, c) for c in completions]
        return score(questions, golds, completions, extract=extract, tokens=tokens, seconds=[seconds] * len(questions))
    from helpers.data.prompting import majority_vote

    records = []
    for i in range(len(questions)):
        samples = [s[i] for s in per_sample]
        votes = [extract(c) for c in samples]
        winner = majority_vote(votes)
        chosen = next((c for c, v in zip(samples, votes) if v is not None and v == winner), samples[0])
        counts = [_token_count(tokenizer, c) for c in samples]
        total = None if None in counts else sum(counts)
        record = score(
            [questions[i]], [golds[i]], [chosen], extract=lambda _c, w=winner: w, tokens=[total], seconds=[seconds]
        )[0]
        record.update(completions=samples, votes=votes)
        records.append(record)
    return records


# --------------------------------------------------------------------- reasoning completeness
MIN_REASONING_STEPS = 2
_STEP_SPLIT_RE = re.compile(r"\n|(?<=[.!?])\s+")  # a line break, or a sentence end + space
_WORD_RE = re.compile(r"[A-Za-z0-9]")


def reasoning_steps(text: str | None) -> int:
    """Number of steps in a completion's reasoning block (0 without a valid block).

    The single ``<reasoning>`` block (:func:`helpers.grading.extract_xml_block`: ``None``, so 0 steps, for a
    tag missing or repeated, or a completion cut off before ``</reasoning>``) is split at line breaks and at
    sentence ends (``.``, ``!`` or ``?`` followed by whitespace); each piece holding at least one letter or
    digit is a step. A decimal point (``3.5``) does not split. ``"<reasoning>\\n16 - 3 - 4 = 9.\\n9 * 2 = 18.
    \\n</reasoning>"`` -> 2; ``"<reasoning>So 9 eggs. 9 * 2 = 18.</reasoning>"`` -> 2;
    ``"<reasoning>18</reasoning>"`` -> 1.
    """
    block = extract_xml_block(text, "reasoning")
    if block is None:
        return 0
    return sum(bool(_WORD_RE.search(piece)) for piece in _STEP_SPLIT_RE.split(block))


def reasoning_complete(text: str | None, min_steps: int = MIN_REASONING_STEPS) -> bool:
    """Reasoning completeness: a closed, non-empty reasoning block with ``>= min_steps`` steps.

    A step is defined in :func:`reasoning_steps`. The ``<answer>`` block is not required here
    (format compliance measures that).

    Raises:
        ValueError: ``min_steps < 1``.
    """
    if min_steps < 1:
        raise ValueError(f"min_steps must be at least 1, got {min_steps}")
    return reasoning_steps(text) >= min_steps


def extended_summary(result: EvalResult) -> dict:
    """:func:`helpers.evaluation.scoring.summarize` plus ``correct`` and ``reasoning_rate``."""
    records = result.records
    return {
        **summarize(records),
        "correct": sum(bool(r["correct"]) for r in records),
        "reasoning_rate": sum(reasoning_complete(r["completion"]) for r in records) / len(records),
    }
