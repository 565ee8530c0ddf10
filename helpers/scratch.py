"""GRPO from scratch: the whole training loop in plain PyTorch on a PEFT LoRA policy (notebook 07).

One *step* is one AdamW step on the LoRA, as TRL counts steps. Every ``num_iterations`` steps a new
batch is sampled; the steps in between reuse it (the ratio then departs from 1 and the clip matters):

1. **sample** (:func:`sample_completions`): ``model.generate`` with its KV cache, G completions per
   prompt (each prompt repeated G times), then the mask ends each completion at its first stop token;
2. **score** (:func:`score_completions`): the reward functions, called as TRL calls them;
3. **advantages** (:func:`helpers.grpo.group_advantages`): reward minus the group mean, divided by the
   group's std (``scale_std``) or not (REINFORCE with the group mean as its baseline);
4. **log-probs without gradient** (:func:`prepare_batch`): the old policy (the weights that sampled,
   only when ``num_iterations > 1``) and the reference model (the same PEFT model with its adapter
   off, ``disable_adapter()``);
5. **loss** (:func:`helpers.grpo.grpo_loss`): clipped surrogate + beta x k3 KL, averaged as ``loss_type``
   says, then backward, gradient clipping and one AdamW step (:func:`optimizer_step`).

Design choices, each named (DeepSeekMath = Shao et al. 2024, §4.1 eq. 3-4; TRL = 0.22.2's GRPOTrainer):

* advantages: DeepSeekMath divides by the group's std; TRL too (``scale_rewards="group"``, std + 1e-4);
  we do either (``scale_std``). Rewards in float32, as TRL keeps them; a group of equal rewards gets
  advantages of exactly 0 (TRL: 0 up to rounding).
* old policy: DeepSeekMath samples with pi_old and takes several steps per batch; TRL stores the old
  log-probs only when a batch is reused (``num_iterations > 1``), else rho = 1 (``logp.detach()``); we
  do the same.
* KL: DeepSeekMath adds beta x k3 to the loss per token (eq. 4), TRL too; we too, and we also compute
  the reference log-probs when beta = 0, to log the KL (TRL then skips that pass and logs none).
* normaliser: DeepSeekMath 1/|o_i| per completion (``"grpo"``); TRL's default is ``"dapo"``; we take
  ``loss_type`` from the config (default ``"grpo"``, as the course's profiles).
* positions: the log-prob passes read ``[prompt, completion]`` without position ids, so a left-padded
  row's positions are its column numbers, as TRL computes them (``generate`` counts from the first
  real token; with prompts of one length there is no difference).
* optimizer: torch's AdamW on the LoRA parameters, weight decay on all of them, the gradient clipped to
  ``max_grad_norm`` first, constant learning rate: what TRL's Trainer does with ``optim="adamw_torch"``
  and ``lr_scheduler_type="constant"``. ``tests/test_scratch.py`` checks the LoRA after one step equal
  to TRL's on the same completions.
* rollouts: plain ``generate``, no merged LoRA, no shared prompt pass in the sampler (what
  :mod:`helpers.rollouts` saves). ``share_prompt=True`` computes the log-probs with each group's prompt
  pass shared (:func:`helpers.rollouts.shared_prompt_logps`: the same values and gradients).

The module ends with the check against TRL (:func:`compare_with_trl`: TRL trains on one batch, the loop
updates a copy of the same LoRA on the same completions) and the figure and table of the stage runs
(:func:`plot_stage_runs`, :func:`stage_table`).
"""

from __future__ import annotations

import csv
import json
import math
import platform
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch

from . import grpo

METRICS_FILE, SUMMARY_FILE = "metrics.csv", "summary.json"
TIME_PARTS = ("seconds/generation", "seconds/logps_no_grad", "seconds/loss_backward", "seconds/rest")
COLUMNS = ("step", "rollout", "reward", "reward_std", "frac_reward_zero_std", "kl", "clip_ratio/region_mean",
           "clip_ratio/low_mean", "clip_ratio/high_mean", "ratio_mean", "completions/mean_length",
           "completions/max_length", "completions/clipped_ratio", "grad_norm", "loss", *TIME_PARTS,
           "step_time_s", "heldout/accuracy", "heldout/accuracy_format_free", "heldout/seconds")
