"""Notebook 07's from-scratch GRPO loop as a module, for the CPU study's runs of its variants
(:mod:`cpu_study.variants`) and the training benchmark; ``tests/test_loop_notebook.py`` fails when it and the
notebook's cells differ in code. A *step* is one AdamW step on the LoRA, as TRL counts; a new batch every
``num_iterations`` steps: sample (:func:`sample_completions`), score (:func:`score_completions`), advantages
(:func:`compute_advantages`), no-gradient log-probs (:func:`prepare_batch`: old policy, reference = adapter off),
loss and step (:func:`compute_grpo_loss`, :func:`optimizer_step`); :func:`train_from_scratch` is the loop. Its
data classes are :mod:`helpers.loop`; :mod:`helpers.training.trl_check` checks one step equal to TRL 0.22.2's.
"""

from __future__ import annotations

import math
import time

import torch

from helpers import grpo
from helpers.loop import Batch, LoopRun
from helpers.rewards import REWARD_FUNCS


# ------------------------------------------------------------------- 1. sample (notebook 07's cells from here)
def tokenize_prompts(tokenizer, prompts):
    """Chat prompts (message lists) -> ``(prompt_ids, prompt_mask)``, each ``(N, P)``, left-padded, as TRL
    tokenizes them (chat template with the assistant turn opened, no extra special tokens)."""
    texts = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in prompts]
    enc = tokenizer(texts, return_tensors="pt", padding=True, padding_side="left", add_special_tokens=False)
    return enc["input_ids"], enc["attention_mask"]


def decode_completions(tokenizer, completion_ids):
    """The decoded completions, special tokens skipped, as TRL gives them to the reward functions."""
    return tokenizer.batch_decode(completion_ids, skip_special_tokens=True)  # generate pads after the end


@torch.no_grad()
def sample_completions(model, tokenizer, prompt_ids, prompt_mask, config):
    """G completions of each of the ``(N, P)`` left-padded prompts with ``model.generate`` (KV cache,
    ``softmax(logits / T)``, no top-k; G, length limit, temperature and top-p from ``config``).

    Returns:
        ``(prompt_ids, prompt_mask, completion_ids, completion_mask)``: ``(B, P)``, B = N x G (each prompt G
        times in a row), and ``(B, T)``, T <= ``max_new_tokens``, masked after the first stop token
        (:func:`helpers.grpo.completion_mask`).
    """
    from transformers import GenerationConfig

    stops = grpo.stop_token_ids(tokenizer, getattr(model, "generation_config", None))
    ids = prompt_ids.repeat_interleave(config.num_generations, dim=0)  # (B, P): each prompt G times
    mask = prompt_mask.repeat_interleave(config.num_generations, dim=0)
    settings = GenerationConfig(
        max_new_tokens=config.max_new_tokens,
        do_sample=True,
        temperature=config.temperature,
        top_p=config.top_p,
        top_k=0,
        eos_token_id=stops,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
    )
    was_training = model.training
    model.eval()
    out = model.generate(
        input_ids=ids.to(model.device), attention_mask=mask.to(model.device), generation_config=settings
    )  # (B, P + T)
    model.train(was_training)
    completion_ids = out[:, ids.size(1) :].cpu()  # (B, T)
    return ids, mask, completion_ids, grpo.completion_mask(completion_ids, stops)


