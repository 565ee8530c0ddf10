"""GRPO training with TRL's ``GRPOTrainer``: config from a profile, metrics CSV, LoRA adapter.

:func:`train` is the GRPO stage of notebook 05 and of :func:`helpers.training.pipeline.run_pipeline`
(``make train``, ``python -m helpers train``); on the transformers backend it trains with
:class:`CourseGRPOTrainer` (TRL's trainer with the savings of :mod:`helpers.training.fast_rollouts`).
It writes into ``output_dir``:

* ``metrics.csv`` - one row per optimizer step (:class:`helpers.training.callbacks.MetricsCSV`): rewards,
  reward std, KL, completion length, clip ratios, loss, grad norm, learning rate, wall-clock seconds;
* ``groups.jsonl`` - every group trained on (:class:`helpers.training.callbacks.GroupLog`);
* ``lora_adapter/`` - the trained LoRA weights (PEFT format) and the tokenizer;
* ``training_curves.png`` - :func:`helpers.evaluation.plots.plot_training_curves`;
* ``effective_config.json`` - the trainer's settings after TRL's and Unsloth's rewrites, checked against
  the ones asked for (:func:`helpers.training.checks.check_config`; ``summary.json`` holds them too);
* ``checkpoint-<step>/`` - every ``profile.save_steps`` steps (GPU profiles), the last ``save_total_limit``
  kept (on Google Drive :data:`helpers.colab.persist.DRIVE_CHECKPOINTS`). A second :func:`train` into the
  folder resumes from the newest complete one (:func:`helpers.training.checkpoints.last_checkpoint`), so
  on Google Drive a Colab disconnect costs at most ``save_steps`` steps (twice that if it cut an upload).

Under ``accelerate launch`` (:mod:`helpers.training.distributed`) every process trains and only the main
one writes these files.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from trl import GRPOTrainer

from helpers.training.callbacks import GroupLog, HeldoutAccuracy, MetricsCSV, TruncationGuard, quiet_progress
from helpers.training.checkpoints import checkpoint_step, last_checkpoint
from helpers.training.checks import check_config, format_config, one_value_per_completion
from helpers.training.profiles import Profile, get_profile, mixed_precision_flags
from helpers.training.run_files import EFFECTIVE_CONFIG_FILE, GROUPS_FILE, METRICS_FILE

ADAPTER_DIR = "lora_adapter"
CURVES_FILE = "training_curves.png"
# GRPOConfig fields set to the profile's field of the same name (the order is the notebook cell's)
_OBJECTIVE_AND_ROLLOUTS = (
    "loss_type beta epsilon scale_rewards num_iterations num_generations per_device_train_batch_size "
    "gradient_accumulation_steps max_prompt_length max_completion_length temperature top_p"
).split()
_OPTIMIZER = (
    "learning_rate adam_beta1 adam_beta2 weight_decay warmup_ratio lr_scheduler_type optim max_grad_norm max_steps"
).split()


@dataclass
class TrainingRun:
    """Where a run's outputs went, and how long its steps took (seconds, wall clock)."""

    output_dir: Path
    metrics_csv: Path
    adapter_dir: Path
    curves_png: Path
    seconds_per_step: float
    trainer: object = None
    processes: int = 1  # training processes (accelerate), each with the whole policy
    global_batch: int = 0  # completions per optimizer step over all processes
    heldout: list = field(default_factory=list)  # [(step, {"heldout/accuracy": ...}), ...] when watched
    effective_config: dict = field(default_factory=dict)  # the trainer's settings after every rewrite


def build_grpo_config(profile: Profile, output_dir: str | Path, report_to: str = "none", **overrides):
    """``trl.GRPOConfig(**grpo_settings(...))``: the config for a profile, ``overrides`` on top. Under
    Unsloth it is Unsloth's config, which may rewrite settings (:func:`helpers.training.checks.check_config`)."""
    from trl import GRPOConfig

    return GRPOConfig(**grpo_settings(profile, output_dir, report_to, **overrides))


