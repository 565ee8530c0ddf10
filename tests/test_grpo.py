"""Unit tests of helpers.grpo against independent hand computations (plain Python loops)."""

import math
import statistics
from types import SimpleNamespace

import pytest
import torch

from helpers import grpo

# ---- per-token log-probs ----------------------------------------------------------------


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_per_token_logps_matches_categorical(temperature):
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 5, 11, generator=g, dtype=torch.float64)
    ids = torch.randint(0, 11, (3, 5), generator=g)
    expected = torch.distributions.Categorical(logits=logits / temperature).log_prob(ids)
    torch.testing.assert_close(grpo.per_token_logps(logits, ids, temperature), expected, rtol=0, atol=1e-12)


def test_per_token_logps_bad_input():
    with pytest.raises(ValueError, match="shape|expected"):
        grpo.per_token_logps(torch.zeros(2, 3, 4), torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="temperature"):
        grpo.per_token_logps(torch.zeros(2, 3, 4), torch.zeros(2, 3, dtype=torch.long), temperature=0.0)


def test_completion_logps_equals_full_forward():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=40,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=32,
    )
    model = LlamaForCausalLM(cfg).eval()
    prompt_ids, completion_ids = torch.randint(0, 40, (2, 4)), torch.randint(0, 40, (2, 3))
    prompt_mask, completion_mask = torch.ones(2, 4, dtype=torch.long), torch.ones(2, 3, dtype=torch.long)
    got = grpo.completion_logps(model, prompt_ids, prompt_mask, completion_ids, completion_mask, 0.7)
    full = model(torch.cat([prompt_ids, completion_ids], 1)).logits  # (B, 7, V); position t predicts t + 1
    expected = torch.log_softmax(full[:, 3:6] / 0.7, -1).gather(-1, completion_ids[..., None])[..., 0]
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


def test_completion_mask_keeps_first_eos():
    eos = 2  # also the padding id, as for SmolLM2
    ids = torch.tensor([[5, 6, eos, eos, eos], [eos, eos, eos, eos, eos], [5, 6, 7, 8, 9], [5, eos, 7, eos, eos]])
    expected = torch.tensor([[1, 1, 1, 0, 0], [1, 0, 0, 0, 0], [1, 1, 1, 1, 1], [1, 1, 0, 0, 0]])
    assert torch.equal(grpo.completion_mask(ids, eos), expected.int())
    with pytest.raises(ValueError):
        grpo.completion_mask(ids[0], eos)


# ---- PPO's GAE (the baseline GRPO replaces) ------------------------------------------------


def test_gae_limits():
    rewards = torch.tensor([0.0, 0.0, 0.0, 0.0, 1.0], dtype=torch.float64)
    values = torch.tensor([0.2, 0.3, 0.5, 0.6, 0.8], dtype=torch.float64)
    # lambda = 1, gamma = 1: Monte-Carlo return minus the value.
    mc = torch.tensor([1.0] * 5, dtype=torch.float64) - values
    torch.testing.assert_close(grpo.gae_advantages(rewards, values, 1.0, 1.0), mc)
    # lambda = 0: the one-step TD error delta_t.
    gamma = 0.9
    deltas = [rewards[t] + gamma * (values[t + 1] if t < 4 else 0.0) - values[t] for t in range(5)]
    torch.testing.assert_close(grpo.gae_advantages(rewards, values, gamma, 0.0), torch.stack(deltas))
    with pytest.raises(ValueError):
        grpo.gae_advantages(rewards, values[:4])
    with pytest.raises(ValueError):
        grpo.gae_advantages(rewards, values, lam=1.5)


# ---- group-relative advantages ----------------------------------------------------------


def test_group_advantages_by_hand():
    rewards = [1.0, 0.0, 0.0, 0.5, 2.0, 1.0, 1.0, 0.0]
    adv = grpo.group_advantages(torch.tensor(rewards, dtype=torch.float64), group_size=4)
    expected = []
    for group in (rewards[:4], rewards[4:]):
        mean, std = statistics.mean(group), statistics.stdev(group)  # stdev: divisor G - 1
        expected += [(r - mean) / (std + 1e-4) for r in group]
    torch.testing.assert_close(adv, torch.tensor(expected, dtype=torch.float64))
    # Each group's advantages sum to zero: the group mean is the baseline.
    assert abs(adv[:4].sum()) < 1e-12 and abs(adv[4:].sum()) < 1e-12


