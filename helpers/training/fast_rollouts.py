"""Cheaper rollouts and log-probs on a CPU, from the same policy: what a GRPO step spends its time on.

A GRPO step samples G completions per prompt (the *rollouts*), then runs the policy and the reference
model over every prompt + completion. TRL 0.22.2 without vLLM does both the plain way: ``model.generate``
on all B = prompts x G rows (each row's prompt computed again, finished rows kept until the longest ends,
the LoRA applied beside every projection), then forward passes over all B rows padded to the longest
completion. Four savings change nothing that is sampled or learned:

1. **One prompt pass per group** (:func:`sample`, :func:`shared_prompt_logps`): a group's G rows hold the
   same prompt, so its keys and values are computed once and repeated G times. Exact in the loss too:
   autograd sums the G completions' gradients through the shared pass, as through G copies.
2. **Finished rows leave the batch** (:func:`sample`): a row that wrote its end-of-turn token leaves the
   KV cache. Log-probs run per group, in buckets of similar length (:func:`length_buckets`).
3. **The LoRA merged for sampling** (:class:`MergedPolicy`): rollouts run on a plain copy with weights
   ``W + (alpha / r) B A``, refreshed before every rollout; the loss still runs through the PEFT model.
4. **Flat groups leave the loss** (:meth:`CourseGRPOTrainer._compute_loss`, only when ``beta = 0``): a
   group whose completions all scored the same has advantage 0 on every row, and without the KL term adds
   exactly 0 to the loss and its gradient. Its passes are skipped and the loss rescaled to TRL's
   normaliser. DAPO (Yu et al. 2025, section 3.2) drops such groups too; here only from the compute.

Sampling is HF's distribution (``softmax(logits / temperature)``, transformers' top-k / top-p warpers),
drawn by :func:`draw`. Tests check greedy output against ``generate`` token for token, sampled log-probs
against the PEFT policy's teacher-forced ones, and :func:`shared_prompt_logps` and its gradients against
TRL's. :class:`helpers.training.trainer.CourseGRPOTrainer` applies the savings;
``benchmarks/bench_training.py`` measures it against a plain TRL script.
"""

from __future__ import annotations

import copy
from contextlib import contextmanager

import torch


# ------------------------------------------------------------------------------------ groups
def prompt_groups(input_ids: torch.Tensor, attention_mask: torch.Tensor) -> list[list[int]]:
    """``[[row, ...], ...]``: the rows of ``(B, L)`` tensors that hold the same tokens and mask, in order of
    first appearance. TRL 0.22 shuffles the rows before the loss (``shuffle_sequence_dict``), so a group is
    not a run of rows there: ``[[1, 2], [3, 4], [1, 2]]`` -> ``[[0, 2], [1]]``."""
    rows = torch.cat([input_ids, attention_mask.to(input_ids.dtype)], dim=1)
    _, inverse = torch.unique(rows, dim=0, return_inverse=True)
    groups: dict[int, list[int]] = {}
    for row, key in enumerate(inverse.tolist()):
        groups.setdefault(key, []).append(row)
    return list(groups.values())


def _positions(mask: torch.Tensor) -> torch.Tensor:
    """Position ids as ``generate`` counts them in left-padded rows: from each row's first real token (pads get 1)."""
    return (mask.long().cumsum(-1) - 1).clamp(min=0) * mask.long() + (1 - mask.long())


# ---------------------------------------------------------------------------------- sampling
def _warpers(temperature: float, top_k: int | None, top_p: float):
    from transformers.generation import logits_process as lp

    warpers = lp.LogitsProcessorList()
    if temperature != 1.0:
        warpers.append(lp.TemperatureLogitsWarper(temperature))
    if top_k:
        warpers.append(lp.TopKLogitsWarper(top_k))
    if top_p < 1.0:
        warpers.append(lp.TopPLogitsWarper(top_p))
    return warpers