# The pieces added one at a time (issue 21): each stage is the one before plus one change.
STAGES = {
    "reinforce": dict(scale_std=False, num_iterations=1, beta=0.0),  # group-mean baseline, rho = 1, no KL
    "std": dict(scale_std=True, num_iterations=1, beta=0.0),  # + GRPO's std division
    "clip": dict(scale_std=True, num_iterations=2, epsilon=0.2, beta=0.0),  # + each batch used twice, clipped
    "kl": dict(scale_std=True, num_iterations=2, epsilon=0.2, beta=0.04),  # + k3 KL to the reference
}


@dataclass(frozen=True)
class ScratchConfig:
    """Every knob of the loop. Lengths in tokens, the learning rate per AdamW step.

    Raises:
        ValueError: any value out of range (named in the message).
    """

    stage: str = "custom"  # a label for the logs; stage_config() sets it
    scale_std: bool = True  # divide the advantages by the group's std (GRPO) or not (REINFORCE + baseline)
    num_iterations: int = 1  # AdamW steps per sampled batch (> 1: the ratio departs from 1, the clip binds)
    epsilon: float = 0.2  # clip range of the ratio, [1 - eps, 1 + eps]
    beta: float = 0.0  # weight of the k3 KL to the reference model
    loss_type: str = "grpo"  # helpers.grpo.LOSS_TYPES
    prompts_per_step: int = 2  # distinct prompts in a sampled batch
    num_generations: int = 8  # G, completions per prompt
    max_new_tokens: int = 96
    temperature: float = 0.6  # the cpu profile's
    top_p: float = 1.0
    learning_rate: float = 5e-4
    weight_decay: float = 0.1  # the cpu profile's AdamW settings
    adam_betas: tuple = (0.9, 0.99)
    adam_eps: float = 1e-8
    max_grad_norm: float = 0.1
    steps: int = 20
    seed: int = 3407
    heldout_problems: int = 32  # course-written test problems (helpers.pipeline.heldout_problems); 0: off
    heldout_every: int = 5
    share_prompt: bool = False  # log-probs with one prompt pass per group
    log_kl: bool = True  # reference log-probs also when beta = 0, for the KL column

    def __post_init__(self):
        checks = [(self.num_iterations >= 1, "num_iterations must be >= 1"),
                  (0 <= self.epsilon < 1, "epsilon must lie in [0, 1)"), (self.beta >= 0, "beta must be >= 0"),
                  (self.loss_type in grpo.LOSS_TYPES, f"loss_type must be one of {grpo.LOSS_TYPES}"),
                  (self.prompts_per_step >= 1, "prompts_per_step must be >= 1"),
                  (self.num_generations >= 2, "num_generations must be >= 2 (a group of 1 has no baseline)"),
                  (self.max_new_tokens >= 1, "max_new_tokens must be >= 1"),
                  (self.temperature > 0, "temperature must be > 0"),
                  (0 < self.top_p <= 1, "top_p must lie in (0, 1]"),
                  (self.learning_rate > 0, "learning_rate must be > 0"),
                  (self.max_grad_norm > 0, "max_grad_norm must be > 0"),
                  (self.steps >= 1, "steps must be >= 1"),
                  (self.heldout_problems >= 0, "heldout_problems must be >= 0"),
                  (self.heldout_every >= 1, "heldout_every must be >= 1")]
        for ok, message in checks:
            if not ok:
                raise ValueError(f"{message} (ScratchConfig, stage {self.stage!r})")

    @property
    def rollouts(self) -> int:
        """Sampled batches in the run: one every ``num_iterations`` steps."""
        return math.ceil(self.steps / self.num_iterations)


def stage_config(stage: str, **overrides) -> ScratchConfig:
    """The config of a named stage (:data:`STAGES`) with ``overrides`` (e.g. ``steps=2``).

    Raises:
        ValueError: unknown stage, or a bad value (:class:`ScratchConfig`).
    """
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; choose one of {list(STAGES)}")
    return ScratchConfig(**{"stage": stage, **STAGES[stage], **overrides})


def quick(config: ScratchConfig) -> ScratchConfig:
    """Smoke size (CI, ``--quick``): 2 steps of 1 prompt x 4 completions x 24 tokens, 4 held-out problems
    after every step. It checks that the loop runs, not that it learns."""
    return replace(config, steps=2, prompts_per_step=1, num_generations=4, max_new_tokens=24,
                   heldout_problems=min(config.heldout_problems, 4), heldout_every=1)


