"""The Colab install: one stack per GPU (the CPU stack for notebooks
without a GPU), the runtime's numpy/pillow pinned where the stack allows them, trl held in every
pip step, torchao below 0.18, and a stop (not a print) when the kernel must restart."""

import importlib.metadata
import subprocess
import types
from pathlib import Path

import pytest

from helpers.colab.install import (
    CONSTRAINTS,
    MARKER,
    STACK_BOUNDS,
    RestartRequired,
    choose_stack,
    gpu_from_smi,
    install_once,
    pip_commands,
    runtime_pins,
)
from helpers.training.engine import standby_gpu_memory_utilization
from helpers.training.hardware import GPU
from tools.notebook_cells import INSTALL_CELL

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
        args = cmd[cmd.index("install") + 1 :]
        for i, arg in enumerate(args):
            if arg == "-r":
                lines += requirement_lines(args[i + 1])
            elif not arg.startswith("-") and (i == 0 or args[i - 1] != "-r"):
                lines.append(arg)
    return lines


@pytest.mark.parametrize(
    "gpu, env, stack",
    [
        (GPU("Tesla T4", (7, 5), 14.7), {}, "unsloth"),
        (GPU("NVIDIA L4", (8, 9), 22.5), {}, "unsloth"),
        (GPU("Tesla V100-SXM2-16GB", (7, 0), 15.8), {}, "trl"),
        (None, {}, "cpu"),
        (GPU("Tesla T4", (7, 5), 14.7), {"GRPO_PROFILE": "cuda"}, "trl"),
        (GPU("Tesla T4", (7, 5), 14.7), {"GRPO_STACK": "trl"}, "trl"),
    ],
)
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
    assert not [
        line
        for line in trl
        if line.split("=")[0].split("<")[0].split(">")[0].lower()
        in ("unsloth", "unsloth_zoo", "vllm", "bitsandbytes", "torch")
    ]
    unsloth = installed_requirements("unsloth")
    assert {"unsloth==2026.10.9", "unsloth_zoo==2026.10.9", "vllm==0.11.2"} <= set(unsloth)


def test_torchao_is_pinned_below_0_18_with_vllms_torch():
    from packaging.specifiers import SpecifierSet

    [torchao] = [line for line in installed_requirements("unsloth") if line.startswith("torchao")]
    spec = SpecifierSet(torchao[len("torchao") :])
    assert "0.17.0" in spec and "0.18.0" not in spec and "0.13.0" in spec


def test_the_runtimes_numpy_and_pillow_are_pinned_in_every_stack():
    for stack in ("unsloth", "trl", "cpu"):
        pins = runtime_pins(stack, {"numpy": "2.1.3", "pillow": "11.3.0"})  # Colab's GPU image, 2026-08
        assert pins == ["numpy==2.1.3", "pillow==11.3.0"]
        first = pip_commands(stack, pins)[0]
        assert all(pin in first for pin in pins)
    assert f"numpy=={importlib.metadata.version('numpy')}" in runtime_pins("cpu")  # this machine's


@pytest.mark.parametrize(
    "numpy, pinned_for_unsloth",
    [
        ("2.1.3", True),
        ("2.2.6", True),
        ("2.3.0", False),
        ("2.3.4", False),
        ("2.4.1", False),
        ("1.23.5", False),
        ("1.26.4", True),
    ],
)
def test_numpy_is_pinned_only_where_the_stack_allows_it(numpy, pinned_for_unsloth):
    """Bug: a runtime with numpy >= 2.3 made the install cell fail with
    ResolutionImpossible (vllm 0.11.2 pins numba 0.61.2, which needs numpy < 2.3). Such a numpy is
    left to pip (which installs one below 2.3; install_once then asks for a restart)."""
    versions = {"numpy": numpy, "pillow": "11.3.0"}
    assert (f"numpy=={numpy}" in runtime_pins("unsloth", versions)) is pinned_for_unsloth
    assert "pillow==11.3.0" in runtime_pins("unsloth", versions)
    assert f"numpy=={numpy}" in runtime_pins("trl", versions) and f"numpy=={numpy}" in runtime_pins("cpu", versions)
    with pytest.raises(ValueError, match="unknown stack"):
        runtime_pins("conda", versions)


def test_the_numpy_bound_is_the_one_vllms_numba_brings():
    """STACK_BOUNDS holds numba 0.61.2's numpy range, and vllm 0.11.2 (its wheel's METADATA) pins
    that numba."""
    import zipfile

    from pinned_wheels import wheel

    with zipfile.ZipFile(wheel("vllm")) as archive:
        metadata = archive.read("vllm-0.11.2.dist-info/METADATA").decode()
    assert "Requires-Dist: numba==0.61.2" in metadata.splitlines()
    assert STACK_BOUNDS["unsloth"]["numpy"] == ">=1.24,<2.3"  # numba 0.61.2: numpy>=1.24,<2.3


def test_trl_is_held_at_its_pin_in_every_pip_step():
    """Bug: step 1 let pip resolve Unsloth's trl<=1.15 to trl 0.29.1, which step 2
    replaced with 0.22.2. The resolving step now carries the pin as a constraint."""
    import zipfile

    from packaging.requirements import Requirement
    from pinned_wheels import wheel

    [trl] = [line for line in requirement_lines(CONSTRAINTS) if line.startswith("trl")]
    assert trl == "trl==0.22.2"
    for stack in ("unsloth", "trl", "cpu"):
        first = pip_commands(stack)[0]
        assert first[first.index("-c") + 1] == CONSTRAINTS
    with zipfile.ZipFile(wheel("unsloth")) as archive:
        metadata = archive.read("unsloth-2026.10.9.dist-info/METADATA").decode()
    [wanted] = [
        Requirement(line.split(":", 1)[1])
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist: trl") and "extra" not in line
    ]
    assert "0.22.2" in wanted.specifier and "0.29.1" in wanted.specifier  # so pip alone would pick a newer one