def test_group_advantages_batch_and_none():
    rewards = torch.tensor([1.0, 0.0, 3.0, 1.0], dtype=torch.float64)
    centred = torch.tensor([0.5, -0.5, 1.0, -1.0], dtype=torch.float64)
    torch.testing.assert_close(grpo.group_advantages(rewards, 2, scale="none"), centred)
    batch_std = statistics.stdev(rewards.tolist())
    torch.testing.assert_close(grpo.group_advantages(rewards, 2, scale="batch"), centred / (batch_std + 1e-4))


@pytest.mark.parametrize("scale", grpo.SCALES)
@pytest.mark.parametrize("value", [0.0, 1.0, 0.1, 2 / 3])
def test_all_equal_group_gets_exactly_zero(scale, value):
    # 0.1 * 3 / 3 != 0.1 in floating point, so (r - mean) alone would not be exactly 0.
    rewards = torch.tensor([value] * 3 + [0.0, 1.0, 1.0], dtype=torch.float64)
    adv = grpo.group_advantages(rewards, group_size=3, scale=scale)
    assert not torch.isnan(adv).any()
    assert torch.equal(adv[:3], torch.zeros(3, dtype=torch.float64))
    assert (adv[3:] != 0).all()  # the other group still carries signal


def test_group_advantages_bad_input():
    with pytest.raises(ValueError, match="group_size"):
        grpo.group_advantages(torch.zeros(4), group_size=1)
    with pytest.raises(ValueError, match="split"):
        grpo.group_advantages(torch.zeros(5), group_size=2)
    with pytest.raises(ValueError, match="scale"):
        grpo.group_advantages(torch.zeros(4), group_size=2, scale="std")
    with pytest.raises(ValueError, match="NaN"):
        grpo.group_advantages(torch.tensor([1.0, float("nan")]), group_size=2)
    with pytest.raises(ValueError, match="1-D"):
        grpo.group_advantages(torch.zeros(2, 2), group_size=2)


# ---- KL estimators ------------------------------------------------------------------------


def test_kl_estimators_formulas_and_k3_nonnegative():
    g = torch.Generator().manual_seed(0)
    logp = torch.randn(64, 128, generator=g) * 3
    ref = logp + torch.randn(64, 128, generator=g) * torch.logspace(-9, 1, 128)  # tiny to large gaps
    k1, k2, k3 = grpo.kl_estimators(logp, ref)
    r = (ref - logp).double()
    torch.testing.assert_close(k1.double(), -r)
    torch.testing.assert_close(k2.double(), r**2 / 2)
    torch.testing.assert_close(k3.double(), torch.exp(r) - r - 1, rtol=1e-5, atol=1e-7)
    assert (k3 >= 0).all()
    assert (k1 < 0).any()  # k1 is negative on some tokens
    with pytest.raises(ValueError):
        grpo.kl_estimators(logp, ref[:, :3])


def _categoricals(shift: float, k: int = 10):
    g = torch.Generator().manual_seed(1)
    base = torch.randn(k, generator=g, dtype=torch.float64)
    direction = torch.randn(k, generator=g, dtype=torch.float64)
    return torch.log_softmax(base + shift * direction, 0), torch.log_softmax(base, 0)  # log pi, log pi_ref


@pytest.mark.parametrize("shift", [0.3, 3.0])
def test_k1_k3_unbiased_monte_carlo(shift):
    logp_all, ref_all = _categoricals(shift)
    exact = (logp_all.exp() * (logp_all - ref_all)).sum().item()  # KL(pi || pi_ref)
    n = 200_000
    tokens = torch.multinomial(logp_all.exp(), n, replacement=True, generator=torch.Generator().manual_seed(2))
    k1, k2, k3 = grpo.kl_estimators(logp_all[tokens], ref_all[tokens])
    for name, k in (("k1", k1), ("k3", k3)):
        stderr = k.std().item() / math.sqrt(n)
        assert abs(k.mean().item() - exact) < 4 * stderr, (name, k.mean().item(), exact, stderr)
    assert (k1 < 0).any() and (k3 >= 0).all()
    if shift > 1:  # far apart: k2 (which estimates a different divergence) is visibly biased
        assert abs(k2.mean().item() - exact) > 10 * k2.std().item() / math.sqrt(n)
    else:  # close: k3 has a much lower variance than k1
        assert k3.var() < 0.25 * k1.var()


# ---- clipped surrogate --------------------------------------------------------------------


