"""The vLLM engine inside an Unsloth model, and the GPU memory around it: its memory share under
``UNSLOTH_VLLM_STANDBY=1`` and its seed, one LoRA request per adapter folder (:func:`lora_request`), one
engine per process (:func:`vllm_engine_blocker`), and :func:`release` / :func:`free_gpu_memory` before the
next model loads. Checked against fakes of the pinned unsloth/vLLM (``tests/test_gpu_contract.py``,
``tests/test_vllm_memory.py``), not on a GPU. Loading is :mod:`helpers.training.models`, generating
:mod:`helpers.training.generation`.
"""

from __future__ import annotations

import gc
import sys
import weakref
from pathlib import Path

from helpers.training.profiles import Profile

# The seed of the vLLM engine inside an Unsloth model, whatever profile.seed is: unsloth 2026.10.9's
# FastLlamaModel.from_pretrained keeps random_state out of load_vllm's arguments, so unsloth_zoo's
# load_vllm(random_state=0) sets EngineArgs seed 0. random_state seeds only the LoRA initialisation
# (get_peft_model): T4 rollouts do not follow the profile's seed. Evaluation does (_generate_vllm passes
# SamplingParams(seed=...) per request).
VLLM_ENGINE_SEED = 0
_LIVE_VLLM = weakref.WeakSet()  # Unsloth models whose vLLM engine is up (see release)
_LORA_REQUESTS = weakref.WeakKeyDictionary()  # model -> {(adapter path, mtime): LoRARequest}


def standby_gpu_memory_utilization(total_gib: float) -> float:
    """The share of GPU memory vLLM gets under ``UNSLOTH_VLLM_STANDBY=1`` (the install cell sets it), from
    ``total_gib``, the card's total GPU memory in GiB: T4 (14.7 GiB) -> 0.76, L4 (22.5 GiB) -> 0.784,
    A100 40 GB (39.4 GiB) -> 0.855, A100 80 GB -> 0.879.

    Unsloth then *replaces* the profile's ``gpu_memory_utilization``, up or down, by this value
    (unsloth_zoo 2026.10.9, ``vllm_utils.load_vllm``, the branch for vLLM >= 0.11;
    ``UNSLOTH_VLLM_STANDBY_UTIL_OVERRIDE=1`` keeps the profile's). vLLM sleeps while the trainer runs,
    releasing its KV cache, so the larger share does not starve training.
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
    """The vLLM LoRA request for the adapter saved in ``lora_path``, made once per folder and save.

    Unsloth's ``model.load_lora(path)`` makes a new request id at every call (unsloth_zoo
    ``vllm_utils.load_lora``: ``LORA_REQUEST_ID += 1``), and vLLM, holding one adapter (``max_loras=1``),
    would reload it from disk at every generate call. The key is the resolved folder and the mtime of
    its ``adapter_model.safetensors``, so an adapter saved again gets a new request.

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
    "helpers.training.models.exercise_policy gives it a fresh LoRA; train(model=model, ...)), or "
    "restart: Runtime > Restart session, run the install and settings cells, then the section you need."
)


