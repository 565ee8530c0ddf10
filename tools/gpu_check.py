"""GPU check: the ``cuda`` profile's path end to end on a tiny random Qwen2 model.

Stages, each timed (seconds; CUDA synchronised) with its peak GPU memory
(``torch.cuda.max_memory_allocated``, reset at each stage; "n/a on CPU"):

1. ``build_model`` - a 2-layer Qwen2-architecture model, randomly initialised from a config, and a
   ChatML byte-level BPE tokenizer trained here on course-written problems; saved side by side.
   No hub, no network, no data file (prompts are :mod:`helpers.data.problems`, never GSM8K).
2. ``load`` - :func:`helpers.training.models.load_model` with the ``cuda`` profile's LoRA: bf16 on a GPU of
   compute capability >= 8, fp16 below, fp32 on a CPU (:func:`helpers.training.profiles.precision`).
3. ``generate`` - :func:`helpers.training.generation.generate`, greedy, two prompts.
4. ``grpo`` - 3 steps of :func:`helpers.training.trainer.train` (TRL ``GRPOTrainer``, config from
   :func:`helpers.training.trainer.build_grpo_config`), a checkpoint at step 3.
5. ``save_adapter`` - the saved ``lora_adapter/`` reloaded on a fresh base
   (:func:`helpers.evaluation.adapters.load_with_adapter`) must hold the trained LoRA weights.
6. ``evaluate`` - :func:`helpers.evaluation.scoring.evaluate` on 8 course-written test problems, greedy.
7. ``merge_reload`` - :func:`helpers.evaluation.adapters.save_merged`, then
   :func:`helpers.evaluation.adapters.load_merged`:
   the reloaded model's greedy output and per-token log-probs are compared with the adapter model's.

Two departures from the profile, both for a random model: the learning rate is 1e-3 (not 5e-6) so
that 3 steps move the LoRA weights enough for step 7 to see them, and the course rewards get the
placebo coin (:func:`cpu_study.control_rewards.random_reward_func`) beside them, as a random model earns
nothing from them and its groups would have no advantage to follow. Sizes: on a GPU the profile's
(8 completions of 200 tokens a step); without one (``CUDA_VISIBLE_DEVICES=``) smoke size (4 of 16).

Writes ``summary.json`` in ``--out`` (default ``outputs/gpu-check``): hardware, versions, commit,
per-stage seconds and peak memory, the adapter, evaluation and merge results; a stage that fails is
named there (``failed_stage``, ``error``), the script exits 1 and later stages are skipped.

Run (repository root):

    python tools/gpu_check.py                          # a GPU if there is one
    CUDA_VISIBLE_DEVICES= python tools/gpu_check.py    # CPU, smoke size (CI)
    python tools/gpu_check.py --download-command       # what to fetch for a machine without them

It needs the pinned trl/transformers/peft/datasets and the course's own imports (:data:`PACKAGES`);
a machine without them (the H200 has torch, transformers 5, peft, accelerate and no network) stops
before any stage with the list of what is missing or at the wrong version and the ``pip download``
command for exactly those (docs/benchmarks.md, *The GPU check*, says how to carry them in).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import sys
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

START = time.perf_counter()  # wall_seconds in summary.json: imports included
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

STAGES = ("build_model", "load", "generate", "grpo", "save_adapter", "evaluate", "merge_reload")
SUMMARY_FILE = "summary.json"
# What the path imports beyond torch and its own dependencies, with the versions CI runs
# (requirements*.txt) and what the packages that need each one accept (their wheels' metadata).
# pyarrow: 21.0.0, the oldest datasets 4.3.0 accepts and 12 MB smaller than CI's 26.0.1.
PACKAGES = (  # (distribution, version to download, versions accepted)
    ("trl", "0.22.2", "==0.22.2"),
    ("transformers", "4.56.2", "==4.56.2"),
    ("peft", "0.18.1", "==0.18.1"),
    ("datasets", "4.3.0", "==4.3.0"),
    ("accelerate", "1.10.1", ">=1.4.0"),
    ("huggingface-hub", "0.36.2", ">=0.34.0,<1.0"),
    ("tokenizers", "0.22.2", ">=0.22.0,<=0.23.0"),
    ("safetensors", "0.8.0", ">=0.4.3"),
    ("numpy", "2.4.6", ">=2.0.2,<3"),
    ("packaging", "26.4", ">=20.9"),
    ("pyyaml", "6.0.4", ">=5.1"),
    ("regex", "2026.11.19", "!=2019.12.17"),
    ("tqdm", "4.70.1", ">=4.66.3"),
    ("psutil", "7.2.2", ""),
    ("fsspec", "2025.9.0", ">=2023.5.0,<=2025.9.0"),
    ("pyarrow", "21.0.0", ">=21.0.0"),
    ("pandas", "3.1.1", ""),
    ("python-dateutil", "4.0.0", ">=2.9.0"),
    ("tzdata", "2026.6", ""),
    ("dill", "0.4.0", ">=0.3.8,<0.4.1"),
    ("multiprocess", "0.70.16", "<0.70.17"),
    ("xxhash", "4.1.0", ""),
    ("requests", "2.34.2", ">=2.32.2"),
    ("charset-normalizer", "3.5.3", ">=2,<4"),
    ("urllib3", "2.8.0", ">=1.26,<3"),
    ("idna", "3.20", ">=2.8,<4"),
    ("certifi", "2026.10.19.post1", ">=2023.5.7"),
    ("httpx", "0.28.1", "<1.0.0"),
    ("httpcore", "1.0.9", "==1.*"),
    ("h11", "0.16.0", ">=0.16"),
    ("anyio", "4.16.0", ""),
    ("text2num", "3.1.0", "==3.1.0"),
    ("math-verify", "0.9.0", "==0.9.0"),
    ("latex2sympy2-extended", "1.11.0", "==1.11.0"),
    ("antlr4-python3-runtime", "4.13.2", ">=4.9.3,<=4.13.2"),
    ("matplotlib", "3.11.2", ">=3.8"),
    ("contourpy", "1.3.3", ">=1.0.1"),
    ("cycler", "0.12.1", ">=0.10"),
    ("fonttools", "4.68.0", ">=4.28.2"),
    ("kiwisolver", "1.5.1", ">=1.3.1"),
    ("pillow", "13.0.0", ">=9"),
    ("pyparsing", "3.3.3", ">=3"),
)
CARRY_DIR = "outputs/gpu_wheels"
# Largest per-token log-prob difference allowed between the merged-and-reloaded model and the adapter model.
MERGE_TOLERANCE = {"fp32": 1e-4, "bf16": 0.02, "fp16": 0.01}  # 16-bit: not yet run on a GPU


# ------------------------------------------------------------------------------------- preflight
def _installed_version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def missing_packages(lookup=_installed_version, packages=PACKAGES) -> list[tuple[str, str, str, str | None]]:
    """``[(distribution, version to download, accepted, installed or None)]`` for each of ``packages``
    that is not installed (``lookup(dist)`` is None) or whose installed version is not accepted.
    ``lookup`` defaults to ``importlib.metadata.version`` (None when absent); nothing else is imported.
    Without ``packaging`` (itself in ``packages``) only presence is checked."""
    try:
        from packaging.specifiers import SpecifierSet
    except ImportError:
        SpecifierSet = None

    found = []
    for dist, pin, accepted in packages:
        have = lookup(dist)
        checkable = have is not None and accepted and SpecifierSet is not None
        if have is None or (checkable and have not in SpecifierSet(accepted, prereleases=True)):
            found.append((dist, pin, accepted, have))
    return found


def download_command(missing, python: str | None = None) -> str:
    """The ``pip download`` command that fetches ``missing`` (from :func:`missing_packages`, or
    ``PACKAGES``) as wheels for Linux x86_64 and CPython ``python`` (e.g. ``"3.12"``; default this one)."""
    python = python or f"{sys.version_info.major}.{sys.version_info.minor}"
    pins = " ".join(f"{item[0]}=={item[1]}" for item in missing)
    platforms = " ".join(
        f"--platform {p}"
        for p in (
            "manylinux_2_28_x86_64",
            "manylinux_2_27_x86_64",
            "manylinux_2_24_x86_64",
            "manylinux_2_17_x86_64",
            "manylinux2014_x86_64",
            "manylinux_2_5_x86_64",
            "manylinux1_x86_64",
        )
    )
    return f"pip download --no-deps --only-binary=:all: --python-version {python} {platforms} -d {CARRY_DIR} {pins}"


def missing_message(missing, python: str | None = None) -> str:
    """What a machine lacks for the check and how to bring it in (printed before exiting 2)."""
    lines = [f"gpu_check: {len(missing)} package(s) missing or at a version the pinned stack does not accept:"]
    for dist, pin, accepted, have in missing:
        state = "missing" if have is None else f"installed {have}, needs {accepted}"
        lines.append(f"  {dist:<24} {state} (download {pin})")
    lines += [
        "On a machine with network, fetch them as wheels for this Python:",
        "  " + download_command(missing, python),
        f"then carry {CARRY_DIR}/ here and install it beside (not over) what is installed:",
        f"  pip install --no-deps --no-compile --target outputs/gpu_site {CARRY_DIR}/*.whl",
        "  PYTHONPATH=outputs/gpu_site python tools/gpu_check.py",
        "Sizes of every wheel: results/benchmarks/gpu_check_wheels.txt (docs/benchmarks.md, The GPU check).",
    ]
    return "\n".join(lines)


def wheel_sizes(folder) -> str:
    """A table of the ``*.whl`` files in ``folder``: MiB each, largest first, and the total."""
    wheels = sorted(Path(folder).glob("*.whl"), key=lambda p: -p.stat().st_size)
    if not wheels:
        raise FileNotFoundError(f"no .whl files in {folder}")
    rows = [f"{p.stat().st_size / 2**20:8.2f} MiB  {p.name}" for p in wheels]
    total = sum(p.stat().st_size for p in wheels) / 2**20
    return "\n".join(rows + [f"{total:8.2f} MiB  total, {len(wheels)} wheels"])


# ------------------------------------------------------------------------------------ tiny model
CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] "
    "+ '<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
    "{% endif %}"
)
TAGS = ("<reasoning>", "</reasoning>", "<answer>", "</answer>")


def build_tiny_model(path, seed: int = 0, vocab_size: int = 400):
    """Save a random 2-layer Qwen2 (hidden 64, 4 heads, 2 KV heads, tied embeddings) and a ChatML
    byte-level BPE tokenizer of about ``vocab_size`` tokens (trained on the system prompt and
    course-written problems, the XML tags as single tokens) in ``path``; returns ``path``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    from helpers.course_format import SYSTEM_PROMPT
    from helpers.data.problems import make_problems

    texts = [SYSTEM_PROMPT] + [p.question + "\n" + p.solution for p in make_problems(200, seed=seed)]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        texts,
        trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        model_input_names=["input_ids", "attention_mask"],
    )
    tokenizer.add_tokens(list(TAGS))
    tokenizer.chat_template = CHATML
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    path = Path(path)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


