"""Before vs. after GRPO: the base model and base + LoRA on the same GSM8K questions.

* **Evaluate both** (:func:`evaluate_before_after`) with one model in memory: PEFT switches the
  adapter off for the base run (``model.disable_adapter()``); with vLLM the base run passes no
  LoRA and the second run ``lora_path=adapter_dir``. Prompts, decoding settings and seed are the
  same for both, so the two runs are *paired* question by question. :func:`decoding` gives the
  training sampling of a profile (or greedy).
* **Compare** (:func:`compare`): accuracy with a Wilson 95 % interval and format rates
  (:func:`helpers.evaluation.summarize`), reasoning completeness (:func:`reasoning_complete`),
  the paired McNemar test (:func:`mcnemar`), and the questions that flipped either way.
* **Merge** (:func:`save_merged`, :func:`load_merged`): fold the LoRA into the base weights and
  save a plain checkpoint that loads without PEFT.
* **Keep and show** (:func:`save_results` / :func:`load_results`: ``summary.json`` and
  ``records.jsonl``; :func:`plot_before_after`, :func:`plot_completion_lengths`).

The paired test itself (McNemar's, exact) lives in :mod:`helpers.statistics`.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from .evaluation import EvalResult, evaluate, summarize
from .grading import extract_xml_block
from .models import uses_vllm
from .statistics import McNemar, mcnemar, mcnemar_chi2, mcnemar_exact_p  # noqa: F401 - used by notebook 06

MIN_REASONING_STEPS = 2
_STEP_SPLIT_RE = re.compile(r"\n|(?<=[.!?])\s+")  # a line break, or a sentence end + space
_WORD_RE = re.compile(r"[A-Za-z0-9]")
LABELS = {"base": "base", "lora": "base + LoRA"}


# --------------------------------------------------------------------- reasoning completeness
def reasoning_block(text: str | None) -> str | None:
    """Content of the single ``<reasoning>…</reasoning>`` block, or ``None`` (fail closed, as
    :func:`helpers.grading.extract_xml_block`): a tag missing or repeated, or a completion cut off
    by the token limit before ``</reasoning>``."""
    return extract_xml_block(text, "reasoning")


def reasoning_steps(text: str | None) -> int:
    """Number of steps in a completion's reasoning block (0 without a valid block).

    The block (:func:`reasoning_block`) is split at line breaks and at sentence ends (``.``,
    ``!`` or ``?`` followed by whitespace); each piece holding at least one letter or digit is a
    step. A decimal point (``3.5``) does not split. ``"<reasoning>\\n16 - 3 - 4 = 9.\\n9 * 2 = 18.
    \\n</reasoning>"`` -> 2; ``"<reasoning>So 9 eggs. 9 * 2 = 18.</reasoning>"`` -> 2;
    ``"<reasoning>18</reasoning>"`` -> 1.
    """
    block = reasoning_block(text)
    if block is None:
        return 0
    return sum(bool(_WORD_RE.search(piece)) for piece in _STEP_SPLIT_RE.split(block))


def reasoning_complete(text: str | None, min_steps: int = MIN_REASONING_STEPS) -> bool:
    """Reasoning completeness: a closed, non-empty reasoning block with ``>= min_steps`` steps.

    A step is defined in :func:`reasoning_steps`. The ``<answer>`` block is not required here
    (format compliance measures that). Raises ``ValueError`` when ``min_steps < 1``.
    """
    if min_steps < 1:
        raise ValueError(f"min_steps must be at least 1, got {min_steps}")
    return reasoning_steps(text) >= min_steps


# ----------------------------------------------------------------------- comparison table
@dataclass
class Comparison:
    """Base vs. base + LoRA on the same questions.

    ``summaries``: ``{"base": ..., "lora": ...}``, each :func:`helpers.evaluation.summarize`
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

        return pd.DataFrame([{"question": self.base.records[i]["question"],
                              "gold": self.base.records[i]["gold"],
                              "base answer": self.base.records[i]["extracted"],
                              "LoRA answer": self.lora.records[i]["extracted"],
                              "base completion": self.base.records[i]["completion"],
                              "LoRA completion": self.lora.records[i]["completion"]}
                             for i in indices], index=list(indices), dtype=object)  # no answer stays None, not NaN

    def show_flips(self, indices: Sequence[int], title: str, limit: int | None = None) -> None:
        """Print the first ``limit`` (default all) of ``indices``: question, gold, both answers and
        both completions (:meth:`flips`), under a title with the count of ``indices``."""
        print(f"=== {title}: {len(indices)} question(s) ===")
        flips = self.flips(list(indices)[:limit])
        for i, row in zip(flips.index, flips.to_dict("records")):  # iterrows would turn None into NaN
            base, lora = (row[k] if row[k] is not None else "(none)" for k in ("base answer", "LoRA answer"))
            print(f"\n[{i}] {row['question']}\ngold: {row['gold']}   base: {base}   LoRA: {lora}")
            print(f"--- base ---\n{row['base completion'].strip()}\n--- base + LoRA ---\n{row['LoRA completion'].strip()}")
        print()


