"""The GRPO objective by hand: log-probs, group advantages, KL estimators, clipped loss.

Pure PyTorch functions mirroring TRL 0.22.2's ``GRPOTrainer`` (``_get_per_token_logps_and_entropies``,
``_generate_and_score_completions``, ``_compute_loss``), checked against it in ``tests/test_grpo_vs_trl.py``.
Read :func:`grpo_loss` first.

Notation (DeepSeekMath, Shao et al. 2024, §4.1): a *group* is G completions o_1..o_G of one prompt q,
sampled from the *old policy* pi_old; pi_theta is the policy being trained, pi_ref the frozen reference
model. Shapes: B completions (prompts x G, a prompt's G consecutive), T completion tokens (right-padded),
V vocabulary size. Log-probs are in nats.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo")
SCALES = ("group", "batch", "none")
MAX_LOG_RATIO = 50.0  # k3's log-ratio bound (nats): e^50 ~ 5e21, far below fp32/bf16's max ~ e^88.7


def per_token_logps(logits: torch.Tensor, input_ids: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Log-probability of each taken token, log softmax(logits / temperature)[token], as TRL computes it.

    Args:
        logits: ``(B, T, V)``, aligned with the tokens (``logits[b, t]`` scores ``input_ids[b, t]``); for a
            causal LM, ``model(...).logits[:, -T - 1 : -1]``.
        input_ids: ``(B, T)`` token ids.
        temperature: the sampling temperature (the logits are divided by it).

    Returns:
        ``(B, T)`` float32 (or float64) log-probs (nats, <= 0), differentiable w.r.t. ``logits``. bf16/fp16
        logits are upcast first: in bf16 the log-softmax over 32k tokens is off by ~0.07 nat.

    Raises:
        ValueError: shapes do not match, or ``temperature <= 0``.
    """
    if logits.dim() != 3 or input_ids.shape != logits.shape[:2]:
        raise ValueError(
            f"expected logits (B, T, V) and input_ids (B, T), got {tuple(logits.shape)} and {tuple(input_ids.shape)}"
        )
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32)) / temperature
    taken = logits.gather(-1, input_ids.unsqueeze(-1)).squeeze(-1)
    return taken - torch.logsumexp(logits, dim=-1)  # log_softmax(x)_i = x_i - logsumexp(x)


def completion_logps(
    model, prompt_ids, prompt_mask, completion_ids, completion_mask, temperature: float = 1.0
) -> torch.Tensor:
    """Per-token log-probs of the completions under ``model``: one forward pass over ``[prompt, completion]``
    projecting only the last ``C + 1`` positions to logits, as TRL does.

    Args:
        model: a causal LM (``transformers`` ``*ForCausalLM``, optionally PEFT-wrapped).
        prompt_ids, prompt_mask: ``(B, P)``, left-padded.
        completion_ids, completion_mask: ``(B, C)``, right-padded.
        temperature: see :func:`per_token_logps`.

    Returns:
        ``(B, C)`` log-probs; gradients flow into the model unless called under ``no_grad``.
    """
    input_ids = torch.cat([prompt_ids, completion_ids], dim=1)
    attention_mask = torch.cat([prompt_mask, completion_mask], dim=1)
    width = completion_ids.size(1)
    logits = model(input_ids=input_ids, attention_mask=attention_mask, logits_to_keep=width + 1, use_cache=False).logits
    return per_token_logps(logits[:, -width - 1 : -1], completion_ids, temperature)


def stop_token_ids(tokenizer, generation_config=None) -> list[int]:
    """Every token id that ends a completion: the tokenizer's EOS, the generation config's EOS ids, and the
    pad token when it is an end-of-text token.

    Qwen2.5-Instruct: ``[151645, 151643]`` (``<|im_end|>``, and the pad ``<|endoftext|>``, which its
    ``generation_config.eos_token_id`` lists too). SmolLM2: ``[2]`` (``<|im_end|>``, also its pad).

    Raises:
        ValueError: no stop token at all (the tokenizer has no EOS and no config gives one).
    """
    ids: list[int] = []
    for value in (tokenizer.eos_token_id, getattr(generation_config, "eos_token_id", None)):
        ids += [value] if isinstance(value, int) else list(value or [])
    pad = getattr(tokenizer, "pad_token", None)
    if pad is not None and ("endoftext" in pad or pad == tokenizer.eos_token):
        ids.append(tokenizer.pad_token_id)
    ids = list(dict.fromkeys(i for i in ids if i is not None))
    if not ids:
        raise ValueError("no stop token: the tokenizer has no EOS and no generation config gives one")
    return ids


