"""Run profiles: one named, documented set of settings per kind of machine; pick one with :func:`get_profile`.

* ``t4`` - the course run on a free Colab T4 (16 GB, no bf16): Qwen2.5-3B-Instruct in 4-bit through Unsloth,
  vLLM rollouts. Values follow Unsloth's "Qwen2.5 (3B) - GRPO" notebook and willccbb's GRPO demo (the
  course's seeds), except the completion cap (:data:`T4`'s comment).
* ``bf16`` - a bf16 GPU with at least 20 GiB (L4 24 GB, A10G, RTX 3090/4090, A100, H100): Qwen2.5-7B-Instruct,
  otherwise the ``t4`` recipe (memory arithmetic in :data:`BF16`'s comment).
* ``cuda`` - any other CUDA GPU, or one where Unsloth cannot be installed: plain TRL ``GRPOTrainer`` + PEFT
  LoRA on Qwen2.5-0.5B-Instruct, HF ``generate`` rollouts (no vLLM), as in willccbb's GRPO demo (the seed
  that trains with PEFT).
* ``cpu`` - a small learning run on 2 CPU cores: SmolLM2-135M-Instruct, plain transformers + PEFT LoRA, fp32.
  The 135M model never writes the format on its own, so a cold start (SFT) comes first, then GRPO on a
  curriculum of course-written problems (:mod:`helpers.data.curriculum`, the varied family of
  :mod:`helpers.data.templates_varied`), then a greedy evaluation. Its values were chosen on a separate
  development set (:func:`helpers.data.problem_sets.dev_problem_set`,
  :func:`~helpers.data.problem_sets.dev_transfer_set`; the search is in ``docs/LOG.md``).
  :func:`format_recipe` is the first CPU recipe, which taught the format only.

``bf16`` and ``cuda`` have not been run on a GPU yet; all four are built and tested on CPU. Every profile can
train on several processes (``accelerate launch``, :mod:`helpers.training.distributed`); ``cuda`` can also take
its rollouts from a separate vLLM server (``vllm_server_url``).

The GRPO objective is set explicitly, not left to TRL 0.22's defaults (DAPO's token-level loss, beta = 0): the
course trains DeepSeekMath's GRPO (Shao et al. 2024, eq. 3): per-sequence 1/|o_i| normalisation
(``loss_type="grpo"``), group-normalised advantages (``scale_rewards="group"``), clip range epsilon = 0.2 and a
KL penalty to the reference model with the k3 estimator (eq. 4) weighted by beta = 0.04. The ``cpu`` profile
uses beta = 0 where its measurements said so (no reference model, whose forward pass costs time every step;
TRL's default and DAPO's, Yu et al. 2025).

:func:`get_profile` takes an explicit name, else the ``GRPO_PROFILE`` environment variable, else the hardware
(:func:`helpers.training.hardware.pick_profile_name`). The precision a run trains in comes from :func:`precision`
only: the model's dtype (:func:`torch_dtype`) and the trainers' ``fp16``/``bf16`` flags
(:func:`mixed_precision_flags`) both derive from it, so they always agree. Unsloth refuses a mismatch at
``GRPOTrainer(...)`` ("Model is in bfloat16 precision but you want to use float16", unsloth 2026.10.9,
``unsloth/models/rl.py``), and left to itself it loads in bf16 on any GPU that has it.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

GSM8K = (0, 0)  # a source: GSM8K train questions


@dataclass(frozen=True)
class Phase:
    """A stretch of the GRPO steps: ``share`` of them, with prompts from ``sources`` taken in turn inside
    every batch. A source is ``(ops, max_number)``: course-written problems with that many operations
    and operands up to ``max_number`` (:func:`helpers.data.problems.make_problems`), or :data:`GSM8K`
    ``(0, 0)`` for GSM8K train questions; :mod:`helpers.data.curriculum` lays the prompts out.
    ``Phase(0.5, ((1, 20), (2, 20)))``: half the steps, each batch half one-operation and half
    two-operation problems."""

    share: float
    sources: tuple = ((1, 20),)

    @property
    def name(self) -> str:
        return " + ".join(level_name(*s) for s in self.sources)


def level_name(ops: int, max_number: int) -> str:
    """``"1 op up to 20"``, ``"2 ops up to 10"``, ``"GSM8K train"``."""
    return "GSM8K train" if ops == 0 else f"{ops} op{'s' * (ops > 1)} up to {max_number}"


QWEN_3B = "unsloth/Qwen2.5-3B-Instruct"
QWEN_7B = "unsloth/Qwen2.5-7B-Instruct"
QWEN_05B = "Qwen/Qwen2.5-0.5B-Instruct"
SMOLLM2_135M = "HuggingFaceTB/SmolLM2-135M-Instruct"
ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class Profile:
    """Every setting a run needs. Lengths are in tokens, learning rate per optimizer step."""

    name: str
    description: str
    model_id: str
    backend: str  # "unsloth" (4-bit + vLLM rollouts) or "transformers" (plain HF + PEFT)
    load_in_4bit: bool
    fast_inference: bool  # vLLM generation inside Unsloth
    max_seq_length: int
    precision: str  # "fp16", "bf16", "fp32" or "auto" (see precision())
    # LoRA (Hu et al. 2021): rank r, scale alpha / r, on these projection matrices.
    lora_rank: int
    lora_alpha: int
    lora_target_modules: tuple[str, ...]
    gradient_checkpointing: bool | str
    # Rollouts: G completions per prompt form one group.
    num_generations: int
    per_device_train_batch_size: int  # completions per step (prompts x G), not prompts
    gradient_accumulation_steps: int
    max_prompt_length: int
    max_completion_length: int
    temperature: float
    top_p: float
    # Optimisation.
    max_steps: int
    learning_rate: float
    optim: str
    max_grad_norm: float
    weight_decay: float
    warmup_ratio: float
    lr_scheduler_type: str
    adam_beta1: float = 0.9
    adam_beta2: float = 0.99
    # GRPO objective (see module docstring).
    loss_type: str = "grpo"
    beta: float = 0.04
    epsilon: float = 0.2
    scale_rewards: str = "group"
    num_iterations: int = 1  # optimizer steps on each generated batch (> 1: the ratio departs from 1)
    # Share of GPU memory vLLM may take; UNSLOTH_VLLM_STANDBY=1 (the install cell's) replaces it
    # (helpers.training.engine.standby_gpu_memory_utilization).
    gpu_memory_utilization: float = 0.5
    # Rollouts from a separate TRL vLLM server (`trl vllm-serve` on its own GPU, vllm_mode "server"), e.g.
    # "http://localhost:8000"; plain TRL profiles only. None: generate in-process.
    vllm_server_url: str | None = None
    # Checkpoints every save_steps GRPO steps (0: none), the last save_total_limit kept;
    # helpers.training.trainer.train resumes from the newest one in the run's folder.
    save_steps: int = 0
    save_total_limit: int = 2
    # Cold start (helpers.training.cold_start): SFT on formatted GSM8K train solutions before GRPO.
    cold_start_examples: int = 0  # 0: no cold start, GRPO starts from the model itself
    cold_start_problems: int = 0  # course-written worked problems added to its GSM8K solutions
    cold_start_two_op_share: float = 0.5  # ... this share of them with two operations, the rest with one
    cold_start_max_number: int = 20  # ... with operands of + and - up to this
    cold_start_learning_rate: float = 3e-4
    cold_start_epochs: int = 1
    cold_start_batch_size: int = 8
    # Evaluation at the end of a run, all greedy: the first eval_questions GSM8K test questions (None: all);
    # eval_problems course-written test problems (helpers.data.problems) at each (ops, max_number) of
    # eval_levels (0: none); transfer_problems of every kind of the transfer family (helpers.data.transfer)
    # at each number range of helpers.data.problem_sets.TRANSFER_RANGES (0: none).
    eval_questions: int | None = None
    eval_problems: int = 0
    eval_levels: tuple = ((1, 20), (2, 20))
    transfer_problems: int = 0
    problem_family: str = "varied"  # course-written problems' wordings (helpers.data.problems.FAMILIES)
    # GRPO prompts: a curriculum (Phases, read in order by helpers.data.curriculum); empty: GSM8K train
    # questions after the cold start's, shuffled.
    curriculum: tuple = ()
    # Held-out accuracy during GRPO (helpers.training.callbacks): heldout_problems course-written test problems,
    # split evenly over eval_levels, greedy, every heldout_every steps; 0: off.
    heldout_problems: int = 0
    heldout_every: int = 5
    seed: int = 3407
    # transformers backend: True trains with helpers.training.trainer.CourseGRPOTrainer (TRL's trainer, rollouts
    # from merged weights with one prompt pass per group, log-probs with the prompt shared); False with TRL's
    # GRPOTrainer as it is. Unsloth profiles ignore it (Unsloth replaces the trainer).
    fast_rollouts: bool = False

    def replace(self, **overrides) -> Profile:
        """A copy with some settings changed; unknown names raise ``TypeError``."""
        return dataclasses.replace(self, **overrides)


# Completions up to 512 tokens, not the 200 of Unsloth's T4 run, where most early completions hit the cap
# (and a cut one earns no correctness reward); 512 is above every per-step mean length Unsloth's GRPO notebooks
# logged and leaves the prompt its 256 within max_seq_length 1024 (vLLM's max_model_len). The evidence, the
# memory (tools.t4_memory: an estimated trainer peak of about 2.9 GiB while vLLM sleeps) and the time bounds
# (Unsloth's 24.1 s a step was at the 200 cap) are in docs/t4.md. callbacks.TruncationGuard warns when
# completions stay clipped.
T4 = Profile(
    name="t4",
    description="Colab T4: Qwen2.5-3B-Instruct, 4-bit, Unsloth + vLLM, fp16",
    model_id=QWEN_3B,
    backend="unsloth",
    load_in_4bit=True,
    fast_inference=True,
    max_seq_length=1024,
    precision="fp16",
    lora_rank=64,
    lora_alpha=64,
    lora_target_modules=ALL_LINEAR,
    gradient_checkpointing="unsloth",
    num_generations=8,
    per_device_train_batch_size=8,
    gradient_accumulation_steps=1,
    max_prompt_length=256,
    max_completion_length=512,  # not Unsloth's 200 (comment above)
    temperature=1.0,
    top_p=1.0,
    max_steps=250,
    learning_rate=5e-6,
    optim="adamw_8bit",
    max_grad_norm=0.1,
    weight_decay=0.001,  # as Unsloth's current Qwen2.5 (3B) GRPO notebook (unslothai/notebooks, 2026-08)
    warmup_ratio=0.1,
    lr_scheduler_type="cosine",
    save_steps=25,  # a Colab disconnect loses at most 25 steps (about 0.75 GB per checkpoint)
)


CPU = Profile(
    name="cpu",
    description="CPU learning run: SmolLM2-135M-Instruct, cold start + GRPO, transformers + PEFT, fp32",
    model_id=SMOLLM2_135M,
    backend="transformers",
    load_in_4bit=False,
    fast_inference=False,
    max_seq_length=512,
    precision="fp32",
    lora_rank=16,
    lora_alpha=16,
    lora_target_modules=ALL_LINEAR,
    gradient_checkpointing=False,
    num_generations=8,
    per_device_train_batch_size=128,  # 16 prompts x 8 completions
    gradient_accumulation_steps=1,
    max_prompt_length=256,
    max_completion_length=100,
    temperature=0.6,
    top_p=1.0,
    max_steps=12,
    learning_rate=3e-4,
    optim="adamw_torch",
    max_grad_norm=0.1,
    weight_decay=0.1,
    warmup_ratio=0.0,
    lr_scheduler_type="constant",
    beta=0.0,
    scale_rewards="group",
    cold_start_examples=40,
    cold_start_problems=120,  # 40 with one operation, 80 with two
    cold_start_two_op_share=2 / 3,
    cold_start_batch_size=2,
    eval_questions=32,
    eval_problems=64,  # at each of four levels: one or two operations, numbers up to 20 or 50
    eval_levels=((1, 20), (2, 20), (1, 50), (2, 50)),
    transfer_problems=8,  # of each of the 12 kinds, at numbers up to 20 and up to 60
    curriculum=(Phase(1.0, ((1, 20), (2, 20))),),  # one- and two-operation problems in every batch
    heldout_problems=32,
    heldout_every=4,
    fast_rollouts=True,
)


# Memory on a 24 GB card (22.5 GiB usable on an L4), Qwen2.5-7B-Instruct (config: 28 layers, hidden 3584,
# MLP 18944, 4 KV heads of 128, vocabulary 152064, untied embeddings). Not run on a GPU yet.
# * weights, shared by vLLM and the trainer (fast_inference): 6.53 B linear parameters x 0.52 byte (NF4 +
#   double-quantized scales) = 3.4 GB, plus embeddings and lm_head in bf16, 2 x 545 M x 2 bytes = 2.2 GB;
# * LoRA rank 64 on the 7 projections: 64 x (2 x 7168 + 2 x 4096 + 3 x 22528) = 5.77 M per layer x 28 =
#   161.5 M parameters, 10 bytes each (fp32 weight and gradient, AdamW 8-bit): 1.6 GB;
# * a step of 8 x (256 + 512) = 6,144 tokens: KV cache 57 KB a token (2 x 28 x 4 x 128 x 2 bytes) = 0.35 GB;
#   Unsloth's checkpointed activations 6,144 x 3584 x 2 bytes x 28 layers = 1.2 GB, one layer recomputed in
#   backward ~ 1.3 GB; log-probs in chunks (the full fp32 logits would be 3.7 GB);
# * vLLM at gpu_memory_utilization 0.5 holds 11.2 GiB (weights included); the trainer adds 1.6 + 1.2 + 1.3
#   + ~1 GB workspace + 0.5 GB CUDA context: about 16.8 GiB of 22.5.
# Under UNSLOTH_VLLM_STANDBY=1 vLLM gets 0.78 of a 22.5 GiB card instead and sleeps while the trainer runs.
BF16 = T4.replace(
    name="bf16",
    description="bf16 GPU >= 20 GiB: Qwen2.5-7B-Instruct, 4-bit, Unsloth + vLLM, bf16",
    model_id=QWEN_7B,
    precision="bf16",
)


CUDA = T4.replace(  # the T4's GRPO recipe (sizes, lr, schedule, checkpoints) without Unsloth or vLLM
    name="cuda",
    description="any CUDA GPU: Qwen2.5-0.5B-Instruct, TRL GRPOTrainer + PEFT, no Unsloth or vLLM",
    model_id=QWEN_05B,
    backend="transformers",
    load_in_4bit=False,
    fast_inference=False,
    precision="auto",
    lora_rank=16,  # alpha stays 64, as in willccbb's demo
    gradient_checkpointing=False,  # 0.5 B parameters and 3,648 tokens a step: activations fit
    max_completion_length=200,  # the t4's 512 would be 6,144 tokens without checkpointing: not measured yet
    optim="adamw_torch",  # no bitsandbytes needed
)


PROFILES = {p.name: p for p in (T4, BF16, CUDA, CPU)}


def shortened(profile: Profile) -> Profile:
    """The same pipeline at smoke size, for CI and quick checks (``--quick``, ``GRPO_QUICK=1``): it checks that
    every stage runs and writes its files, not that anything is learned. The name gets ``-quick``, so its
    outputs (``outputs/grpo-cpu-quick``) never overwrite a real run's."""
    return profile.replace(
        name=f"{profile.name}-quick",
        description=f"shortened {profile.description}",
        cold_start_examples=min(profile.cold_start_examples, 8),
        cold_start_problems=min(profile.cold_start_problems, 8),
        cold_start_batch_size=4,
        max_steps=2,
        num_generations=4,
        per_device_train_batch_size=4,
        max_completion_length=32,
        eval_questions=4,
        eval_problems=min(profile.eval_problems, 2),
        transfer_problems=min(profile.transfer_problems, 1),
        heldout_problems=min(profile.heldout_problems, 4),
        heldout_every=1,
    )