@torch.no_grad()
def sample(
    model,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    *,
    max_new_tokens: int,
    eos_token_id,
    pad_token_id: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float = 1.0,
    generator: torch.Generator | None = None,
    return_logps: bool = False,
):
    """Sample a completion for each row of a left-padded batch of prompts.

    Args:
        model: a causal LM with a ``DynamicCache`` (any transformers decoder; a PEFT model works too).
        input_ids, attention_mask: ``(B, L)`` prompts, left-padded; rows with the same prompt share one pass.
        max_new_tokens: the completion length limit, in tokens.
        eos_token_id: an id or a list of ids that end a completion (it is kept, then padding follows).
        pad_token_id: what fills a completion after its end.
        temperature: ``0`` for greedy decoding; else the softmax temperature.
        top_k, top_p: transformers' ``TopKLogitsWarper`` / ``TopPLogitsWarper`` (None / 1.0: off).
        generator: a ``torch.Generator`` for the draws (default: torch's global one).
        return_logps: also return each sampled token's log-probability under the distribution it was
            drawn from (after temperature and filtering; 0 after the end).

    Returns:
        ``completion_ids`` ``(B, T)`` with ``T <= max_new_tokens`` (the longest completion), padded with
        ``pad_token_id`` after each row's end; with ``return_logps``, ``(completion_ids, logps)``.

    Raises:
        ValueError: ``max_new_tokens < 1``, a negative temperature, or shapes that differ.
    """
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if input_ids.shape != attention_mask.shape:
        raise ValueError(f"input_ids {tuple(input_ids.shape)} and attention_mask {tuple(attention_mask.shape)} differ")
    from transformers import DynamicCache

    eos = torch.tensor([eos_token_id] if isinstance(eos_token_id, int) else list(eos_token_id), device=input_ids.device)
    warpers = _warpers(temperature, top_k, top_p) if temperature > 0 else None
    groups = prompt_groups(input_ids, attention_mask)
    firsts = torch.tensor([rows[0] for rows in groups], device=input_ids.device)
    owner = torch.empty(input_ids.size(0), dtype=torch.long, device=input_ids.device)
    for i, rows in enumerate(groups):
        owner[rows] = i

    cache = DynamicCache()
    out = model(
        input_ids=input_ids[firsts],
        attention_mask=attention_mask[firsts],
        position_ids=_positions(attention_mask[firsts]),
        past_key_values=cache,
        use_cache=True,
        logits_to_keep=1,
    )
    cache.batch_select_indices(owner)  # each group's prompt keys and values, repeated for its rows
    logits = _upcast(out.logits[owner, -1])
    batch = input_ids.size(0)
    tokens = torch.full((batch, max_new_tokens), pad_token_id, dtype=input_ids.dtype, device=input_ids.device)
    logps = torch.zeros(batch, max_new_tokens, dtype=logits.dtype, device=input_ids.device)
    rows = torch.arange(batch, device=input_ids.device)  # which rows are still writing
    mask = attention_mask.clone()
    position = _positions(mask)[:, -1:]
    length = 0
    for t in range(max_new_tokens):
        if warpers is None:
            scores = torch.log_softmax(logits, -1)
            step = scores.argmax(-1)
        else:
            scores = torch.log_softmax(warpers(tokens[rows, :t], logits), -1)
            step = draw(scores.exp(), generator)
        tokens[rows, t] = step
        logps[rows, t] = scores.gather(1, step[:, None]).squeeze(1)
        length = t + 1
        going = ~torch.isin(step, eos)
        if t == max_new_tokens - 1 or not going.any():
            break
        if not going.all():
            keep = torch.nonzero(going).flatten()
            rows, step, mask, position = rows[keep], step[keep], mask[keep], position[keep]
            cache.batch_select_indices(keep)
        mask = torch.cat([mask, mask.new_ones(mask.size(0), 1)], dim=1)
        position = position + 1
        out = model(
            input_ids=step[:, None], attention_mask=mask, position_ids=position, past_key_values=cache, use_cache=True
        )
        logits = _upcast(out.logits[:, -1])
    tokens, logps = tokens[:, :length], logps[:, :length]
    return (tokens, logps) if return_logps else tokens


