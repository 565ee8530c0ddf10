"""The objective the T4 really trains: unsloth_zoo's GRPO loss vs. helpers.grpo.grpo_loss.

On the T4 (and the bf16 profile) Unsloth replaces TRL's loss by ``grpo_compute_loss`` from
unsloth_zoo 2026.10.9 (``unsloth_zoo/rl_replacements.py``). It is read from the pinned wheel and
executed from its source: it needs only torch and math, while importing the package would patch
transformers and trl for the whole test session (``test_importing_the_real_module_gives_the_same_loss``
imports it in a separate interpreter and checks that it is the same function).

What the tests establish, on the same tensors:
* where no clamp binds, the two losses and their gradients agree within 1e-6 (float64), for every
  loss type, on- and off-policy;
* Unsloth caps the per-token KL term k3 at 10 (after clamping the log-ratio to [-20, 20]). The cap
  binds when log pi_ref - log pi_theta > 2.61 or < -11.0: the loss is then lower by
  beta * (k3 - 10) / |o_i| / B (loss_type "grpo") and that token's KL gradient is 0;
* the truncated importance-sampling correction for vLLM rollouts is off in the T4 run: TRL 0.22.2's
  GRPOConfig has no ``vllm_importance_sampling_correction`` field and Unsloth defaults it to False.
"""

import ast
import json
import math
import subprocess
import sys

import pytest
import torch
from pinned_wheels import source, wheel

from helpers.grpo import LOSS_TYPES, group_advantages, grpo_loss

ZOO_FILE = "unsloth_zoo/rl_replacements.py"
K3_CAP = 10.0


@pytest.fixture(scope="module")
def zoo_source() -> str:
    return source("unsloth_zoo", ZOO_FILE)


@pytest.fixture(scope="module")
def unsloth_loss(zoo_source):
    """``grpo_compute_loss`` executed from the pinned source (no GPU, no import side effects)."""
    [node] = [n for n in ast.parse(zoo_source).body if isinstance(n, ast.FunctionDef) and n.name == "grpo_compute_loss"]
    assert not node.decorator_list  # the plain function; Unsloth compiles a copy of this source
    namespace = {"torch": torch, "math": math}
    exec(compile(ast.Module(body=[node], type_ignores=[]), ZOO_FILE, "exec"), namespace)
    return namespace["grpo_compute_loss"]


def batch(seed=0, spread=0.3):
    """4 completions (one group) x 6 tokens, float64, ragged lengths, random log-probs."""
    g = torch.Generator().manual_seed(seed)
    logp = (-torch.rand(4, 6, generator=g, dtype=torch.float64) * 2).requires_grad_(True)
    old = logp.detach() + spread * torch.randn(4, 6, generator=g, dtype=torch.float64)
    ref = logp.detach() + spread * torch.randn(4, 6, generator=g, dtype=torch.float64)
    mask = torch.tensor([[1] * 6, [1] * 4 + [0] * 2, [1] * 2 + [0] * 4, [1] * 5 + [0]])
    advantages = group_advantages(torch.tensor([1.0, 0.0, 0.5, 2.0], dtype=torch.float64), 4)
    return logp, old, ref, mask, advantages


def theirs(unsloth_loss, logp, old, ref, mask, advantages, beta, loss_type, **extra):
    loss, *_ = unsloth_loss(
        ref,
        logp,
        old,
        extra.pop("sampling", None),
        torch.zeros_like(mask),
        mask,
        beta,
        advantages,
        loss_type=loss_type,
        epsilon_low=0.2,
        epsilon_high=0.2,
        max_completion_length=mask.size(1),
        num_items_in_batch=mask.sum(),
        current_gradient_accumulation_steps=1,
        **extra,
    )
    return loss


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
@pytest.mark.parametrize("on_policy", [True, False])
@pytest.mark.parametrize("beta", [0.0, 0.04])
def test_equal_where_no_clamp_binds(unsloth_loss, loss_type, on_policy, beta):
    logp, old, ref, mask, advantages = batch()
    old = None if on_policy else old
    assert ((ref - logp.detach()) * mask).abs().max() < 2.5  # k3 below the cap everywhere
    ours, _ = grpo_loss(
        logp, old, ref, advantages, mask, beta, 0.2, 0.2, loss_type=loss_type, max_completion_length=mask.size(1)
    )
    unsloth = theirs(unsloth_loss, logp, old, ref, mask, advantages, beta, loss_type)
    assert abs(ours.item() - unsloth.item()) <= 1e-6
    (g_ours,) = torch.autograd.grad(ours, logp)
    (g_unsloth,) = torch.autograd.grad(unsloth, logp)
    assert (g_ours - g_unsloth).abs().max() <= 1e-6


