"""The from-scratch loop checked against TRL. Read :func:`compare_with_trl` first: it trains a policy with
TRL 0.22.2's ``GRPOTrainer`` for ``num_iterations`` steps (:func:`trl_steps`, which captures the completions TRL
sampled), updates a copy of the same starting LoRA with the loop's functions (``loop=``: notebook 07's own
cells, or :mod:`cpu_study.loop`) on those completions (:func:`loop_steps`), and compares the two LoRAs
(:func:`parameter_differences`).
The model of these checks is :func:`tiny_policy`.
"""

from __future__ import annotations

import torch

from helpers.loop import LoopConfig

LOOP_FUNCTIONS = ("decode_completions", "score_completions", "prepare_batch", "make_optimizer", "optimizer_step")
# Settings LoopConfig and TRL's GRPOConfig name alike (the others are mapped one by one in trl_steps).
SAME_NAMES = (
    "num_generations num_iterations beta epsilon loss_type temperature top_p learning_rate weight_decay max_grad_norm"
).split()


def lora_state(model) -> dict:
    """``{name: tensor}``, a copy of the trainable (LoRA) parameters."""
    return {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}


def tiny_llama(tokenizer, **overrides):
    """The course's tiny test model: a random 2-layer Llama (hidden size 32, 4 heads, 2 KV heads, tied
    embeddings) for ``tokenizer``, float32; ``overrides`` change any ``LlamaConfig`` field. Seed torch first:
    the weights are drawn from its global stream."""
    from transformers import LlamaConfig, LlamaForCausalLM

    settings = dict(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )
    return LlamaForCausalLM(LlamaConfig(**{**settings, **overrides}))


def tiny_policy(tokenizer, dtype=torch.float64, seed: int = 0):
    """:func:`tiny_llama` with a LoRA (rank 4 on q/v/up) whose B is random instead of PEFT's zeros, so that
    the adapter matters from step 1: the model of the checks against TRL (float64: the two sides then differ
    by rounding only)."""
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(seed)
    lora = LoraConfig(
        r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "up_proj"], lora_dropout=0.0, task_type="CAUSAL_LM"
    )
    model = get_peft_model(tiny_llama(tokenizer).to(dtype), lora).to(dtype)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.2)
    return model


def trl_steps(
    policy, tokenizer, rows: list[dict], config: LoopConfig, reward_funcs, output_dir, eos_bias: float = 6.0
) -> tuple[dict, list]:
    """Train ``policy`` in place with TRL 0.22.2's ``GRPOTrainer`` for ``config.num_iterations`` steps (one
    generated batch of all ``rows`` x G) at ``config``'s settings, and capture what its generation step made.

    ``eos_bias`` is added to the EOS logit while sampling, so that some completions end early.

    Returns:
        ``(seen, logged)``: ``seen`` holds the ``rows`` TRL drew (its order), its ``batch`` tensors
        (prompt/completion ids and masks, advantages, old/ref log-probs) and its ``rewards`` per
        function; ``logged`` its per-step logs (loss, grad_norm, kl, clip ratios).
    """
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    args = GRPOConfig(
        output_dir=str(output_dir),
        use_cpu=True,
        bf16=False,
        fp16=False,
        report_to="none",
        seed=0,
        **{name: getattr(config, name) for name in SAME_NAMES},
        per_device_train_batch_size=config.num_generations * len(rows),
        max_completion_length=config.max_new_tokens,
        max_steps=config.num_iterations,
        scale_rewards="group" if config.scale_std else "none",
        lr_scheduler_type="constant",
        optim="adamw_torch",
        adam_beta1=config.adam_betas[0],
        adam_beta2=config.adam_betas[1],
        adam_epsilon=config.adam_eps,
        logging_steps=1,
        save_strategy="no",
        disable_tqdm=True,
        generation_kwargs={"sequence_bias": {(tokenizer.eos_token_id,): eos_bias}},
    )
    trainer = GRPOTrainer(
        model=policy,
        reward_funcs=list(reward_funcs),
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
    )
    seen, generate = {}, trainer._generate_and_score_completions

    def capture(inputs):
        out = generate(inputs)
        seen.update(
            rows=[dict(r) for r in inputs],
            batch={k: v.clone() for k, v in out.items() if torch.is_tensor(v)},
            rewards=[list(trainer._logs["rewards"][f.__name__]) for f in reward_funcs],
        )
        return out

    trainer._generate_and_score_completions = capture
    trainer.train()
    return seen, [h for h in trainer.state.log_history if "loss" in h]


def loop_steps(model, tokenizer, seen: dict, config: LoopConfig, reward_funcs, loop):
    """The scratch update on the batch TRL generated (``seen`` from :func:`trl_steps`): score it, prepare
    it, then ``num_iterations`` AdamW steps. Returns ``(rewards (B, F), batch, [stats per step])``.

    ``loop``: where the functions of :data:`LOOP_FUNCTIONS` come from, any object with them as attributes
    (notebook 07 passes its cells' own; the tests :mod:`cpu_study.loop`, their copy)."""
    b = seen["batch"]
    texts = loop.decode_completions(tokenizer, b["completion_ids"])
    rewards = loop.score_completions(reward_funcs, seen["rows"], texts, b["completion_ids"], b["completion_mask"])
    batch = loop.prepare_batch(
        model,
        b["prompt_ids"],
        b["prompt_mask"],
        b["completion_ids"],
        b["completion_mask"],
        rewards,
        config,
        [f.__name__ for f in reward_funcs],
    )
    optimizer = loop.make_optimizer(model, config)
    return rewards, batch, [loop.optimizer_step(model, optimizer, batch, config) for _ in range(config.num_iterations)]


def parameter_differences(ours: dict, theirs: dict, start: dict) -> tuple[float, float]:
    """``(max over tensors of max|ours - theirs| / max|theirs|, ||ours - theirs|| / ||theirs - start||)``:
    the difference relative to the parameters, and relative to the update (the stricter one)."""
    per_tensor = max(((ours[n] - theirs[n]).abs().max() / theirs[n].abs().max()).item() for n in theirs)
    diff = torch.cat([(ours[n] - theirs[n]).flatten() for n in theirs])
    update = torch.cat([(theirs[n] - start[n]).flatten() for n in theirs])
    return per_tensor, (diff.norm() / update.norm()).item()


def compare_with_trl(policy, tokenizer, rows: list[dict], config: LoopConfig, reward_funcs, output_dir, loop) -> dict:
    """One generated batch through TRL's trainer (on ``policy``) and through the scratch loop (on a copy of
    ``policy`` as it was; ``loop``: see :func:`loop_steps`): ``{"per_tensor", "of_update"}``
    (:func:`parameter_differences`) and what each side saw (``seen``, ``logged``, ``rewards``, ``batch``,
    ``stats``, the LoRA ``start``/``theirs``/``ours``, the scratch ``model``)."""
    import copy

    start, ours_model = lora_state(policy), copy.deepcopy(policy)
    seen, logged = trl_steps(policy, tokenizer, rows, config, reward_funcs, output_dir)
    rewards, batch, stats = loop_steps(ours_model, tokenizer, seen, config, reward_funcs, loop)
    theirs, ours = lora_state(policy), lora_state(ours_model)
    per_tensor, of_update = parameter_differences(ours, theirs, start)
    sides = dict(seen=seen, logged=logged, rewards=rewards, batch=batch, stats=stats, start=start, theirs=theirs)
    return dict(per_tensor=per_tensor, of_update=of_update, **sides, ours=ours, model=ours_model)