# --------------------------------------------------------------------------------------- checks
def sequence_logps(model, tokenizer, texts):
    """Per-token log-probs (float32, one 1-D tensor per text, no padding) of ``texts`` under ``model``."""
    import torch

    from helpers.grpo import per_token_logps

    out = []
    with torch.no_grad():
        for text in texts:
            ids = tokenizer(text, return_tensors="pt", add_special_tokens=False)["input_ids"].to(model.device)
            logits = model(input_ids=ids, use_cache=False).logits.float()
            out.append(per_token_logps(logits[:, :-1], ids[:, 1:])[0].cpu())
    return out


def max_diff(a, b) -> float:
    """Largest absolute difference between two lists of same-shaped tensors."""
    return max(float((x - y).abs().max()) for x, y in zip(a, b))


def lora_tensors(model) -> dict:
    """The LoRA A/B weights of a PEFT model by parameter name (adapter name dropped), on the CPU."""
    return {
        name.replace(".default", ""): p.detach().float().cpu()
        for name, p in model.named_parameters()
        if "lora_" in name
    }


# ------------------------------------------------------------------------------------------ run
class Stages:
    """Runs stages in order, timing each and recording its peak GPU memory; after a failure the
    rest are skipped and :attr:`failed` names the stage (``error`` holds the exception)."""

    def __init__(self, cuda: bool):
        self.cuda, self.times, self.failed, self.error = cuda, {}, None, None

    def run(self, name: str, fn):
        if self.failed:
            return None
        import torch

        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        started = time.perf_counter()
        try:
            result = fn()
            if self.cuda:
                torch.cuda.synchronize()
        except Exception as exc:  # report and stop; summary.json still gets written
            self.failed, self.error = name, f"{type(exc).__name__}: {exc}"
            print(f"\nSTAGE FAILED: {name}: {self.error}", file=sys.stderr)
            traceback.print_exc()
            return None
        seconds = time.perf_counter() - started
        peak = torch.cuda.max_memory_allocated() / 2**20 if self.cuda else None
        self.times[name] = {"seconds": round(seconds, 2), "peak_gpu_mib": None if peak is None else round(peak, 1)}
        print(
            f"[gpu_check] {name:<13} {seconds:7.2f} s   peak GPU memory "
            f"{'n/a on CPU' if peak is None else f'{peak:.1f} MiB'}",
            flush=True,
        )
        return result


