"""A GRPO step of ``helpers.training.trainer.train`` (``CourseGRPOTrainer``) vs a plain TRL ``GRPOTrainer`` script
at the same sizes, with where each step's time goes; and ``train_cold_start`` vs a plain ``SFTTrainer``.

GRPO: both sides start from the same policy (a merged cold start, ``--model``, else SmolLM2-135M-Instruct:
a cold start ends its completions at different lengths, as a real run does), with the same LoRA,
prompts (course-written one-operation problems), config and seed. Each step is timed by a callback
(step begin to end: rollouts, rewards, reference log-probs, loss, backward, optimizer), and the step's
time is split by timers around the generation call, the no-gradient log-prob passes (reference, old
policy) and the backward pass; the loss forward is the rest. The sides sample different completions
(different random draws from the same policy), so their lengths differ a little: the table shows them.
Prints the median step of steps 2..N (step 1 warms up) and the ratio plain / ours (target >= 1.5).

Third side, ``scratch``: the from-scratch loop of notebook 07 (:mod:`cpu_study.loop`: plain ``generate``,
log-probs in plain passes) with the same sizes, GRPO settings, start and prompts; its own timers give the
generation and no-gradient log-prob seconds, a timer around ``Tensor.backward`` the backward. Fourth,
``scratch, shared``: the same loop with each group's prompt pass shared in the log-probs
(``share_prompt=True``), what that sharing saves. ``--sides`` picks a subset.

    GSM8K_DIR=/path/to/gsm8k python benchmarks/bench_training.py [--steps 6] [--prompts 4] [--model DIR]
        [--sides plain,ours,scratch,scratch-shared]
"""

import argparse
import os
import statistics
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
DEFAULT_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "gsm8k"
os.environ.setdefault("GSM8K_DIR", str(DEFAULT_DIR))

import torch  # noqa: E402
from transformers import TrainerCallback  # noqa: E402

from helpers.data.problems import make_problems, problems_dataset  # noqa: E402
from helpers.rewards import REWARD_FUNCS  # noqa: E402
from helpers.training import fast_rollouts  # noqa: E402
from helpers.training.cold_start import build_sft_config, build_sft_dataset, train_cold_start  # noqa: E402
from helpers.training.models import load_model  # noqa: E402
from helpers.training.profiles import PROFILES  # noqa: E402
from helpers.training.trainer import build_grpo_config, train  # noqa: E402

PARTS = ("generation", "log-probs, no grad", "backward")


class StepTimes(TrainerCallback):
    """Wall time of each optimizer step, and each step's completion lengths."""

    def __init__(self):
        self.seconds, self.lengths, self._start = [], [], None

    def on_step_begin(self, args, state, control, **kwargs):
        self._start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        self.seconds.append(time.perf_counter() - self._start)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "completions/mean_length" in logs:
            self.lengths.append((logs["completions/mean_length"], logs["completions/max_length"]))


@contextmanager
def part_timers(parts: dict):
    """Add each step's generation, no-grad log-prob and backward seconds to ``parts`` (lists per step)."""
    import accelerate
    import trl.trainer.grpo_trainer as grpo

    originals = (
        grpo.GRPOTrainer._get_per_token_logps_and_entropies,
        fast_rollouts.shared_prompt_logps,
        fast_rollouts.sample,
        accelerate.Accelerator.backward,
        grpo.GRPOTrainer.training_step,
    )
    current = {}

    def timed(fn, key, when=lambda: True):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            out = fn(*args, **kwargs)
            if when():
                current[key] = current.get(key, 0.0) + time.perf_counter() - start
            return out

        return wrapper

    no_grad = lambda: not torch.is_grad_enabled()  # noqa: E731
    grpo.GRPOTrainer._get_per_token_logps_and_entropies = timed(originals[0], PARTS[1], no_grad)
    fast_rollouts.shared_prompt_logps = timed(originals[1], PARTS[1], no_grad)
    fast_rollouts.sample = timed(originals[2], PARTS[0])
    accelerate.Accelerator.backward = timed(originals[3], PARTS[2])

    def step(self, *args, **kwargs):
        current.clear()
        out = originals[4](self, *args, **kwargs)
        for key in PARTS:
            parts.setdefault(key, []).append(current.get(key, 0.0))
        return out

    grpo.GRPOTrainer.training_step = step
    try:
        yield
    finally:
        (
            grpo.GRPOTrainer._get_per_token_logps_and_entropies,
            fast_rollouts.shared_prompt_logps,
            fast_rollouts.sample,
            accelerate.Accelerator.backward,
            grpo.GRPOTrainer.training_step,
        ) = originals


