"""A run survives a Colab disconnect on Drive (a local folder stands for it here) or
on the Hub (faked), and notebook 06 finds the adapter from a local path, a Drive path or a Hub id."""

import sys
import types

import pytest

from helpers.colab.persist import (
    drive_cost,
    drive_default,
    drive_dir,
    locate_adapter,
    merged_dir,
    missing_adapter_help,
    on_drive,
    output_dir,
    pull_adapter,
    push_adapter,
)
from helpers.training.profiles import PROFILES


def make_adapter(folder):
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text('{"r": 64}')
    (folder / "adapter_model.safetensors").write_bytes(b"weights")
    return folder


@pytest.fixture
def no_drive_env(monkeypatch):
    monkeypatch.delenv("GRPO_DRIVE", raising=False)
    monkeypatch.delenv("GRPO_DRIVE_DIR", raising=False)


@pytest.fixture
def colab(monkeypatch, tmp_path):
    """A fake google.colab whose drive.mount makes <tmp>/content/drive/MyDrive; the mounts it saw."""
    mounted = []
    mount_point = tmp_path / "content" / "drive"

    def mount(path):
        mounted.append(path)
        (mount_point / "MyDrive").mkdir(parents=True)

    module = types.ModuleType("google.colab")
    module.drive = types.SimpleNamespace(mount=mount)
    monkeypatch.setitem(sys.modules, "google", types.ModuleType("google"))
    monkeypatch.setitem(sys.modules, "google.colab", module)
    monkeypatch.setattr("helpers.colab.persist.DRIVE_MOUNT", mount_point)
    return types.SimpleNamespace(mounted=mounted, mount_point=mount_point)


def test_runs_stay_local_unless_drive_is_asked_for(no_drive_env, tmp_path, monkeypatch):
    t4 = PROFILES["t4"]
    assert output_dir(t4, tmp_path) == tmp_path / "outputs" / "grpo-t4"
    drive = tmp_path / "drive-stand-in"
    monkeypatch.setenv("GRPO_DRIVE_DIR", str(drive))
    assert output_dir(t4, tmp_path) == drive / "outputs" / "grpo-t4" and drive.is_dir()
    assert output_dir(t4, tmp_path, drive=False) == tmp_path / "outputs" / "grpo-t4"


def test_drive_is_mounted_through_google_colab_on_first_use(no_drive_env, colab):
    assert drive_dir() == colab.mount_point / "MyDrive" / "grpo-course"
    assert drive_dir() == colab.mount_point / "MyDrive" / "grpo-course"
    assert colab.mounted == [str(colab.mount_point)]  # once


def test_in_colab_a_gpu_profile_keeps_its_run_on_drive_by_default(no_drive_env, colab, tmp_path, monkeypatch):
    """A multi-hour GPU run in Colab lost everything on a disconnect unless someone had
    set USE_DRIVE; now Drive is the default there, GRPO_DRIVE=0 turns it off, the CPU run stays local."""
    t4, cpu = PROFILES["t4"], PROFILES["cpu"]
    assert drive_default(t4) and not drive_default(cpu)
    assert output_dir(t4, tmp_path) == colab.mount_point / "MyDrive" / "grpo-course" / "outputs" / "grpo-t4"
    assert output_dir(cpu, tmp_path) == tmp_path / "outputs" / "grpo-cpu"
    monkeypatch.setenv("GRPO_DRIVE", "0")
    assert not drive_default(t4) and output_dir(t4, tmp_path) == tmp_path / "outputs" / "grpo-t4"
    monkeypatch.setenv("GRPO_DRIVE", "1")
    assert drive_default(cpu)
    monkeypatch.delitem(sys.modules, "google.colab")
    monkeypatch.delenv("GRPO_DRIVE")
    assert not drive_default(t4)  # outside Colab nothing goes to Drive unless asked


def test_notebook_06_mounts_drive_for_a_drive_path_on_a_fresh_runtime(no_drive_env, colab):
    """GRPO_ADAPTER=/content/drive/... without GRPO_DRIVE=1 never mounted Drive, so the
    adapter notebook 05 left there was 'not found'."""
    adapter = colab.mount_point / "MyDrive" / "grpo-course" / "outputs" / "grpo-t4" / "lora_adapter"
    calls = colab.mounted

    def mount_with_the_run_on_it(path):  # Drive, once mounted, holds 05's adapter
        calls.append(path)
        make_adapter(adapter)

    sys.modules["google.colab"].drive.mount = mount_with_the_run_on_it
    assert locate_adapter(adapter, "t4") == adapter and calls == [str(colab.mount_point)]
    assert locate_adapter(str(adapter), "t4") == adapter and len(calls) == 1  # mounted once


def test_a_merged_model_goes_to_local_disk_when_the_adapter_is_on_drive(no_drive_env, tmp_path, monkeypatch, colab):
    """Notebook 06 wrote the 6.2 GB merged model beside the adapter, into the Drive run folder."""
    root = tmp_path / "content" / "grpo-course"
    on_mount = colab.mount_point / "MyDrive" / "grpo-course" / "outputs" / "grpo-t4" / "lora_adapter"
    assert on_drive(on_mount) and not on_drive(root / "outputs")
    assert merged_dir(on_mount, root) == root / "outputs" / "grpo-t4" / "merged"
    local = root / "outputs" / "grpo-cpu" / "lora_adapter"
    assert merged_dir(local, root) == local.parent / "merged"
    monkeypatch.setenv("GRPO_DRIVE_DIR", str(tmp_path / "synced"))  # a Drive stand-in outside /content/drive
    elsewhere = tmp_path / "synced" / "outputs" / "grpo-t4" / "lora_adapter"
    assert on_drive(elsewhere) and merged_dir(elsewhere, root) == root / "outputs" / "grpo-t4" / "merged"


def test_what_a_t4_run_costs_on_drive():
    """The estimate notebook 05 prints: Qwen2.5-3B (36 layers, hidden 2048, MLP 11008, 2 KV heads of
    128) with LoRA rank 64 on the seven projections, 8-bit AdamW, a checkpoint every 25 of 250 steps."""
    per_layer = 64 * (2 * (2048 + 2048) + 2 * (2048 + 256) + 3 * (2048 + 11008))
    n = 36 * per_layer
    assert n == 119_734_272
    text = drive_cost(PROFILES["t4"], n)
    assert f"10 checkpoints of {6 * n / 1e9:.2f} GB, 2 kept (1.44 GB), 8 probably in Drive's trash" in text
    assert f"({8 * 6 * n / 1e9:.1f} GB until you empty it)" in text and f"{(60 + 4) * n / 1e9:.1f} GB in all" in text
    assert "0 checkpoints" in drive_cost(PROFILES["cpu"], 1_000)  # the CPU run saves none
    with pytest.raises(ValueError, match="no size known for optimizer 'sgd'"):
        drive_cost(PROFILES["t4"].replace(optim="sgd"), n)


def test_drive_outside_colab_says_what_to_do(no_drive_env, tmp_path, monkeypatch):
    monkeypatch.setattr("helpers.colab.persist.DRIVE_MOUNT", tmp_path / "nothing")
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
    for step in (
        "run notebook 05 first",
        "USE_DRIVE = True",
        "the default in Colab on a GPU",
        "GRPO_DRIVE=1",
        "HUB_REPO = 'your-name/grpo-t4-lora'",
        "set ADAPTER (or GRPO_ADAPTER)",
        "/content/drive/MyDrive/grpo-course/outputs/grpo-t4/lora_adapter",
    ):
        assert step in message, step
