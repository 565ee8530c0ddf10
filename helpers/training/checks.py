"""Checks made while a GRPO trainer is built: the config it really trains with, and its reward functions.

**The effective config.** What :func:`helpers.training.trainer.build_grpo_config` asks for is not always what
trains. TRL derives settings (:data:`DERIVED`; ``scale_rewards`` True -> ``"group"``), and Unsloth's generated
``GRPOConfig`` and trainer rewrite more with a one-line print at most (unsloth 2026.10.9,
``unsloth/models/rl.py``: the cases are in :func:`check_config`'s message; also a model Unsloth keeps in fp32
turns fp16 off, and ``use_vllm`` is forced on for a model with vLLM). :func:`check_config` raises
:class:`ConfigRewriteError` for any chosen setting that changed; :func:`effective_config` is the record
``train()`` prints and keeps in ``summary.json``.

**Reward functions.** TRL 0.22 writes a reward function's list into one column of its reward tensor
(``GRPOTrainer._calculate_rewards``): one value for a batch is broadcast to every completion without an error
(trl#6533), another wrong length fails deep in torch. :func:`one_value_per_completion` checks the length where
the function returns.
"""

from __future__ import annotations

import enum
import functools
import math
import os

# Settings TRL derives (or Unsloth sets) that the course does not choose: shown and kept, not compared.
DERIVED = (
    "generation_batch_size",
    "steps_per_generation",
    "epsilon_high",
    "delta",
    "mask_truncated_completions",
    "importance_sampling_level",
    "top_k",
    "min_p",
    "repetition_penalty",
    "vllm_mode",
    "reward_weights",
    "world_size",
)


class ConfigRewriteError(ValueError):
    """A setting chosen for the run was changed before training (see :func:`check_config`)."""


def _plain(value):
    """A config value as JSON holds it: enums by value, tuples as lists, anything else by its text."""
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _same(name: str, chosen, effective) -> bool:
    chosen, effective = _plain(chosen), _plain(effective)
    if name == "report_to" and isinstance(chosen, str):  # TrainingArguments: "none" -> [], "wandb" -> ["wandb"]
        chosen = [] if chosen == "none" else [chosen]
    if name == "output_dir" and chosen is not None:
        chosen = os.path.expanduser(str(chosen))
    if isinstance(chosen, float) or isinstance(effective, float):
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (chosen, effective))
        return numbers and math.isclose(chosen, effective, rel_tol=1e-9, abs_tol=0.0)
    return type(chosen) is type(effective) and chosen == effective


def effective_config(args, chosen: dict) -> dict:
    """The trainer's settings after every rewrite, JSON-ready: each key of ``chosen`` (the settings
    the run asked for) and each of :data:`DERIVED` that ``args`` has, read from ``args`` (a
    ``GRPOConfig``, usually ``trainer.args``)."""
    names = [*chosen, *(d for d in DERIVED if d not in chosen)]
    return {name: _plain(getattr(args, name)) for name in names if hasattr(args, name)}


def check_config(chosen: dict, args) -> dict:
    """:func:`effective_config`, after checking that every setting in ``chosen`` kept its value in
    ``args`` (TRL's equivalent spellings count as kept: ``report_to="none"`` is ``[]``, an enum is its
    value, ``~`` in ``output_dir`` expanded).

    Raises:
        ConfigRewriteError: one or more settings changed; the message lists each (chosen -> effective)
            and what usually rewrites it.
    """
    changed = [
        f"{name}: {_plain(value)!r} -> {_plain(getattr(args, name, None))!r}"
        for name, value in chosen.items()
        if not _same(name, value, getattr(args, name, None))
    ]
    if changed:
        raise ConfigRewriteError(
            "settings chosen for this run were changed before training:\n  "
            + "\n  ".join(changed)
            + "\nUnder Unsloth its GRPOConfig rewrites some of them with a print at most (a batch that is not "
            "a multiple of num_generations becomes num_generations; loss_type 'dr_grpo' turns scale_rewards "
            "off; 'dapo' sets mask_truncated_completions and epsilon_high). Choose values that stand: "
            "per_device_train_batch_size x gradient_accumulation_steps a multiple of num_generations, and "
            "with loss_type 'dr_grpo' scale_rewards='none'."
        )
    return effective_config(args, chosen)


def format_config(config: dict, width: int = 110) -> str:
    """``config`` as ``name=value`` pairs wrapped at ``width`` characters, for printing."""
    lines, line = [], ""
    for name, value in config.items():
        item = f"{name}={value!r}" if isinstance(value, str) else f"{name}={value}"
        if line and len(line) + 2 + len(item) > width:
            lines.append(line)
            line = ""
        line = f"{line}, {item}" if line else item
    return "\n".join([*lines, line])


def one_value_per_completion(func):
    """``func``, a TRL reward function, wrapped to check its output: a list (or other sequence) with one
    value (a number or None) per completion. The wrapper keeps ``func``'s name, which TRL logs as
    ``rewards/<name>/mean``, and its signature. A function already wrapped is returned as it is.

    Raises (when the wrapped function is called):
        ValueError: the output is not a sequence, or its length is not the number of completions.
    """
    if getattr(func, "_one_value_per_completion", False):
        return func

    @functools.wraps(func)
    def checked(*args, **kwargs):
        values = func(*args, **kwargs)
        completions = kwargs.get("completions", args[1] if len(args) > 1 else None)
        name = getattr(func, "__name__", repr(func))
        if not hasattr(values, "__len__") or isinstance(values, (str, bytes)):
            raise ValueError(
                f"reward function {name} returned a {type(values).__name__}, not a list with one value per completion"
            )
        if completions is not None and len(values) != len(completions):
            raise ValueError(
                f"reward function {name} returned {len(values)} value(s) for {len(completions)} completions: "
                "TRL would broadcast a single value to every completion (trl#6533); return one per completion "
                "(None where it does not apply)"
            )
        return values

    checked._one_value_per_completion = True
    return checked