def plain_grpo(profile, dataset, out, model_path, times, parts) -> None:
    """What a learner would write with TRL alone: load, build the trainer, train."""
    from trl import GRPOTrainer

    model, tokenizer = load_model(profile, model_path)
    generate = model.generate

    def timed_generate(*args, **kwargs):  # HF generate: the plain side's rollouts
        start = time.perf_counter()
        out = generate(*args, **kwargs)
        parts.setdefault("_hf_generate", []).append(time.perf_counter() - start)
        return out

    model.generate = timed_generate
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=REWARD_FUNCS,
        args=build_grpo_config(profile, out),
        train_dataset=dataset,
        callbacks=[times],
    )
    with part_timers(parts):
        trainer.train()
    parts[PARTS[0]] = parts.pop("_hf_generate")


def ours_grpo(profile, dataset, out, model_path, times, parts) -> None:
    """``helpers.training.trainer.train``: CourseGRPOTrainer plus metrics CSV, curves and adapter save."""
    with part_timers(parts):
        train(profile, dataset=dataset, output_dir=out, model_path=model_path, callbacks=[times], resume=False)


class _Steps:  # what StepTimes records, for the scratch sides
    def __init__(self):
        self.seconds, self.lengths = [], []


def scratch_grpo(profile, dataset, out, model_path, times, parts, share_prompt: bool = False) -> None:
    """``cpu_study.loop.train_from_scratch`` at the profile's sizes and GRPO settings (no held-out evaluation)."""
    from cpu_study.variants import run_loop
    from helpers.loop import LoopConfig

    config = LoopConfig(
        variant="bench",
        scale_std=profile.scale_rewards == "group",
        num_iterations=profile.num_iterations,
        epsilon=profile.epsilon,
        beta=profile.beta,
        loss_type=profile.loss_type,
        prompts_per_step=profile.per_device_train_batch_size // profile.num_generations,
        num_generations=profile.num_generations,
        max_new_tokens=profile.max_completion_length,
        temperature=profile.temperature,
        top_p=profile.top_p,
        learning_rate=profile.learning_rate,
        weight_decay=profile.weight_decay,
        adam_betas=(profile.adam_beta1, profile.adam_beta2),
        max_grad_norm=profile.max_grad_norm,
        steps=profile.max_steps,
        seed=profile.seed,
        heldout_problems=0,
        log_kl=profile.beta > 0,
    )  # a reference pass only where TRL makes one
    torch.manual_seed(profile.seed)
    model, tokenizer = load_model(profile, model_path)
    backward, spent = torch.Tensor.backward, []

    def timed_backward(self, *args, **kwargs):
        start = time.perf_counter()
        out = backward(self, *args, **kwargs)
        spent.append(time.perf_counter() - start)
        return out

    torch.Tensor.backward = timed_backward
    try:
        run = run_loop(
            model, tokenizer, config, prompts=list(dataset), heldout=[], output_dir=out, share_prompt=share_prompt
        )
    finally:
        torch.Tensor.backward = backward
    for row, seconds in zip(run.rows, spent):  # one backward per step
        times.seconds.append(row["step_time_s"])
        times.lengths.append((row["completions/mean_length"], row["completions/max_length"]))
        for key, value in (
            (PARTS[0], row["seconds/generation"]),
            (PARTS[1], row["seconds/logps_no_grad"]),
            (PARTS[2], seconds),
        ):
            parts.setdefault(key, []).append(value)


