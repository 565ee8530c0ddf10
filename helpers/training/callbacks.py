"""Trainer callbacks of a course run: :class:`MetricsCSV`, one progress bar (:func:`quiet_progress`), a
truncation warning (:class:`TruncationGuard`), held-out accuracy during GRPO (:class:`HeldoutAccuracy`)
and the log of every group trained on (:class:`GroupLog`)."""

from __future__ import annotations

import csv
import json
import time
import warnings
from pathlib import Path

from transformers import TrainerCallback
from transformers.trainer_callback import ProgressCallback


class MetricsCSV(TrainerCallback):
    """Writes each logged step of a trainer as one row of a CSV, with the step's wall time (``step_time_s``).

    Columns are the union of all logged keys (TRL adds ``rewards/<func>/mean`` per reward function,
    :class:`HeldoutAccuracy` ``heldout/*`` and a step-0 row in :attr:`rows`); the file is rewritten at each
    log, so it is always complete. A run resumed at step N keeps the rows up to step N. Only the main
    process writes: TRL and transformers log values already gathered over all processes.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self.rows: list[dict] = []
        self._step_start = None
        self._last_step_s = float("nan")

    def on_train_begin(self, args, state, control, **kwargs):
        if state.global_step > 0 and self.path.exists():  # resumed: the state is already loaded
            with open(self.path, newline="") as f:
                self.rows = [row for row in csv.DictReader(f) if int(row["step"]) <= state.global_step]

    def on_step_begin(self, args, state, control, **kwargs):
        self._step_start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        self._last_step_s = time.perf_counter() - self._step_start

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or "loss" not in logs or not state.is_world_process_zero:  # end summary, or rank > 0
            return
        self.rows.append({"step": state.global_step, **logs, "step_time_s": self._last_step_s})
        columns = list(dict.fromkeys(key for row in self.rows for key in row))
        with open(self.path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=columns)
            writer.writeheader()
            writer.writerows(self.rows)


class QuietProgressCallback(ProgressCallback):
    """The trainer's progress bar with the step's reward and KL (GRPO) or loss (SFT) beside it, and
    the last held-out accuracy, instead of a dump of every logged dict (``metrics.csv`` has them all)."""

    SHOWN = {"reward": "reward", "kl": "kl", "loss": "loss", "heldout/accuracy": "held-out acc"}

    def on_log(self, args, state, control, logs=None, **kwargs):
        bar = getattr(self, "training_bar", None)
        shown = {label: f"{logs[k]:.3g}" for k, label in self.SHOWN.items() if logs and k in logs}
        if bar is not None and shown:
            bar.set_postfix(shown, refresh=False)


def quiet_progress(trainer) -> None:
    """Make :class:`QuietProgressCallback` a ``transformers.Trainer``'s only progress display.

    Removes ``DEFAULT_PROGRESS_CALLBACK`` (transformers 4.56 ``trainer.py``): tqdm's ``ProgressCallback`` in a
    terminal, ``NotebookProgressCallback`` (an HTML table of every logged value, not a ``ProgressCallback``)
    in Jupyter and Colab; ``PrinterCallback`` (``disable_tqdm=True``) stays."""
    progress = [ProgressCallback]
    try:
        from transformers.utils.notebook import NotebookProgressCallback

        progress.append(NotebookProgressCallback)
    except ImportError:  # no IPython: transformers cannot have picked it either
        pass
    for callback in list(trainer.callback_handler.callbacks):
        if isinstance(callback, tuple(progress)):
            trainer.remove_callback(callback)
    trainer.add_callback(QuietProgressCallback())


class TruncationWarning(UserWarning):
    """Many completions were cut at ``max_completion_length`` (:class:`TruncationGuard`)."""


class TruncationGuard(TrainerCallback):
    """Warns once when TRL's ``completions/clipped_ratio`` stays high, saying what to change.

    A cut completion has no ``<answer>`` block: it earns no correctness reward however right its
    reasoning, and TRL still trains its tokens with its (negative) advantage, so often-cut completions
    teach the policy to be short, not right (trl#5697, #6263; Unsloth's own T4 run of the t4 recipe, at a
    200-token cap, had every completion of 93 of its 250 steps cut). When the mean ratio over the last
    ``window`` logged steps reaches ``threshold`` this warns (:class:`TruncationWarning`) with the remedies:
    a longer ``max_completion_length`` or ``mask_truncated_completions=True`` (DAPO's overlong filtering).
    Main process only.

    Args:
        profile: the run's profile (its lengths go into the advice).
        threshold: share of completions cut, 0 to 1 (default 0.1).
        window: logged steps averaged (default 5: one high step is not a high run).

    Raises:
        ValueError: ``threshold`` outside (0, 1] or ``window < 1``.
    """

    RATIO = "completions/clipped_ratio"

    def __init__(self, profile, threshold: float = 0.1, window: int = 5):
        if not 0 < threshold <= 1 or window < 1:
            raise ValueError(f"threshold must be in (0, 1] and window >= 1, got {threshold} and {window}")
        self.profile, self.threshold, self.window = profile, threshold, window
        self.ratios: list[tuple[int, float]] = []  # (step, clipped ratio)
        self.warned_at: int | None = None

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or self.RATIO not in logs or not state.is_world_process_zero:
            return
        self.ratios.append((state.global_step, float(logs[self.RATIO])))
        recent = self.ratios[-self.window :]
        mean = sum(ratio for _, ratio in recent) / len(recent)
        if self.warned_at is None and len(recent) == self.window and mean >= self.threshold:
            self.warned_at, p = state.global_step, self.profile
            advice = (
                f"{mean:.0%} of completions reached max_completion_length = {p.max_completion_length} tokens "
                f"over steps {recent[0][0]}-{recent[-1][0]}: a cut completion has no <answer> block, earns no "
                "correctness reward, and is still trained with its advantage. Raise max_completion_length (up to "
                f"{p.max_seq_length - p.max_prompt_length} (max_seq_length {p.max_seq_length} - max_prompt_length "
                f"{p.max_prompt_length}); each step then takes longer), or set mask_truncated_completions=True in "
                "the GRPOConfig (notebook 05's settings, or a keyword of train(...)) to leave cut completions out "
                "of the loss; completions/clipped_ratio in metrics.csv shows every step."
            )
            warnings.warn(advice, TruncationWarning, stacklevel=2)


HELDOUT_COLUMNS = ("heldout/accuracy", "heldout/accuracy_format_free", "heldout/seconds")


def score_heldout(completions: list[str], answers: list[str]) -> dict:
    """``{"heldout/accuracy", "heldout/accuracy_format_free"}`` of completions against labels, graded as
    the final evaluation grades them (:func:`helpers.evaluation.scoring.score`).

    Raises:
        ValueError: the lists differ in length, or are empty.
    """
    from helpers.evaluation.scoring import score, summarize

    if len(completions) != len(answers) or not answers:
        raise ValueError(f"{len(completions)} completions for {len(answers)} answers")
    summary = summarize(score([""] * len(answers), list(answers), list(completions)))
    return {HELDOUT_COLUMNS[0]: summary["accuracy"], HELDOUT_COLUMNS[1]: summary["accuracy_format_free"]}


class HeldoutAccuracy(TrainerCallback):
    """Greedy accuracy of the policy on fixed held-out problems, before training and every ``every`` steps:
    what tells learning from reward hacking. The reward can rise while the model gets worse at the task (it
    finds what the rewards pay for, a template copy or a restated fact, instead of the answer), and TRL's
    ``GRPOTrainer`` logs the reward only, with no hook to evaluate generations (trl#2959). The values
    (:data:`HELDOUT_COLUMNS`) go into ``metrics.csv`` beside the reward:

    * ``heldout/accuracy`` - the ``<answer>`` block equals the label (what the correctness reward pays);
    * ``heldout/accuracy_format_free`` - the last number equals the label, whatever the format (so a
      format gain and a reasoning gain can be told apart);
    * ``heldout/seconds`` - what the evaluation cost.

    Transformers backend only: under Unsloth the vLLM engine samples with the LoRA the trainer syncs into
    it, not with the model in memory.

    Args:
        problems: rows with ``question`` and ``answer`` (a Dataset, or :class:`helpers.data.draws.Problem`
            dicts), never trained on.
        tokenizer: the policy's tokenizer.
        every: evaluate after steps ``every, 2 * every, ...`` and after the last step; also once
            before training (step 0).
        max_new_tokens: the completion limit (the training one, so that the two compare).
        metrics: the run's :class:`MetricsCSV`: the step-0 row goes into it.

    Each evaluation is added to the step's logs (so the progress bar and ``metrics.csv`` carry it);
    :attr:`history` keeps ``[(step, values), ...]``. Register it before the ``MetricsCSV``.

    Raises:
        ValueError: ``every < 1`` or no problems.
    """

    def __init__(
        self, problems, tokenizer, *, every: int = 5, max_new_tokens: int = 128, metrics=None, batch_size: int = 32
    ):
        if every < 1:
            raise ValueError(f"every must be at least 1, got {every}")
        from helpers.course_format import make_prompt

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
        from helpers.training.engine import uses_vllm
        from helpers.training.generation import generate

        if uses_vllm(model):
            raise ValueError(
                "HeldoutAccuracy generates with the policy in memory; a vLLM engine holds only the "
                "base weights between Unsloth's LoRA syncs (use it with transformers profiles)"
            )
        import torch

        training = model.training
        started = time.perf_counter()
        # The rollouts draw from torch's global stream: keep it, whatever the generation backend does with it.
        with torch.random.fork_rng(devices=range(torch.cuda.device_count())):  # CPU and every GPU stream
            texts = generate(
                model,
                self.tokenizer,
                self.prompts,
                max_new_tokens=self.max_new_tokens,
                temperature=0.0,
                batch_size=self.batch_size,
            )
        values = {**score_heldout(texts, self.answers), HELDOUT_COLUMNS[2]: time.perf_counter() - started}
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
        done = self.history and self.history[-1][0] == step
        if logs is None or "loss" not in logs or not due or not state.is_world_process_zero or done:
            return
        values = self.evaluate(model)
        self.history.append((step, values))
        logs.update(values)


class GroupLog(TrainerCallback):
    """Every group GRPO trained on, one JSON line each, in ``path`` (``groups.jsonl`` of a run).

    TRL's ``frac_reward_zero_std`` says *how many* groups were flat (every advantage 0: the group teaches
    nothing), not *which*. After each generated batch this writes, per group::

        {"step": 3, "group": 0, "row": 32, "kind": "add", "template": "add.4",
         "rewards": {"correctness_reward_func": [2.0, 0.0, ...], ...}, "advantages": [0.93, -0.93, ...]}

    ``row`` is the prompt's row in the training dataset (found by its ``question``; None when not found),
    ``kind`` and ``template`` that row's columns when the dataset has them, each list G long. No text is
    written, so the file can be committed for any dataset. It reads the batch TRL keeps for its completion
    tables (``GRPOTrainer._logs``, TRL 0.22: the last generation batch, each prompt's G completions in a
    row, gathered over processes). Only the main process writes; a batch reused for several optimizer
    steps (``num_iterations > 1``) is written once.

    Args:
        path: the JSONL file; a fresh run starts it empty, a run resumed at step N keeps steps 1..N and appends.
        trainer: the ``GRPOTrainer`` whose batches to read.
        dataset: the training prompts (a ``datasets.Dataset`` with ``question``).
        num_generations: G, the completions per prompt.

    Raises:
        AttributeError: ``trainer`` keeps no ``_logs`` (a TRL release that dropped it).
    """

    def __init__(self, path, trainer, dataset, num_generations: int):
        if not hasattr(trainer, "_logs"):
            raise AttributeError("this GRPOTrainer keeps no _logs: GroupLog reads TRL 0.22's generation log")
        self.path, self.trainer, self.g = Path(path), trainer, num_generations
        columns = set(getattr(dataset, "column_names", ()))
        self.questions = list(dataset["question"]) if "question" in columns else []
        self.tags = {c: list(dataset[c]) for c in ("kind", "template") if c in columns}
        self._last = None

    def on_train_begin(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        # a fresh run starts empty; resumed at step N, the groups of steps 1..N stay
        lines = self.path.read_text().splitlines() if state.global_step > 0 and self.path.exists() else []
        kept = [line for line in lines if json.loads(line)["step"] <= state.global_step]
        self.path.write_text("".join(line + "\n" for line in kept))

    def on_step_end(self, args, state, control, **kwargs):
        logs = self.trainer._logs
        prompts, completions = list(logs["prompt"]), list(logs["completion"])
        fingerprint = hash(tuple(completions))
        if not state.is_world_process_zero or not prompts or fingerprint == self._last:
            return
        self._last = fingerprint
        rewards = {name: list(values) for name, values in logs["rewards"].items()}
        advantages = list(logs["advantages"])
        with open(self.path, "a", encoding="utf-8") as f:
            for j, start in enumerate(range(0, len(prompts), self.g)):
                row = next((i for i, q in enumerate(self.questions) if q and q in prompts[start]), None)
                record = {"step": state.global_step, "group": j, "row": row}
                record.update({c: (v[row] if row is not None else None) for c, v in self.tags.items()})
                record["rewards"] = {name: values[start : start + self.g] for name, values in rewards.items()}
                record["advantages"] = advantages[start : start + self.g]
                f.write(json.dumps(record) + "\n")