def vllm_engine_blocker() -> str | None:
    """Why a new vLLM engine cannot start in this process, or None when it can.

    * a model loaded with vLLM has not been :func:`release`-d (its engine holds most of a T4);
    * an engine with sleep mode has run here (``UNSLOTH_VLLM_STANDBY=1`` makes unsloth_zoo's ``load_vllm``
      pass ``enable_sleep_mode=True``): vLLM 0.11.2 keeps its memory in a per-process allocator whose
      pools live until the process ends, and refuses a second engine while any of it is counted
      (``vllm/v1/worker/gpu_worker.py``: "Sleep mode can only be used for one instance per process"),
      even after the first is released. Read from that allocator
      (``vllm.device_allocator.cumem.CuMemAllocator.instance.get_current_usage()``), as vLLM reads it.

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


def check_one_engine() -> None:
    """Stop before a second vLLM engine starts in this process (:func:`vllm_engine_blocker` says why).

    Raises:
        SecondEngineError: an engine is up, or a sleep-mode engine has run here; the message says
            what to do instead.
    """
    blocker = vllm_engine_blocker()
    if blocker is not None:
        raise SecondEngineError(blocker)


def sleep_engine(engine) -> bool:
    """Put a vLLM engine with sleep mode to sleep (level 1); True when it was asked to, False for an
    engine without sleep mode or a sleep that failed (printed, not raised: :func:`free_gpu_memory` then
    says whether enough memory came back).

    Unsloth's patched ``CuMemAllocator.sleep`` (unsloth_zoo ``patch_vllm_enable_sleep_mode``) unmaps every
    allocation but the weights, so the KV cache (about 7.8 GiB on a T4), which deleting the engine does not
    free, goes back to the GPU. Unsloth does the same before resuming from a checkpoint (unsloth
    ``models/rl.py``, ``_maybe_prepare_vllm_for_resume``: ``LLM.sleep(1)`` when
    ``llm_engine.vllm_config.model_config.enable_sleep_mode``).
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

    Needed before another model loads on a T4, where the engine fills most of the 15 GB. Steps:
    :func:`sleep_engine` (returns the KV cache under standby), Unsloth's
    ``unsloth_zoo.vllm_utils.delete_vllm``, then :data:`ENGINE_ATTRIBUTES` (which hold the engine) and
    :data:`SELF_ATTRIBUTES` (which make the model a reference cycle) are deleted from the model and every
    submodule.

    What stays: under standby the 4-bit weights' pool (about 2.2 GiB on a T4) until the process ends, and
    with it the one-engine rule (:func:`vllm_engine_blocker`); without standby the weights belong to the
    model. So: ``release(model)``, ``del model`` (and every other name bound to it), then
    :func:`free_gpu_memory` before the next model (:func:`helpers.evaluation.adapters.load_merged` calls
    it). The model cannot generate with vLLM afterwards. No-op for a model without vLLM. Not run on a GPU yet.
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
    _collect()


def _collect():
    """Collect garbage (a model's reference cycles) and empty the CUDA cache; returns torch when it is imported
    and sees a GPU, else None (torch is never imported here)."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    torch.cuda.empty_cache()
    return torch


def free_gpu_memory(needed_gib: float, what: str = "the next model", restart: str | None = None) -> float | None:
    """Collect garbage (a model just ``del``-eted), empty the CUDA cache and check that ``needed_gib`` GiB
    of GPU memory are free; returns the free GiB (None without CUDA, where nothing is checked).
    ``restart``: what to run after a restart to get here again (default: the install and settings cells,
    then this section).

    Raises:
        GPUMemoryError: less than ``needed_gib`` free; the message gives both numbers and the
            card's total, what usually still holds the memory, and the restart's steps.
    """
    torch = _collect()
    if torch is None:
        return None
    free, total = (b / 2**30 for b in torch.cuda.mem_get_info())
    if free < needed_gib:
        raise GPUMemoryError(
            f"{free:.1f} GiB of the GPU's {total:.1f} GiB are free, but {what} needs about "
            f"{needed_gib:.1f} GiB (an estimate). Something still holds the GPU: the vLLM engine or "
            "the policy (call helpers.training.engine.release(model), then `del model` and any other name "
            "bound to it, such as a trainer), or another process on this GPU (nvidia-smi lists them). "
            "Or restart the session (Runtime > Restart session) and run "
            f"{restart or 'the install and settings cells, then this section'}."
        )
    return free


def uses_vllm(model) -> bool:
    """True for an Unsloth model with vLLM inside (``fast_inference=True``)."""
    return hasattr(model, "fast_generate") and getattr(model, "vllm_engine", None) is not None


def track(model) -> None:
    """Count ``model`` as holding a live vLLM engine (:func:`live_vllm_models`) until :func:`release`; no-op
    without vLLM. :func:`helpers.training.models.load_model` calls it."""
    if uses_vllm(model):
        _LIVE_VLLM.add(model)