def plain_sft(profile, dataset, out) -> None:
    from trl import SFTTrainer

    model, tokenizer = load_model(profile)
    SFTTrainer(
        model=model, processing_class=tokenizer, train_dataset=dataset, args=build_sft_config(profile, out)
    ).train()


def ours_sft(profile, dataset, out) -> None:
    """``train_cold_start``: the same run plus the loss CSV and the merge + save."""
    train_cold_start(profile, out, dataset=dataset)


SIDES = {
    "plain": ("plain TRL", plain_grpo),
    "ours": ("ours", ours_grpo),
    "scratch": ("scratch", scratch_grpo),
    "scratch-shared": ("scratch, shared", lambda *a: scratch_grpo(*a, share_prompt=True)),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=6, help="GRPO steps per side (default 6)")
    parser.add_argument("--prompts", type=int, default=4, help="prompts per step (default 4)")
    parser.add_argument("--model", help="starting policy (a merged cold start); default SmolLM2-135M-Instruct")
    parser.add_argument("--sft-examples", type=int, default=32, help="cold-start examples (0: skip the SFT pair)")
    parser.add_argument("--sides", default=",".join(SIDES), help=f"GRPO sides to run (default {','.join(SIDES)})")
    args = parser.parse_args()
    sides = args.sides.split(",")
    if not sides or any(side not in SIDES for side in sides):
        parser.error(f"--sides takes a comma-separated subset of {','.join(SIDES)}, got {args.sides!r}")
    cpu = PROFILES["cpu"]
    profile = cpu.replace(
        max_steps=args.steps,
        per_device_train_batch_size=args.prompts * cpu.num_generations,
        curriculum=(),
        heldout_problems=0,
    )
    prompts = problems_dataset(make_problems(args.steps * args.prompts, ops=1, seed=11))
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for key in sides:
            name, run = SIDES[key]
            times, parts = (_Steps() if key.startswith("scratch") else StepTimes()), {}
            side = profile.replace(fast_rollouts=key == "ours")
            run(side, prompts, Path(tmp) / key, args.model, times, parts)
            results[name] = (times, parts)
        sft = {}
        if args.sft_examples:
            rows = build_sft_dataset(args.sft_examples)
            for name, run in (("plain TRL", plain_sft), ("ours", ours_sft)):
                start = time.perf_counter()
                run(cpu, rows, Path(tmp) / f"sft-{name.replace(' ', '-')}")
                sft[name] = time.perf_counter() - start
    print(
        f"\nGRPO: {args.steps} steps of {args.prompts} prompts x {profile.num_generations} completions x "
        f"{profile.max_completion_length} tokens, from {args.model or profile.model_id}; "
        "median of steps 2..N, seconds"
    )
    print(
        f"  {'':15s} {'step':>6s} "
        + " ".join(f"{p:>19s}" for p in (*PARTS, "loss forward, rest"))
        + "   mean / max completion length"
    )
    medians = {}
    for name, (times, parts) in results.items():
        step = statistics.median(times.seconds[1:])
        split = [statistics.median(parts[p][1:]) for p in PARTS]
        medians[name] = step
        lengths = ", ".join(f"{m:.0f}/{x:.0f}" for m, x in times.lengths)
        print(
            f"  {name:15s} {step:6.1f} " + " ".join(f"{v:19.1f}" for v in (*split, step - sum(split))) + f"   {lengths}"
        )
    for name in medians:
        if name != "plain TRL" and "plain TRL" in medians:
            print(f"  step time, plain TRL / {name} = {medians['plain TRL'] / medians[name]:.2f}")
    for name, seconds in sft.items():
        print(f"  cold start {name:10s} {seconds:7.1f} s")
    if sft:
        print(f"  cold start, ours / plain = {sft['ours'] / sft['plain TRL']:.3f}")


if __name__ == "__main__":
    main()
