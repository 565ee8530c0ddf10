"""The ablation: what each GRPO knob does, one knob at a time, on the ``cpu`` recipe.

An **arm** is the ``cpu`` profile with one change (:data:`ARMS`): a setting of the profile, a field of
TRL's ``GRPOConfig``, or the reward set. Every arm trains GRPO from the same cold start on the same
prompts (the curriculum of its seed) and is evaluated greedily on the two development sets only
(:func:`helpers.data.problem_sets.dev_problem_set`, :func:`~helpers.data.problem_sets.dev_transfer_set`),
never on the test or sealed sets. :func:`run_arm` runs one arm with one seed and writes
``<root>/<arm>/seed<seed>/``:

* ``result.json`` - the arm, its changes, the command's provenance, the cost (GRPO wall seconds,
  seconds a step, CPU seconds, peak memory) and, per development set, right answers and valid format;
* ``outcomes.jsonl`` - one line per problem (set, index, kind, level, correct, format_valid, tokens),
  paired by index with the baseline arm's and the cold start's;
* ``metrics.csv``, ``groups.jsonl``, ``effective_config.json``, ``lora_adapter/`` and
  ``training_curves.png`` - the GRPO stage's files (:func:`helpers.training.trainer.train`);
  :data:`LIGHT_FILES` are those worth committing.

The cold start's evaluation on the development sets is the same for every arm (same model, problems and
decoding): :func:`cold_start_outcomes` computes it once per cold start and keeps it in
``<root>/cold_start/`` (keyed by the model file's SHA-256, the problems and the decoding), so an arm
costs its GRPO stage and one evaluation. ``cpu_study.ablation`` reads the arms back.
"""

from __future__ import annotations

import hashlib
import json
import resource
import time
from dataclasses import dataclass, field
from pathlib import Path

from helpers.training.profiles import CPU, Profile
from helpers.training.run_files import EFFECTIVE_CONFIG_FILE, GROUPS_FILE, METRICS_FILE

RESULT_FILE, OUTCOMES_FILE = "result.json", "outcomes.jsonl"
SEEDS = (3407, 1, 2)  # the ablation's seeds (cpu_study/experiments/ablation.py), 3407 first: make train's
LIGHT_FILES = (RESULT_FILE, OUTCOMES_FILE, METRICS_FILE, GROUPS_FILE, EFFECTIVE_CONFIG_FILE)  # without the adapter
DEV_PROBLEMS, DEV_TRANSFER = 64, 12  # per level / per kind and range: 256 + 288 development problems
OUTCOME_FIELDS = ("set", "index", "kind", "level", "correct", "format_valid", "tokens")


@dataclass(frozen=True)
class Arm:
    """One change to the ``cpu`` recipe. ``profile``: :class:`~helpers.training.profiles.Profile`
    settings; ``config``: ``GRPOConfig`` fields the profile has no setting for; ``rewards``: a key
    of :data:`cpu_study.control_rewards.ALL_REWARD_SETS`; ``predicted``: what the theory of notebook 02
    predicts, written before the arm was run."""

    name: str
    knob: str
    predicted: str
    profile: dict = field(default_factory=dict)
    config: dict = field(default_factory=dict)
    rewards: str = "checked"