@dataclass
class Batch:
    """One sampled batch, B = prompts x G rows (a group's G rows consecutive), P prompt and T completion
    columns. ``old_logps`` is None when the batch is used once (rho = 1), ``ref_logps`` when no
    reference pass was needed."""

    prompt_ids: torch.Tensor  # (B, P), left-padded
    prompt_mask: torch.Tensor  # (B, P)
    completion_ids: torch.Tensor  # (B, T), right-padded
    completion_mask: torch.Tensor  # (B, T): 1 up to and including the first stop token
    rewards: torch.Tensor  # (B, F) float32, one column per reward function
    advantages: torch.Tensor  # (B,)
    old_logps: torch.Tensor | None = None  # (B, T), log pi_old
    ref_logps: torch.Tensor | None = None  # (B, T), log pi_ref
    reward_names: list = field(default_factory=list)


# ------------------------------------------------------------------------------------------- 1. sample
def tokenize_prompts(tokenizer, prompts: list) -> tuple[torch.Tensor, torch.Tensor]:
    """Chat prompts (message lists) -> ``(prompt_ids, prompt_mask)``, each ``(N, P)``, left-padded, as TRL
    tokenizes them (chat template with the assistant turn opened, no extra special tokens)."""
    texts = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in prompts]
    enc = tokenizer(texts, return_tensors="pt", padding=True, padding_side="left", add_special_tokens=False)
    return enc["input_ids"], enc["attention_mask"]


@torch.no_grad()
def sample_completions(model, tokenizer, prompt_ids, prompt_mask, config: ScratchConfig):
    """G completions of each prompt with ``model.generate`` (KV cache, ``softmax(logits / T)``, no top-k).

    Args:
        prompt_ids, prompt_mask: ``(N, P)`` distinct prompts, left-padded.

    Returns:
        ``(prompt_ids, prompt_mask, completion_ids, completion_mask)``: ``(B, P)`` with B = N x G (each
        prompt repeated G times in a row), ``(B, T)`` with T <= ``max_new_tokens``; the mask ends each
        completion at its first stop token (:func:`helpers.grpo.completion_mask`, the stop token kept).
    """
    from transformers import GenerationConfig

    stops = grpo.stop_token_ids(tokenizer, getattr(model, "generation_config", None))
    ids = prompt_ids.repeat_interleave(config.num_generations, dim=0)  # (B, P)
    mask = prompt_mask.repeat_interleave(config.num_generations, dim=0)
    settings = GenerationConfig(max_new_tokens=config.max_new_tokens, do_sample=True, temperature=config.temperature,
                                top_p=config.top_p, top_k=0, eos_token_id=stops, pad_token_id=tokenizer.pad_token_id,
                                bos_token_id=tokenizer.bos_token_id)
    was_training = model.training
    model.eval()
    out = model.generate(input_ids=ids.to(model.device), attention_mask=mask.to(model.device),
                         generation_config=settings)  # (B, P + T)
    model.train(was_training)
    completion_ids = out[:, ids.size(1):].cpu()  # (B, T)
    return ids, mask, completion_ids, grpo.completion_mask(completion_ids, stops)


def completion_texts(tokenizer, completion_ids) -> list[str]:
    """The decoded completions, special tokens skipped, as TRL gives them to the reward functions."""
    return tokenizer.batch_decode(completion_ids, skip_special_tokens=True)  # generate pads after the end


# -------------------------------------------------------------------------------------------- 2. score
def score_completions(reward_funcs, rows: list[dict], completions: list[str], completion_ids, completion_mask):
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


# ------------------------------------------------------------------------ 3-4. advantages, old and ref
def completion_logps(model, batch: Batch, config: ScratchConfig) -> torch.Tensor:
    """``(B, T)`` log-probs of the completion tokens under ``model`` at the sampling temperature (with
    gradients unless under ``no_grad``): one pass over ``[prompt, completion]``, or each group's prompt
    pass shared (``config.share_prompt``)."""
    if config.share_prompt:
        from .rollouts import shared_prompt_logps

        ids = torch.cat([batch.prompt_ids, batch.completion_ids], 1)
        mask = torch.cat([batch.prompt_mask, batch.completion_mask], 1)
        return shared_prompt_logps(model, ids, mask, batch.completion_ids.size(1), config.temperature)[0]
    return grpo.completion_logps(model, batch.prompt_ids, batch.prompt_mask, batch.completion_ids,
                                 batch.completion_mask, config.temperature)