def extended_summary(result: EvalResult) -> dict:
    """:func:`helpers.evaluation.summarize` plus ``correct`` and ``reasoning_rate``."""
    records = result.records
    return {**summarize(records), "correct": sum(bool(r["correct"]) for r in records),
            "reasoning_rate": sum(reasoning_complete(r["completion"]) for r in records) / len(records)}


def compare(base: EvalResult, lora: EvalResult) -> Comparison:
    """Pair two evaluations of the same questions and compare them.

    Raises:
        ValueError: different numbers of records, or record ``i`` is not the same question
            with the same gold answer in both (the pairing would be meaningless).
    """
    if len(base.records) != len(lora.records) or not base.records:
        raise ValueError(f"paired evaluations need the same questions: {len(base.records)} vs "
                         f"{len(lora.records)} records")
    for i, (a, b) in enumerate(zip(base.records, lora.records)):
        if (a["question"], str(a["gold"])) != (b["question"], str(b["gold"])):
            raise ValueError(f"record {i} differs between the runs: {a['question'][:60]!r} vs "
                             f"{b['question'][:60]!r}")
    right = [(bool(a["correct"]), bool(b["correct"])) for a, b in zip(base.records, lora.records)]
    return Comparison(
        base, lora,
        {"base": extended_summary(base), "lora": extended_summary(lora)},
        mcnemar([a for a, _ in right], [b for _, b in right]),
        [i for i, (a, b) in enumerate(right) if not a and b],
        [i for i, (a, b) in enumerate(right) if a and not b],
    )


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f} %"


def _num(x, digits: int) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _diff(a, b, scale: float, unit: str, digits: int) -> str:
    return "n/a" if a is None or b is None else f"{scale * (b - a):+.{digits}f}{unit}"


def comparison_table(comparison: Comparison):
    """Rows: accuracy with its Wilson 95 % CI and McNemar's exact p; format (strict / soft layout,
    valid: real reasoning + a number) with McNemar's exact p for the valid format; placeholder
    rate; reasoning completeness; mean completion tokens; seconds per question. Columns: ``base``,
    ``base + LoRA`` and ``change`` (percentage points for rates)."""
    import pandas as pd

    s, m = comparison.summaries, comparison.mcnemar
    valid = mcnemar([r["format_valid"] for r in comparison.base.records],
                    [r["format_valid"] for r in comparison.lora.records])
    rows = {}
    rows["accuracy [Wilson 95 % CI]"] = [
        f"{x['correct']}/{x['n']} = {_pct(x['accuracy'])} [{100 * x['ci_low']:.1f}, {100 * x['ci_high']:.1f}]"
        for x in (s["base"], s["lora"])] + [_diff(s["base"]["accuracy"], s["lora"]["accuracy"], 100, " pts", 1)]
    rows["paired McNemar, exact"] = ["", "", f"p = {m.p_value:.3f} ({m.lora_only} wrong->right, "
                                             f"{m.base_only} right->wrong)"]
    rows["format, valid (real reasoning + number)"] = [
        _pct(s["base"]["format_rate_valid"]), _pct(s["lora"]["format_rate_valid"]),
        _diff(s["base"]["format_rate_valid"], s["lora"]["format_rate_valid"], 100, " pts", 1)]
    rows["paired McNemar, valid format"] = ["", "", f"p = {valid.p_value:.3g} ({valid.lora_only} gained, "
                                                    f"{valid.base_only} lost)"]
    for label, key in (("format, strict (layout only)", "format_rate_strict"),
                       ("format, soft (layout only)", "format_rate_soft"),
                       ("placeholder / template copy", "placeholder_rate"),
                       (f"reasoning complete (>= {MIN_REASONING_STEPS} steps)", "reasoning_rate")):
        rows[label] = [_pct(s["base"][key]), _pct(s["lora"][key]),
                       _diff(s["base"][key], s["lora"][key], 100, " pts", 1)]
    for label, key, digits in (("mean completion tokens", "mean_tokens", 1),
                               ("seconds per question", "seconds_per_question", 2)):
        rows[label] = [_num(s["base"][key], digits), _num(s["lora"][key], digits),
                       _diff(s["base"][key], s["lora"][key], 1, "", digits)]
    return pd.DataFrame.from_dict(rows, orient="index", columns=[LABELS["base"], LABELS["lora"], "change"])


