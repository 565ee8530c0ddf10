"""Several training processes: ``accelerate launch -m helpers train`` starts one per GPU (``docs/multi_gpu.md``).

Data-parallel GRPO is TRL's ``GRPOTrainer`` under accelerate, nothing of ours: every process holds the whole
policy, generates and trains on its share of the step's prompts; TRL gathers each group's rewards across
processes before the advantages, and DDP (or DeepSpeed) averages the gradients. One optimizer step sees
``per_device_train_batch_size x processes x gradient_accumulation_steps`` completions, which must be whole
groups (:func:`global_batch`).

In :func:`helpers.training.pipeline.run_pipeline` every process runs the cold start and GRPO; the main
process (rank 0) alone prints (:func:`quiet_if_replica`), writes every file, and evaluates after GRPO with
the policy it holds (DDP and ZeRO-2 keep all weights on every process; under ZeRO-3, sharded, there is no
cold start and no evaluation in the run: :func:`check_launch`). Rank and process count come from the
launcher's ``RANK`` and ``WORLD_SIZE`` (``accelerate launch``, ``torchrun``, DeepSpeed), so they are known
before any model loads.
"""

from __future__ import annotations

import os
import sys


class SetupError(ValueError):
    """Settings this launch cannot run; raised before any model loads, with a one-line message."""


def process_count() -> int:
    """Number of training processes (``WORLD_SIZE``); 1 without a launcher."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def process_index() -> int:
    """This process's global rank (``RANK``); 0 without a launcher."""
    return int(os.environ.get("RANK", "0"))


def is_main_process() -> bool:
    """True on rank 0, the process that prints and writes files."""
    return process_index() == 0


def zero3_launch() -> bool:
    """True under ``accelerate launch`` with DeepSpeed ZeRO stage 3 (``configs/deepspeed_zero3.yaml``):
    accelerate exports the config's ``zero_stage`` as ``ACCELERATE_DEEPSPEED_ZERO_STAGE``."""
    return (
        os.environ.get("ACCELERATE_USE_DEEPSPEED", "").lower() == "true"
        and os.environ.get("ACCELERATE_DEEPSPEED_ZERO_STAGE") == "3"
    )


def global_batch(profile, processes: int | None = None) -> int:
    """Completions per optimizer step: ``per_device_train_batch_size x processes x
    gradient_accumulation_steps`` (``processes`` default :func:`process_count`).

    Raises:
        SetupError: not a multiple of ``num_generations`` (TRL would refuse it after loading the model).
    """
    processes = process_count() if processes is None else processes
    per_device, steps = profile.per_device_train_batch_size, profile.gradient_accumulation_steps
    total = per_device * processes * steps
    if total % profile.num_generations:
        raise SetupError(
            f"global batch = per_device_train_batch_size {per_device} x {processes} processes x "
            f"gradient_accumulation_steps {steps} = {total} completions, not a multiple of "
            f"num_generations {profile.num_generations} (GRPO trains on whole groups)"
        )
    return total


def prompts_per_step(profile) -> int:
    """Distinct prompts (groups) per optimizer step: :func:`global_batch` / ``num_generations``.

    Raises:
        SetupError: as :func:`global_batch`.
    """
    return global_batch(profile) // profile.num_generations


def check_launch(profile, *, cold_start: bool) -> int:
    """Check a run's settings against this launch before any model loads; returns :func:`global_batch`.

    Args:
        profile: the run's :class:`helpers.training.profiles.Profile`.
        cold_start: whether the run trains a cold start (SFT, then a merge of the LoRA).

    Raises:
        SetupError: the global batch is not whole groups; a vLLM server with an Unsloth profile
            (Unsloth generates with its own engine in every process); a cold start under ZeRO-3.
    """
    if profile.vllm_server_url and profile.backend == "unsloth":
        raise SetupError(
            f"profile {profile.name}: Unsloth generates with its own vLLM engine in every "
            "process (it sets vllm_mode='colocate'); a vLLM server needs --profile cuda"
        )
    if cold_start and zero3_launch():
        raise SetupError(
            "DeepSpeed ZeRO-3 shards the weights that the cold start merges: pass "
            "--cold-start-examples 0 or --cold-start DIR, or use configs/deepspeed_zero2.yaml"
        )
    return global_batch(profile)


def describe_batch(processes: int, per_device: int, accumulation: int, num_generations: int) -> str:
    """One line: processes and the global batch, e.g. ``2 processes; global batch 8 completions =
    4 per process x 2 processes x 1 accumulation step (2 prompts x 4 completions)``."""
    total = per_device * processes * accumulation
    prompts, es = total // num_generations, "es" * (processes != 1)
    return (
        f"{processes} process{es}; global batch {total} completions = {per_device} per process x "
        f"{processes} process{es} x {accumulation} accumulation step{'s' * (accumulation != 1)} "
        f"({prompts} prompt{'s' * (prompts != 1)} x {num_generations} completions)"
    )


def quiet_if_replica() -> bool:
    """On a process other than the main one, drop standard output, Python warnings, the progress
    bars of datasets and the hub, and library logging below errors, so that a launch of N processes
    prints each line once (errors and tracebacks still reach stderr). Call it before transformers
    or datasets is imported. Returns True on such a replica, False on the main process."""
    if is_main_process():
        return False
    import logging
    import warnings

    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
    warnings.filterwarnings("ignore")
    for variable in ("TRANSFORMERS_VERBOSITY", "DATASETS_VERBOSITY"):
        os.environ[variable] = "error"
    for variable in ("HF_DATASETS_DISABLE_PROGRESS_BARS", "HF_HUB_DISABLE_PROGRESS_BARS"):
        os.environ[variable] = "1"  # the main process shows them
    for name in ("transformers", "datasets", "trl", "peft", "accelerate", "torch"):
        logging.getLogger(name).setLevel(logging.ERROR)
    return True