def prepare_batch(model, prompt_ids, prompt_mask, completion_ids, completion_mask, rewards,
                  config: ScratchConfig, reward_names=()) -> Batch:
    """Advantages from the rewards, then the no-gradient log-probs: old policy (``num_iterations > 1``)
    and reference (adapter off; when ``beta > 0`` or ``log_kl``).

    Args:
        rewards: ``(B, F)`` per reward function (their sum is the reward), or ``(B,)``.

    Raises:
        ValueError: shapes that do not fit (from :func:`helpers.grpo.group_advantages`).
    """
    rewards = rewards if rewards.dim() == 2 else rewards[:, None]
    total = rewards.nansum(1)  # (B,)
    advantages = grpo.group_advantages(total, config.num_generations, "group" if config.scale_std else "none")
    batch = Batch(prompt_ids, prompt_mask, completion_ids, completion_mask, rewards, advantages,
                  reward_names=list(reward_names))
    with torch.no_grad():
        if config.num_iterations > 1:
            batch.old_logps = completion_logps(model, batch, config)  # pi_old = the weights that sampled
        if config.beta > 0 or config.log_kl:
            with model.disable_adapter():  # pi_ref = the policy without its LoRA
                batch.ref_logps = completion_logps(model, batch, config)
    return batch


# ------------------------------------------------------------------------------------- 5. loss and step
def make_optimizer(model, config: ScratchConfig) -> torch.optim.AdamW:
    """torch's AdamW on the trainable (LoRA) parameters, weight decay on all of them."""
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the model has no trainable parameters (no LoRA?)")
    return torch.optim.AdamW(params, lr=config.learning_rate, betas=tuple(config.adam_betas), eps=config.adam_eps,
                             weight_decay=config.weight_decay)


def optimizer_step(model, optimizer, batch: Batch, config: ScratchConfig) -> dict:
    """Loss (clipped surrogate + beta x k3), backward, gradient clipping, one AdamW step.

    Returns:
        ``{"loss", "grad_norm" (before clipping, as TRL logs it), "kl", "clip_ratio/...", "ratio_mean",
        "seconds/loss_backward", "seconds/rest"}``.
    """
    model.train()
    started = time.perf_counter()
    logps = completion_logps(model, batch, config)  # (B, T), with gradients
    loss, stats = grpo.grpo_loss(logps, batch.old_logps, batch.ref_logps, batch.advantages, batch.completion_mask,
                                 config.beta, config.epsilon, None, config.loss_type, config.max_new_tokens)
    loss.backward()
    backward_done = time.perf_counter()
    params = [p for group in optimizer.param_groups for p in group["params"]]
    grad_norm = torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return {"loss": loss.item(), "grad_norm": grad_norm.item(), **stats,
            "seconds/loss_backward": backward_done - started, "seconds/rest": time.perf_counter() - backward_done}


# ------------------------------------------------------------------------------------------ the loop
def heldout_set(n: int) -> list[dict]:
    """The held-out problems of the pipeline's GRPO curve (:func:`helpers.pipeline.heldout_problems`
    for the cpu profile with ``n`` of them: course-written test problems, split over its levels)."""
    from .pipeline import heldout_problems
    from .profiles import CPU

    return heldout_problems(CPU.replace(heldout_problems=n)) if n > 0 else []


def evaluate_heldout(model, tokenizer, problems, max_new_tokens: int) -> dict:
    """Greedy accuracy on ``problems`` and its seconds, as the trainer's held-out curve measures it
    (:meth:`helpers.heldout.HeldoutAccuracy.evaluate`). The global random state is restored after it
    (greedy generation reseeds it), so that evaluating does not change the rollouts."""
    from .heldout import HeldoutAccuracy

    state = torch.get_rng_state()
    values = HeldoutAccuracy(problems, tokenizer, max_new_tokens=max_new_tokens).evaluate(model)
    torch.set_rng_state(state)
    return values


def train_prompts(config: ScratchConfig):
    """One-operation course-written *train* problems, ``prompts_per_step`` per sampled batch, in order
    (:func:`helpers.curriculum.curriculum_dataset` with one phase)."""
    from .curriculum import Phase, curriculum_dataset

    return curriculum_dataset((Phase(1.0, ((1, 20),)),), batches=config.rollouts,
                              prompts_per_batch=config.prompts_per_step, seed=config.seed)


@dataclass
class ScratchRun:
    """What :func:`train` measured: one dict per step (:data:`COLUMNS`; step 0 holds the held-out
    accuracy before training), the held-out curve ``[(step, values)]`` and the files written."""

    rows: list
    heldout: list
    seconds: float
    metrics_csv: Path | None = None
    summary_json: Path | None = None


def write_metrics(rows: list[dict], path) -> Path:
    """``metrics.csv`` with the columns of :data:`COLUMNS` (then any others), empty cells where a row
    has no value."""
    path = Path(path)
    columns = list(COLUMNS) + [k for k in dict.fromkeys(k for r in rows for k in r) if k not in COLUMNS]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return path