def completion_mask(completion_ids: torch.Tensor, eos_token_id: int | Sequence[int] | object) -> torch.Tensor:
    """1 for each completion's tokens up to and including its first stop token, 0 after, as TRL builds it.

    The stop token is trained (the policy chose to stop), the padding is not. ``completion_ids != pad_id``
    would be wrong when pad == EOS (SmolLM2, Qwen2.5 chat): it drops the EOS. A completion without a stop
    token (cut at the length limit) keeps all its tokens.

    Args:
        completion_ids: ``(B, T)`` generated token ids, right-padded.
        eos_token_id: a stop id, several (any one ends a completion), or a tokenizer: then its
            :func:`stop_token_ids` (the default to use: it gives both of Qwen's).

    Returns:
        ``(B, T)`` int mask.

    Raises:
        ValueError: ``completion_ids`` is not 2-D, or no stop id is given.
    """
    if completion_ids.dim() != 2:
        raise ValueError(f"completion_ids must be (B, T), got shape {tuple(completion_ids.shape)}")
    if hasattr(eos_token_id, "eos_token_id"):  # a tokenizer
        eos_token_id = stop_token_ids(eos_token_id)
    stop_ids = torch.as_tensor(eos_token_id, device=completion_ids.device).flatten()
    if stop_ids.numel() == 0:
        raise ValueError("eos_token_id must be one token id or a non-empty list of ids")
    is_eos = torch.isin(completion_ids, stop_ids)
    first_eos = torch.where(is_eos.any(1), is_eos.int().argmax(1), completion_ids.size(1))  # (B,)
    positions = torch.arange(completion_ids.size(1), device=completion_ids.device)
    return (positions.unsqueeze(0) <= first_eos.unsqueeze(1)).int()


def gae_advantages(rewards: torch.Tensor, values: torch.Tensor, gamma: float = 1.0, lam: float = 0.95) -> torch.Tensor:
    """PPO's advantages from a critic, generalized advantage estimation (what GRPO removes).

    delta_t = r_t + gamma V(s_{t+1}) - V(s_t), V = 0 after the last step, and
    A_t = sum_l (gamma lam)^l delta_{t+l} (Schulman et al. 2016, GAE, eq. 16).

    Args:
        rewards, values: ``(T,)`` per-step rewards and critic estimates V(s_t).
        gamma: discount in [0, 1]; lam: GAE lambda in [0, 1].

    Returns:
        ``(T,)`` advantages (the critic's targets are ``advantages + values``).

    Raises:
        ValueError: shapes differ or are not 1-D, or gamma / lam outside [0, 1].
    """
    if rewards.dim() != 1 or rewards.shape != values.shape:
        raise ValueError(
            f"expected rewards and values of the same shape (T,), got {tuple(rewards.shape)} and {tuple(values.shape)}"
        )
    if not (0 <= gamma <= 1 and 0 <= lam <= 1):
        raise ValueError(f"gamma and lam must lie in [0, 1], got {gamma}, {lam}")
    next_values = torch.cat([values[1:], values.new_zeros(1)])
    deltas = rewards + gamma * next_values - values
    advantages = torch.zeros_like(deltas)
    running = deltas.new_zeros(())
    for t in reversed(range(len(deltas))):
        running = deltas[t] + gamma * lam * running
        advantages[t] = running
    return advantages