def format_recipe(profile: Profile) -> Profile:
    """The recipe of the first reference runs (``results/cpu-cold96-*``, ``results/cpu-cold160-*``),
    which taught the format but not the arithmetic: a cold start on 160 GSM8K solutions only, then
    20 GRPO steps of one GSM8K train prompt x 8 completions x 160 tokens at T = 1.0, lr 3e-4 and beta 0.04, no
    curriculum, no held-out curve, evaluation on 64 GSM8K test questions. Notebook 05's reward-hacking
    demo runs it. A ``-quick`` profile stays at smoke size."""
    recipe = PROFILES[profile.name.removesuffix("-quick")].replace(
        cold_start_examples=160,
        cold_start_problems=0,
        num_generations=8,
        per_device_train_batch_size=8,
        max_completion_length=160,
        temperature=1.0,
        learning_rate=3e-4,
        max_steps=20,
        eval_questions=64,
        beta=0.04,
        scale_rewards="group",
        eval_problems=0,
        transfer_problems=0,
        curriculum=(),
        heldout_problems=0,
    )
    return shortened(recipe) if profile.name.endswith("-quick") else recipe


def quick_requested() -> bool:
    """True when the environment asks for shortened runs (``GRPO_QUICK=1``, as ``make test`` sets)."""
    return os.environ.get("GRPO_QUICK", "") not in ("", "0")