def train(model, tokenizer, config: ScratchConfig, *, reward_funcs=None, prompts=None, heldout=None,
          output_dir=None, command: str | None = None, log=print) -> ScratchRun:
    """The GRPO loop: ``config.steps`` AdamW steps, a new batch every ``num_iterations`` steps.

    Args:
        model: a PEFT LoRA policy (its adapter off is the reference model); tokenizer: its tokenizer.
        reward_funcs: default :data:`helpers.rewards.REWARD_FUNCS`.
        prompts: rows with ``prompt`` (and columns the rewards read), ``prompts_per_step`` per batch in
            order; default :func:`train_prompts`.
        heldout: held-out problems (``question``/``answer``); default :func:`heldout_set`; [] for none.
        output_dir: where ``metrics.csv`` and ``summary.json`` go (None: nothing written).
        log: a print function for one line per step (None: silent).

    Raises:
        ValueError: fewer prompts than the run needs.
    """
    from .rewards import REWARD_FUNCS

    reward_funcs = list(REWARD_FUNCS if reward_funcs is None else reward_funcs)
    names = [f.__name__ for f in reward_funcs]
    prompts = list(train_prompts(config) if prompts is None else prompts)
    if len(prompts) < config.rollouts * config.prompts_per_step:
        raise ValueError(f"{len(prompts)} prompts for {config.rollouts} batches of {config.prompts_per_step}")
    heldout = heldout_set(config.heldout_problems) if heldout is None else list(heldout)
    optimizer = make_optimizer(model, config)
    rows, curve, started, batch = [], [], time.perf_counter(), None
    if heldout:
        values = evaluate_heldout(model, tokenizer, heldout, config.max_new_tokens)
        curve.append((0, values))
        rows.append({"step": 0, **values})
    for step in range(1, config.steps + 1):
        t0, times = time.perf_counter(), {"seconds/generation": 0.0, "seconds/logps_no_grad": 0.0}
        if (step - 1) % config.num_iterations == 0:  # a new batch; the other steps reuse it
            rollout = (step - 1) // config.num_iterations
            group_rows = prompts[rollout * config.prompts_per_step:(rollout + 1) * config.prompts_per_step]
            prompt_ids, prompt_mask = tokenize_prompts(tokenizer, [r["prompt"] for r in group_rows])
            ids, mask, completion_ids, completion_mask = sample_completions(model, tokenizer, prompt_ids,
                                                                            prompt_mask, config)
            times["seconds/generation"] = time.perf_counter() - t0
            texts = completion_texts(tokenizer, completion_ids)
            repeated = [r for r in group_rows for _ in range(config.num_generations)]
            rewards = score_completions(reward_funcs, repeated, texts, completion_ids, completion_mask)
            t1 = time.perf_counter()
            batch = prepare_batch(model, ids, mask, completion_ids, completion_mask, rewards, config, names)
            times["seconds/logps_no_grad"] = time.perf_counter() - t1
        stats = optimizer_step(model, optimizer, batch, config)
        row = {"step": step, "rollout": (step - 1) // config.num_iterations, **batch_stats(batch, config),
               **stats, **times}
        row["step_time_s"] = time.perf_counter() - t0
        if heldout and (step % config.heldout_every == 0 or step == config.steps):
            values = evaluate_heldout(model, tokenizer, heldout, config.max_new_tokens)
            curve.append((step, values))
            row.update(values)
        rows.append(row)
        if log:
            held = f", held-out {row['heldout/accuracy']:.0%}" if "heldout/accuracy" in row else ""
            log(f"step {step:3d}: reward {row['reward']:.3f}, kl {row['kl']:.4f}, clipped "
                f"{row['clip_ratio/region_mean']:.1%}, length {row['completions/mean_length']:.0f}, "
                f"grad norm {row['grad_norm']:.3f}, {row['step_time_s']:.1f} s{held}")
    run = ScratchRun(rows, curve, time.perf_counter() - started)
    if output_dir is not None:
        output_dir = Path(output_dir)
        output_dir.mkdir(parents=True, exist_ok=True)
        run.metrics_csv = write_metrics(rows, output_dir / METRICS_FILE)
        run.summary_json = output_dir / SUMMARY_FILE
        run.summary_json.write_text(json.dumps(build_summary(run, config, command), indent=2) + "\n")
    return run


