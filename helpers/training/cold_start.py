"""Cold start: supervised fine-tuning on worked solutions in the course format, before GRPO.

DeepSeek-R1-Zero (DeepSeek-AI 2025) learned to reason with RL alone; DeepSeek-R1 added a "cold start"
(section 2.3.1), SFT on a few thousand long chains of thought before RL, for stable early RL and readable
answers. The course needs one for another reason: RL only reinforces what the policy already samples, and
GRPO learns nothing from a group whose completions all score the same. SmolLM2-135M never writes
``<reasoning>/<answer>`` on its own (no committed greedy evaluation of the base model, e.g.
``results/cpu-cold160-checked``, shows it, nor a ``\\boxed{}`` answer), so every completion earns 0 and
its groups give no signal. After the CPU profile's cold start (40 GSM8K *train* solutions and 120
course-written worked problems) the valid format is there on most course-written test problems and GSM8K
questions (``results/cpu-varied/summary.json``: ``format_rate_valid``), and groups can differ.

Read :func:`build_sft_dataset` (TRL prompt-completion rows: the GRPO prompt and the formatted solution)
and :func:`train_cold_start` (a LoRA trained with TRL's ``SFTTrainer`` on the assistant turn only, merged
into the base weights and saved as the GRPO policy's start and, where beta > 0, its reference model).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from helpers.course_format import SYSTEM_PROMPT, extract_hash_answer, format_solution, make_prompt
from helpers.data.gsm8k import read_rows
from helpers.training.profiles import Profile, mixed_precision_flags

COLD_START_DIR = "cold_start"
COLD_START_METRICS_FILE = "cold_start_metrics.csv"
PROBLEMS_SEED = 1000  # the cold start's course-written problems: a draw of their own (GRPO's use profile.seed)


def build_sft_dataset(
    n: int,
    data_dir=None,
    system_prompt: str = SYSTEM_PROMPT,
    problems: int = 0,
    two_op_share: float = 0.5,
    family: str = "varied",
    max_number: int = 20,
):
    """The first ``n`` GSM8K *train* rows (:func:`helpers.data.gsm8k.read_rows`), and ``problems``
    course-written worked problems, as a ``datasets.Dataset`` for ``SFTTrainer``.

    Columns: ``prompt`` (system + user messages, exactly the GRPO prompt), ``completion`` (one assistant
    message: :func:`helpers.course_format.format_solution`, calculator annotations removed, the ``####``
    label as the answer), ``question``, ``answer`` (the label). The problems
    (:func:`helpers.data.problems.make_problems`, *train* split, ``floor(problems x two_op_share)`` with two
    operations and the rest with one, of ``family``, operands up to ``max_number``, seed
    :data:`PROBLEMS_SEED`) are shuffled in among the GSM8K rows (a fixed order).

    Raises:
        ValueError: ``n < 1`` or more rows than the split has; ``problems < 0``; ``two_op_share``
            outside [0, 1].
    """
    rows, source = read_rows("train", data_dir)
    if not 1 <= n <= len(rows):
        raise ValueError(f"n must be between 1 and {len(rows)} (the train split), got {n}")
    if problems < 0:
        raise ValueError(f"problems must be >= 0, got {problems}")
    if not 0.0 <= two_op_share <= 1.0:
        raise ValueError(f"two_op_share must be in [0, 1], got {two_op_share}")
    import random

    from datasets import Dataset, DatasetInfo

    from helpers.data.problems import make_problems

    pairs = [(r["question"], r["answer"]) for r in rows[:n]]
    description = f"{source}, first {n} rows"
    if problems:
        two = int(problems * two_op_share + 1e-9)  # 120 x 2/3 may fall just under 80
        written = [
            p
            for ops, k in ((1, problems - two), (2, two))
            if k
            for p in make_problems(k, ops=ops, max_number=max_number, split="train", seed=PROBLEMS_SEED, family=family)
        ]
        pairs += [(p.question, p.solution) for p in written]
        random.Random(0).shuffle(pairs)
        description += (
            f", and {problems} course-written worked problems ({problems - two} with 1 operation, "
            f"{two} with 2; not GSM8K)"
        )
    return Dataset.from_dict(
        {
            "prompt": [make_prompt(q, system_prompt) for q, _ in pairs],
            "completion": [[{"role": "assistant", "content": format_solution(a)}] for _, a in pairs],
            "question": [q for q, _ in pairs],
            "answer": [extract_hash_answer(a) for _, a in pairs],
        },
        info=DatasetInfo(description=description),
    )


def build_sft_config(profile: Profile, output_dir, **overrides):
    """``trl.SFTConfig`` for the cold start of a profile (``cold_start_*`` settings).

    Loss on the completion (the assistant turn) only, TRL's default for prompt-completion data, set
    explicitly. Precision follows :func:`helpers.training.profiles.mixed_precision_flags`, as the model's
    dtype does (TRL's SFT would default to bf16).
    """
    import torch
    from trl import SFTConfig

    settings = dict(
        output_dir=str(output_dir),
        learning_rate=profile.cold_start_learning_rate,
        num_train_epochs=profile.cold_start_epochs,
        per_device_train_batch_size=profile.cold_start_batch_size,
        gradient_accumulation_steps=1,
        lr_scheduler_type="linear",
        warmup_ratio=0.0,
        max_length=profile.max_prompt_length + profile.max_completion_length,
        completion_only_loss=True,
        gradient_checkpointing=profile.gradient_checkpointing is True,
        **mixed_precision_flags(profile),
        use_cpu=not torch.cuda.is_available(),
        logging_steps=1,
        log_level_replica="error",  # several processes: the others log errors only
        ddp_find_unused_parameters=False,  # every LoRA weight gets a gradient each step
        save_strategy="no",
        report_to="none",
        seed=profile.seed,
    )
    settings.update(overrides)
    return SFTConfig(**settings)


@dataclass
class ColdStart:
    """Where the merged cold-start checkpoint went, its training metrics and wall time (s)."""

    model_dir: Path
    metrics_csv: Path
    seconds: float
    examples: int


def train_cold_start(
    profile: Profile, output_dir, *, n: int | None = None, model_path=None, dataset=None, **config_overrides
) -> ColdStart:
    """SFT a LoRA on formatted GSM8K train solutions, merge it, save ``<output_dir>/cold_start``.

    Args:
        profile: model, LoRA shape and ``cold_start_*`` settings.
        output_dir: the run's folder; the merged model goes to ``cold_start/`` inside it and the
            per-step loss to ``cold_start_metrics.csv``.
        n: number of train solutions; default ``profile.cold_start_examples``.
        model_path: local base checkpoint instead of the profile's model.
        dataset: prompt-completion rows instead of :func:`build_sft_dataset` ``(n)``.
        config_overrides: any ``SFTConfig`` field.

    Returns:
        :class:`ColdStart`; ``model_dir`` loads with ``load_model(profile, model_dir)``. Under
        ``accelerate launch`` every process trains (data-parallel), the main one writes the merged
        model and the metrics, and all return once it is on disk.

    Raises:
        ValueError: ``n < 1`` (a profile without a cold start has ``cold_start_examples = 0``).
    """
    from trl import SFTTrainer

    from helpers.evaluation.adapters import save_merged
    from helpers.training.callbacks import MetricsCSV, quiet_progress
    from helpers.training.models import load_model

    n = profile.cold_start_examples if n is None else n
    if n < 1:
        raise ValueError(f"cold start needs at least 1 example, got {n}")
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    if dataset is None:
        dataset = build_sft_dataset(
            n,
            problems=profile.cold_start_problems,
            two_op_share=profile.cold_start_two_op_share,
            family=profile.problem_family,
            max_number=profile.cold_start_max_number,
        )
    model, tokenizer = load_model(profile, model_path)
    metrics = MetricsCSV(output_dir / COLD_START_METRICS_FILE)
    trainer = SFTTrainer(
        model=model,
        processing_class=tokenizer,
        train_dataset=dataset,
        args=build_sft_config(profile, output_dir, **config_overrides),
        callbacks=[metrics],
    )
    quiet_progress(trainer)
    started = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - started
    tokenizer.padding_side = "left"  # SFTTrainer may have changed it; generation pads left
    model_dir = output_dir / COLD_START_DIR
    if trainer.is_world_process_zero():
        save_merged(model, tokenizer, model_dir)
    trainer.accelerator.wait_for_everyone()  # every process loads it next, for GRPO
    return ColdStart(model_dir, metrics.path, seconds, len(dataset))