def group_advantages(rewards: torch.Tensor, group_size: int, scale: str = "group", eps: float = 1e-4) -> torch.Tensor:
    """Group-relative advantages A_i = (r_i - mean(group)) / (std + eps), one per completion.

    DeepSeekMath §4.1.2 (outcome supervision): every token of o_i gets A_i; the group mean replaces PPO's
    critic as the baseline. ``scale`` mirrors TRL's ``scale_rewards``: ``"group"`` divides by the group's
    std, ``"batch"`` by the whole batch's, ``"none"`` not at all (Dr. GRPO, Liu et al. 2025: the std
    up-weights groups that are almost all right or all wrong). The std is unbiased (divisor G - 1), as in
    TRL. A group of equal rewards (no learning signal) gets exactly 0, where TRL's ``(r - mean) / eps``
    leaves the mean's rounding error divided by eps (larger in TRL's float32 rewards than in float64).

    Args:
        rewards: ``(B,)`` one reward per completion, G consecutive per prompt; int or bool rewards are
            converted to the default float dtype.
        group_size: G, completions per prompt (>= 2).
        scale: one of ``SCALES``.
        eps: added to the std (TRL's 1e-4).

    Returns:
        ``(B,)`` advantages, in ``rewards``' float dtype, else ``torch.get_default_dtype()``.

    Raises:
        ValueError: ``rewards`` not 1-D or not finite (one inf makes its group NaN), ``group_size < 2``,
            B not a multiple of G, or unknown ``scale``.
    """
    if rewards.dim() != 1:
        raise ValueError(f"rewards must be 1-D (B,), got shape {tuple(rewards.shape)}")
    if group_size < 2:
        raise ValueError(f"group_size must be >= 2 (a group of 1 has no baseline), got {group_size}")
    if rewards.numel() % group_size != 0:
        raise ValueError(f"{rewards.numel()} rewards cannot be split into groups of {group_size}")
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    if not rewards.is_floating_point():
        rewards = rewards.to(torch.get_default_dtype())
    if not torch.isfinite(rewards).all():
        bad = (~torch.isfinite(rewards)).nonzero().flatten().tolist()
        raise ValueError(f"rewards contain NaN or inf (at positions {bad[:10]})")
    grouped = rewards.view(-1, group_size)  # (num_prompts, G)
    advantages = (grouped - grouped.mean(dim=1, keepdim=True)).flatten()
    if scale == "group":
        advantages = advantages / (grouped.std(dim=1).repeat_interleave(group_size) + eps)
    elif scale == "batch":
        advantages = advantages / (rewards.std() + eps)
    all_equal = (grouped == grouped[:, :1]).all(dim=1).repeat_interleave(group_size)
    return torch.where(all_equal, torch.zeros_like(advantages), advantages)


def kl_estimators(logp: torch.Tensor, ref_logp: torch.Tensor):
    """Per-token estimators of KL(pi_theta || pi_ref) from tokens sampled from pi_theta.

    With r = log pi_ref(o_t) - log pi_theta(o_t) (Schulman 2020, "Approximating KL Divergence"):

    * k1 = -r: unbiased, high variance, negative for some tokens.
    * k2 = r^2 / 2: biased (little when the two are close), >= 0.
    * k3 = exp(r) - r - 1: unbiased (E[exp(r)] = 1 under pi_theta) and >= 0 (exp(x) >= 1 + x); DeepSeekMath
      eq. 4 and TRL use it. Computed as ``expm1(r) - r`` (no cancellation: ``exp(r) - r - 1`` rounds to
      -6e-8 in float32 for |r| ~ 1e-8), clamped at 0 against the last rounding, with r clamped above at
      ``MAX_LOG_RATIO``: a token far less likely under pi_theta than under pi_ref (r = 99.99, exp(r) = inf in
      float32) gives k3 = e^50 - 51 ~ 5e21 with zero gradient instead of an infinite loss and NaN gradients.
      For r <= 50 it is exactly TRL's (unbounded) k3; no lower clamp is needed (r -> -inf: k3 ~ -r - 1).

    Value is not gradient: as a loss on tokens sampled from pi_theta, E[grad k1] = 0, E[grad k2] =
    grad KL(pi_theta || pi_ref) and E[grad k3] = grad KL(pi_ref || pi_theta) (notebook 02 checks all three).

    Args:
        logp: ``(B, T)`` (any shape) log pi_theta of the taken tokens (may require grad).
        ref_logp: same shape, log pi_ref of the same tokens.

    Returns:
        ``(k1, k2, k3)``, each shaped like ``logp`` (nats); padding is not masked.

    Raises:
        ValueError: shapes differ.
    """
    if logp.shape != ref_logp.shape:
        raise ValueError(f"logp and ref_logp differ in shape: {tuple(logp.shape)} vs {tuple(ref_logp.shape)}")
    r = ref_logp - logp
    r_k3 = r.clamp(max=MAX_LOG_RATIO)
    return -r, 0.5 * r**2, (torch.expm1(r_k3) - r_k3).clamp(min=0.0)