def versions() -> dict:
    """Python's version and the installed versions of the packages that do the work."""
    dists = (
        "torch",
        "transformers",
        "trl",
        "peft",
        "accelerate",
        "datasets",
        "pyarrow",
        "tokenizers",
        "huggingface-hub",
    )
    return {"python": platform.python_version(), **{dist: _installed_version(dist) for dist in dists}}


def hardware(cuda: bool) -> dict:
    import torch

    from helpers.evaluation.provenance import machine
    from helpers.training.hardware import gpu_info

    gpu = gpu_info() if cuda else None
    return {
        "gpu": gpu.describe() if gpu else None,
        "cuda": torch.version.cuda if cuda else None,
        "machine": machine(),
    }


def check_profile(cuda: bool, steps: int = 3):
    """The ``cuda`` profile with 3 steps and a checkpoint at the last one, lr 1e-3 (module docstring);
    at smoke size without a GPU (4 completions of 16 tokens a step, 16 new tokens in evaluation)."""
    from helpers.training.profiles import PROFILES

    profile = PROFILES["cuda"].replace(max_steps=steps, save_steps=steps, learning_rate=1e-3, eval_questions=8)
    if not cuda:
        profile = profile.replace(
            name="cuda-smoke", num_generations=4, per_device_train_batch_size=4, max_completion_length=16
        )
    return profile