# -------------------------------------------------------------------------------------------- 2. score
def score_completions(reward_funcs, rows, completions, completion_ids, completion_mask):
    """Each reward function on each completion, called as TRL 0.22.2 calls it: ``f(prompts=, completions=
    (conversational), completion_ids=, **columns)`` with every other column of ``rows`` (``answer``, ...).

    Args:
        rows: B dataset rows (``prompt`` plus columns), the prompt's row repeated for its G completions.

    Returns:
        ``(B, F)`` float32 rewards (None becomes NaN; the total is their ``nansum``, as in TRL).

    Raises:
        ValueError: lengths differ, or a reward function returns the wrong number of values.
    """
    if not (len(rows) == len(completions) == completion_ids.size(0)):
        raise ValueError(f"{len(rows)} rows, {len(completions)} completions, {completion_ids.size(0)} id rows")
    prompts = [r["prompt"] for r in rows]
    columns = {k: [r[k] for r in rows] for k in rows[0] if k not in ("prompt", "completion", "completion_ids")}
    ids = [row[m.bool()].tolist() for row, m in zip(completion_ids, completion_mask)]
    messages = [[{"role": "assistant", "content": c}] for c in completions]
    out = torch.zeros(len(rows), len(reward_funcs), dtype=torch.float32)
    for j, func in enumerate(reward_funcs):
        values = func(prompts=prompts, completions=messages, completion_ids=ids, **columns)
        if len(values) != len(rows):
            raise ValueError(f"{func.__name__} returned {len(values)} rewards for {len(rows)} completions")
        out[:, j] = torch.tensor([math.nan if v is None else v for v in values], dtype=torch.float32)
    return out


# --------------------------------------------------------------------------------------- 3. advantages
def compute_advantages(rewards, config):
    """``(B,)`` group-relative advantages from ``(B, F)`` rewards (their ``nansum`` is a completion's reward):
    :func:`helpers.grpo.group_advantages`, ``scale="group"`` when ``config.scale_std`` (GRPO), else ``"none"``
    (REINFORCE with the group mean as baseline). Notebook 07 writes the same numbers out line by line.

    Raises:
        ValueError: an infinite reward (it would make its whole group's advantages NaN).
    """
    scale = "group" if config.scale_std else "none"
    return grpo.group_advantages(rewards.nansum(1), config.num_generations, scale)


# --------------------------------------------------------------------- 4. log-probs: old, reference
def batch_logps(model, batch, config):
    """``(B, T)`` log-probs of the completion tokens under ``model`` at the sampling temperature (with gradients
    unless under ``no_grad``), the numbers of :func:`helpers.grpo.completion_logps`. A function of the same
    signature can replace it as ``logps``, e.g. :func:`cpu_study.variants.shared_batch_logps`."""
    ids = torch.cat([batch.prompt_ids, batch.completion_ids], dim=1)  # (B, P + T)
    mask = torch.cat([batch.prompt_mask, batch.completion_mask], dim=1)
    width = batch.completion_ids.size(1)  # T
    logits = model(input_ids=ids, attention_mask=mask, logits_to_keep=width + 1, use_cache=False).logits
    logits = logits[:, -width - 1 : -1]  # (B, T, V): the logits at position t score completion token t
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32)) / config.temperature
    taken = logits.gather(-1, batch.completion_ids.unsqueeze(-1)).squeeze(-1)  # (B, T)
    return taken - torch.logsumexp(logits, dim=-1)  # log softmax(logits / T)[token]


def prepare_batch(
    model, prompt_ids, prompt_mask, completion_ids, completion_mask, rewards, config, reward_names=(), logps=batch_logps
):
    """A :class:`Batch`: the advantages (:func:`compute_advantages`), then the no-gradient log-probs: old policy
    (``num_iterations > 1``) and reference model (adapter off; when ``beta > 0`` or ``log_kl``).

    Args:
        rewards: ``(B, F)`` per reward function (their sum is the reward), or ``(B,)``.
    """
    rewards = rewards if rewards.dim() == 2 else rewards[:, None]  # (B, F)
    advantages = compute_advantages(rewards, config)  # (B,)
    batch = Batch(
        prompt_ids, prompt_mask, completion_ids, completion_mask, rewards, advantages, reward_names=list(reward_names)
    )
    with torch.no_grad():
        if config.num_iterations > 1:  # the batch serves several steps: keep the sampling weights' log-probs
            batch.old_logps = logps(model, batch, config)  # pi_old
        if config.beta > 0 or config.log_kl:
            with model.disable_adapter():  # pi_ref = the policy without its LoRA
                batch.ref_logps = logps(model, batch, config)
    return batch


