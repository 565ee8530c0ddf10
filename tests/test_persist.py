"""Issue 10, 4: a run survives a Colab disconnect on Drive (a local folder stands for it here) or
on the Hub (faked), and notebook 06 finds the adapter from a local path, a Drive path or a Hub id."""

import sys
import types

import pytest

from helpers.persist import (drive_dir, locate_adapter, missing_adapter_help, output_dir, pull_adapter,
                             push_adapter)
from helpers.profiles import PROFILES


def make_adapter(folder):
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text('{"r": 64}')
    (folder / "adapter_model.safetensors").write_bytes(b"weights")
    return folder


@pytest.fixture
def no_drive_env(monkeypatch):
    monkeypatch.delenv("GRPO_DRIVE", raising=False)
    monkeypatch.delenv("GRPO_DRIVE_DIR", raising=False)


def test_runs_stay_local_unless_drive_is_asked_for(no_drive_env, tmp_path, monkeypatch):
    t4 = PROFILES["t4"]
    assert output_dir(t4, tmp_path) == tmp_path / "outputs" / "grpo-t4"
    drive = tmp_path / "drive-stand-in"
    monkeypatch.setenv("GRPO_DRIVE_DIR", str(drive))
    assert output_dir(t4, tmp_path) == drive / "outputs" / "grpo-t4" and drive.is_dir()
    assert output_dir(t4, tmp_path, drive=False) == tmp_path / "outputs" / "grpo-t4"


def test_drive_is_mounted_through_google_colab_on_first_use(no_drive_env, tmp_path, monkeypatch):
    mounted = []
    mount_point = tmp_path / "content" / "drive"

    def mount(path):
        mounted.append(path)
        (mount_point / "MyDrive").mkdir(parents=True)

    colab = types.ModuleType("google.colab")
    colab.drive = types.SimpleNamespace(mount=mount)
    monkeypatch.setitem(sys.modules, "google", types.ModuleType("google"))
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    monkeypatch.setattr("helpers.persist.DRIVE_MOUNT", mount_point)
    assert drive_dir() == mount_point / "MyDrive" / "grpo-course"
    assert drive_dir() == mount_point / "MyDrive" / "grpo-course"
    assert mounted == [str(mount_point)]  # once


def test_drive_outside_colab_says_what_to_do(no_drive_env, tmp_path, monkeypatch):
    monkeypatch.setattr("helpers.persist.DRIVE_MOUNT", tmp_path / "nothing")
    monkeypatch.setitem(sys.modules, "google.colab", None)
    with pytest.raises(RuntimeError, match="set GRPO_DRIVE_DIR"):
        drive_dir()


class FakeHub:
    """HfApi and snapshot_download on a local folder: every repo is a subfolder."""

    def __init__(self, root):
        self.root, self.calls = root, []

    def create_repo(self, repo_id, repo_type, private, exist_ok):
        self.calls.append(("create_repo", repo_id, private))
        (self.root / repo_id).mkdir(parents=True, exist_ok=exist_ok)

    def upload_folder(self, repo_id, repo_type, folder_path, commit_message):
        import shutil

        self.calls.append(("upload_folder", repo_id, folder_path))
        shutil.copytree(folder_path, self.root / repo_id, dirs_exist_ok=True)

    def snapshot_download(self, repo_id, repo_type, local_dir):
        import shutil

        if not (self.root / repo_id).exists():
            raise FileNotFoundError(f"404 Repository Not Found for {repo_id}")
        shutil.copytree(self.root / repo_id, local_dir, dirs_exist_ok=True)
        return local_dir


def test_adapter_round_trip_through_the_hub(tmp_path, monkeypatch):
    hub = FakeHub(tmp_path / "hub")
    adapter = make_adapter(tmp_path / "run" / "lora_adapter")
    assert push_adapter(adapter, "me/grpo-t4-lora", api=hub) == "https://huggingface.co/me/grpo-t4-lora"
    assert hub.calls[0] == ("create_repo", "me/grpo-t4-lora", True)  # private unless asked
    monkeypatch.setenv("GRPO_CACHE_DIR", str(tmp_path / "cache"))
    pulled = pull_adapter("me/grpo-t4-lora", download=hub.snapshot_download)
    assert pulled == tmp_path / "cache" / "adapters" / "me--grpo-t4-lora"
    assert (pulled / "adapter_model.safetensors").read_bytes() == b"weights"
    assert locate_adapter("me/grpo-t4-lora", download=hub.snapshot_download) == pulled


def test_bad_inputs_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="not a Hub repo id"):
        push_adapter(make_adapter(tmp_path / "a"), "no-owner", api=FakeHub(tmp_path))
    with pytest.raises(FileNotFoundError, match="not a saved LoRA adapter"):
        push_adapter(tmp_path, "me/x", api=FakeHub(tmp_path))


def test_notebook_06_takes_a_local_path_a_drive_path_or_a_hub_id(tmp_path, monkeypatch):
    local = make_adapter(tmp_path / "outputs" / "grpo-t4" / "lora_adapter")
    assert locate_adapter(local) == local and locate_adapter(str(local)) == local
    monkeypatch.setenv("GRPO_DRIVE_DIR", str(tmp_path / "drive"))
    on_drive = make_adapter(output_dir(PROFILES["t4"], tmp_path / "elsewhere") / "lora_adapter")
    assert locate_adapter(on_drive) == on_drive
    hub = FakeHub(tmp_path / "hub")
    with pytest.raises(FileNotFoundError) as missing:
        locate_adapter("me/never-pushed", download=hub.snapshot_download)
    assert "404 Repository Not Found" in str(missing.value)
    with pytest.raises(FileNotFoundError) as missing:
        locate_adapter(tmp_path / "nothing" / "here" / "lora_adapter", "t4")
    message = str(missing.value)
    assert message == missing_adapter_help(tmp_path / "nothing" / "here" / "lora_adapter", "t4")
    for step in ("run notebook 05 first", "USE_DRIVE = True", "GRPO_DRIVE=1", "HUB_REPO = 'your-name/grpo-t4-lora'",
                 "GRPO_ADAPTER", "/content/drive/MyDrive/grpo-course/outputs/grpo-t4/lora_adapter"):
        assert step in message, step