def get_profile(name: str | None = None, verbose: bool = True, **overrides) -> Profile:
    """The profile to run with: ``name``, else env ``GRPO_PROFILE``, else the hardware
    (:func:`helpers.training.hardware.pick_profile_name`), with ``overrides`` replacing single settings
    (``max_steps=2``). With ``verbose`` the choice and its reason are printed.

    Raises:
        ValueError: unknown profile name.
    """
    from helpers.training.hardware import gpu_info, pick_profile_name, unsloth_installed

    chosen, reason = name or os.environ.get("GRPO_PROFILE"), "asked for"
    if not chosen:
        chosen, reason = pick_profile_name(gpu_info(), unsloth_installed())
    if chosen not in PROFILES:
        raise ValueError(f"unknown profile {chosen!r}; choose one of {sorted(PROFILES)}")
    profile = PROFILES[chosen].replace(**overrides) if overrides else PROFILES[chosen]
    if verbose and profile.name == "cpu":
        print(
            f"Using the CPU profile ({reason}): SmolLM2-135M-Instruct, "
            "cold start + GRPO + evaluation at a size 2 CPU cores finish (the README prints the measured time)."
        )
    elif verbose:
        print(f"Using the {profile.name} profile ({reason}): {profile.description}")
    return profile


PRECISIONS = ("fp32", "fp16", "bf16", "auto")