def run_check(out: Path, cuda: bool, commit: str | None = None) -> dict:
    """All stages into ``out``; returns the summary (:func:`main` writes it to ``out/summary.json``);
    the folders it names are relative to ``out``. ``commit``: recorded where the tree has no ``.git``."""
    from cpu_study.control_rewards import random_reward_func
    from helpers.course_format import make_prompt
    from helpers.data.problems import make_problems, problems_dataset
    from helpers.evaluation import adapters, scoring
    from helpers.evaluation.provenance import git_commit
    from helpers.rewards import REWARD_FUNCS
    from helpers.training import generation, models, trainer
    from helpers.training.profiles import precision

    profile = check_profile(cuda)
    summary = {
        "command": " ".join(["python", *sys.argv]),
        "commit": git_commit() or commit,
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "hardware": hardware(cuda),
        "versions": versions(),
        "profile": profile.name,
        "precision": precision(profile),
        "sizes": {
            "grpo_steps": profile.max_steps,
            "completions_per_step": profile.per_device_train_batch_size,
            "num_generations": profile.num_generations,
            "max_completion_tokens": profile.max_completion_length,
            "learning_rate": profile.learning_rate,
            "eval_questions": profile.eval_questions,
        },
    }
    stages, state = Stages(cuda), {}
    tiny_dir, run_dir = out / "tiny-qwen2", out / "grpo"
    prompts = [make_prompt(p.question) for p in make_problems(2, split="test", seed=1)]
    tokens = profile.max_completion_length

    def load():
        state["model"], state["tokenizer"] = models.load_model(profile, tiny_dir)
        model = state["model"]
        return {
            "dtype": str(next(model.parameters()).dtype),
            "device": str(model.device),
            "parameters": sum(p.numel() for p in model.parameters()),
            "trainable": sum(p.numel() for p in model.parameters() if p.requires_grad),
        }

    def generate():
        texts = generation.generate(state["model"], state["tokenizer"], prompts, max_new_tokens=tokens, temperature=0)
        return {"completions": len(texts), "characters": [len(t) for t in texts]}

    def grpo():
        dataset = problems_dataset(make_problems(profile.max_steps * 2, seed=2))
        run = trainer.train(
            profile,
            output_dir=run_dir,
            model=state["model"],
            tokenizer=state["tokenizer"],
            dataset=dataset,
            reward_funcs=[*REWARD_FUNCS, random_reward_func],
            resume=False,
        )
        state["run"] = run
        with open(run.metrics_csv, newline="") as f:
            rows = list(csv.DictReader(f))
        checkpoint = run_dir / f"checkpoint-{profile.max_steps}"
        if run.trainer.state.global_step != profile.max_steps or not (checkpoint / "optimizer.pt").exists():
            raise RuntimeError(f"{run.trainer.state.global_step} of {profile.max_steps} steps, or no {checkpoint}")
        return {
            "steps": run.trainer.state.global_step,
            "seconds_per_step": round(run.seconds_per_step, 2),
            "checkpoint": str(checkpoint.relative_to(out)),
            "metrics_rows": len(rows),
            "reward": [float(r["reward"]) for r in rows],
            "reward_std": [float(r["reward_std"]) for r in rows],
        }

    def save_adapter():
        adapter = state["run"].adapter_dir
        reloaded, _ = adapters.load_with_adapter(profile, adapter, model_path=tiny_dir)
        trained, saved = lora_tensors(state["model"]), lora_tensors(reloaded)
        if set(trained) != set(saved):
            raise RuntimeError(f"the saved adapter has {len(saved)} LoRA tensors, the model {len(trained)}")
        del reloaded
        moved = max(float(t.abs().max()) for n, t in trained.items() if "lora_B" in n)
        differs = max(float((trained[n] - saved[n]).abs().max()) for n in trained)
        if moved == 0 or differs > 1e-6:  # LoRA B starts at 0: GRPO moved nothing, or the file is not the model
            raise RuntimeError(f"LoRA B max |w| {moved} after GRPO, saved vs trained differ by {differs}")
        weights = adapter / "adapter_model.safetensors"
        return {
            "dir": str(adapter.relative_to(out)),
            "bytes": weights.stat().st_size,
            "lora_tensors": len(saved),
            "max_abs_lora_b": moved,
            "max_diff_saved_vs_trained": differs,
        }

    def evaluate():
        data = problems_dataset(make_problems(profile.eval_questions, split="test", seed=3))
        result = scoring.evaluate(
            state["model"],
            state["tokenizer"],
            data,
            n=profile.eval_questions,
            max_new_tokens=tokens,
            batch_size=8,
            desc="gpu_check eval",
        )
        keys = ("n", "accuracy", "format_rate_strict", "answer_rate", "mean_tokens", "seconds_per_question")
        if result.summary["n"] != profile.eval_questions:
            raise RuntimeError(f"{result.summary['n']} questions scored, not {profile.eval_questions}")
        return {k: result.summary[k] for k in keys} | {"records": len(result.records)}

    def merge_reload():
        model, tokenizer = state["model"], state["tokenizer"]
        adapter_texts = generation.generate(model, tokenizer, prompts, max_new_tokens=tokens, temperature=0)
        sequences = [t + c for t, c in zip(generation.chat_texts(tokenizer, prompts), adapter_texts)]
        adapter_logps = sequence_logps(model, tokenizer, sequences)
        with model.disable_adapter():
            base_logps = sequence_logps(model, tokenizer, sequences)
        merged_dir = adapters.save_merged(model, tokenizer, out / "merged")
        merged, merged_tok = adapters.load_merged(merged_dir, profile)
        merged_texts = generation.generate(merged, merged_tok, prompts, max_new_tokens=tokens, temperature=0)
        merged_logps = sequence_logps(merged, merged_tok, sequences)
        result = {
            "greedy_same": merged_texts == adapter_texts,
            "tokens_compared": sum(len(x) for x in adapter_logps),
            "max_logp_diff_merged_vs_adapter": max_diff(merged_logps, adapter_logps),
            "max_logp_diff_base_vs_adapter": max_diff(base_logps, adapter_logps),
            "tolerance": MERGE_TOLERANCE[summary["precision"]],
        }
        # fp32 must match token for token, within the tolerance. In 16 bits merging rounds W + BA, so a random
        # model's near-tied greedy choices may flip and the tolerance (not yet tried on a GPU) is only recorded;
        # there the merged model must still be nearer the adapter model than the base is (the LoRA was merged).
        diff = result["max_logp_diff_merged_vs_adapter"]
        result["within_tolerance"] = diff <= result["tolerance"]
        fp32 = summary["precision"] == "fp32"
        if diff >= result["max_logp_diff_base_vs_adapter"] / 2 or (
            fp32 and not (result["greedy_same"] and result["within_tolerance"])
        ):
            raise RuntimeError(f"the merged model does not reproduce the adapter model: {result}")
        return result

    summary["stages"] = stages.times
    steps = {
        "build_model": lambda: {"dir": build_tiny_model(tiny_dir).name},
        "load": load,
        "generate": generate,
        "grpo": grpo,
        "save_adapter": save_adapter,
        "evaluate": evaluate,
        "merge_reload": merge_reload,
    }
    for name in STAGES:
        result = stages.run(name, steps[name])
        if result is not None:
            summary[name] = result
    summary["failed_stage"], summary["error"] = stages.failed, stages.error
    summary["skipped_stages"] = list(STAGES[STAGES.index(stages.failed) + 1 :]) if stages.failed else []
    summary["peak_gpu_mib"] = (
        "n/a on CPU" if not cuda else max((s["peak_gpu_mib"] for s in stages.times.values()), default=None)
    )
    summary["total_seconds"] = round(sum(s["seconds"] for s in stages.times.values()), 2)
    return summary


