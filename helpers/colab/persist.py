"""A Colab run: keeping it past a disconnect (Google Drive, the Hugging Face Hub, finding an adapter),
and what it costs on a T4 (:func:`t4_estimates`, :func:`drive_cost`).

In Colab every notebook runs on its own runtime and ``/content`` is wiped when the runtime goes, so
notebook 06 never sees an adapter notebook 05 left there. Two places survive:

* **Google Drive** (:func:`output_dir`): the run's folder, checkpoints included (the last
  :data:`DRIVE_CHECKPOINTS` kept; training resumes from the newest that loads), under
  ``/content/drive/MyDrive/grpo-course/outputs/grpo-<profile>``. On by default in Colab for a profile that
  saves checkpoints (:func:`drive_default`); ``GRPO_DRIVE_DIR`` points it at any folder instead (a synced
  folder, the tests' temporary one). Merged models never go there (:func:`merged_dir`).
* **The Hub** (:func:`push_adapter`, :func:`pull_adapter`): the adapter folder in a private model repo,
  downloaded to a local folder again (vLLM loads a LoRA from disk). The token comes from ``HF_TOKEN``
  (in Colab, the ``HF_TOKEN`` secret) or ``huggingface-cli login``.

:func:`locate_adapter` turns what notebook 06 is given (a local folder, a Drive folder or a Hub id) into a
local adapter folder (:func:`check_adapter_dir`), or says exactly what to do when there is none.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

DRIVE_MOUNT = Path("/content/drive")
DRIVE_SUBDIR = "grpo-course"  # inside MyDrive
# Checkpoints kept on Drive (save_total_limit): two, so that a newest one cut off mid-upload (a disconnect)
# leaves the one before to resume from; each one rotated out probably goes to Drive's trash (drive_cost).
DRIVE_CHECKPOINTS = 2
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")  # owner/name
TRUE, FALSE = ("1", "true", "yes"), ("0", "false", "no")


def check_adapter_dir(adapter_dir) -> Path:
    """The adapter folder as a ``Path``; ``FileNotFoundError`` unless it holds a PEFT adapter."""
    path = Path(adapter_dir)
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        if not (path / name).exists():
            raise FileNotFoundError(
                f"{path / name} not found: {path} is not a saved LoRA adapter "
                "(train one with notebook 05 or `python -m helpers train`)"
            )
    return path


def drive_default(profile) -> bool:
    """Whether a run's folder goes to Drive unless the notebook says otherwise (its ``USE_DRIVE``):
    ``GRPO_DRIVE`` when it is 1/0 (true/false, yes/no); else True when ``GRPO_DRIVE_DIR`` is set;
    else True in Colab for a profile that saves checkpoints (``save_steps > 0``: the GPU profiles,
    runs of hours that a disconnect would otherwise lose), False elsewhere."""
    flag = os.environ.get("GRPO_DRIVE", "").lower()
    if flag in TRUE + FALSE:
        return flag in TRUE
    import sys

    return bool(os.environ.get("GRPO_DRIVE_DIR")) or ("google.colab" in sys.modules and profile.save_steps > 0)


def mount_drive() -> Path:
    """Mount Google Drive at ``/content/drive`` unless it is mounted; returns ``MyDrive``.

    Raises:
        RuntimeError: not in Colab (then set ``GRPO_DRIVE_DIR``).
    """
    if not (DRIVE_MOUNT / "MyDrive").is_dir():
        try:
            from google.colab import drive
        except ImportError:
            raise RuntimeError(
                "Google Drive can only be mounted in Colab; set GRPO_DRIVE_DIR to a folder to keep runs there instead"
            ) from None
        drive.mount(str(DRIVE_MOUNT))
    return DRIVE_MOUNT / "MyDrive"


def drive_dir() -> Path:
    """The course's folder on Google Drive, created if missing: ``$GRPO_DRIVE_DIR`` if set, else
    ``/content/drive/MyDrive/grpo-course``, mounting Drive first when it is not mounted.

    Raises:
        RuntimeError: not in Colab and no ``GRPO_DRIVE_DIR``.
    """
    path = Path(os.environ["GRPO_DRIVE_DIR"]) if os.environ.get("GRPO_DRIVE_DIR") else mount_drive() / DRIVE_SUBDIR
    path.mkdir(parents=True, exist_ok=True)
    return path


def on_drive(path) -> bool:
    """True when ``path`` lies under ``/content/drive`` or under ``$GRPO_DRIVE_DIR``."""
    roots = [DRIVE_MOUNT, *([Path(os.environ["GRPO_DRIVE_DIR"])] if os.environ.get("GRPO_DRIVE_DIR") else [])]
    path = Path(path).expanduser().absolute()
    return any(path == r.absolute() or r.absolute() in path.parents for r in roots)


def output_dir(profile, root, drive: bool | None = None) -> Path:
    """A run's folder: ``<drive_dir()>/outputs/grpo-<profile>`` with Drive on, else
    ``<root>/outputs/grpo-<profile>``. ``drive=None`` follows :func:`drive_default`."""
    use_drive = drive_default(profile) if drive is None else drive
    return (drive_dir() if use_drive else Path(root)) / "outputs" / f"grpo-{profile.name}"


def merged_dir(adapter_dir, root) -> Path:
    """Where notebook 06 writes the merged model of the adapter in ``adapter_dir``: beside it
    (``<run>/merged``), except for an adapter on Drive, whose merged model goes to local disk,
    ``<root>/outputs/<run>/merged`` (``root``: ``/content/grpo-course`` in Colab): a merged 16-bit
    3B model is 6.2 GB, much of the 15 GB a free Drive holds, and slow to write through its mount."""
    adapter_dir = Path(adapter_dir)
    if on_drive(adapter_dir):
        return Path(root) / "outputs" / adapter_dir.parent.name / "merged"
    return adapter_dir.parent / "merged"


OPTIMIZER_BYTES = {"adamw_8bit": 2, "paged_adamw_8bit": 2, "adamw_torch": 8}  # AdamW's 2 moments per weight


def drive_cost(profile, lora_parameters: int) -> str:
    """What one training run of ``profile`` writes to Drive, in GB (1e9 bytes), as a sentence: an estimate
    from sizes, not measured. A checkpoint holds the LoRA weights in fp32 (4 bytes a parameter) and AdamW's
    two moments (:data:`OPTIMIZER_BYTES`), plus a few kB of state. One every ``save_steps`` steps, the last
    :data:`DRIVE_CHECKPOINTS` kept (the T4: 2 x 0.72 GB); the others are deleted through the mount and
    probably count in Drive's trash until it is emptied (or 30 days). The final adapter adds 4 bytes a parameter.

    Raises:
        ValueError: ``profile.optim`` is not in :data:`OPTIMIZER_BYTES`.
    """
    if profile.optim not in OPTIMIZER_BYTES:
        raise ValueError(f"no size known for optimizer {profile.optim!r}; known: {sorted(OPTIMIZER_BYTES)}")
    checkpoint = lora_parameters * (4 + OPTIMIZER_BYTES[profile.optim]) / 1e9
    written = profile.max_steps // profile.save_steps if profile.save_steps > 0 else 0
    kept, adapter = min(written, DRIVE_CHECKPOINTS), 4 * lora_parameters / 1e9
    return (
        f"On Drive (estimate): {written} checkpoints of {checkpoint:.2f} GB, {kept} kept ({kept * checkpoint:.2f} GB), "
        f"{written - kept} probably in Drive's trash ({(written - kept) * checkpoint:.1f} GB until you "
        f"empty it), plus the {adapter:.2f} GB adapter: {written * checkpoint + adapter:.1f} GB in all"
    )


def _check_hub_id(repo_id: str) -> str:
    if not HUB_ID.match(repo_id or ""):
        raise ValueError(f"{repo_id!r} is not a Hub repo id of the form 'owner/name'")
    return repo_id


def push_adapter(adapter_dir, repo_id: str, *, private: bool = True, api=None) -> str:
    """Upload a saved LoRA adapter folder (weights, config, tokenizer) to the Hub model repo
    ``repo_id``, created (private by default) if missing. Returns the repo's URL.

    ``api``: a ``huggingface_hub.HfApi`` (default: a new one, which finds the token itself).

    Raises:
        FileNotFoundError: ``adapter_dir`` holds no adapter.
        ValueError: ``repo_id`` is not ``owner/name``.
    """
    adapter_dir = check_adapter_dir(adapter_dir)
    _check_hub_id(repo_id)
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi()
    api.create_repo(repo_id, repo_type="model", private=private, exist_ok=True)
    api.upload_folder(
        repo_id=repo_id,
        repo_type="model",
        folder_path=str(adapter_dir),
        commit_message="LoRA adapter from the GRPO course",
    )
    return f"https://huggingface.co/{repo_id}"


def pull_adapter(repo_id: str, dest=None, *, download=None) -> Path:
    """Download an adapter pushed with :func:`push_adapter` into ``dest`` (default
    ``<cache_dir>/adapters/<owner>--<name>``, see :func:`helpers.training.models.cache_dir`); returns it.

    ``download``: ``huggingface_hub.snapshot_download`` or a stand-in with its signature.

    Raises:
        ValueError: ``repo_id`` is not ``owner/name``.
        FileNotFoundError: the download holds no adapter.
    """
    from helpers.training.models import cache_dir

    _check_hub_id(repo_id)
    if download is None:
        from huggingface_hub import snapshot_download as download
    dest = Path(dest) if dest is not None else cache_dir() / "adapters" / repo_id.replace("/", "--")
    download(repo_id=repo_id, repo_type="model", local_dir=str(dest))
    return check_adapter_dir(dest)


def missing_adapter_help(spec, profile_name: str) -> str:
    """What to do when notebook 06 finds no adapter at ``spec`` (one message, three ways)."""
    drive = f"/content/drive/MyDrive/{DRIVE_SUBDIR}/outputs/grpo-{profile_name}/lora_adapter"
    return (
        f"No LoRA adapter at {spec}. In Colab each notebook has its own runtime and /content is "
        "wiped when it disconnects, so bring the adapter notebook 05 trained in one of three ways:\n"
        "  1. in this same runtime, run notebook 05 first (it saves outputs/grpo-"
        f"{profile_name}/lora_adapter);\n"
        "  2. Google Drive: run notebook 05 with USE_DRIVE = True in its settings cell (the default "
        f"in Colab on a GPU; or GRPO_DRIVE=1), then here USE_DRIVE = True as well (reads {drive});\n"
        "  3. the Hub: run notebook 05 with HUB_REPO = 'your-name/grpo-"
        f"{profile_name}-lora' "
        "(and an HF_TOKEN secret with write access), then here set ADAPTER (or GRPO_ADAPTER) to "
        "that repo id."
    )


def locate_adapter(spec, profile_name: str = "t4", *, download=None) -> Path:
    """A local adapter folder for ``spec``: an existing folder holding an adapter (local or on
    Drive; a path under ``/content/drive`` mounts Drive first, :func:`mount_drive`) as it is; an
    ``owner/name`` that is not a local path, pulled from the Hub (:func:`pull_adapter`).

    Raises:
        FileNotFoundError: nothing found, or the Hub download failed; the message is
            :func:`missing_adapter_help`.
        RuntimeError: a ``/content/drive`` path outside Colab (:func:`mount_drive`).
    """
    path = Path(str(spec)).expanduser()
    if path.absolute() != DRIVE_MOUNT and DRIVE_MOUNT in path.absolute().parents:
        mount_drive()  # a fresh runtime: notebook 06 given notebook 05's Drive folder
    if path.exists():
        return check_adapter_dir(path)
    if HUB_ID.match(str(spec)):
        try:
            return pull_adapter(str(spec), download=download)
        except Exception as error:  # missing or private repo, no network, no adapter in it
            raise FileNotFoundError(
                f"{missing_adapter_help(spec, profile_name)}\n(the Hub said: {type(error).__name__}: {error})"
            ) from error
    raise FileNotFoundError(missing_adapter_help(spec, profile_name))


# ------------------------------------------------------- what a T4 run costs in time
# Estimates: nothing in this course has run on a T4 yet. The one measured number is Unsloth's Qwen2.5 (3B)
# GRPO notebook for a free Colab T4 (unslothai/notebooks, nb/Qwen2.5_(3B)-GRPO.ipynb, its saved output):
# 250 steps in 1:40:29, 24.1 s a step, at the t4 profile's sizes (4-bit Qwen2.5-3B-Instruct, vLLM rollouts,
# LoRA rank 64, 8 completions a step) but with completions cut at 200 tokens where the t4 profile allows
# 512. So the measured time is a lower bound (for its own, older stack: see SOURCE) and the same scaled by
# 512 / 200 an upper one. t4_estimates() is the table docs/t4.md and notebooks 05/06 quote
# (``python -m helpers.colab.persist`` prints it); everything else is assumed and says so.
UNSLOTH_T4_STEPS = 250
UNSLOTH_T4_SECONDS = 1 * 3600 + 40 * 60 + 29  # 1:40:29
UNSLOTH_T4_COMPLETIONS_PER_STEP = 8
UNSLOTH_T4_MAX_COMPLETION = 200  # the run's max_completion_length
SOURCE = (
    "Unsloth's Qwen2.5 (3B) GRPO Colab T4 notebook: 250 steps in 1:40:29 "
    "(unslothai/notebooks, nb/Qwen2.5_(3B)-GRPO.ipynb; its saved run used Unsloth 2025.2.4 and vLLM 0.7.1's "
    "V0 engine without standby, not the pinned vLLM 0.11.2, which sleeps and wakes at every step)"
)
# Not measured anywhere: guesses, labelled as such wherever they are quoted.
ASSUMED_INSTALL_S = 5 * 60  # pip: Unsloth + vLLM + torch 2.9 wheels, 4-5 GB
ASSUMED_VLLM_START_S = 3 * 60  # load the 4-bit weights, profile memory, capture CUDA graphs


def seconds_per_step(max_completion_length: int = UNSLOTH_T4_MAX_COMPLETION) -> float:
    """Seconds per GRPO step on a T4: Unsloth's measured 6029 s / 250 = 24.1 s at its 200-token cap;
    for a longer cap the same scaled by ``max_completion_length / 200``, an upper bound (it assumes
    every completion runs to the cap; time grows at most linearly with the tokens generated and
    trained). A shorter cap returns the measured 24.1 s (not less: not measured).

    Raises:
        ValueError: ``max_completion_length < 1``.
    """
    if max_completion_length < 1:
        raise ValueError(f"max_completion_length must be >= 1, got {max_completion_length}")
    measured = UNSLOTH_T4_SECONDS / UNSLOTH_T4_STEPS
    return measured * max(1.0, max_completion_length / UNSLOTH_T4_MAX_COMPLETION)


def generation_upper_bound_s(completions: int, max_completion_length: int = UNSLOTH_T4_MAX_COMPLETION) -> float:
    """An upper bound on the seconds vLLM takes for ``completions`` of up to ``max_completion_length``
    tokens: a training step generates 8 completions *and* trains on them in :func:`seconds_per_step`,
    so 8 completions take at most that; a call of 256 prompts is assumed no slower per completion
    (vLLM runs them concurrently, so expect several times less; not measured).

    Raises:
        ValueError: ``completions < 0``.
    """
    if completions < 0:
        raise ValueError(f"completions must be >= 0, got {completions}")
    return completions / UNSLOTH_T4_COMPLETIONS_PER_STEP * seconds_per_step(max_completion_length)


def hms(seconds: float) -> str:
    """``5400`` -> ``"1 h 30 min"``; under an hour ``"12 min"`` (rounded to the minute)."""
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def t4_estimates(
    train_steps: int = 250, eval_completions_06: int = 2 * 1319, max_completion_length: int | None = None
) -> dict[str, str]:
    """Estimated T4 times, each labelled with where it comes from.

    ``train_steps``: the ``t4`` profile's ``max_steps``; ``eval_completions_06``: notebook 06's
    sampled evaluation, base and base + LoRA on the 1,319 GSM8K test questions;
    ``max_completion_length``: default the ``t4`` profile's cap (512; Unsloth's measured run had 200).
    """
    if max_completion_length is None:
        from helpers.training.profiles import T4

        max_completion_length = T4.max_completion_length
    start = ASSUMED_INSTALL_S + ASSUMED_VLLM_START_S
    measured, capped = seconds_per_step(), seconds_per_step(max_completion_length)
    return {
        "install and vLLM start-up": f"about {hms(start)} (assumed, not measured)",
        "notebook 05, GRPO training": (
            f"between {hms(train_steps * measured)} and {hms(train_steps * capped)} for {train_steps} steps "
            f"(estimate: {measured:.1f} s a step, {SOURCE}, with completions cut at "
            f"{UNSLOTH_T4_MAX_COMPLETION} tokens, a lower bound for that stack only; {capped:.1f} s if every "
            f"completion ran to the profile's {max_completion_length}, an upper bound)"
        ),
        "notebook 06, section 5": (
            f"at most {hms(generation_upper_bound_s(eval_completions_06, max_completion_length))} for "
            f"{eval_completions_06:,} completions of up to {max_completion_length} tokens (upper bound from "
            f"the same run: 8 completions take at most one step, {capped:.1f} s at this cap; likely several "
            "times less with 256 prompts a call, not measured)"
        ),
    }


if __name__ == "__main__":
    for stage, text in t4_estimates().items():
        print(f"{stage}: {text}")
