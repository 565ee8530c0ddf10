"""The fake FastLanguageModel and the fake vLLM engine it attaches."""

import copy
import functools
import os
import types
import weakref
from pathlib import Path

from pinned import record

GIB = 2**30


ENGINES = weakref.WeakSet()  # every fake engine started in this process (the fake GPU counts them)


class FakeEngine:
    """Stands in for the vLLM ``LLM`` inside an Unsloth model.

    With sleep mode (``UNSLOTH_VLLM_STANDBY=1``: unsloth_zoo's ``load_vllm`` passes
    ``enable_sleep_mode=True``) its weights and KV cache live in the fake sleep-mode allocator
    (``vllm.device_allocator.cumem``): a second such engine in one process fails as vLLM's does, and
    the memory is held until :meth:`sleep` (the KV cache) or the end of the process (the weights).
    Without it the engine holds ``WEIGHTS_BYTES + KV_CACHE_BYTES`` until ``delete_vllm``.
    ``llm_engine.model_executor`` is what ``delete_vllm`` deletes; ``llm_engine.vllm_config.model_config.
    enable_sleep_mode`` is where Unsloth reads the mode (unsloth/models/rl.py).
    """

    WEIGHTS_BYTES = int(2.2 * GIB)  # Qwen2.5-3B in Unsloth's 4-bit (docs/t4.md, the memory table)
    KV_CACHE_BYTES = int(7.8 * GIB)  # the rest of 0.745 x 14.74 GiB

    def __init__(self, seed=0, sleep_mode=False):
        if sleep_mode:
            from vllm.device_allocator.cumem import start_engine

            start_engine(self.WEIGHTS_BYTES, self.KV_CACHE_BYTES)  # raises as gpu_worker.py does
        ENGINES.add(self)
        self.alive = True
        self.seed = seed  # EngineArgs seed: load_vllm's random_state, whose default is 0
        self.sleep_mode, self.sleeping = sleep_mode, False
        model_config = types.SimpleNamespace(enable_sleep_mode=sleep_mode)
        self.llm_engine = types.SimpleNamespace(
            model_executor=object(), vllm_config=types.SimpleNamespace(model_config=model_config)
        )

    def held_bytes(self) -> int:
        """GPU memory this engine holds outside the sleep-mode pools (none with sleep mode)."""
        return 0 if self.sleep_mode or not self.alive else self.WEIGHTS_BYTES + self.KV_CACHE_BYTES

    def sleep(self, *args, **kwargs):  # LLM.sleep(level=1)
        record("vllm.LLM.sleep", args, kwargs)
        if self.sleep_mode and not self.sleeping:  # the executor warns and returns when already asleep
            from vllm.device_allocator.cumem import CuMemAllocator

            CuMemAllocator.get_instance().sleep()
            self.sleeping = True

    def wake_up(self, *args, **kwargs):  # LLM.wake_up(tags=None)
        record("vllm.LLM.wake_up", args, kwargs)
        if self.sleep_mode and self.sleeping:
            from vllm.device_allocator.cumem import CuMemAllocator

            CuMemAllocator.get_instance().wake_up()
            self.sleeping = False

    def generate(self, *args, **kwargs):  # LLM.generate; the model's fast_generate is this bound method
        if self.sleep_mode and self.alive:  # Unsloth's patched generate wakes a sleeping engine first
            self.wake_up()
        return fast_generate(self, *args, **kwargs)


def generate_batches(engine, *args, **kwargs):  # unsloth_zoo.vllm_utils.generate_batches
    return fast_generate(engine, *args, **kwargs)


class FakeLoRARequest:
    def __init__(self, lora_int_id, lora_path):
        self.lora_int_id, self.lora_path = lora_int_id, lora_path


class _Completion:
    def __init__(self, text):
        self.text = text


class _RequestOutput:
    def __init__(self, text):
        self.outputs = [_Completion(text)]


_NEXT_LORA_ID = [1]