@pytest.mark.parametrize("gap", [4.0, 30.0, -12.0, -30.0])
def test_where_the_kl_cap_binds_the_difference_is_the_cap(unsloth_loss, gap):
    """One token with log pi_ref - log pi_theta = gap: Unsloth counts k3 as 10 there, we count k3."""
    logp, old, ref, mask, advantages = batch()
    ref = ref.clone()
    ref[1, 2] = logp[1, 2].detach() + gap
    beta = 0.04
    ours, _ = grpo_loss(logp, old, ref, advantages, mask, beta, 0.2, 0.2, loss_type="grpo")
    unsloth = theirs(unsloth_loss, logp, old, ref, mask, advantages, beta, "grpo")
    k3 = math.exp(gap) - gap - 1
    length, rows = int(mask[1].sum()), mask.size(0)
    assert k3 > K3_CAP
    expected = -beta * (k3 - K3_CAP) / length / rows
    assert abs((unsloth - ours).item() - expected) <= 1e-6 * max(1.0, abs(expected))
    (g_ours,) = torch.autograd.grad(ours, logp)
    (g_unsloth,) = torch.autograd.grad(unsloth, logp)
    kl_grad = beta * (1 - math.exp(gap)) / length / rows  # d k3 / d logp = 1 - pi_ref / pi_theta
    assert abs((g_ours - g_unsloth)[1, 2].item() - kl_grad) <= 1e-6 * max(1.0, abs(kl_grad))
    others = torch.ones_like(mask, dtype=torch.bool)
    others[1, 2] = False
    assert (g_ours - g_unsloth)[others].abs().max() <= 1e-6


def test_the_cap_binds_from_these_gaps(unsloth_loss):
    """k3(r) = e^r - r - 1 reaches 10 at r = 2.611 and at r = -11.000: inside, the losses agree."""
    for gap, binds in ((2.60, False), (2.62, True), (-10.99, False), (-11.01, True)):
        logp, old, ref, mask, advantages = batch()
        ref = ref.clone()
        ref[0, 0] = logp[0, 0].detach() + gap
        ours, _ = grpo_loss(logp, old, ref, advantages, mask, 0.04, 0.2, 0.2, loss_type="grpo")
        unsloth = theirs(unsloth_loss, logp, old, ref, mask, advantages, 0.04, "grpo")
        assert (abs(ours.item() - unsloth.item()) > 1e-6) is binds, gap


def test_the_t4_run_has_no_importance_sampling_correction(unsloth_loss):
    from trl import GRPOConfig

    assert "vllm_importance_sampling_correction" not in GRPOConfig.__dataclass_fields__  # TRL 0.22.2
    rl = source("unsloth", "unsloth/models/rl.py")
    assert '"vllm_importance_sampling_correction": False' in rl  # Unsloth's own default, newer TRL too
    logp, old, ref, mask, advantages = batch()
    sampling = old + 0.5  # vLLM's log-probs differ from the trainer's: the correction would reweight
    ours, _ = grpo_loss(logp, old, ref, advantages, mask, 0.04, 0.2, 0.2, loss_type="grpo")
    # what grpo_accumulated_loss passes with TRL 0.22.2: the flag is getattr(trainer, ..., False)
    off = theirs(
        unsloth_loss,
        logp,
        old,
        ref,
        mask,
        advantages,
        0.04,
        "grpo",
        sampling=sampling,
        use_vllm=True,
        vllm_importance_sampling_correction=False,
    )
    on = theirs(
        unsloth_loss,
        logp,
        old,
        ref,
        mask,
        advantages,
        0.04,
        "grpo",
        sampling=sampling,
        use_vllm=True,
        vllm_importance_sampling_correction=True,
        vllm_importance_sampling_mode="token_truncate",
        vllm_importance_sampling_clip_min=0,
        vllm_importance_sampling_clip_max=2.0,
    )
    assert abs(off.item() - ours.item()) <= 1e-6 and abs(on.item() - ours.item()) > 1e-3


@pytest.mark.slow
def test_importing_the_real_module_gives_the_same_loss(unsloth_loss, tmp_path):
    """Unsloth 2026.10.9 imports without a GPU (it falls back to CPU); in a separate interpreter,
    with both pinned wheels unpacked (not installed), its grpo_compute_loss equals the exec'd one."""
    import zipfile

    for dist in ("unsloth", "unsloth_zoo"):
        with zipfile.ZipFile(wheel(dist)) as archive:
            archive.extractall(tmp_path / "wheels")
    logp, old, ref, mask, advantages = batch()
    tensors = {k: v.detach().tolist() for k, v in dict(logp=logp, old=old, ref=ref, mask=mask, adv=advantages).items()}
    code = (
        "import json, sys, torch\nimport unsloth\nfrom unsloth_zoo.rl_replacements import grpo_compute_loss\n"
        "t = {k: torch.tensor(v, dtype=torch.long if k == 'mask' else torch.float64)\n"
        "     for k, v in json.loads(sys.argv[1]).items()}\n"
        "loss, *_ = grpo_compute_loss(t['ref'], t['logp'], t['old'], None, torch.zeros_like(t['mask']), t['mask'],"
        " 0.04, t['adv'], loss_type='grpo', epsilon_low=0.2, epsilon_high=0.2, current_gradient_accumulation_steps=1)\n"
        "print('LOSS', repr(loss.item()))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, json.dumps(tensors)],
        cwd=tmp_path / "wheels",
        capture_output=True,
        text=True,
        timeout=600,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "OMP_NUM_THREADS": "1",
            "HF_HUB_OFFLINE": "1",
            "PYTHONPATH": str(tmp_path / "wheels"),
        },
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("LOSS ")]
    if not lines:
        pytest.skip(f"the pinned unsloth does not import here: {result.stderr.strip()[-400:]}")
    expected = theirs(unsloth_loss, logp, old, ref, mask, advantages, 0.04, "grpo")
    assert float(lines[0][5:]) == pytest.approx(expected.item(), abs=1e-12)
