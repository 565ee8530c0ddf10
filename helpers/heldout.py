"""Held-out accuracy during GRPO: the number that tells learning from reward hacking.

The reward can rise while the model gets worse at the task: it finds what the reward functions
pay for (a template copy, a restated fact) instead of the answer. TRL's ``GRPOTrainer`` logs the
reward only and has no hook to evaluate generations during training (trl#2959, open since 2025).
:class:`HeldoutAccuracy` is that hook: a ``TrainerCallback`` that, before the first step and every
``every`` steps (and after the last), answers a fixed set of held-out problems greedily with the
current policy and writes, beside the reward in ``metrics.csv``:

* ``heldout/accuracy`` - the ``<answer>`` block equals the label (what the correctness reward pays);
* ``heldout/accuracy_format_free`` - the last number of the completion equals the label, whatever
  the format (so a format gain and a reasoning gain can be told apart);
* ``heldout/seconds`` - what the evaluation cost.

Its cost is one greedy generation of the set with the policy (``heldout/seconds`` records each one;
the CPU profile's costs are in its reference runs). Transformers backend only: under Unsloth the
policy's vLLM engine samples with the LoRA that the trainer syncs into it, not with the model in memory.
"""

from __future__ import annotations

import time

from transformers import TrainerCallback

COLUMNS = ("heldout/accuracy", "heldout/accuracy_format_free", "heldout/seconds")


def score_heldout(completions: list[str], answers: list[str]) -> dict:
    """``{"heldout/accuracy", "heldout/accuracy_format_free"}`` of completions against labels, graded
    as the final evaluation grades them (:func:`helpers.evaluation.score`: the ``<answer>`` block,
    and the last number whatever the format).

    Raises:
        ValueError: the lists differ in length, or are empty.
    """
    from .evaluation import score, summarize

    if len(completions) != len(answers) or not answers:
        raise ValueError(f"{len(completions)} completions for {len(answers)} answers")
    summary = summarize(score([""] * len(answers), list(answers), list(completions)))
    return {COLUMNS[0]: summary["accuracy"], COLUMNS[1]: summary["accuracy_format_free"]}


class HeldoutAccuracy(TrainerCallback):
    """Greedy accuracy of the policy on fixed held-out problems, every ``every`` steps.

    Args:
        problems: rows with ``question`` and ``answer`` (a Dataset, or :class:`helpers.problems.Problem`
            dicts), never trained on.
        tokenizer: the policy's tokenizer.
        every: evaluate after steps ``every, 2 * every, ...`` and after the last step; also once
            before training (step 0).
        max_new_tokens: the completion limit (the training one, so that the two compare).
        metrics: the run's :class:`helpers.training.MetricsCSV`: the step-0 row goes into it.

    Each evaluation is added to the step's logged values (so TRL's logs, the progress bar and
    ``metrics.csv`` carry it); :attr:`history` keeps ``[(step, values), ...]``. Register it before
    the ``MetricsCSV`` callback (:func:`helpers.training.train` does).

    Raises:
        ValueError: ``every < 1`` or no problems.
    """

    def __init__(self, problems, tokenizer, *, every: int = 5, max_new_tokens: int = 128, metrics=None,
                 batch_size: int = 32):
        if every < 1:
            raise ValueError(f"every must be at least 1, got {every}")
        from .data import make_prompt

        rows = [{"question": r["question"], "answer": str(r["answer"])} for r in problems]
        if not rows:
            raise ValueError("no held-out problems")
        self.prompts = [make_prompt(r["question"]) for r in rows]
        self.answers = [r["answer"] for r in rows]
        self.tokenizer, self.every, self.max_new_tokens = tokenizer, every, max_new_tokens
        self.metrics, self.batch_size = metrics, batch_size
        self.history: list[tuple[int, dict]] = []

    def evaluate(self, model) -> dict:
        """Greedy completions of the held-out set by ``model`` (adapter on), scored; restores train mode
        and torch's global random state (the rollouts draw from it)."""
        from .models import generate, uses_vllm

        if uses_vllm(model):
            raise ValueError("HeldoutAccuracy generates with the policy in memory; a vLLM engine holds only the "
                             "base weights between Unsloth's LoRA syncs (use it with transformers profiles)")
        import torch

        training = model.training
        started = time.perf_counter()
        # The rollouts draw from torch's global stream: whatever the generation backend does with it (HF
        # generate() used to reseed it with 0, so every seed's rollouts then drew the same numbers), keep it.
        with torch.random.fork_rng(devices=range(torch.cuda.device_count())):  # CPU and every GPU stream
            texts = generate(model, self.tokenizer, self.prompts, max_new_tokens=self.max_new_tokens,
                             temperature=0.0, batch_size=self.batch_size)
        values = {**score_heldout(texts, self.answers), COLUMNS[2]: time.perf_counter() - started}
        model.train(training)
        return values

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        if state.global_step == 0 and state.is_world_process_zero:
            values = self.evaluate(model)
            self.history.append((0, values))
            if self.metrics is not None:
                self.metrics.rows.append({"step": 0, **values})

    def on_log(self, args, state, control, logs=None, model=None, **kwargs):
        step = state.global_step
        due = step % self.every == 0 or step == state.max_steps
        if logs is None or "loss" not in logs or not due or not state.is_world_process_zero:
            return
        if self.history and self.history[-1][0] == step:
            return
        values = self.evaluate(model)
        self.history.append((step, values))
        logs.update(values)