# ------------------------------------------------------------------------------------ 5. loss and step
def compute_grpo_loss(policy_logps, batch, config):
    """The GRPO loss of a batch, :func:`helpers.grpo.grpo_loss`: per token -min(rho A, clip(rho, 1 - eps,
    1 + eps) A) + beta x k3 (DeepSeekMath eq. 3 and 4), averaged as ``config.loss_type`` says. Notebook 07
    writes the same numbers out line by line.

    Returns:
        ``(loss, stats)``: a 0-d tensor, and the token means TRL logs (``kl``, ``clip_ratio/*``, ``ratio_mean``).
    """
    return grpo.grpo_loss(
        policy_logps,
        batch.old_logps,
        batch.ref_logps,
        batch.advantages,
        batch.completion_mask,
        beta=config.beta,
        epsilon_low=config.epsilon,
        loss_type=config.loss_type,
        max_completion_length=config.max_new_tokens,
    )


def make_optimizer(model, config):
    """torch's AdamW on the trainable (LoRA) parameters, weight decay on all of them.

    Raises:
        ValueError: the model has no trainable parameter.
    """
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the model has no trainable parameters (no LoRA?)")
    return torch.optim.AdamW(
        params,
        lr=config.learning_rate,
        betas=tuple(config.adam_betas),
        eps=config.adam_eps,
        weight_decay=config.weight_decay,
    )


def optimizer_step(model, optimizer, batch, config, logps=batch_logps):
    """The policy's log-probs (the only pass with gradients), the loss (:func:`compute_grpo_loss`), backward,
    gradient clipping, one AdamW step.

    Returns:
        ``{"loss", "grad_norm" (before clipping, as TRL logs it), **loss_stats, "seconds/loss_backward",
        "seconds/rest"}``.
    """
    model.train()
    started = time.perf_counter()
    loss, stats = compute_grpo_loss(logps(model, batch, config), batch, config)
    loss.backward()
    backward_done = time.perf_counter()
    params = [p for group in optimizer.param_groups for p in group["params"]]
    grad_norm = torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)  # returns the norm before clipping
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return {
        "loss": loss.item(),
        "grad_norm": grad_norm.item(),
        **stats,
        "seconds/loss_backward": backward_done - started,
        "seconds/rest": time.perf_counter() - backward_done,
    }


# ------------------------------------------------------------------------------------------- the loop
def sample_batch(model, tokenizer, rows, config, reward_funcs, logps=batch_logps):
    """Steps 1 to 4 for ``rows`` (the batch's ``prompts_per_step`` dataset rows): sample, score, advantages,
    old and reference log-probs. Returns ``(batch, {"seconds/generation", "seconds/logps_no_grad"})``."""
    started = time.perf_counter()
    prompt_ids, prompt_mask = tokenize_prompts(tokenizer, [r["prompt"] for r in rows])
    ids, mask, completion_ids, completion_mask = sample_completions(model, tokenizer, prompt_ids, prompt_mask, config)
    sampled = time.perf_counter()
    texts = decode_completions(tokenizer, completion_ids)
    repeated = [r for r in rows for _ in range(config.num_generations)]  # a row for each completion
    rewards = score_completions(reward_funcs, repeated, texts, completion_ids, completion_mask)
    scored = time.perf_counter()
    names = [f.__name__ for f in reward_funcs]
    batch = prepare_batch(model, ids, mask, completion_ids, completion_mask, rewards, config, names, logps)
    times = {"seconds/generation": sampled - started, "seconds/logps_no_grad": time.perf_counter() - scored}
    return batch, times