def grpo_settings(profile: Profile, output_dir: str | Path, report_to: str = "none", **overrides) -> dict:
    """The ``trl.GRPOConfig`` keyword arguments the course chooses for a profile, ``overrides`` (any
    GRPOConfig field) on top.

    The objective is explicit (DeepSeekMath eq. 3 with the k3 KL of eq. 4): ``loss_type``, ``beta``,
    ``epsilon`` and ``scale_rewards`` come from the profile, never TRL's defaults; ``fp16``/``bf16`` from
    :func:`helpers.training.profiles.mixed_precision_flags`, as the model's dtype. A curriculum's prompts
    are read in order (``shuffle_dataset=False``). Rollouts: Unsloth's vLLM engine (``fast_inference``),
    TRL's vLLM server mode when ``profile.vllm_server_url`` is set, else HF ``generate``. With several
    processes the replicas log errors only.

    Raises:
        ValueError: the profile's precision does not fit this GPU (:func:`helpers.training.profiles.precision`).
    """
    settings = dict(  # notebook 05's `settings` cell, field for field and in its order (tests/test_notebook_05.py)
        output_dir=str(output_dir),
        **{name: getattr(profile, name) for name in _OBJECTIVE_AND_ROLLOUTS},
        use_vllm=profile.fast_inference,
        **{name: getattr(profile, name) for name in _OPTIMIZER},
        **mixed_precision_flags(profile),
        use_cpu=not torch.cuda.is_available(),
        gradient_checkpointing=profile.gradient_checkpointing is True,
        save_strategy="steps" if profile.save_steps > 0 else "no",
        save_steps=max(profile.save_steps, 1),
        save_total_limit=profile.save_total_limit,
        logging_steps=1,
        report_to=report_to,
        seed=profile.seed,
        shuffle_dataset=not profile.curriculum,
    )
    if profile.vllm_server_url:  # `trl vllm-serve` on its own GPU; the main process sends it the weights
        settings.update(use_vllm=True, vllm_mode="server", vllm_server_base_url=profile.vllm_server_url)
    from helpers.training.distributed import process_count

    if process_count() > 1:  # several processes: the replicas log errors only; every LoRA weight gets a gradient
        settings.update(log_level_replica="error", ddp_find_unused_parameters=False)
    settings.update(overrides)
    return settings