def clipped_surrogate(
    ratio: torch.Tensor, advantages: torch.Tensor, epsilon_low: float = 0.2, epsilon_high: float | None = None
) -> torch.Tensor:
    """PPO's clipped surrogate per token, min(rho A, clip(rho, 1 - eps_low, 1 + eps_high) A), to maximise.

    PPO (Schulman et al. 2017) eq. 7 with DAPO's asymmetric "clip-higher" bounds (Yu et al. 2025, §3.1).
    Pessimistic: once rho leaves the trust region in the direction A pushes, the token's gradient is 0.

    Args:
        ratio: ``(B, T)`` rho = pi_theta(o_t) / pi_old(o_t).
        advantages: ``(B,)`` one per completion, or ``(B, T)``.
        epsilon_low, epsilon_high: clip range; ``epsilon_high=None`` means ``epsilon_low``.

    Returns:
        ``(B, T)`` per-token objective (the loss is its negative).

    Raises:
        ValueError: advantages of the wrong shape, or epsilons out of range.
    """
    eps_high = epsilon_low if epsilon_high is None else epsilon_high
    if not (0 <= epsilon_low < 1 and eps_high >= 0):
        raise ValueError(f"need 0 <= epsilon_low < 1 and epsilon_high >= 0, got {epsilon_low}, {eps_high}")
    if advantages.shape == ratio.shape[:1]:
        advantages = advantages.unsqueeze(1)
    elif advantages.shape != ratio.shape:
        raise ValueError(
            f"advantages must be (B,) or (B, T) for ratio {tuple(ratio.shape)}, got {tuple(advantages.shape)}"
        )
    clipped = torch.clamp(ratio, 1 - epsilon_low, 1 + eps_high)
    return torch.min(ratio * advantages, clipped * advantages)


def aggregate_loss(
    per_token_loss: torch.Tensor,
    completion_mask: torch.Tensor,
    loss_type: str,
    max_completion_length: int | None = None,
) -> torch.Tensor:
    """Average masked per-token losses into one number as ``loss_type`` says (|o_i| = real tokens of o_i):

    * ``"grpo"``: mean over completions of (1/|o_i|) sum_t l_{i,t} (DeepSeekMath eq. 3). Each completion
      weighs the same, so each token of a long one weighs less: length bias.
    * ``"bnpo"``, ``"dapo"``: sum_{i,t} l_{i,t} / sum_i |o_i|, a token mean over this batch (DAPO, Yu et al.
      2025, §3.3). TRL's dapo divides by the tokens of the whole generation batch (all processes and
      accumulation steps): the same number on one process without gradient accumulation.
    * ``"dr_grpo"``: sum_{i,t} l_{i,t} / (B * max_completion_length) (Dr. GRPO, Liu et al. 2025: no length bias).

    One batch's loss: TRL also divides grpo/bnpo/dr_grpo by the gradient-accumulation steps.

    Args:
        per_token_loss, completion_mask: ``(B, T)``; the mask is 1 for real tokens.
        loss_type: one of ``LOSS_TYPES``; max_completion_length: L, required for ``"dr_grpo"``.

    Returns:
        0-d tensor.

    Raises:
        ValueError: unknown ``loss_type``; ``"dr_grpo"`` without a positive ``max_completion_length`` or with
            a completion longer than it.
    """
    if loss_type not in LOSS_TYPES:
        raise ValueError(f"loss_type must be one of {LOSS_TYPES}, got {loss_type!r}")
    mask = completion_mask.to(per_token_loss.dtype)
    lengths = mask.sum(-1)  # |o_i|
    if loss_type == "grpo":
        return ((per_token_loss * mask).sum(-1) / lengths.clamp(min=1.0)).mean()
    if loss_type in ("bnpo", "dapo"):
        return (per_token_loss * mask).sum() / lengths.sum().clamp(min=1.0)
    if max_completion_length is None or max_completion_length <= 0:
        raise ValueError("loss_type='dr_grpo' needs a positive max_completion_length")
    if lengths.max() > max_completion_length:
        raise ValueError(
            f"a completion has {int(lengths.max())} tokens, more than max_completion_length={max_completion_length}"
        )
    return (per_token_loss * mask).sum() / (per_token_loss.size(0) * max_completion_length)


