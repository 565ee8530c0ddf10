"""The Colab install (issue 10, 7): one stack per GPU, the runtime's numpy/pillow pinned, torchao
below 0.18, and a stop (not a print) when the kernel must restart."""

import importlib.metadata
import subprocess
import types
from pathlib import Path

import pytest

from helpers.colab import INSTALL_CELL
from helpers.hardware import GPU
from helpers.install import (MARKER, RestartRequired, choose_stack, gpu_from_smi, install_once, pip_commands,
                             runtime_pins)
from helpers.models import standby_gpu_memory_utilization

REPO = Path(__file__).resolve().parent.parent


def requirement_lines(name: str) -> list[str]:
    """A requirements file's requirement lines, ``-r`` includes followed."""
    lines = []
    for line in (REPO / name).read_text().splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("-r "):
            lines += requirement_lines(line[3:].strip())
        elif line:
            lines.append(line)
    return lines


def installed_requirements(stack: str) -> list[str]:
    lines = []
    for cmd in pip_commands(stack):
        args = cmd[cmd.index("install") + 1:]
        for i, arg in enumerate(args):
            if arg == "-r":
                lines += requirement_lines(args[i + 1])
            elif not arg.startswith("-") and (i == 0 or args[i - 1] != "-r"):
                lines.append(arg)
    return lines


@pytest.mark.parametrize("gpu, env, stack", [
    (GPU("Tesla T4", (7, 5), 14.7), {}, "unsloth"),
    (GPU("NVIDIA L4", (8, 9), 22.5), {}, "unsloth"),
    (GPU("Tesla V100-SXM2-16GB", (7, 0), 15.8), {}, "trl"),
    (None, {}, "cpu"),
    (GPU("Tesla T4", (7, 5), 14.7), {"GRPO_PROFILE": "cuda"}, "trl"),
    (GPU("Tesla T4", (7, 5), 14.7), {"GRPO_STACK": "trl"}, "trl"),
])
def test_one_stack_per_machine(gpu, env, stack, monkeypatch):
    monkeypatch.delenv("GRPO_PROFILE", raising=False)
    monkeypatch.delenv("GRPO_STACK", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert choose_stack(gpu) == stack


def test_unknown_stack_is_an_error(monkeypatch):
    monkeypatch.setenv("GRPO_STACK", "conda")
    with pytest.raises(ValueError, match="GRPO_STACK='conda'"):
        choose_stack(None)
    with pytest.raises(ValueError, match="unknown stack"):
        pip_commands("conda")


def test_plain_trl_stack_needs_neither_unsloth_nor_vllm():
    trl = installed_requirements("trl")
    assert any(line.startswith("trl==") for line in trl) and any(line.startswith("peft==") for line in trl)
    assert not [line for line in trl if line.split("=")[0].split("<")[0].split(">")[0].lower()
                in ("unsloth", "unsloth_zoo", "vllm", "bitsandbytes", "torch")]
    unsloth = installed_requirements("unsloth")
    assert {"unsloth==2026.10.9", "unsloth_zoo==2026.10.9", "vllm==0.11.2"} <= set(unsloth)


def test_torchao_is_pinned_below_0_18_with_vllms_torch():
    from packaging.specifiers import SpecifierSet

    [torchao] = [line for line in installed_requirements("unsloth") if line.startswith("torchao")]
    spec = SpecifierSet(torchao[len("torchao"):])
    assert "0.17.0" in spec and "0.18.0" not in spec and "0.13.0" in spec


def test_the_runtimes_numpy_and_pillow_are_pinned_in_every_stack():
    pins = runtime_pins()
    assert f"numpy=={importlib.metadata.version('numpy')}" in pins
    for stack in ("unsloth", "trl", "cpu"):
        first = pip_commands(stack, pins)[0]
        assert all(pin in first for pin in pins)


def test_gpu_from_nvidia_smi(monkeypatch):
    answer = types.SimpleNamespace(returncode=0, stdout="Tesla T4, 7.5, 15360\n")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: answer)
    assert gpu_from_smi() == GPU("Tesla T4", (7, 5), 15.0)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: (_ for _ in ()).throw(FileNotFoundError()))
    assert gpu_from_smi() is None


def test_install_runs_once_and_stops_when_a_loaded_package_changed(tmp_path):
    """Bug (issue 10, 7): the cell printed "restart" and "Run all" went on with mixed versions."""
    installed = importlib.metadata.version("numpy")
    runs = []
    run = lambda cmd, cwd, check: runs.append(cmd)  # noqa: E731
    loaded = {"numpy": types.SimpleNamespace(__version__="1.0.0")}  # the kernel holds an older numpy
    with pytest.raises(RestartRequired, match=f"numpy 1.0.0 -> {installed}.*Restart session.*skipped"):
        install_once(tmp_path, run=run, modules=loaded)
    assert (tmp_path / MARKER).exists() and len(runs) == 1
    assert install_once(tmp_path, run=run, modules=loaded) is False and len(runs) == 1  # after the restart
    (tmp_path / MARKER).unlink()
    same = {"numpy": types.SimpleNamespace(__version__=installed)}  # pinned: nothing to restart for
    assert install_once(tmp_path, run=run, modules=same) is True
    with pytest.raises(RuntimeError, match="torch is already imported"):
        (tmp_path / MARKER).unlink()
        install_once(tmp_path, run=run, modules={"torch": object()})


def test_the_install_cell_stops_instead_of_printing():
    assert "install_once(ROOT)" in INSTALL_CELL and "print(\"numpy was loaded" not in INSTALL_CELL
    assert "UNSLOTH_VLLM_STANDBY" in INSTALL_CELL and "gpu_memory_utilization" in INSTALL_CELL


@pytest.mark.parametrize("total_gib, share", [(14.7, 0.76), (22.5, 0.7837), (39.4, 0.855), (79.2, 0.8788),
                                              (8.0, 0.7125)])
def test_what_standby_does_to_gpu_memory_utilization(total_gib, share):
    assert standby_gpu_memory_utilization(total_gib) == share