def train(
    profile: Profile | None = None,
    *,
    output_dir: str | Path | None = None,
    max_steps: int | None = None,
    model=None,
    tokenizer=None,
    dataset=None,
    model_path: str | Path | None = None,
    reward_funcs=None,
    report_to: str = "none",
    resume: bool = True,
    callbacks=(),
    heldout=None,
    **config_overrides,
) -> TrainingRun:
    """Run GRPO on GSM8K for a profile and save metrics, adapter and curves (the files listed above).

    Args:
        profile: run settings; default :func:`helpers.training.profiles.get_profile` (hardware pick).
        output_dir: default ``outputs/grpo-<profile>``.
        max_steps: overrides the profile's number of optimizer steps.
        model, tokenizer: an already loaded policy with LoRA (:func:`helpers.training.models.load_model`);
            loaded from the profile (and ``model_path``) when omitted.
        dataset: prompts with ``prompt`` and ``answer`` columns; default GSM8K train.
        reward_funcs: default :data:`helpers.rewards.REWARD_FUNCS` (the five course rewards).
        report_to: ``"none"``; ``"wandb"`` or ``"tensorboard"`` are opt-in.
        resume: continue from the newest ``checkpoint-<step>`` in ``output_dir``; ``False`` starts over.
        callbacks: more ``transformers.TrainerCallback`` objects for the trainer.
        heldout: held-out problems (rows with ``question``/``answer``) for
            :class:`helpers.training.callbacks.HeldoutAccuracy` every ``profile.heldout_every`` steps; None: off.
        config_overrides: any other ``GRPOConfig`` field.

    Returns:
        :class:`TrainingRun` with the paths written (every process returns it under ``accelerate launch``).
        Before the first step :func:`ready_trainer` checks and writes the effective config and wraps the
        reward functions; :class:`helpers.training.callbacks.TruncationGuard` warns about cut completions.

    Raises:
        ValueError: ``dataset`` holds fewer prompts than one step draws (TRL would run no step and
            write nothing); a reward function returned the wrong number of values (during training).
        helpers.training.checks.ConfigRewriteError: a chosen setting was changed before training
            (Unsloth's batch reset, for one).
    """
    from trl import GRPOConfig  # under Unsloth: its patched config (import_backend came first)
    from trl import GRPOTrainer as trainer_class  # and its patched trainer

    from helpers.colab.persist import DRIVE_CHECKPOINTS, on_drive
    from helpers.data.gsm8k import load_gsm8k
    from helpers.evaluation.plots import plot_training_curves
    from helpers.training.distributed import prompts_per_step
    from helpers.training.models import load_model

    profile = profile or get_profile()
    if max_steps is not None:
        profile = profile.replace(max_steps=max_steps)
    output_dir = Path(output_dir or f"outputs/grpo-{profile.name}")
    output_dir.mkdir(parents=True, exist_ok=True)
    if model is None:
        model, tokenizer = load_model(profile, model_path)
    if dataset is None:
        dataset = load_gsm8k("train")
        print(f"Training prompts: {dataset.info.description} ({len(dataset)} questions)")
    if len(dataset) < prompts_per_step(profile):
        raise ValueError(
            f"{len(dataset)} prompts, fewer than the {prompts_per_step(profile)} a step draws "
            f"(num_generations {profile.num_generations} completions each): TRL would run no step"
        )
    if reward_funcs is None:
        from helpers.rewards import REWARD_FUNCS as reward_funcs
    if profile.fast_rollouts and profile.backend == "transformers":
        trainer_class = CourseGRPOTrainer  # the same trainer, cheaper steps
    if on_drive(output_dir) and profile.save_steps > 0:  # each rotated checkpoint probably goes to Drive's trash
        config_overrides.setdefault("save_total_limit", DRIVE_CHECKPOINTS)
    settings = grpo_settings(profile, output_dir, report_to=report_to, **config_overrides)
    lengths = {k: settings[k] for k in ("max_prompt_length", "max_completion_length")}
    metrics, course = course_callbacks(profile.replace(**lengths), tokenizer, output_dir, heldout)
    trainer = trainer_class(  # notebook 05's `train` cell
        model=model,
        processing_class=tokenizer,
        reward_funcs=reward_funcs,
        args=GRPOConfig(**settings),
        train_dataset=dataset,
        callbacks=[*course, *callbacks],
    )
    checkpoint = ready_trainer(trainer, profile, settings, output_dir, dataset, resume=resume)
    started = time.perf_counter()
    trainer.train(resume_from_checkpoint=checkpoint)
    steps_now = trainer.state.global_step - (checkpoint_step(checkpoint) if checkpoint else 0)
    seconds_per_step = (time.perf_counter() - started) / max(steps_now, 1)

    adapter_dir = output_dir / ADAPTER_DIR
    # Called on every process (DeepSpeed's ZeRO-3 gather needs all of them); the main one writes.
    trainer.save_model(str(adapter_dir))
    curves_png = output_dir / CURVES_FILE
    if trainer.is_world_process_zero():
        plot_training_curves(metrics.path, save_to=curves_png, show=False)
    args, processes = trainer.args, trainer.accelerator.num_processes
    batch = args.per_device_train_batch_size * processes * args.gradient_accumulation_steps
    history = course[0].history if heldout is not None else []
    run = (output_dir, metrics.path, adapter_dir, curves_png, seconds_per_step, trainer, processes, batch, history)
    return TrainingRun(*run, trainer.effective_config)


def course_callbacks(profile: Profile, tokenizer, output_dir, heldout=None) -> tuple[MetricsCSV, list]:
    """The callbacks of every course GRPO run, in the order the trainer must call them: ``HeldoutAccuracy``
    (when ``heldout`` is given; it adds its values to the step's logs), ``MetricsCSV`` into
    ``output_dir/metrics.csv`` (which then writes them), ``TruncationGuard`` (all of
    :mod:`helpers.training.callbacks`). Returns ``(the MetricsCSV, [callbacks])``."""
    metrics = MetricsCSV(Path(output_dir) / METRICS_FILE)
    watch = []
    if heldout is not None:
        every, length = profile.heldout_every, profile.max_completion_length
        watch = [HeldoutAccuracy(heldout, tokenizer, every=every, metrics=metrics, max_new_tokens=length)]
    return metrics, [*watch, metrics, TruncationGuard(profile)]


