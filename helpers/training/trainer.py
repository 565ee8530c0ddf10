"""GRPO training with TRL's ``GRPOTrainer``: config from a profile, metrics CSV, LoRA adapter.

:func:`train` is the GRPO stage of notebook 05 and of :func:`helpers.training.pipeline.run_pipeline`
(``make train``, ``python -m helpers train``). On the transformers backend it trains with
:class:`CourseGRPOTrainer`: TRL's trainer with the savings of :mod:`helpers.training.fast_rollouts` and
nothing else changed. It writes into ``output_dir``:

* ``metrics.csv`` - one row per optimizer step (:class:`helpers.training.callbacks.MetricsCSV`): total
  reward and each reward function's mean, reward std, KL to the reference model, completion length,
  clipped-completion ratio, clip region ratio, loss, grad norm, learning rate and wall-clock seconds;
* ``lora_adapter/`` - the trained LoRA weights (PEFT format) and the tokenizer;
* ``training_curves.png`` - the curves of :func:`helpers.evaluation.plots.plot_training_curves`;
* ``checkpoint-<step>/`` - every ``profile.save_steps`` steps (GPU profiles; the CPU profile saves
  none), the last ``profile.save_total_limit`` kept (on Google Drive only the last one,
  :data:`helpers.colab.persist.DRIVE_CHECKPOINTS`). A second :func:`train` into the same folder resumes
  from the newest one that loads (:func:`last_checkpoint`): the step counter, optimizer, scheduler
  and random state continue and ``metrics.csv`` keeps its rows. Put ``output_dir`` on Google Drive
  (:func:`helpers.colab.persist.output_dir`) and a Colab disconnect costs at most ``save_steps`` steps.

Under ``accelerate launch`` (several processes, :mod:`helpers.training.distributed`) every process trains
and only the main one writes these files.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from trl import GRPOTrainer

from helpers.evaluation.reports import METRICS_FILE
from helpers.training.callbacks import MetricsCSV, quiet_progress
from helpers.training.fast_rollouts import MergedPolicy, merged_generate, shared_prompt_logps
from helpers.training.profiles import Profile, get_profile

ADAPTER_DIR = "lora_adapter"


CURVES_FILE = "training_curves.png"


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


def build_grpo_config(profile: Profile, output_dir: str | Path, report_to: str = "none", **overrides):
    """``trl.GRPOConfig`` for a profile; ``overrides`` set any GRPOConfig field directly.

    The GRPO objective is explicit (DeepSeekMath eq. 3 with the k3 KL of eq. 4): ``loss_type``,
    ``beta``, ``epsilon`` and ``scale_rewards`` come from the profile, never TRL's defaults.
    ``fp16``/``bf16`` come from :func:`helpers.training.hardware.mixed_precision_flags`, the source of the
    model's dtype too. With a curriculum (``profile.curriculum``) the prompts are read in the
    dataset's order (``shuffle_dataset=False``), else shuffled. Checkpoints every
    ``profile.save_steps`` steps (none when 0). Rollouts: an Unsloth profile's own vLLM engine
    (``fast_inference``), TRL's vLLM server mode when ``profile.vllm_server_url`` is set, else HF
    ``generate`` (:mod:`helpers.training.fast_rollouts` with ``profile.fast_rollouts``). Processes other than the
    main one log errors only (``log_level_replica``).

    Raises:
        ValueError: the profile's precision does not fit this GPU (:func:`helpers.training.hardware.precision`).
    """
    import torch
    from trl import GRPOConfig

    from helpers.training.hardware import mixed_precision_flags

    cuda = torch.cuda.is_available()
    if profile.vllm_server_url:  # `trl vllm-serve` on its own GPU; the main process sends it the weights
        rollouts = dict(use_vllm=True, vllm_mode="server", vllm_server_base_url=profile.vllm_server_url)
    else:
        rollouts = dict(use_vllm=profile.fast_inference)
    settings = dict(
        output_dir=str(output_dir),
        learning_rate=profile.learning_rate,
        adam_beta1=profile.adam_beta1,
        adam_beta2=profile.adam_beta2,
        weight_decay=profile.weight_decay,
        warmup_ratio=profile.warmup_ratio,
        lr_scheduler_type=profile.lr_scheduler_type,
        optim=profile.optim,
        max_grad_norm=profile.max_grad_norm,
        max_steps=profile.max_steps,
        per_device_train_batch_size=profile.per_device_train_batch_size,
        gradient_accumulation_steps=profile.gradient_accumulation_steps,
        num_generations=profile.num_generations,
        max_prompt_length=profile.max_prompt_length,
        max_completion_length=profile.max_completion_length,
        temperature=profile.temperature,
        top_p=profile.top_p,
        loss_type=profile.loss_type,
        beta=profile.beta,
        epsilon=profile.epsilon,
        scale_rewards=profile.scale_rewards,
        num_iterations=profile.num_iterations,
        # HF checkpointing only when asked with True; "unsloth" is applied by get_peft_model.
        gradient_checkpointing=profile.gradient_checkpointing is True,
        **mixed_precision_flags(profile),
        use_cpu=not cuda,
        **rollouts,
        logging_steps=1,
        log_level_replica="error",
        ddp_find_unused_parameters=False,  # several processes: every LoRA weight gets a gradient each step
        save_strategy="steps" if profile.save_steps > 0 else "no",
        save_steps=max(profile.save_steps, 1),
        save_total_limit=profile.save_total_limit,
        report_to=report_to,
        seed=profile.seed,
        shuffle_dataset=not profile.curriculum,  # a curriculum is read in its order
        disable_tqdm=False,
    )
    settings.update(overrides)
    return GRPOConfig(**settings)


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
    """Run GRPO on GSM8K for a profile and save metrics, adapter and curves.

    Args:
        profile: run settings; default :func:`helpers.training.profiles.get_profile` (hardware pick).
        output_dir: default ``outputs/grpo-<profile>``.
        max_steps: overrides the profile's number of optimizer steps.
        model, tokenizer: an already loaded policy with LoRA (:func:`helpers.training.models.load_model`);
            loaded from the profile (and ``model_path``) when omitted.
        dataset: prompts with ``prompt`` and ``answer`` columns; default GSM8K train.
        reward_funcs: default :data:`helpers.rewards.REWARD_FUNCS` (the five course rewards, with
            content-checked format rewards).
        report_to: ``"none"``; ``"wandb"`` or ``"tensorboard"`` are opt-in.
        resume: continue from the newest ``checkpoint-<step>`` in ``output_dir`` if there is one
            (see the module docstring); ``False`` starts over.
        callbacks: more ``transformers.TrainerCallback`` objects for the trainer.
        heldout: held-out problems (rows with ``question``/``answer``) for
            :class:`helpers.training.callbacks.HeldoutAccuracy`, every ``profile.heldout_every`` steps; None: off.
        config_overrides: any other ``GRPOConfig`` field.

    Returns:
        :class:`TrainingRun` with the paths written. Under ``accelerate launch`` every process
        trains and returns it; only the main process writes the files.

    Raises:
        ValueError: ``dataset`` holds fewer prompts than one step draws (TRL would run no step and
            write nothing).
    """
    from trl import GRPOTrainer as trainer_class  # under Unsloth: its patched trainer (import_backend came first)

    from helpers.colab.persist import DRIVE_CHECKPOINTS, on_drive
    from helpers.data.gsm8k import load_gsm8k
    from helpers.evaluation.plots import plot_training_curves
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
    from helpers.training.distributed import prompts_per_step

    if len(dataset) < prompts_per_step(profile):
        raise ValueError(
            f"{len(dataset)} prompts, fewer than the {prompts_per_step(profile)} a step draws "
            f"(num_generations {profile.num_generations} completions each): TRL would run no step"
        )
    if reward_funcs is None:
        from helpers.rewards import REWARD_FUNCS as reward_funcs
    metrics = MetricsCSV(output_dir / METRICS_FILE)
    watch = []
    if heldout is not None:
        from helpers.training.callbacks import HeldoutAccuracy

        watch = [
            HeldoutAccuracy(
                heldout,
                tokenizer,
                every=profile.heldout_every,
                metrics=metrics,
                max_new_tokens=profile.max_completion_length,
            )
        ]
    if profile.fast_rollouts and profile.backend == "transformers":
        trainer_class = CourseGRPOTrainer  # the same trainer, cheaper steps
    if on_drive(output_dir) and profile.save_steps > 0:  # each rotated checkpoint probably goes to Drive's trash
        config_overrides.setdefault("save_total_limit", DRIVE_CHECKPOINTS)
    trainer = trainer_class(
        model=model,
        processing_class=tokenizer,
        reward_funcs=list(reward_funcs),
        args=build_grpo_config(profile, output_dir, report_to=report_to, **config_overrides),
        train_dataset=dataset,
        callbacks=[*watch, metrics, *callbacks],  # held-out accuracy first: MetricsCSV writes what it adds
    )
    quiet_progress(trainer)
    checkpoint = last_checkpoint(output_dir) if resume else None
    if checkpoint is not None:
        print(f"Resuming from {checkpoint} (pass resume=False to start over)")
    started = time.perf_counter()
    trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    steps_now = trainer.state.global_step - (_checkpoint_step(checkpoint) if checkpoint else 0)
    seconds_per_step = (time.perf_counter() - started) / max(steps_now, 1)

    adapter_dir = output_dir / ADAPTER_DIR
    # LoRA weights and tokenizer, written by the main process only (whole weights gathered under ZeRO-3);
    # called on every process, as DeepSpeed's gather needs all of them.
    trainer.save_model(str(adapter_dir))
    curves_png = output_dir / CURVES_FILE
    if trainer.is_world_process_zero():
        plot_training_curves(metrics.path, save_to=curves_png, show=False)
    args = trainer.args
    processes = trainer.accelerator.num_processes
    return TrainingRun(
        output_dir,
        metrics.path,
        adapter_dir,
        curves_png,
        seconds_per_step,
        trainer,
        processes,
        args.per_device_train_batch_size * processes * args.gradient_accumulation_steps,
        watch[0].history if watch else [],
    )


def last_checkpoint(output_dir, verbose: bool = True) -> Path | None:
    """The newest ``checkpoint-<step>`` folder in ``output_dir`` that loads (:func:`checkpoint_problem`
    finds nothing wrong), or None. Newer ones that do not load are skipped, with the reason printed
    when ``verbose``: over Google Drive a checkpoint's files are not written atomically, and a
    disconnect mid-upload can leave ``trainer_state.json`` beside a truncated ``optimizer.pt``."""
    found = [p for p in Path(output_dir).glob("checkpoint-*") if p.is_dir() and p.name.split("-", 1)[1].isdigit()]
    for path in sorted(found, key=_checkpoint_step, reverse=True):
        problem = checkpoint_problem(path)
        if problem is None:
            return path
        if verbose:
            print(f"Skipping {path.name}, it does not load: {problem}")
    return None


def checkpoint_problem(path) -> str | None:
    """Why the trainer checkpoint in ``path`` would not load, or None when every file reads back.

    Required: ``trainer_state.json``, weights (``*.safetensors``/``*.bin``) and optimizer state
    (``optimizer.pt``), or DeepSpeed's ``global_step*`` folder for both. Every file present is read:
    JSON parsed, safetensors' header checked against the file's length, ``.pt``/``.pth``/``.bin``
    zip archives (``torch.save``) checked against their CRC-32s, older pickles loaded on the CPU.
    """
    import json
    import zipfile

    path = Path(path)
    deepspeed = any(path.glob("global_step*"))
    required = {
        "trainer state": [path / "trainer_state.json"],
        "optimizer state": [path / "optimizer.pt"],
        "weights": [f for f in (*path.glob("*.safetensors"), *path.glob("*.bin")) if f.name != "training_args.bin"],
    }
    for what, files in required.items():
        if not any(f.is_file() for f in files) and not (deepspeed and what != "trainer state"):
            return f"no {what} ({', '.join(f.name for f in files) or 'no weights file'} missing)"
    for file in sorted(f for f in path.rglob("*") if f.is_file()):
        try:
            if file.suffix == ".json":
                json.loads(file.read_text())
            elif file.suffix == ".safetensors":
                from safetensors import safe_open

                with safe_open(str(file), "pt"):
                    pass
            elif file.suffix in (".pt", ".pth", ".bin"):
                if not zipfile.is_zipfile(file):  # a truncated zip has lost its directory too
                    import torch

                    torch.load(file, map_location="cpu", weights_only=False)
                else:
                    with zipfile.ZipFile(file) as archive:
                        bad = archive.testzip()
                    if bad is not None:
                        return f"{file.name}: bad CRC in {bad}"
        except Exception as error:  # truncated, empty, corrupt
            return f"{file.relative_to(path)}: {type(error).__name__}: {str(error)[:120]}"
    return None


def _checkpoint_step(path) -> int:
    return int(Path(path).name.split("-", 1)[1])


# --------------------------------------------------------------------------------- trainer
class CourseGRPOTrainer(GRPOTrainer):
    """TRL's ``GRPOTrainer`` with the four savings of :mod:`helpers.training.fast_rollouts`, nothing else
    changed: rollouts by :func:`~helpers.training.fast_rollouts.sample` on a
    :class:`~helpers.training.fast_rollouts.MergedPolicy` (one prompt pass per group, finished rows dropped),
    log-probs by :func:`~helpers.training.fast_rollouts.shared_prompt_logps`, and with ``beta = 0`` the
    loss over the rows of groups that are not flat (:meth:`_compute_loss`). The loss, advantages, KL,
    clipping, logging and checkpoints are TRL's own code. Falls back to TRL's paths where a saving does not
    apply: several processes (DDP wraps the forward), vision inputs, or a policy that is not a plain PEFT LoRA.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        policy = self.accelerator.unwrap_model(self.model)
        try:
            self._merged = MergedPolicy(policy) if not self.use_vllm else None
        except ValueError:
            self._merged = None

    def _generate_and_score_completions(self, inputs):
        if self._merged is None:
            return super()._generate_and_score_completions(inputs)
        with merged_generate(self.accelerator.unwrap_model(self.model), self._merged):
            return super()._generate_and_score_completions(inputs)

    def _get_per_token_logps_and_entropies(
        self,
        model,
        input_ids,
        attention_mask,
        logits_to_keep,
        batch_size=None,
        compute_entropy=False,
        pixel_values=None,
        image_grid_thw=None,
        pixel_attention_mask=None,
        image_sizes=None,
    ):
        vision = (pixel_values, image_grid_thw, pixel_attention_mask, image_sizes)
        if self.accelerator.num_processes > 1 or any(v is not None for v in vision):
            return super()._get_per_token_logps_and_entropies(
                model,
                input_ids,
                attention_mask,
                logits_to_keep,
                batch_size,
                compute_entropy,
                pixel_values,
                image_grid_thw,
                pixel_attention_mask,
                image_sizes,
            )
        return shared_prompt_logps(model, input_ids, attention_mask, logits_to_keep, self.temperature, compute_entropy)

    def _compute_loss(self, model, inputs):
        """TRL's loss, over the rows whose advantage is not 0 when ``beta = 0``
        (:mod:`helpers.training.fast_rollouts`, saving 4).

        The sub-batch's loss is rescaled to TRL's normaliser: ``"grpo"`` and ``"dr_grpo"`` by
        live rows / all rows, ``"bnpo"`` by live tokens / all tokens, ``"dapo"`` not at all (it divides by
        the batch's token count, passed on unchanged). A batch with no live row keeps one, weighted 0, so
        that the step still has a gradient (of zeros). The logged entropy and clip ratios are then means
        over the live rows. With ``beta > 0``, vision inputs or a loss type TRL adds later: TRL's own.
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