def test_clipped_surrogate_piecewise_and_gradient():
    ratios = [0.5, 0.79, 1.0, 1.2, 1.27, 1.5]
    ratio = torch.tensor([ratios, ratios], dtype=torch.float64, requires_grad=True)
    adv = torch.tensor([1.0, -1.0], dtype=torch.float64)
    obj = grpo.clipped_surrogate(ratio, adv, epsilon_low=0.2, epsilon_high=0.28)
    obj.sum().backward()
    for i, a in enumerate((1.0, -1.0)):
        for t, rho in enumerate(ratios):
            clipped = min(max(rho, 0.8), 1.28)
            assert obj[i, t].item() == pytest.approx(min(rho * a, clipped * a))
            # Gradient is zero exactly where the clip binds in the direction the advantage pushes.
            flat = (a > 0 and rho > 1.28) or (a < 0 and rho < 0.8)
            assert ratio.grad[i, t].item() == (0.0 if flat else a)
    with pytest.raises(ValueError):
        grpo.clipped_surrogate(ratio, torch.zeros(3))
    with pytest.raises(ValueError):
        grpo.clipped_surrogate(ratio, adv, epsilon_low=1.0)


# ---- the full loss --------------------------------------------------------------------------


def _reference_loss(logp, old, ref, adv, mask, beta, eps_low, eps_high, loss_type, max_len):
    """Independent per-token loop over the same formula (DeepSeekMath eq. 3 and 4)."""
    B, T = len(logp), len(logp[0])
    per_seq, total, n_tokens = [], 0.0, 0
    for i in range(B):
        s, n = 0.0, 0
        for t in range(T):
            if not mask[i][t]:
                continue
            rho = math.exp(logp[i][t] - old[i][t])
            surrogate = min(rho * adv[i], min(max(rho, 1 - eps_low), 1 + eps_high) * adv[i])
            r = ref[i][t] - logp[i][t]
            s += -surrogate + beta * (math.exp(r) - r - 1)
            n += 1
        per_seq.append(s / max(n, 1))
        total, n_tokens = total + s, n_tokens + n
    return {
        "grpo": sum(per_seq) / B,
        "bnpo": total / n_tokens,
        "dapo": total / n_tokens,
        "dr_grpo": total / (B * max_len),
    }[loss_type]


def _toy_batch():
    g = torch.Generator().manual_seed(0)
    logp = -torch.rand(4, 6, generator=g, dtype=torch.float64) * 3
    old = logp + 0.4 * torch.randn(4, 6, generator=g, dtype=torch.float64)
    ref = logp + 0.4 * torch.randn(4, 6, generator=g, dtype=torch.float64)
    mask = torch.tensor([[1] * 6, [1] * 2 + [0] * 4, [1] * 4 + [0] * 2, [1] + [0] * 5])
    adv = torch.tensor([1.2, -0.4, 0.7, -1.5], dtype=torch.float64)
    return logp, old, ref, adv, mask


@pytest.mark.parametrize("loss_type", grpo.LOSS_TYPES)
@pytest.mark.parametrize("beta", [0.0, 0.04])
def test_grpo_loss_matches_loop(loss_type, beta):
    logp, old, ref, adv, mask = _toy_batch()
    loss, _ = grpo.grpo_loss(logp, old, ref, adv, mask, beta, 0.2, 0.28, loss_type, max_completion_length=8)
    expected = _reference_loss(
        logp.tolist(), old.tolist(), ref.tolist(), adv.tolist(), mask.tolist(), beta, 0.2, 0.28, loss_type, 8
    )
    assert loss.item() == pytest.approx(expected, rel=1e-12)


def test_grpo_loss_ignores_padding_and_detaches_constants():
    logp, old, ref, adv, mask = _toy_batch()
    logp = logp.clone().requires_grad_(True)
    old, ref = old.clone().requires_grad_(True), ref.clone().requires_grad_(True)
    loss, _ = grpo.grpo_loss(logp, old, ref, adv, mask, 0.04, loss_type="grpo")
    loss.backward()
    assert old.grad is None and ref.grad is None  # constants
    assert (logp.grad[mask == 0] == 0).all() and (logp.grad[mask == 1] != 0).any()
    # Garbage (-inf) at padding positions changes neither the loss nor the real tokens' gradient.
    garbage = torch.where(mask.bool(), logp.detach(), torch.full_like(logp, -float("inf"))).requires_grad_(True)
    loss2, _ = grpo.grpo_loss(garbage, old, ref, adv, mask, 0.04, loss_type="grpo")
    loss2.backward()
    assert loss2.item() == loss.item()
    assert torch.equal(garbage.grad, logp.grad)