def ready_trainer(trainer, profile: Profile, settings: dict, output_dir, dataset, resume: bool = True) -> str | None:
    """Ready a built trainer for ``trainer.train()``; returns the checkpoint to resume from, or None.

    * checks the effective config against ``settings`` (the ``GRPOConfig``'s keywords,
      :func:`helpers.training.checks.check_config`), prints it, keeps it as ``trainer.effective_config``
      and writes ``output_dir/effective_config.json`` (main process);
    * wraps each reward function to check one value per completion
      (:func:`helpers.training.checks.one_value_per_completion`; names kept);
    * leaves one progress bar (:func:`~helpers.training.callbacks.quiet_progress`) and adds
      :class:`~helpers.training.callbacks.GroupLog`;
    * with ``resume``, finds the newest complete checkpoint (:func:`helpers.training.checkpoints.last_checkpoint`).

    Raises:
        helpers.training.checks.ConfigRewriteError: TRL or Unsloth changed a chosen setting."""
    effective = check_config(settings, trainer.args)  # raises before any step if a setting was rewritten
    trainer.effective_config = effective
    if trainer.is_world_process_zero():
        print("Effective GRPO config (after TRL's and Unsloth's rewrites):\n" + format_config(effective))
        (Path(output_dir) / EFFECTIVE_CONFIG_FILE).write_text(json.dumps(effective, indent=1) + "\n")
    trainer.reward_funcs = [
        f if isinstance(f, torch.nn.Module) else one_value_per_completion(f) for f in trainer.reward_funcs
    ]
    quiet_progress(trainer)
    if hasattr(trainer, "_logs"):  # TRL's generation log, which GroupLog reads
        trainer.add_callback(GroupLog(Path(output_dir) / GROUPS_FILE, trainer, dataset, profile.num_generations))
    checkpoint = last_checkpoint(output_dir) if resume else None
    if checkpoint is not None:
        print(f"Resuming from {checkpoint} (delete it, or pass resume=False, to start over)")
    return str(checkpoint) if checkpoint is not None else None


class CourseGRPOTrainer(GRPOTrainer):
    """TRL's ``GRPOTrainer`` with the four savings of :mod:`helpers.training.fast_rollouts` and nothing else
    changed (loss, advantages, KL, clipping, logging and checkpoints are TRL's code). TRL's own paths serve
    where a saving does not apply: several processes (DDP wraps the forward), vision inputs, or a policy
    that is not a plain PEFT LoRA."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        policy = self.accelerator.unwrap_model(self.model)
        try:
            from helpers.training.fast_rollouts import MergedPolicy  # CPU only: a T4 run never imports it

            self._merged = MergedPolicy(policy) if not self.use_vllm else None
        except ValueError:
            self._merged = None

    def _generate_and_score_completions(self, inputs):
        if self._merged is None:
            return super()._generate_and_score_completions(inputs)
        from helpers.training.fast_rollouts import merged_generate

        with merged_generate(self.accelerator.unwrap_model(self.model), self._merged):
            return super()._generate_and_score_completions(inputs)

    def _get_per_token_logps_and_entropies(
        self, model, input_ids, attention_mask, logits_to_keep, batch_size=None, compute_entropy=False, **vision
    ):
        # TRL 0.22.2 passes the vision inputs (pixel_values, image_grid_thw, ...) by keyword
        if self.accelerator.num_processes > 1 or any(v is not None for v in vision.values()):
            return super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy, **vision
            )
        from helpers.training.fast_rollouts import shared_prompt_logps

        return shared_prompt_logps(model, input_ids, attention_mask, logits_to_keep, self.temperature, compute_entropy)

    def _compute_loss(self, model, inputs):
        """TRL's loss, over the rows whose advantage is not 0 when ``beta = 0`` (saving 4).

        The sub-batch's loss is rescaled to TRL's normaliser: ``"grpo"`` and ``"dr_grpo"`` by live rows /
        all rows, ``"bnpo"`` by live tokens / all tokens, ``"dapo"`` not at all (it divides by the batch's
        token count, passed on unchanged). A batch with no live row keeps one, weighted 0, so the step still
        has a gradient (of zeros). The logged entropy and clip ratios are then means over the live rows.
        With ``beta > 0``, vision inputs or another loss type: TRL's own.
        """
        advantages = inputs["advantages"]
        live = advantages != 0
        rows = advantages.size(0)
        if (
            self.beta != 0.0
            or live.all()
            or self.loss_type not in ("grpo", "dr_grpo", "bnpo", "dapo")
            or any(inputs.get(key) is not None for key in ("pixel_values", "image_grid_thw"))
        ):
            return super()._compute_loss(model, inputs)
        keep = torch.nonzero(live).flatten() if live.any() else advantages.new_zeros(1, dtype=torch.long)
        subset = {
            key: value[keep] if torch.is_tensor(value) and value.dim() > 0 and value.size(0) == rows else value
            for key, value in inputs.items()
        }
        loss = super()._compute_loss(model, subset)
        if not live.any():
            return loss * 0.0
        if self.loss_type == "bnpo":
            return loss * subset["completion_mask"].sum() / inputs["completion_mask"].sum()
        return loss * (keep.numel() / rows if self.loss_type in ("grpo", "dr_grpo") else 1.0)