def batch_stats(batch, config):
    """The batch's logged numbers: reward (mean, group std, per function), the share of groups with
    equal rewards, completion lengths (mean, max) and the share of completions cut at the limit."""
    total = batch.rewards.nansum(1)
    lengths = batch.completion_mask.sum(1).float()
    grouped = total.view(-1, config.num_generations)
    out = {
        "reward": total.mean().item(),
        "reward_std": grouped.std(1).mean().item(),
        "frac_reward_zero_std": (grouped == grouped[:, :1]).all(1).float().mean().item(),
        "completions/mean_length": lengths.mean().item(),
        "completions/max_length": lengths.max().item(),
        "completions/clipped_ratio": (lengths >= config.max_new_tokens).float().mean().item(),  # at the limit
    }
    for j, name in enumerate(batch.reward_names):
        out[f"rewards/{name}/mean"] = batch.rewards[:, j].nanmean().item()
    return out


def step_line(row):
    """One step's line of the log."""
    held = f", held-out {row['heldout/accuracy']:.0%}" if "heldout/accuracy" in row else ""
    return (
        f"step {row['step']:3d}: reward {row['reward']:.3f}, kl {row['kl']:.4f}, clipped "
        f"{row['clip_ratio/region_mean']:.1%}, length {row['completions/mean_length']:.0f}, "
        f"grad norm {row['grad_norm']:.3f}, {row['step_time_s']:.1f} s{held}"
    )


def train_from_scratch(
    model, tokenizer, config, prompts, *, reward_funcs=None, evaluate=None, logps=batch_logps, log=print
):
    """The GRPO loop: ``config.steps`` AdamW steps, a new batch (:func:`sample_batch`) every ``num_iterations``.

    Args:
        model: a PEFT LoRA policy (its adapter off is the reference model); tokenizer: its tokenizer.
        prompts: rows with ``prompt`` (and the columns the rewards read), ``prompts_per_step`` per batch in
            order (:func:`helpers.training.loop_runs.train_prompts`).
        reward_funcs: default :data:`helpers.rewards.REWARD_FUNCS`.
        evaluate: ``evaluate(model) -> {"heldout/accuracy", ...}`` before the first step, every
            ``heldout_every`` steps and after the last (:func:`helpers.training.loop_runs.heldout_evaluator`);
            None: no held-out curve.
        logps: the log-prob pass, :func:`batch_logps` or one of its signature; log: a print function (None: silent).

    Returns:
        a :class:`LoopRun`: one row per step (:data:`helpers.loop.METRIC_COLUMNS`; step 0 holds the held-out
        accuracy before training) and the held-out curve.

    Raises:
        ValueError: fewer prompts than the run needs.
    """
    reward_funcs, n = list(REWARD_FUNCS if reward_funcs is None else reward_funcs), config.prompts_per_step
    prompts = list(prompts)  # a datasets.Dataset too
    if len(prompts) < config.rollouts * n:
        raise ValueError(f"{len(prompts)} prompts for {config.rollouts} batches of {n}")
    optimizer, rows, curve, started = make_optimizer(model, config), [], [], time.perf_counter()
    if evaluate is not None:
        curve.append((0, evaluate(model)))  # the held-out accuracy before training
        rows.append({"step": 0, **curve[-1][1]})
    for step in range(1, config.steps + 1):
        step_started, rollout = time.perf_counter(), (step - 1) // config.num_iterations
        if (step - 1) % config.num_iterations == 0:  # a new batch; the next num_iterations - 1 steps reuse it
            batch, times = sample_batch(
                model, tokenizer, prompts[rollout * n : (rollout + 1) * n], config, reward_funcs, logps
            )
        else:
            times = {"seconds/generation": 0.0, "seconds/logps_no_grad": 0.0}
        stats = optimizer_step(model, optimizer, batch, config, logps)
        row = {"step": step, "rollout": rollout, **batch_stats(batch, config), **stats, **times}
        row["step_time_s"] = time.perf_counter() - step_started
        if evaluate is not None and (step % config.heldout_every == 0 or step == config.steps):
            curve.append((step, evaluate(model)))
            row.update(curve[-1][1])
        rows.append(row)
        if log:
            log(step_line(row))
    return LoopRun(rows, curve, time.perf_counter() - started)
