"""Keeping a run past a Colab disconnect: Google Drive, the Hugging Face Hub, finding an adapter.

In Colab every notebook runs on its own runtime and ``/content`` is wiped when the runtime goes,
so notebook 06 never sees an adapter that notebook 05 left in ``/content``, and a multi-hour run
kept there is lost on any disconnect. Two places survive; both are opt-in:

* **Google Drive** (:func:`output_dir`): the run's folder, checkpoints included
  (:mod:`helpers.training` saves one every ``profile.save_steps`` steps and resumes from the
  newest), goes to ``/content/drive/MyDrive/grpo-course/outputs/grpo-<profile>``. Turned on by
  ``GRPO_DRIVE=1`` or ``output_dir(..., drive=True)``; Drive is mounted with
  ``google.colab.drive.mount`` on first use (Colab asks for permission). ``GRPO_DRIVE_DIR``
  points it at any folder instead (a synced folder on your machine; the tests use a temporary one).
* **The Hub** (:func:`push_adapter`, :func:`pull_adapter`): the adapter folder uploaded to a
  private model repo and downloaded again. A local folder is what vLLM loads a LoRA from, so
  pulling means downloading (``huggingface_hub.snapshot_download``), not
  ``PeftModel.from_pretrained(repo_id)``. The token comes from ``HF_TOKEN`` (in Colab, the
  ``HF_TOKEN`` secret) or ``huggingface-cli login``.

:func:`locate_adapter` turns what notebook 06 is given (a local folder, a Drive folder or a Hub
id) into a local adapter folder, or says exactly what to do when there is none.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

DRIVE_MOUNT = Path("/content/drive")
DRIVE_SUBDIR = "grpo-course"  # inside MyDrive
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")  # owner/name


def drive_requested() -> bool:
    """True when ``GRPO_DRIVE`` is 1/true/yes or ``GRPO_DRIVE_DIR`` is set."""
    return (os.environ.get("GRPO_DRIVE", "").lower() in ("1", "true", "yes")
            or bool(os.environ.get("GRPO_DRIVE_DIR")))


def drive_dir() -> Path:
    """The course's folder on Google Drive, created if missing: ``$GRPO_DRIVE_DIR`` if set, else
    ``/content/drive/MyDrive/grpo-course``, mounting Drive first when it is not mounted.

    Raises:
        RuntimeError: not in Colab and no ``GRPO_DRIVE_DIR``.
    """
    if os.environ.get("GRPO_DRIVE_DIR"):
        path = Path(os.environ["GRPO_DRIVE_DIR"])
    else:
        if not (DRIVE_MOUNT / "MyDrive").is_dir():
            try:
                from google.colab import drive
            except ImportError:
                raise RuntimeError("Google Drive can only be mounted in Colab; set GRPO_DRIVE_DIR to "
                                   "a folder to keep runs there instead") from None
            drive.mount(str(DRIVE_MOUNT))
        path = DRIVE_MOUNT / "MyDrive" / DRIVE_SUBDIR
    path.mkdir(parents=True, exist_ok=True)
    return path


def output_dir(profile, root, drive: bool | None = None) -> Path:
    """A run's folder: ``<drive_dir()>/outputs/grpo-<profile>`` with Drive on, else
    ``<root>/outputs/grpo-<profile>``. ``drive=None`` follows :func:`drive_requested`."""
    on_drive = drive_requested() if drive is None else drive
    return (drive_dir() if on_drive else Path(root)) / "outputs" / f"grpo-{profile.name}"


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
    from .comparison import check_adapter_dir

    adapter_dir = check_adapter_dir(adapter_dir)
    _check_hub_id(repo_id)
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi()
    api.create_repo(repo_id, repo_type="model", private=private, exist_ok=True)
    api.upload_folder(repo_id=repo_id, repo_type="model", folder_path=str(adapter_dir),
                      commit_message="LoRA adapter from the GRPO course")
    return f"https://huggingface.co/{repo_id}"


def pull_adapter(repo_id: str, dest=None, *, download=None) -> Path:
    """Download an adapter pushed with :func:`push_adapter` into ``dest`` (default
    ``<cache_dir>/adapters/<owner>--<name>``, see :func:`helpers.models.cache_dir`); returns it.

    ``download``: ``huggingface_hub.snapshot_download`` or a stand-in with its signature.

    Raises:
        ValueError: ``repo_id`` is not ``owner/name``.
        FileNotFoundError: the download holds no adapter.
    """
    from .comparison import check_adapter_dir
    from .models import cache_dir

    _check_hub_id(repo_id)
    if download is None:
        from huggingface_hub import snapshot_download as download
    dest = Path(dest) if dest is not None else cache_dir() / "adapters" / repo_id.replace("/", "--")
    download(repo_id=repo_id, repo_type="model", local_dir=str(dest))
    return check_adapter_dir(dest)


def missing_adapter_help(spec, profile_name: str) -> str:
    """What to do when notebook 06 finds no adapter at ``spec`` (one message, three ways)."""
    drive = f"/content/drive/MyDrive/{DRIVE_SUBDIR}/outputs/grpo-{profile_name}/lora_adapter"
    return (f"No LoRA adapter at {spec}. In Colab each notebook has its own runtime and /content is "
            "wiped when it disconnects, so bring the adapter notebook 05 trained in one of three ways:\n"
            "  1. in this same runtime, run notebook 05 first (it saves outputs/grpo-"
            f"{profile_name}/lora_adapter);\n"
            "  2. Google Drive: run notebook 05 with USE_DRIVE = True in its settings cell (or "
            f"GRPO_DRIVE=1), then here set GRPO_DRIVE=1 as well (reads {drive});\n"
            "  3. the Hub: run notebook 05 with HUB_REPO = 'your-name/grpo-" f"{profile_name}-lora' "
            "(and an HF_TOKEN secret with write access), then here set GRPO_ADAPTER to that repo id.")


def locate_adapter(spec, profile_name: str = "t4", *, download=None) -> Path:
    """A local adapter folder for ``spec``: an existing folder holding an adapter (local or on a
    mounted Drive) as it is; an ``owner/name`` that is not a local path, pulled from the Hub
    (:func:`pull_adapter`).

    Raises:
        FileNotFoundError: nothing found, or the Hub download failed; the message is
            :func:`missing_adapter_help`.
    """
    from .comparison import check_adapter_dir

    path = Path(str(spec)).expanduser()
    if path.exists():
        return check_adapter_dir(path)
    if HUB_ID.match(str(spec)):
        try:
            return pull_adapter(str(spec), download=download)
        except Exception as error:  # missing or private repo, no network, no adapter in it
            raise FileNotFoundError(f"{missing_adapter_help(spec, profile_name)}\n(the Hub said: "
                                    f"{type(error).__name__}: {error})") from error
    raise FileNotFoundError(missing_adapter_help(spec, profile_name))
