"""A fresh policy for notebook 05's exercises, without a second vLLM engine.

Each exercise trains from the same starting point as the main run. On the CPU (transformers
backend) that is a new copy of the starting point. On a GPU profile with vLLM a new copy would start
a second vLLM engine, which a process cannot hold (:func:`helpers.training.engine.vllm_engine_blocker`):
the loaded policy is reused, its engine and 4-bit weights as they are, with its LoRA drawn afresh
(:func:`fresh_lora`): with B = 0 the policy is the starting point again.
"""

from __future__ import annotations


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
    """``(model, tokenizer)`` to train an exercise from the starting point.

    Transformers backend: a new copy, :func:`helpers.training.models.load_model` (``model_path``: the
    cold start). Unsloth with vLLM: ``model`` itself with :func:`fresh_lora` (the profile's seed):
    no second engine starts; the trained LoRA in memory is replaced (notebook 05 saved it in
    ``lora_adapter/`` first, and its later cells give vLLM that folder). The optimizer, scheduler and
    step counter are new with each :func:`helpers.training.trainer.train` anyway.

    Raises:
        ValueError: an Unsloth profile with vLLM and no loaded policy (``model`` None or released): run
            the section that loads it, or restart the session and run the notebook up to it.
    """
    from helpers.training.engine import uses_vllm
    from helpers.training.models import load_model

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