def precision(profile, gpu=None) -> str:
    """``"fp32"``, ``"fp16"`` or ``"bf16"``: what a run of ``profile`` trains in.

    ``profile.precision`` ``"auto"`` means bf16 on a GPU that has it, fp16 on another GPU and
    fp32 without one. ``gpu`` defaults to :func:`gpu_info`. Without a GPU a fixed fp16/bf16 is
    returned as is, so that configs can be built (and tested) on a CPU.

    Raises:
        ValueError: an unknown precision, or ``"bf16"`` on a GPU without bf16 (a T4).
    """
    from helpers.training.hardware import gpu_info

    wanted = profile.precision
    if wanted not in PRECISIONS:
        raise ValueError(f"profile {profile.name}: unknown precision {wanted!r}; choose one of {PRECISIONS}")
    gpu = gpu_info() if gpu is None else gpu
    if wanted == "auto":
        return "fp32" if gpu is None else ("bf16" if gpu.bf16 else "fp16")
    if wanted == "bf16" and gpu is not None and not gpu.bf16:
        raise ValueError(
            f"profile {profile.name} trains in bf16, which {gpu.describe()} lacks: "
            "use GRPO_PROFILE=t4 (fp16) or GRPO_PROFILE=cuda"
        )
    return wanted


def torch_dtype(profile, gpu=None):
    """The ``torch.dtype`` the model is loaded in: :func:`precision` as a dtype."""
    import torch

    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[precision(profile, gpu)]


def mixed_precision_flags(profile, gpu=None) -> dict:
    """``{"fp16": bool, "bf16": bool}`` for ``GRPOConfig``/``SFTConfig``, from :func:`precision`.

    Also sets ``ACCELERATE_MIXED_PRECISION`` to match (``"fp16"``, ``"bf16"`` or ``"no"``).
    transformers 4.56's ``TrainingArguments`` writes that variable when ``fp16``/``bf16`` is True and
    keeps any earlier value when both are False, and accelerate reads it: without this, a bf16 config
    built earlier in the same process (another profile, a test) makes a later fp32 run train under
    bf16 autocast, and the model it returns keeps that autocast in its ``forward``.
    """
    chosen = precision(profile, gpu)
    os.environ["ACCELERATE_MIXED_PRECISION"] = chosen if chosen in ("fp16", "bf16") else "no"
    return {"fp16": chosen == "fp16", "bf16": chosen == "bf16"}