def batch_stats(batch: Batch, config: ScratchConfig) -> dict:
    """The batch's logged numbers: reward (mean, group std, per function), the share of groups with
    equal rewards, completion lengths (mean, max) and the share of completions cut at the limit."""
    total = batch.rewards.nansum(1)
    lengths = batch.completion_mask.sum(1).float()
    grouped = total.view(-1, config.num_generations)
    out = {"reward": total.mean().item(), "reward_std": grouped.std(1).mean().item(),
           "frac_reward_zero_std": (grouped == grouped[:, :1]).all(1).float().mean().item(),
           "completions/mean_length": lengths.mean().item(), "completions/max_length": lengths.max().item(),
           "completions/clipped_ratio": (lengths >= config.max_new_tokens).float().mean().item()}  # at the limit
    for j, name in enumerate(batch.reward_names):
        out[f"rewards/{name}/mean"] = batch.rewards[:, j].nanmean().item()
    return out


def build_summary(run: ScratchRun, config: ScratchConfig, command: str | None = None) -> dict:
    """``summary.json``: config, command, commit, machine, held-out curve, total and mean part times."""
    from .pipeline import _cpu_count, _git_commit

    steps = [r for r in run.rows if r["step"] > 0]
    return json.loads(json.dumps({
        "command": command, "commit": _git_commit(),
        "machine": f"{platform.machine()}, {_cpu_count()} CPU cores, python {platform.python_version()}, "
                   f"torch {torch.__version__}",
        "config": asdict(config), "total_s": round(run.seconds, 1),
        "mean_s": {k: round(sum(r[k] for r in steps) / len(steps), 2) for k in (*TIME_PARTS, "step_time_s")},
        "heldout": [{"step": s, **v} for s, v in run.heldout],
        "final": {k: steps[-1][k] for k in ("reward", "kl", "completions/mean_length", "grad_norm")},
    }, default=str))


def run_stage(stage: str, *, steps: int | None = None, cold_start=None, output_dir=None, quick_run: bool = False,
              seed: int | None = None, command: str | None = None, **overrides) -> ScratchRun:
    """Load the policy (the merged cold start ``cold_start``, else SmolLM2-135M-Instruct; fp32, the cpu
    profile's LoRA), and :func:`train` one stage; what ``python -m helpers scratch`` runs.

    Raises:
        ValueError: unknown stage; FileNotFoundError: ``cold_start`` holds no model.
    """
    from .models import load_model
    from .profiles import CPU

    config = stage_config(stage, **overrides)  # e.g. share_prompt=True
    config = quick(config) if quick_run else config
    config = replace(config, **{k: v for k, v in (("steps", steps), ("seed", seed)) if v is not None})
    if cold_start is not None and not (Path(cold_start) / "config.json").exists():
        raise FileNotFoundError(f"{cold_start} holds no model (no config.json)")
    torch.manual_seed(config.seed)  # the LoRA's initial weights, then the rollouts
    model, tokenizer = load_model(CPU, cold_start, seed=None)  # keeps the stream seeded above
    print(f"GRPO from scratch, stage {stage}: {config.steps} steps of {config.prompts_per_step} prompts x "
          f"{config.num_generations} completions x {config.max_new_tokens} tokens, from {cold_start or CPU.model_id}")
    return train(model, tokenizer, config, output_dir=output_dir or f"outputs/scratch-{stage}" + "-quick" * quick_run,
                 command=command)


# --------------------------------------------------------------------------- checked against TRL
def lora_state(model) -> dict:
    """``{name: tensor}``, a copy of the trainable (LoRA) parameters."""
    return {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}


def tiny_policy(tokenizer, dtype=torch.float64, seed: int = 0):
    """A 2-layer random Llama (hidden size 32) for ``tokenizer``, with a LoRA (rank 4 on q/v/up) whose B is
    random instead of PEFT's zeros, so that the adapter matters from step 1: the model of the checks
    against TRL (float64: the two sides then differ by rounding only)."""
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=True)
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "up_proj"], lora_dropout=0.0,
                      task_type="CAUSAL_LM")
    model = get_peft_model(LlamaForCausalLM(config).to(dtype), lora).to(dtype)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.2)
    return model