def write_summary(out: Path, summary: dict) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / SUMMARY_FILE
    path.write_text(json.dumps(summary, indent=2, default=str) + "\n")
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "outputs" / "gpu-check"), help="folder for summary.json")
    parser.add_argument(
        "--download-command",
        action="store_true",
        help="print the pip download command for every package the check needs, and exit",
    )
    parser.add_argument("--python", help="CPython version the wheels are for (with --download-command)")
    parser.add_argument("--wheel-sizes", metavar="DIR", help="print the size of each wheel in DIR, and exit")
    parser.add_argument("--commit", help="the commit to record where the working tree has no .git (a copy)")
    args = parser.parse_args(argv)
    if args.download_command:
        print(download_command(PACKAGES, args.python))
        return 0
    if args.wheel_sizes:
        print(wheel_sizes(args.wheel_sizes))
        return 0
    out = Path(args.out)
    if _installed_version("torch") is None:
        print(
            "gpu_check: torch is not installed; install a CUDA build of torch (not carried: too large)", file=sys.stderr
        )
        write_summary(out, {"failed_stage": "preflight", "error": "torch is not installed"})
        return 2
    missing = missing_packages()
    if missing:
        print(missing_message(missing), file=sys.stderr)
        write_summary(
            out,
            {
                "failed_stage": "preflight",
                "error": "missing packages",
                "missing": [
                    {"distribution": d, "download": p, "accepted": a, "installed": h} for d, p, a, h in missing
                ],
                "versions": {"python": platform.python_version()},
            },
        )
        return 2
    import torch

    cuda = torch.cuda.is_available()
    print(f"[gpu_check] {'CUDA: ' + torch.cuda.get_device_name(0) if cuda else 'no GPU: CPU at smoke size'}")
    summary = run_check(out, cuda, args.commit)
    summary["wall_seconds"] = round(time.perf_counter() - START, 1)
    path = write_summary(out, summary)
    peak = summary["peak_gpu_mib"]
    print(
        f"[gpu_check] stages {summary['total_seconds']:.1f} s, {summary['wall_seconds']:.1f} s with imports; "
        "peak GPU memory "
        f"{f'{peak:.1f} MiB' if isinstance(peak, float) else peak}; wrote {path}"
    )
    if summary["failed_stage"]:
        print(f"[gpu_check] FAILED at stage {summary['failed_stage']}: {summary['error']}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