@pytest.mark.parametrize("loss_type", grpo.LOSS_TYPES)
def test_on_policy_gradient_weights(loss_type):
    """old_logp=None: rho = 1, the gradient w.r.t. logp_{i,t} is -A_i times the normaliser."""
    logp, _, _, adv, mask = _toy_batch()
    logp = logp.clone().requires_grad_(True)
    loss, stats = grpo.grpo_loss(logp, None, None, adv, mask, loss_type=loss_type, max_completion_length=8)
    loss.backward()
    lengths = mask.sum(1, keepdim=True).double()
    weight = {
        "grpo": 1 / (4 * lengths),
        "bnpo": 1 / lengths.sum(),
        "dapo": 1 / lengths.sum(),
        "dr_grpo": torch.tensor(1 / (4 * 8)),
    }[loss_type]
    torch.testing.assert_close(logp.grad, -adv[:, None] * weight * mask)
    assert stats["ratio_mean"] == 1.0 and stats["clip_ratio/region_mean"] == 0.0 and math.isnan(stats["kl"])


def test_grpo_loss_stats_by_hand():
    logp = torch.zeros(2, 3, dtype=torch.float64)
    old = -torch.log(torch.tensor([[0.5, 1.0, 1.5], [0.5, 1.0, 1.5]], dtype=torch.float64))  # rho = 0.5, 1, 1.5
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    adv = torch.tensor([1.0, -1.0], dtype=torch.float64)
    _, stats = grpo.grpo_loss(logp, old, logp, adv, mask, 0.04, 0.2, 0.2, "grpo")
    # Real tokens: rho 0.5, 1, 1.5 with A>0 (1.5 clipped high) and rho 0.5, 1 with A<0 (0.5 clipped low).
    assert stats["clip_ratio/high_mean"] == pytest.approx(1 / 5)
    assert stats["clip_ratio/low_mean"] == pytest.approx(1 / 5)
    assert stats["clip_ratio/region_mean"] == pytest.approx(2 / 5)
    assert stats["ratio_mean"] == pytest.approx((0.5 + 1 + 1.5 + 0.5 + 1) / 5)
    assert stats["kl"] == 0.0  # ref == policy


def test_grpo_loss_bad_input():
    logp, old, ref, adv, mask = _toy_batch()
    with pytest.raises(ValueError, match="loss_type"):
        grpo.grpo_loss(logp, old, ref, adv, mask, loss_type="ppo")
    with pytest.raises(ValueError, match="ref_logp"):
        grpo.grpo_loss(logp, old, None, adv, mask, beta=0.04)
    with pytest.raises(ValueError, match="shape"):
        grpo.grpo_loss(logp, old[:, :3], ref, adv, mask)
    with pytest.raises(ValueError, match="advantages"):
        grpo.grpo_loss(logp, old, ref, adv[:2], mask)
    with pytest.raises(ValueError, match="max_completion_length"):
        grpo.grpo_loss(logp, old, ref, adv, mask, loss_type="dr_grpo")
    with pytest.raises(ValueError, match="max_completion_length"):
        grpo.grpo_loss(logp, old, ref, adv, mask, loss_type="dr_grpo", max_completion_length=4)
    with pytest.raises(ValueError, match="beta"):
        grpo.grpo_loss(logp, old, ref, adv, mask, beta=-1.0)


# ---- Failure kinds ------------------------------------------------------------