ARMS = {
    a.name: a
    for a in (
        Arm("baseline", "none: the cpu recipe", "the baseline every other arm is compared with"),
        Arm(
            "beta",
            "beta = 0.04 (k3 KL to the reference model)",
            "a pull toward the cold start: a smaller move from it, less gain and less loss; a reference "
            "forward pass each step",
            profile={"beta": 0.04},
        ),
        Arm(
            "no_std",
            "advantages r - mean, not divided by the group's std (half of Dr. GRPO)",
            "groups with a small spread weigh less; little change in 12 steps, since AdamW and the "
            "gradient clipping undo a global scale",
            profile={"scale_rewards": "none"},
        ),
        Arm(
            "g4",
            "G = 4 completions a group (16 prompts, 64 completions a step)",
            "more flat groups (all 4 right or all wrong), half the rollouts: less signal, faster steps",
            profile={"num_generations": 4, "per_device_train_batch_size": 64},
        ),
        Arm(
            "dr_grpo",
            "loss normalised by batch x max length (the other half of Dr. GRPO)",
            "no per-sequence 1/|o| length bias; short completions of equal advantage weigh the same per "
            "token as long ones",
            profile={"loss_type": "dr_grpo"},
        ),
        Arm(
            "dapo",
            "loss normalised by the batch's token count (DAPO)",
            "like dr_grpo, a token-level mean; long completions weigh more than under 1/|o|",
            profile={"loss_type": "dapo"},
        ),
        Arm(
            "clip_higher",
            "clip range [1 - 0.2, 1 + 0.28] (DAPO's clip-higher)",
            "no change at all: one optimizer step per generated batch keeps the ratio at exactly 1, "
            "so no token is ever clipped",
            config={"epsilon_high": 0.28},
        ),
        Arm(
            "mask_truncated",
            "completions cut at the length limit get no loss",
            "almost no change: at 100 tokens few completions are cut",
            config={"mask_truncated_completions": True},
        ),
        Arm(
            "rank1",
            "LoRA rank 1 (alpha 1)",
            "a much smaller update space: less change, in either direction",
            profile={"lora_rank": 1, "lora_alpha": 1},
        ),
        Arm(
            "rank64",
            "LoRA rank 64 (alpha 64)",
            "a larger update space at the same learning rate: larger moves, more risk of losing",
            profile={"lora_rank": 64, "lora_alpha": 64},
        ),
        Arm(
            "t1",
            "sampling temperature 1.0 (0.6 in the recipe)",
            "more varied completions: fewer flat groups but more wrong ones; greedy accuracy may move either way",
            profile={"temperature": 1.0},
        ),
        Arm(
            "placebo",
            "a coin-flip reward (no signal)",
            "no gain; any change is noise or drift",
            rewards="placebo",
        ),
        Arm(
            "format_only",
            "the format rewards only (no correctness reward)",
            "the format holds or tightens; accuracy does not rise",
            rewards="format",
        ),
        Arm(
            "shuffled",
            "correctness paid against another problem's answer",
            "no gain in accuracy; the policy may drift toward common answers",
            rewards="shuffled",
        ),
    )
}


def arm_profile(arm: Arm, seed: int, base: Profile = CPU) -> Profile:
    """``base`` with the arm's profile settings and ``seed``; no held-out curve (the development sets
    are evaluated at the end instead)."""
    return base.replace(**arm.profile, seed=seed, heldout_problems=0)


def dev_sets(quick: bool = False) -> dict:
    """The development sets an arm is judged on: ``{"dev": [...], "dev_transfer": [...]}``
    (:data:`DEV_PROBLEMS` per level, :data:`DEV_TRANSFER` per kind and range; 2 and 1 when ``quick``)."""
    from helpers.data.problem_sets import dev_problem_set, dev_transfer_set

    return {
        "dev": dev_problem_set(2 if quick else DEV_PROBLEMS),
        "dev_transfer": dev_transfer_set(1 if quick else DEV_TRANSFER),
    }


def _outcomes(result, problems, name: str) -> list[dict]:
    from helpers.evaluation.reports import tag_problems

    tag_problems(result, problems)
    rows = []
    for i, record in enumerate(result.records):
        row = {"set": name, "index": i, **record}
        rows.append({k: row.get(k) for k in OUTCOME_FIELDS})
    return rows


def _evaluate(model, tokenizer, profile, sets: dict, label: str) -> list[dict]:
    from helpers.data.problems import problems_dataset
    from helpers.evaluation.before_after import decoding
    from helpers.evaluation.scoring import evaluate

    settings = {**decoding(profile, greedy=True), "batch_size": 32}
    rows = []
    for name, problems in sets.items():
        result = evaluate(model, tokenizer, problems_dataset(problems), desc=f"{label} ({name})", **settings)
        rows += _outcomes(result, problems, name)
    return rows


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def cold_start_outcomes(cold_start, root, sets: dict, profile: Profile = CPU) -> list[dict]:
    """The cold start's outcomes on ``sets``, evaluated once and kept in ``<root>/cold_start/``.

    The file's key is the SHA-256 of the cold start's ``model.safetensors``, of the problems and of the
    decoding: another cold start, other problems or other decoding evaluate anew.

    Raises:
        FileNotFoundError: ``cold_start`` holds no ``model.safetensors``."""
    from helpers.evaluation.before_after import decoding
    from helpers.training.models import load_model

    cold_start = Path(cold_start)
    if not (cold_start / "model.safetensors").exists():
        raise FileNotFoundError(f"{cold_start} holds no model.safetensors: is it a merged cold start?")
    problems = {name: [p.to_dict() for p in part] for name, part in sets.items()}
    key = {
        "model_sha256": _sha256(cold_start / "model.safetensors"),
        "problems_sha256": hashlib.sha256(json.dumps(problems, sort_keys=True).encode()).hexdigest(),
        "decoding": decoding(profile, greedy=True),
    }
    name = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    path = Path(root) / "cold_start" / f"{name}.jsonl"
    if path.exists():
        return [json.loads(line) for line in path.read_text().splitlines()[1:]]
    model, tokenizer = load_model(profile, cold_start, lora=False)
    rows = _evaluate(model, tokenizer, profile, sets, "cold start")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(r) for r in [key, *rows]) + "\n")
    return rows