def markdown_table(frame) -> str:
    """A ``DataFrame`` as a GitHub markdown table (no ``tabulate`` needed)."""
    header = ["", *map(str, frame.columns)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join([str(i), *map(str, row)]) + " |" for i, row in zip(frame.index, frame.values)]
    return "\n".join(lines)


# ------------------------------------------------------------------------------ evaluation
def decoding(profile, greedy: bool = False) -> dict:
    """Decoding settings for evaluation: the profile's training sampling by default.

    ``max_new_tokens = profile.max_completion_length``, ``temperature`` and ``top_p`` from the
    profile - what GRPO's rollouts used. ``greedy=True`` keeps the length but sets
    ``temperature=0`` (deterministic, lower variance, but not what the model was trained on).
    """
    return {"max_new_tokens": profile.max_completion_length,
            "temperature": 0.0 if greedy else profile.temperature, "top_p": profile.top_p}


def run_name(adapter_dir, greedy: bool = False) -> str:
    """Results folder name for an adapter: ``outputs/grpo-cpu/lora_adapter`` -> ``grpo-cpu``
    (the training run's folder), with ``-greedy`` appended for greedy decoding."""
    path = Path(adapter_dir).resolve()
    name = path.parent.name if path.name == "lora_adapter" else path.name
    return name + ("-greedy" if greedy else "")