@pytest.mark.parametrize("logp_dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("gap", [100.0 - 0.01, 88.0, 1e4])
def test_k3_kl_does_not_overflow_in_exp(logp_dtype, gap):
    # The case is gap = 99.99 (log-prob -100 under the policy, -0.01 under the reference).
    logp = torch.tensor([[-0.01 - gap, -1.0]], dtype=logp_dtype, requires_grad=True)
    ref = torch.tensor([[-0.01, -1.2]], dtype=logp_dtype)
    for loss_type in grpo.LOSS_TYPES:
        loss, stats = grpo.grpo_loss(
            logp,
            None,
            ref,
            torch.tensor([1.0], dtype=logp_dtype),
            torch.ones(1, 2),
            beta=0.04,
            loss_type=loss_type,
            max_completion_length=2,
        )
        (grad,) = torch.autograd.grad(loss, logp)
        assert torch.isfinite(loss) and torch.isfinite(grad).all() and math.isfinite(stats["kl"]), loss_type
    k3 = grpo.kl_estimators(logp.detach().double(), ref.double())[2]
    assert k3[0, 0].item() == pytest.approx(math.expm1(grpo.MAX_LOG_RATIO) - grpo.MAX_LOG_RATIO)  # the bound
    r = (ref[0, 1].double() - logp[0, 1].double()).item()  # about -0.2: below the bound, k3 = exp(r) - r - 1
    assert k3[0, 1].item() == pytest.approx(math.exp(r) - r - 1, rel=1e-9)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_per_token_logps_computes_half_precision_logits_in_float32(dtype, temperature):
    g = torch.Generator().manual_seed(0)
    logits = (torch.randn(4, 16, 32000, generator=g) * 3).to(dtype)
    ids = torch.randint(0, 32000, (4, 16), generator=g)
    expected = torch.log_softmax(logits.float() / temperature, -1).gather(-1, ids[..., None])[..., 0]
    got = grpo.per_token_logps(logits, ids, temperature)
    assert got.dtype == torch.float32
    assert (got - expected).abs().max().item() <= 1e-3


@pytest.mark.parametrize("stop_ids", [[151645, 151643], (151643, 151645), torch.tensor([151645, 151643]), 151643])
def test_completion_mask_stops_at_any_of_several_stop_ids(stop_ids):
    # Qwen2.5-Instruct: <|im_end|> = 151645 and <|endoftext|> = 151643 both end a completion,
    # and <|endoftext|> is also the padding.
    ids = torch.tensor(
        [[100, 200, 151643, 151643, 151643], [100, 151645, 151643, 151643, 151643], [100, 200, 300, 400, 500]]
    )
    expected = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 1, 1]]).int()
    if isinstance(stop_ids, int):  # one id: 151645 alone is not a stop, the row runs to 151643
        expected[1] = torch.tensor([1, 1, 1, 0, 0])
    assert torch.equal(grpo.completion_mask(ids, stop_ids), expected)
    with pytest.raises(ValueError, match="eos_token_id"):
        grpo.completion_mask(ids, [])


def _tokenizer(eos, eos_id, pad, pad_id):
    return SimpleNamespace(eos_token=eos, eos_token_id=eos_id, pad_token=pad, pad_token_id=pad_id)


QWEN = _tokenizer("<|im_end|>", 151645, "<|endoftext|>", 151643)  # Qwen2.5-Instruct's tokenizer


def test_the_default_mask_stops_at_every_stop_id_of_the_tokenizer():
    """Passing the tokenizer (the default the notebooks use) stops at <|im_end|> and at
    <|endoftext|>, its pad token, without naming both ids."""
    assert grpo.stop_token_ids(QWEN) == [151645, 151643]
    assert grpo.stop_token_ids(_tokenizer("<|im_end|>", 2, "<|im_end|>", 2)) == [2]  # SmolLM2
    assert grpo.stop_token_ids(_tokenizer("</s>", 2, "<unk>", 0)) == [2]  # a pad that is no end
    config = SimpleNamespace(eos_token_id=[151645, 151643])
    assert grpo.stop_token_ids(_tokenizer("<|im_end|>", 151645, None, None), config) == [151645, 151643]
    ids = torch.tensor([[100, 200, 151643, 151643], [100, 151645, 151643, 151643]])
    assert grpo.completion_mask(ids, QWEN).tolist() == [[1, 1, 1, 0], [1, 1, 0, 0]]
    with pytest.raises(ValueError, match="no stop token"):
        grpo.stop_token_ids(_tokenizer(None, None, None, None))


@pytest.mark.parametrize(
    "rewards",
    [
        torch.tensor([1, 0, 0, 1]),
        torch.tensor([True, False, False, True]),
        torch.tensor([1, 0, 0, 1], dtype=torch.int32),
    ],
)
def test_integer_and_bool_rewards_give_the_float_advantages(rewards):
    adv = grpo.group_advantages(rewards, 4)
    assert adv.is_floating_point()
    torch.testing.assert_close(adv, torch.tensor([0.866, -0.866, -0.866, 0.866]), rtol=0, atol=1e-3)
    for scale in grpo.SCALES:  # same values as the float rewards give
        expected = grpo.group_advantages(rewards.float(), 2, scale)
        torch.testing.assert_close(grpo.group_advantages(rewards, 2, scale), expected)


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan")])
def test_infinite_reward_raises_like_nan(bad):
    with pytest.raises(ValueError, match="NaN or inf"):
        grpo.group_advantages(torch.tensor([bad, 0.0, 0.0, 1.0]), 4)