def trl_steps(policy, tokenizer, rows: list[dict], config: ScratchConfig, reward_funcs, output_dir,
              eos_bias: float = 6.0) -> tuple[dict, list]:
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
        output_dir=str(output_dir), use_cpu=True, bf16=False, fp16=False, report_to="none", seed=0,
        per_device_train_batch_size=config.num_generations * len(rows), num_generations=config.num_generations,
        max_completion_length=config.max_new_tokens, max_steps=config.num_iterations,
        num_iterations=config.num_iterations, beta=config.beta, epsilon=config.epsilon, loss_type=config.loss_type,
        scale_rewards="group" if config.scale_std else "none", temperature=config.temperature, top_p=config.top_p,
        learning_rate=config.learning_rate, lr_scheduler_type="constant", optim="adamw_torch",
        weight_decay=config.weight_decay, adam_beta1=config.adam_betas[0], adam_beta2=config.adam_betas[1],
        adam_epsilon=config.adam_eps, max_grad_norm=config.max_grad_norm, logging_steps=1, save_strategy="no",
        disable_tqdm=True, generation_kwargs={"sequence_bias": {(tokenizer.eos_token_id,): eos_bias}})
    trainer = GRPOTrainer(model=policy, reward_funcs=list(reward_funcs), args=args,
                          train_dataset=Dataset.from_list(rows), processing_class=tokenizer)
    seen, generate = {}, trainer._generate_and_score_completions

    def capture(inputs):
        out = generate(inputs)
        seen.update(rows=[dict(r) for r in inputs],
                    batch={k: v.clone() for k, v in out.items() if torch.is_tensor(v)},
                    rewards=[list(trainer._logs["rewards"][f.__name__]) for f in reward_funcs])
        return out

    trainer._generate_and_score_completions = capture
    trainer.train()
    return seen, [h for h in trainer.state.log_history if "loss" in h]


def scratch_steps(model, tokenizer, seen: dict, config: ScratchConfig, reward_funcs):
    """The scratch update on the batch TRL generated (``seen`` from :func:`trl_steps`): score it, prepare
    it, then ``num_iterations`` AdamW steps. Returns ``(rewards (B, F), batch, [stats per step])``."""
    b = seen["batch"]
    texts = completion_texts(tokenizer, b["completion_ids"])
    rewards = score_completions(reward_funcs, seen["rows"], texts, b["completion_ids"], b["completion_mask"])
    batch = prepare_batch(model, b["prompt_ids"], b["prompt_mask"], b["completion_ids"], b["completion_mask"],
                          rewards, config, [f.__name__ for f in reward_funcs])
    optimizer = make_optimizer(model, config)
    return rewards, batch, [optimizer_step(model, optimizer, batch, config) for _ in range(config.num_iterations)]


def parameter_differences(ours: dict, theirs: dict, start: dict) -> tuple[float, float]:
    """``(max over tensors of max|ours - theirs| / max|theirs|, ||ours - theirs|| / ||theirs - start||)``:
    the difference relative to the parameters, and relative to the update (the stricter one)."""
    per_tensor = max(((ours[n] - theirs[n]).abs().max() / theirs[n].abs().max()).item() for n in theirs)
    diff = torch.cat([(ours[n] - theirs[n]).flatten() for n in theirs])
    update = torch.cat([(theirs[n] - start[n]).flatten() for n in theirs])
    return per_tensor, (diff.norm() / update.norm()).item()


def compare_with_trl(policy, tokenizer, rows: list[dict], config: ScratchConfig, reward_funcs, output_dir) -> dict:
    """One generated batch through TRL's trainer (on ``policy``) and through the scratch loop (on a copy of
    ``policy`` as it was): ``{"per_tensor", "of_update"}`` (:func:`parameter_differences`) and what each
    side saw (``seen``, ``logged``, ``rewards``, ``batch``, ``stats``, the LoRA ``start``/``theirs``/``ours``,
    the scratch ``model``)."""
    import copy

    start, ours_model = lora_state(policy), copy.deepcopy(policy)
    seen, logged = trl_steps(policy, tokenizer, rows, config, reward_funcs, output_dir)
    rewards, batch, stats = scratch_steps(ours_model, tokenizer, seen, config, reward_funcs)
    theirs, ours = lora_state(policy), lora_state(ours_model)
    per_tensor, of_update = parameter_differences(ours, theirs, start)
    return dict(per_tensor=per_tensor, of_update=of_update, seen=seen, logged=logged, rewards=rewards, batch=batch,
                stats=stats, start=start, theirs=theirs, ours=ours, model=ours_model)


# ----------------------------------------------------------------------------------- stage runs
PLOTTED = (("reward", "reward (mean over the batch)"), ("kl", "KL to the reference (k3, nats/token)"),
           ("completions/mean_length", "mean completion length (tokens)"),
           ("grad_norm", "grad norm (before clipping)"), ("heldout/accuracy", "held-out accuracy (greedy)"))