def evaluate_before_after(model, tokenizer, dataset, adapter_dir=None, n: int | None = None,
                          labels: tuple[str, str] = (LABELS["base"], LABELS["lora"]),
                          **eval_kwargs) -> tuple[EvalResult, EvalResult]:
    """Evaluate the base model, then base + LoRA, on the same questions; returns ``(base, lora)``.

    Both runs use :func:`helpers.evaluation.evaluate` with its default prompt (the training
    prompt, :func:`helpers.data.make_prompt`) and the same ``eval_kwargs`` (decoding, seed,
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
        lora = evaluate(model, tokenizer, dataset, n=n, lora_path=str(adapter_dir), desc=labels[1],
                        **eval_kwargs)
        return base, lora
    if not _is_peft(model):
        raise ValueError("model has no LoRA adapter: load it with load_with_adapter(profile, adapter_dir)")
    with model.disable_adapter():
        base = evaluate(model, tokenizer, dataset, n=n, desc=labels[0], **eval_kwargs)
    lora = evaluate(model, tokenizer, dataset, n=n, desc=labels[1], **eval_kwargs)
    return base, lora


# ------------------------------------------------------------------------ loading, merging
def _is_peft(model) -> bool:
    from peft import PeftModel

    return isinstance(model, PeftModel)


def check_adapter_dir(adapter_dir) -> Path:
    """The adapter folder as a ``Path``; ``FileNotFoundError`` unless it holds a PEFT adapter."""
    path = Path(adapter_dir)
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        if not (path / name).exists():
            raise FileNotFoundError(f"{path / name} not found: {path} is not a saved LoRA adapter "
                                    "(train one with notebook 05 or `python -m helpers train`)")
    return path


def adapter_base(adapter_dir, model_path=None):
    """The model an adapter was trained on: ``model_path`` if given, else the run's merged cold
    start (``cold_start/`` beside ``adapter_dir``, as :func:`helpers.pipeline.run_pipeline` writes
    it), else the local model folder its ``adapter_config.json`` names (a run that reused another
    run's cold start, ``--cold-start DIR``), else ``None`` (the profile's model)."""
    import json

    if model_path is not None:
        return model_path
    cold_start = Path(adapter_dir).parent / "cold_start"
    if (cold_start / "config.json").exists():
        return cold_start
    config = Path(adapter_dir) / "adapter_config.json"
    named = json.loads(config.read_text()).get("base_model_name_or_path") if config.exists() else None
    # Bug: a run with --cold-start DIR has no cold_start/ beside its adapter; the adapter was then
    # loaded on the raw base model and evaluated as garbage (0 % where the run measured 7 %).
    return Path(named) if named and (Path(named) / "config.json").exists() else None


def load_with_adapter(profile, adapter_dir, model_path=None):
    """``(model, tokenizer)``: the adapter's base model (:func:`adapter_base`: ``model_path``, the
    run's cold start, or the profile's model) with the trained LoRA from ``adapter_dir``.

    CPU (transformers): ``peft.PeftModel.from_pretrained`` on the base model. GPU (Unsloth):
    the usual policy with a LoRA of the profile's shape, whose weights are then replaced by the
    saved ones (evaluation applies the adapter through vLLM from ``adapter_dir``; the in-memory
    copy is what :func:`save_merged` merges).

    Raises:
        FileNotFoundError: no adapter in ``adapter_dir`` (see :func:`check_adapter_dir`).
        ValueError: on GPU, the saved adapter's rank differs from the profile's.
    """
    from .models import load_model

    adapter_dir = check_adapter_dir(adapter_dir)
    model_path = adapter_base(adapter_dir, model_path)
    if profile.backend != "unsloth":
        from peft import PeftModel

        base, tokenizer = load_model(profile, model_path, lora=False)
        return PeftModel.from_pretrained(base, str(adapter_dir)), tokenizer
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    rank = json.loads((adapter_dir / "adapter_config.json").read_text())["r"]
    if rank != profile.lora_rank:
        raise ValueError(f"adapter rank {rank} != profile {profile.name} rank {profile.lora_rank}")
    model, tokenizer = load_model(profile, model_path, lora=True)
    set_peft_model_state_dict(model, load_file(adapter_dir / "adapter_model.safetensors"))
    return model, tokenizer


def save_merged(model, tokenizer, out_dir) -> Path:
    """Merge the LoRA into the base weights and save a standalone checkpoint in ``out_dir``.

    Unsloth: ``model.save_pretrained_merged(out_dir, tokenizer, save_method="merged_16bit")``
    (16-bit weights; a 4-bit base is de-quantized). PEFT: ``merge_and_unload()`` on a deep copy
    (``model`` keeps its adapter), saved as safetensors in the model's own dtype - fp32 for the
    CPU profile, so that reloading it gives the same greedy output bit for bit.

    Raises:
        ValueError: ``model`` has no LoRA adapter to merge.
    """
    if not _is_peft(model):
        raise ValueError("model has no LoRA adapter to merge (expected a peft.PeftModel)")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if hasattr(model, "save_pretrained_merged"):
        model.save_pretrained_merged(str(out_dir), tokenizer, save_method="merged_16bit")
        return out_dir
    merged = copy.deepcopy(model).merge_and_unload()
    merged.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def merged_4bit_gib(path, headroom_gib: float = 1.0) -> float:
    """GPU memory (GiB) :func:`load_merged` needs for the 16-bit checkpoint in ``path`` loaded in
    4-bit: an estimate, not measured. 0.4 x the safetensors' size (NF4 keeps a linear weight in
    about a quarter of its 16 bits; embeddings stay 16-bit: Qwen2.5-3B's 6.2 GB -> 2.5 GB) plus
    ``headroom_gib`` for one 16-bit tensor on its way to 4-bit and the generation."""
    size = sum(f.stat().st_size for f in Path(path).glob("*.safetensors"))
    return 0.4 * size / 2**30 + headroom_gib


def load_merged(path, profile):
    """``(model, tokenizer)`` from a merged checkpoint, with plain transformers (no PEFT, no vLLM).

    CPU (transformers backend): :func:`helpers.models.load_model` without LoRA, in the profile's
    dtype. Unsloth profiles (T4): the merged 16-bit checkpoint is re-quantized to 4-bit on load
    (bitsandbytes NF4, compute in the profile's dtype; about 2.5 GB for the 3B model instead of
    6.2 GB in fp16), and only after the policy's vLLM engine is gone. The order on a T4:
    generate with the LoRA, :func:`save_merged`, :func:`helpers.models.release` the policy and
    ``del`` it, then this. Generation then uses HF ``generate``, not vLLM. Not run on a GPU yet.

    Raises:
        RuntimeError: an Unsloth model's vLLM engine is still up (release it first).
        helpers.models.GPUMemoryError: less free GPU memory than :func:`merged_4bit_gib` (the
            policy was not dropped, or another process holds the card).
    """
    from .hardware import torch_dtype
    from .models import free_gpu_memory, live_vllm_models, load_model

    if profile.backend != "unsloth":
        return load_model(profile, path, lora=False)
    if live_vllm_models():
        raise RuntimeError("a vLLM engine still holds most of the GPU: call helpers.models.release(model) "
                           "and `del model` before loading the merged model next to it")
    free_gpu_memory(merged_4bit_gib(path), "the merged model in 4-bit")  # collects the deleted policy first
    from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig

    dtype = torch_dtype(profile)
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"
    quantization = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                      bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=dtype)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, quantization_config=quantization,
                                                 device_map="auto")
    return model, tokenizer


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
    summary = {**run_info, "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "base": comparison.summaries["base"], "lora": comparison.summaries["lora"],
               "mcnemar": comparison.mcnemar.as_dict(), "wrong_to_right": comparison.wrong_to_right,
               "right_to_wrong": comparison.right_to_wrong}
    summary_path = out_dir / "summary.json"
    summary_path.write_text(json.dumps(summary, indent=2, default=str) + "\n")
    records_path = out_dir / "records.jsonl"
    with open(records_path, "w", encoding="utf-8") as f:
        for name, result in (("base", comparison.base), ("lora", comparison.lora)):
            for i, record in enumerate(result.records):
                row = {"model": name, "index": i, **record,
                       "reasoning_complete": reasoning_complete(record["completion"])}
                f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
    return summary_path, records_path


def load_results(run_dir) -> Comparison:
    """The :class:`Comparison` saved in ``run_dir`` by :func:`save_results` (from ``records.jsonl``).

    Raises:
        FileNotFoundError: no ``records.jsonl`` in ``run_dir``.
    """
    from .evaluation import read_jsonl

    rows = read_jsonl(Path(run_dir) / "records.jsonl")
    keep = lambda r: {k: v for k, v in r.items() if k not in ("model", "index", "reasoning_complete")}
    return compare(EvalResult([keep(r) for r in rows if r["model"] == "base"]),
                   EvalResult([keep(r) for r in rows if r["model"] == "lora"]))


# ---------------------------------------------------------------------------------- plots
def plot_before_after(comparison: Comparison, show: bool = True):
    """Paired bars, base vs. base + LoRA: accuracy (with Wilson 95 % CI error bars), valid and
    strict format, placeholder rate, reasoning completeness, all in %. Returns the ``Figure``."""
    import matplotlib.pyplot as plt
    import numpy as np

    keys = [("accuracy", "accuracy"), ("format_rate_valid", "format, valid"),
            ("format_rate_strict", "format, strict"), ("placeholder_rate", "placeholder"),
            ("reasoning_rate", "reasoning complete")]
    x = np.arange(len(keys))
    fig, ax = plt.subplots(figsize=(8, 4), constrained_layout=True)
    for offset, name in ((-0.2, "base"), (0.2, "lora")):
        s = comparison.summaries[name]
        values = np.array([100 * (s[k] or 0.0) for k, _ in keys])
        err = np.zeros((2, len(keys)))
        err[:, 0] = [values[0] - 100 * s["ci_low"], 100 * s["ci_high"] - values[0]]
        bars = ax.bar(x + offset, values, 0.4, yerr=err, capsize=4, label=LABELS[name])
        ax.bar_label(bars, fmt="%.0f", padding=2, fontsize=8)
    ax.set_xticks(x, [label for _, label in keys])
    ax.set(ylabel="% of questions", ylim=(0, 105),
           title=f"Before vs. after GRPO, n = {comparison.mcnemar.n} (error bar: Wilson 95 % CI)")
    ax.legend()
    _show_or_close(fig, show)
    return fig


def plot_completion_lengths(comparison: Comparison, max_tokens: int | None = None, show: bool = True):
    """Histograms of completion length (tokens) for both models; a dashed line marks
    ``max_tokens`` (completions there were cut off). Returns the ``Figure``."""
    import matplotlib.pyplot as plt
    import numpy as np

    lengths = {name: [r["tokens"] for r in getattr(comparison, name).records if r["tokens"] is not None]
               for name in ("base", "lora")}
    top = max([max(v, default=0) for v in lengths.values()] + [max_tokens or 0, 1])
    bins = np.linspace(0, top + 1, 21)
    fig, ax = plt.subplots(figsize=(8, 3.5), constrained_layout=True)
    for name, values in lengths.items():
        ax.hist(values, bins=bins, alpha=0.55, label=f"{LABELS[name]} (mean {np.mean(values):.0f})")
    if max_tokens:
        ax.axvline(max_tokens, color="k", ls="--", lw=1, label=f"limit {max_tokens}")
    ax.set(xlabel="completion tokens", ylabel="questions", title="Completion lengths")
    ax.legend()
    _show_or_close(fig, show)
    return fig


def _show_or_close(fig, show: bool) -> None:
    import matplotlib.pyplot as plt

    if show:
        plt.show()
    else:
        plt.close(fig)