def load_lora(model, *args, **kwargs):
    """unsloth_zoo.vllm_utils.load_lora: a new request id at every call, as the real one."""
    call = record("model.load_lora", args, kwargs)
    if not Path(call["save_directory"]).exists():
        raise OSError(f"Unsloth: LoRA filepath = {call['save_directory']} does not exist!")
    request = FakeLoRARequest(_NEXT_LORA_ID[0], call["save_directory"])
    _NEXT_LORA_ID[0] += 1
    return request


def fast_generate(engine, *args, **kwargs):
    """vLLM LLM.generate: one output per prompt, the text names the LoRA request used."""
    call = record("model.fast_generate", args, kwargs)
    if not engine.alive:
        raise RuntimeError("fake vLLM engine was deleted")
    lora = call.get("lora_request")
    tag = f"lora {lora.lora_int_id}" if lora is not None else "base"
    return [_RequestOutput(f"<{tag}> completion {i}") for i, _ in enumerate(call["prompts"])]


def save_pretrained_merged(model, *args, **kwargs):
    """Unsloth's merged save: here PEFT's merge on a copy, saved with the tokenizer."""
    call = record("model.save_pretrained_merged", args, kwargs)
    merged = copy.deepcopy(model).merge_and_unload()
    merged.save_pretrained(call["save_directory"])
    if call.get("tokenizer") is not None:
        call["tokenizer"].save_pretrained(call["save_directory"])


def _attach_engine(model, engine, peft=False):
    """The references unsloth 2026.10.9 sets: models/llama.py (base model), models/_utils.py
    patch_peft_fast_inference (PEFT wrapper: load_lora and save_lora too)."""
    model.vllm_engine = engine
    model.fast_generate = engine.generate
    model.fast_generate_batches = functools.partial(generate_batches, engine)
    if peft:
        model.load_lora = functools.partial(load_lora, model)
        model.save_lora = functools.partial(lambda m, path: m.save_pretrained(path), model)


class FastLanguageModel:
    @staticmethod
    def from_pretrained(*args, **kwargs):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from . import CAPABILITY, MODEL_DIR

        call = record("FastLanguageModel.from_pretrained", args, kwargs)
        # unsloth/models/llama.py FastLlamaModel.from_pretrained: None -> fp16 without bf16
        # (compute capability < 8), bf16 with it; bf16 asked for without it -> fp16, with a warning.
        bf16 = CAPABILITY >= (8, 0)
        dtype = call.get("dtype") or (torch.bfloat16 if bf16 else torch.float16)
        if dtype == torch.bfloat16 and not bf16:
            dtype = torch.float16
        model = AutoModelForCausalLM.from_pretrained(MODEL_DIR, dtype=dtype)
        tokenizer = AutoTokenizer.from_pretrained(MODEL_DIR)
        if call.get("fast_inference"):
            # load_vllm_kwargs in the same function omit random_state: the engine gets load_vllm's 0;
            # unsloth_zoo load_vllm: enable_sleep_mode = UNSLOTH_VLLM_STANDBY != "0".
            sleep_mode = os.environ.get("UNSLOTH_VLLM_STANDBY", "0") != "0"
            _attach_engine(model, FakeEngine(seed=0, sleep_mode=sleep_mode))
        return model, tokenizer

    @staticmethod
    def get_peft_model(model, *args, **kwargs):
        from peft import LoraConfig, get_peft_model

        call = record("FastLanguageModel.get_peft_model", args, kwargs)
        config = LoraConfig(
            r=call.get("r", 16),
            lora_alpha=call.get("lora_alpha", 16),
            target_modules=list(call["target_modules"]),
            lora_dropout=0.0,
            task_type="CAUSAL_LM",
        )
        engine = getattr(model, "vllm_engine", None)
        peft_model = get_peft_model(model, config)
        if engine is not None:  # unsloth/models/_utils.py patch_peft_fast_inference
            _attach_engine(peft_model, engine, peft=True)
        peft_model.for_training = functools.partial(lambda m: m.train(), peft_model)  # llama.py: a cycle
        peft_model.save_pretrained_merged = functools.partial(save_pretrained_merged, peft_model)
        return peft_model