def grpo_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor | None,
    ref_logp: torch.Tensor | None,
    advantages: torch.Tensor,
    completion_mask: torch.Tensor,
    beta: float = 0.0,
    epsilon_low: float = 0.2,
    epsilon_high: float | None = None,
    loss_type: str = "dapo",
    max_completion_length: int | None = None,
):
    """The GRPO loss (negative objective) and its monitoring statistics, as TRL computes it.

    Per token (DeepSeekMath eq. 3, the KL term eq. 4's k3, its log-ratio clamped at ``MAX_LOG_RATIO``):
        l_{i,t} = -min(rho_{i,t} A_i, clip(rho_{i,t}, 1 - eps_low, 1 + eps_high) A_i) + beta * k3_{i,t},
        rho_{i,t} = exp(logp - old_logp),
    masked (0 after the first EOS) and averaged by :func:`aggregate_loss`. Defaults are TRL 0.22.2's
    ``GRPOConfig`` (beta 0, epsilon 0.2, ``loss_type="dapo"``). Not covered: TRL's entropy masking,
    sequence-level importance sampling and two-sided ``delta`` clipping (all off by default).

    ``old_logp``, ``ref_logp`` and ``advantages`` are detached: gradients reach the policy only through
    ``logp``. ``old_logp=None`` means on-policy (TRL's default of one update per generation): it is
    ``logp.detach()``, so rho = 1 in value while the gradient is A * grad logp.

    Args:
        logp: ``(B, T)`` log pi_theta of the completion tokens (requires grad to train).
        old_logp: ``(B, T)`` log pi_old, or None (on-policy).
        ref_logp: ``(B, T)`` log pi_ref; needed when ``beta > 0``, else only for the ``kl`` statistic.
        advantages: ``(B,)``, e.g. from :func:`group_advantages`.
        completion_mask: ``(B, T)``, 1 for real completion tokens (the EOS included).
        beta: KL coefficient (>= 0).
        epsilon_low, epsilon_high: clip range, see :func:`clipped_surrogate`.
        loss_type: one of ``LOSS_TYPES``.
        max_completion_length: required for ``"dr_grpo"``.

    Returns:
        ``(loss, stats)``: a 0-d tensor, and floats averaged over real tokens, named as TRL logs them: ``kl``
        (mean k3, NaN without ``ref_logp``), ``clip_ratio/low_mean`` (rho < 1 - eps_low with A < 0),
        ``clip_ratio/high_mean`` (rho > 1 + eps_high with A > 0), ``clip_ratio/region_mean`` (either: no
        policy gradient), and the course's own ``ratio_mean`` (mean rho; TRL does not log it).

    Raises:
        ValueError: shapes differ; ``beta < 0``; ``beta > 0`` without ``ref_logp``; and those of
            :func:`aggregate_loss` and :func:`clipped_surrogate`.
    """
    if beta < 0:
        raise ValueError(f"beta must be >= 0, got {beta}")
    if beta > 0 and ref_logp is None:
        raise ValueError("beta > 0 needs ref_logp (the reference model's log-probs)")
    given = dict(logp=logp, old_logp=old_logp, ref_logp=ref_logp, completion_mask=completion_mask)
    shapes = {name: tuple(t.shape) for name, t in given.items() if t is not None}
    if len(set(shapes.values())) > 1 or any(len(s) != 2 for s in shapes.values()):
        raise ValueError(f"expected tensors of one shape (B, T), got {shapes}")
    if advantages.shape != logp.shape[:1]:
        raise ValueError(f"advantages must be (B,) = {tuple(logp.shape[:1])}, got {tuple(advantages.shape)}")

    old_logp = logp.detach() if old_logp is None else old_logp.detach()
    advantages = advantages.detach()
    # Zero the padding's inputs (the mask zeroes their loss anyway) so that garbage there, e.g. -inf,
    # cannot turn 0 * inf into NaN in the loss or the gradient.
    real = completion_mask.bool()
    logp, old_logp = logp.where(real, 0.0), old_logp.where(real, 0.0)
    ref_logp = None if ref_logp is None else ref_logp.detach().where(real, 0.0)

    ratio = torch.exp(logp - old_logp)  # rho_{i,t}
    per_token_loss = -clipped_surrogate(ratio, advantages, epsilon_low, epsilon_high)
    k3 = None if ref_logp is None else kl_estimators(logp, ref_logp)[2]
    if beta > 0:
        per_token_loss = per_token_loss + beta * k3
    loss = aggregate_loss(per_token_loss, completion_mask, loss_type, max_completion_length)

    def token_mean(x: torch.Tensor) -> float:
        x = x.detach().to(logp.dtype)
        return ((x * real).sum() / real.sum().clamp(min=1)).item()

    eps_high = epsilon_low if epsilon_high is None else epsilon_high
    low = (ratio < 1 - epsilon_low) & (advantages.unsqueeze(1) < 0)
    high = (ratio > 1 + eps_high) & (advantages.unsqueeze(1) > 0)
    stats = {
        "kl": float("nan") if k3 is None else token_mean(k3),
        "clip_ratio/low_mean": token_mean(low),
        "clip_ratio/high_mean": token_mean(high),
        "clip_ratio/region_mean": token_mean(low | high),
        "ratio_mean": token_mean(ratio),
    }
    return loss, stats