def read_stage_runs(results_dir) -> tuple[dict, list]:
    """``({stage: metrics columns}, [missing stages])`` from ``results_dir/<stage>/metrics.csv``, stages in
    :data:`STAGES` order (:func:`helpers.plots.read_metrics`)."""
    from .plots import read_metrics

    results_dir = Path(results_dir)
    found = {s: read_metrics(results_dir / s / METRICS_FILE) for s in STAGES
             if (results_dir / s / METRICS_FILE).exists()}
    return found, [s for s in STAGES if s not in found]


def plot_stage_runs(runs: dict, show: bool = True):
    """One figure, five panels against the step (:data:`PLOTTED`: reward, KL, length, grad norm, held-out
    accuracy), one line per stage run (``{stage: metrics columns}``). Returns the ``Figure``.

    Raises:
        ValueError: no runs.
    """
    import matplotlib.pyplot as plt

    from .plots import _finish, rolling_mean

    if not runs:
        raise ValueError("no stage runs to plot")
    fig, axes = plt.subplots(1, len(PLOTTED), figsize=(19, 3.8), constrained_layout=True)
    for stage, m in runs.items():
        for ax, (key, title) in zip(axes, PLOTTED):
            pairs = [(s, v) for s, v in zip(m["step"], m.get(key, [])) if not math.isnan(v)]
            steps, values = [p[0] for p in pairs], [p[1] for p in pairs]
            if key == "heldout/accuracy":
                ax.plot(steps, [100 * v for v in values], marker="s", label=stage)
            elif key == "kl":  # a line through the fresh batches; the reused ones (off-policy k3) as dots
                fresh = set(fresh_steps(m))
                line, = ax.plot([s for s in steps if s in fresh], [v for s, v in pairs if s in fresh], marker=".",
                                label=stage)
                ax.plot([s for s in steps if s not in fresh], [v for s, v in pairs if s not in fresh], ls="",
                        marker="x", alpha=0.5, color=line.get_color())
            elif key in ("reward", "completions/mean_length"):
                line, = ax.plot(steps, rolling_mean(values, 3), lw=2, label=stage)
                ax.plot(steps, values, ls="", marker=".", alpha=0.4, color=line.get_color())
            else:
                ax.plot(steps, values, marker=".", label=stage)
            ax.set(title=title + (" %" if key == "heldout/accuracy" else ""), xlabel="step")
    axes[0].set_title("reward (3-step mean; dots: each step)")
    axes[1].set_title("KL (k3) on fresh batches; x: reused batch")
    axes[0].legend(fontsize=8)
    return _finish(fig, show)


def fresh_steps(m: dict) -> list:
    """The steps of a metrics table (:func:`helpers.plots.read_metrics` columns) that sampled a new batch
    (the others reuse it: their KL is measured on the old policy's samples, where k3 is biased)."""
    return [s for s, g in zip(m["step"], m["seconds/generation"]) if s > 0 and g > 0]


def stage_table(runs: dict):
    """A ``DataFrame``, one row per stage run: mean reward over the first and the last 5 steps, the KL of
    the last fresh batch (:func:`fresh_steps`), mean length and grad norm over the last 5 steps, the share
    of clipped tokens, held-out accuracy before (step 0) and after (last evaluation), and the mean step
    time (s, without the held-out evaluations)."""
    import pandas as pd

    def mean(values):
        values = [v for v in values if not math.isnan(v)]
        return sum(values) / len(values) if values else float("nan")

    rows = {}
    for stage, m in runs.items():
        trained = [i for i, s in enumerate(m["step"]) if s > 0]
        first, last = trained[:5], trained[-5:]
        held = [v for v in m.get("heldout/accuracy", []) if not math.isnan(v)]
        rows[stage] = {"reward, steps 1-5": mean([m["reward"][i] for i in first]),
                       "reward, last 5": mean([m["reward"][i] for i in last]),
                       "KL, last fresh batch": m["kl"][m["step"].index(fresh_steps(m)[-1])],
                       "length, last 5": mean([m["completions/mean_length"][i] for i in last]),
                       "grad norm, last 5": mean([m["grad_norm"][i] for i in last]),
                       "clipped tokens, mean": mean([m["clip_ratio/region_mean"][i] for i in trained]),
                       "held-out, step 0": held[0] if held else float("nan"),
                       "held-out, last": held[-1] if held else float("nan"),
                       "seconds per step": mean([m["step_time_s"][i] for i in trained])}
    return pd.DataFrame.from_dict(rows, orient="index")