def summarize_outcomes(rows: list[dict]) -> dict:
    """``{set: {"n", "correct", "format_valid"}}`` of outcome rows."""
    sets = {}
    for r in rows:
        s = sets.setdefault(r["set"], {"n": 0, "correct": 0, "format_valid": 0})
        s["n"] += 1
        s["correct"] += bool(r["correct"])
        s["format_valid"] += bool(r["format_valid"])
    return sets


def run_arm(arm: Arm, seed: int, cold_start, root, *, quick: bool = False, command: str | None = None) -> dict:
    """Train one arm with one seed from ``cold_start`` and evaluate it on the development sets.

    Args:
        arm: one of :data:`ARMS`.
        seed: the training seed (LoRA init, sampling, the curriculum's problems).
        cold_start: a merged cold start (``outputs/grpo-cpu/cold_start`` after ``make train``).
        root: the ablation's folder (``results/ablation``); the run goes to ``<root>/<arm>/seed<seed>``.
        quick: smoke size (:func:`helpers.training.profiles.shortened`, tiny development sets).
        command: how the run was started, recorded in ``result.json``.

    Returns:
        the content of ``result.json``.

    Raises:
        FileNotFoundError: ``cold_start`` holds no model.
        ValueError: an unknown reward set.
    """
    from cpu_study.control_rewards import ALL_REWARD_SETS
    from helpers.data.problem_sets import grpo_prompts
    from helpers.evaluation.provenance import git_commit, machine
    from helpers.training.profiles import shortened
    from helpers.training.trainer import train

    if arm.rewards not in ALL_REWARD_SETS:
        raise ValueError(f"unknown reward set {arm.rewards!r}; choose one of {sorted(ALL_REWARD_SETS)}")
    profile = arm_profile(arm, seed)
    if quick:
        profile = shortened(profile).replace(heldout_problems=0)
    sets = dev_sets(quick)
    root = Path(root)
    before = cold_start_outcomes(cold_start, root, sets, profile)
    out = root / arm.name / f"seed{seed}"
    out.mkdir(parents=True, exist_ok=True)
    started, cpu = time.perf_counter(), time.process_time()
    run = train(
        profile,
        output_dir=out,
        dataset=grpo_prompts(profile),
        reward_funcs=ALL_REWARD_SETS[arm.rewards],
        model_path=cold_start,
        heldout=None,
        resume=False,
        **arm.config,
    )
    cost = {
        "grpo_s": round(time.perf_counter() - started, 1),
        "seconds_per_step": round(run.seconds_per_step, 1),
        "cpu_s": round(time.process_time() - cpu, 1),
        "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
    }
    after = _evaluate(run.trainer.model, run.trainer.processing_class, profile, sets, f"{arm.name}, seed {seed}")
    with open(out / OUTCOMES_FILE, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in after)
    result = {
        "arm": arm.name,
        "knob": arm.knob,
        "predicted": arm.predicted,
        "profile_changes": arm.profile,
        "config_changes": arm.config,
        "rewards": arm.rewards,
        "seed": seed,
        "steps": profile.max_steps,
        "cold_start": str(cold_start),
        "command": command,
        "commit": git_commit(),
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(),
        "cost": cost,
        "cold_start_sets": summarize_outcomes(before),
        "sets": summarize_outcomes(after),
    }
    (out / RESULT_FILE).write_text(json.dumps(result, indent=1) + "\n")
    return result