def draw(probs: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """One index per row of ``probs`` ``(rows, V)`` (non-negative, summing to about 1), by the inverse CDF:
    one uniform number per row, located in the row's running sum (float64). The distribution of
    ``torch.multinomial`` (HF's ``generate``), other draws, and cheaper (``multinomial`` races one exponential
    variate per vocabulary entry). A zero-probability index is never drawn. Returns ``(rows,)`` int64."""
    cdf = probs.double().cumsum(-1)
    u = torch.rand(probs.size(0), 1, generator=generator, dtype=torch.float64, device=probs.device) * cdf[:, -1:]
    return torch.searchsorted(cdf, u, right=True).clamp(max=probs.size(-1) - 1).squeeze(1)


def _upcast(logits: torch.Tensor) -> torch.Tensor:
    """Logits in at least float32, as ``generate`` samples from them (float64 stays float64)."""
    return logits.to(torch.promote_types(logits.dtype, torch.float32))


# ----------------------------------------------------------------------------- merged LoRA
class MergedPolicy:
    """A plain copy of a PEFT policy with its LoRA merged, ``W' = W + scaling * B A`` in every adapted layer
    (PEFT's ``get_delta_weight``), for sampling only. :meth:`sync` recomputes ``W'`` from the frozen ``W``,
    so nothing drifts (merging and unmerging in place would add and subtract the same delta in floating
    point, step after step). Costs one model copy of memory.

    Raises:
        ValueError: the model has no plain LoRA to merge (no adapter, or DoRA).
    """

    def __init__(self, peft_model):
        from peft.tuners.lora import LoraLayer

        layers = {name: m for name, m in peft_model.named_modules() if isinstance(m, LoraLayer)}
        if not layers or any(any(m.use_dora.values()) for m in layers.values()):
            raise ValueError("MergedPolicy needs a PEFT model with plain LoRA layers (no DoRA)")
        with torch.no_grad():
            self.model = copy.deepcopy(peft_model).merge_and_unload().eval()
        plain = dict(self.model.named_modules())
        self._pairs = [(layer, plain[name.removeprefix("base_model.model.")]) for name, layer in layers.items()]

    @torch.no_grad()
    def sync(self):
        """Write the current merged weights into the copy; returns the copy (a plain transformers model)."""
        for layer, linear in self._pairs:
            weight = layer.get_base_layer().weight
            linear.weight.copy_(weight)
            for adapter in (a for a in layer.active_adapters if a in layer.lora_A):
                linear.weight.add_(layer.get_delta_weight(adapter).to(weight.dtype))
        return self.model


@contextmanager
def merged_generate(peft_model, merged: MergedPolicy):
    """Inside the block, ``peft_model.generate(input_ids, attention_mask, generation_config)`` samples with
    :func:`sample` on the merged copy (synced on entry) and returns ``prompt + completion`` ids as
    ``generate`` does. A config this sampler does not implement (beams, repetition penalty, min-p, ...)
    goes to the model's own ``generate``."""
    own = peft_model.generate

    def generate(input_ids=None, attention_mask=None, generation_config=None, **kwargs):
        config = generation_config
        if config is None or not _plain_sampling(config):
            return own(input_ids=input_ids, attention_mask=attention_mask, generation_config=config, **kwargs)
        completion = sample(
            merged.model,
            input_ids,
            attention_mask,
            max_new_tokens=config.max_new_tokens,
            eos_token_id=config.eos_token_id,
            pad_token_id=config.pad_token_id,
            temperature=config.temperature if config.do_sample else 0.0,
            top_k=config.top_k,
            top_p=config.top_p if config.top_p is not None else 1.0,
        )
        return torch.cat([input_ids, completion], dim=1)

    merged.sync()
    peft_model.generate = generate
    try:
        yield
    finally:
        del peft_model.generate  # the instance attribute: the class's generate shows again


def _plain_sampling(config) -> bool:
    """True when a ``GenerationConfig`` asks only for what :func:`sample` does."""
    return (
        config.num_beams in (None, 1)
        and config.repetition_penalty in (None, 1.0)
        and not config.min_p
        and config.max_new_tokens
        and config.eos_token_id is not None
        and config.pad_token_id is not None
        and config.num_return_sequences in (None, 1)
    )


# ------------------------------------------------------------------------------- log-probs
ROW_OVERHEAD_TOKENS = 16  # what one more forward pass costs on a CPU, in tokens of work (rough)


def length_buckets(lengths: list[int], overhead: int = ROW_OVERHEAD_TOKENS) -> list[list[int]]:
    """Rows of one group in buckets of similar completion length, each padded to its bucket's longest
    completion instead of the group's: ``[[row, ...], ...]``. Sorted by length and cut where it pays: a
    bucket costs ``rows x longest + overhead`` tokens of work (dynamic programming over the cut points).
    ``[40, 44, 128, 41]`` -> ``[[0, 3, 1], [2]]``; ``[50, 52]`` -> one bucket."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    sorted_lengths = [lengths[i] for i in order]
    best, cut = [0] + [None] * len(order), [0] * (len(order) + 1)
    for j in range(1, len(order) + 1):
        for i in range(j):
            cost = best[i] + (j - i) * sorted_lengths[j - 1] + overhead
            if best[j] is None or cost < best[j]:
                best[j], cut[j] = cost, i
    buckets, j = [], len(order)
    while j > 0:
        buckets.append(order[cut[j] : j])
        j = cut[j]
    return buckets[::-1]


def shared_prompt_logps(
    model,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    logits_to_keep: int,
    temperature: float = 1.0,
    compute_entropy: bool = False,
):
    """Per-token log-probs of the completions, each group's prompt computed once and its rows run in
    :func:`length_buckets`: equal to TRL 0.22.2's ``GRPOTrainer._get_per_token_logps_and_entropies`` (same
    positions: the padded column index), gradients included.

    Args:
        model: the policy (or the reference: the policy inside ``disable_adapter()``).
        input_ids, attention_mask: ``(B, P + C)``, prompt then completion, as TRL builds them (the
            completion mask ends at each row's first EOS).
        logits_to_keep: ``C``, the completion columns.
        temperature: the logits are divided by it, as in sampling.
        compute_entropy: also return each position's entropy (no gradient), as TRL does.

    Returns:
        ``(logps, entropies)``, each ``(B, C)``; ``entropies`` is None unless asked for. Positions after a
        row's completion (mask 0) hold 0: the loss masks them.
    """
    from transformers import DynamicCache
    from trl.trainer.utils import entropy_from_logits, selective_log_softmax

    prompt = input_ids.size(1) - logits_to_keep
    completion_mask = attention_mask[:, prompt:]
    columns = torch.arange(logits_to_keep, device=input_ids.device)
    lengths = ((completion_mask > 0) * (columns + 1)).amax(1).clamp(min=1).tolist()  # last kept column + 1
    logps = [None] * input_ids.size(0)
    entropies = [None] * input_ids.size(0)
    for group in prompt_groups(input_ids[:, :prompt], attention_mask[:, :prompt]):
        longest = max(lengths[i] for i in group)
        first_row = group[0]
        pre = model(
            input_ids=input_ids[first_row : first_row + 1, :prompt],
            attention_mask=attention_mask[first_row : first_row + 1, :prompt],
            use_cache=longest > 1,
            logits_to_keep=1,
        )
        first = pre.logits[:, -1:]  # predicts the first completion token of every row of the group
        prompt_kv = pre.past_key_values.to_legacy_cache() if longest > 1 else None
        for bucket in length_buckets([lengths[i] for i in group]):
            rows = torch.tensor([group[k] for k in bucket], device=input_ids.device)
            length = max(lengths[i] for i in rows.tolist())
            logits = first.expand(len(bucket), -1, -1)
            if length > 1:
                cache = DynamicCache.from_legacy_cache(
                    tuple(
                        (k.repeat_interleave(len(bucket), 0), v.repeat_interleave(len(bucket), 0)) for k, v in prompt_kv
                    )
                )
                rest = model(
                    input_ids=input_ids[rows, prompt : prompt + length - 1],
                    attention_mask=attention_mask[rows, : prompt + length - 1],
                    past_key_values=cache,
                    use_cache=True,
                )
                logits = torch.cat([logits, rest.logits], dim=1)
            logits = logits / temperature  # (rows, length, vocab)
            pad = (0, logits_to_keep - length)
            row_logps = torch.nn.functional.pad(
                selective_log_softmax(logits, input_ids[rows, prompt : prompt + length]), pad
            )
            row_entropies = None
            if compute_entropy:
                with torch.no_grad():
                    row_entropies = torch.nn.functional.pad(entropy_from_logits(logits), pad)
            for k, i in enumerate(rows.tolist()):
                logps[i] = row_logps[k]
                entropies[i] = row_entropies[k] if compute_entropy else None
    return torch.stack(logps), torch.stack(entropies) if compute_entropy else None