def test_the_vllm_pin_gives_its_real_reason():
    """The pin is Unsloth's T4 choice; vllm 0.11.2's TRITON_ATTN backend accepts any
    compute capability, so "the newest with a T4 attention backend" was not what its code says."""
    import zipfile

    from pinned_wheels import wheel

    text = "".join((REPO / name).read_text() for name in ("requirements.txt", "README.md", "docs/t4.md"))
    assert "newest with an attention backend" not in text and "newest vLLM with" not in text
    assert "Unsloth's own choice for a T4" in " ".join(text.split())
    with zipfile.ZipFile(wheel("vllm")) as archive:
        triton = archive.read("vllm/v1/attention/backends/triton_attn.py").decode()
    body = triton.split("def supports_compute_capability", 1)[1].split("\n\n", 1)[0]
    assert body.strip().endswith("return True")


def test_gpu_from_nvidia_smi(monkeypatch):
    answer = types.SimpleNamespace(returncode=0, stdout="Tesla T4, 7.5, 15360\n")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: answer)
    assert gpu_from_smi() == GPU("Tesla T4", (7, 5), 15.0)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: (_ for _ in ()).throw(FileNotFoundError()))
    assert gpu_from_smi() is None


def test_install_runs_once_and_stops_when_a_loaded_package_changed(tmp_path):
    """Bug: the cell printed "restart" and "Run all" went on with mixed versions."""
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


def test_a_notebook_without_a_gpu_installs_the_cpu_stack_once(tmp_path):
    """Notebooks 02 and 03 install the CPU stack (`--stack cpu`); any install serves
    them, and a GPU notebook after them in the same runtime installs its own stack."""
    runs = []
    run = lambda cmd, cwd, check: runs.append(cmd[3:])  # noqa: E731
    assert install_once(tmp_path, run=run, modules={}, stack="cpu") is True and runs == [["--stack", "cpu"]]
    assert install_once(tmp_path, run=run, modules={}, stack="cpu") is False
    assert install_once(tmp_path, run=run, modules={}) is True and runs[-1] == []  # the GPU notebook's stack
    assert install_once(tmp_path, run=run, modules={}, stack="cpu") is False and len(runs) == 2
    with pytest.raises(ValueError, match="unknown stack"):
        install_once(tmp_path / "other", run=run, modules={}, stack="gpu")


def test_the_installer_runs_the_stack_asked_for(monkeypatch, capsys):
    import helpers.colab.install as install

    ran = []
    monkeypatch.setattr(install, "gpu_from_smi", lambda: GPU("Tesla T4", (7, 5), 14.7))
    monkeypatch.setattr(subprocess, "run", lambda cmd, cwd, check: ran.append(cmd))
    monkeypatch.delenv("GRPO_STACK", raising=False)
    monkeypatch.delenv("GRPO_PROFILE", raising=False)
    assert install.main(["--stack", "cpu"]) == 0
    assert "installing the cpu stack" in capsys.readouterr().out
    assert not any("requirements.txt" in cmd for cmd in ran) and any("gguf" in cmd for cmd in ran)


def test_the_install_cell_stops_instead_of_printing():
    assert "install_once(ROOT)" in INSTALL_CELL and 'print("numpy was loaded' not in INSTALL_CELL
    assert "UNSLOTH_VLLM_STANDBY" in INSTALL_CELL and "gpu_memory_utilization" in INSTALL_CELL


@pytest.mark.parametrize(
    "total_gib, share", [(14.7, 0.76), (22.5, 0.7837), (39.4, 0.855), (79.2, 0.8788), (8.0, 0.7125)]
)
def test_what_standby_does_to_gpu_memory_utilization(total_gib, share):
    assert standby_gpu_memory_utilization(total_gib) == share


def test_the_unsloth_stack_stops_before_pip_on_python_3_14(tmp_path, monkeypatch):
    """Colab round 4, R8: vllm 0.11.2 requires Python < 3.14; on a newer Colab image the install cell
    ran pip and failed halfway. Now it stops before pip, with the way out; other stacks go on."""
    from helpers.colab import install

    runs = []
    run = lambda cmd, cwd, check: runs.append(cmd)  # noqa: E731
    monkeypatch.setattr(install, "gpu_from_smi", lambda: GPU("Tesla T4", (7, 5), 14.7))
    monkeypatch.delenv("GRPO_STACK", raising=False)
    monkeypatch.delenv("GRPO_PROFILE", raising=False)
    with pytest.raises(RuntimeError, match=r"Python 3\.14.*vllm 0\.11\.2.*Runtime version"):
        install_once(tmp_path, run=run, modules={}, python=(3, 14, 0))
    assert runs == [] and not (tmp_path / MARKER).exists()
    assert install_once(tmp_path, run=run, modules={}, python=(3, 13, 5)) is True and len(runs) == 1
    (tmp_path / MARKER).unlink()
    assert install_once(tmp_path, run=run, modules={}, stack="cpu", python=(3, 14, 0)) is True
