"""Notebooks 05 and 06 write the library calls in their cells; ``make train`` and the CLI build the same
objects through helpers. These tests run the cells' own code and the helpers' on the same profile and
compare what each passes to the library: the ``GRPOConfig`` keywords, the model and LoRA loads (against
the fakes of the pinned unsloth and vLLM on the GPU path, a tiny real model on the CPU path) and the
generation calls. A keyword or value that differs between a cell and its helper fails here.
"""

import ast
import json
import re
import shutil
import sys
from pathlib import Path

import gpu_fakes
import pytest
import torch

from helpers.training.profiles import PROFILES

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
LIBRARY_CALLS = {
    "05": ["FastLanguageModel.from_pretrained", "FastLanguageModel.get_peft_model", "get_peft_model(",
           "LoraConfig(", "AutoModelForCausalLM.from_pretrained", "GRPOConfig(", "GRPOTrainer(", "trainer.train(",
           "SamplingParams(", "model.fast_generate(", "model.load_lora(", "model.save_lora(", "model.generate("],
    "06": ["FastLanguageModel.from_pretrained", "FastLanguageModel.get_peft_model", "PeftModel.from_pretrained",
           "SamplingParams(", "model.fast_generate(", "model.load_lora(", "model.generate("],
}  # fmt: skip


def cells(notebook: str) -> list[dict]:
    [path] = NOTEBOOKS.glob(f"{notebook}_*.ipynb")
    return json.loads(path.read_text())["cells"]


def cell(notebook: str, cell_id: str) -> str:
    [found] = [c for c in cells(notebook) if c.get("id") == cell_id]
    return "".join(found["source"])


def code_of(notebook: str) -> str:
    return "\n".join("".join(c["source"]) for c in cells(notebook) if c["cell_type"] == "code")


# ------------------------------------------------------------------------------ static
@pytest.mark.parametrize("notebook", sorted(LIBRARY_CALLS))
def test_the_cells_write_the_library_calls(notebook):
    code = code_of(notebook)
    missing = [call for call in LIBRARY_CALLS[notebook] if call not in code]
    assert not missing, f"notebook {notebook} does not show {missing}"


def helper_modules(notebook: str) -> set[str]:
    modules = set()
    for c in cells(notebook):
        if c["cell_type"] != "code" or "install-cell" in c.get("metadata", {}).get("tags", []):
            continue
        for node in ast.walk(ast.parse("".join(c["source"]))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("helpers"):
                modules.add(node.module)
            elif isinstance(node, ast.Import):
                modules.update(a.name for a in node.names if a.name.startswith("helpers"))
    return modules


def test_05_and_06_import_at_most_12_helper_modules():
    both = helper_modules("05") | helper_modules("06")
    assert len(both) <= 12, sorted(both)


def test_05_reads_no_committed_run_before_the_trainer():
    source = [("".join(c["source"]), c["cell_type"]) for c in cells("05")]
    train = next(i for i, (text, kind) in enumerate(source) if kind == "code" and "GRPOTrainer(" in text)
    before = "\n".join(text for text, kind in source[:train] if kind == "code")
    assert not re.search(r"RESULTS_DIR|results/|load_summary|\bresults\b", before), "a committed run read early"


def test_the_drive_notebooks_ask_for_drive_before_the_install():
    from tools.notebook_cells import DRIVE_NOTEBOOKS, install_cell

    for name in DRIVE_NOTEBOOKS:
        text = install_cell(name)
        assert text.index('drive.mount("/content/drive")') < text.index("install_once(ROOT)")
    assert "drive.mount" not in install_cell("01_cot_prompting.ipynb")


def test_the_trainer_cell_and_train_pass_the_same_keywords():
    """The GRPOTrainer call of 05's cell and of helpers.training.trainer.train: the same keyword names."""
    import inspect

    from helpers.training import trainer

    def keywords(source: str) -> set[str]:
        calls = [
            n
            for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Call) and getattr(n.func, "id", None) in ("GRPOTrainer", "trainer_class")
        ]
        [call] = calls
        return {k.arg for k in call.keywords}

    helper = inspect.getsource(trainer.train)
    assert keywords(cell("05", "train")) == keywords(helper) == {
        "model", "processing_class", "reward_funcs", "args", "train_dataset", "callbacks",
    }  # fmt: skip


def test_06_generates_with_05s_generate():
    def generate_def(source):
        [node] = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "generate"]
        return ast.dump(node)

    assert generate_def(cell("06", "generate")) == generate_def(cell("05", "generate"))


# ------------------------------------------------------------------------------ GRPOConfig
def config_from_cell(profile, output_dir, source=None) -> dict:
    """Run 05's config cell for ``profile``; returns its ``settings`` and checks the GRPOConfig call used them."""
    import trl

    built = []
    namespace = {"profile": profile, "OUTPUT_DIR": output_dir, "torch": torch}
    original = trl.GRPOConfig
    trl.GRPOConfig = lambda **kwargs: built.append(kwargs) or kwargs
    try:
        exec(source or cell("05", "grpo-config"), namespace)
    finally:
        trl.GRPOConfig = original
    assert built == [namespace["settings"]]
    return namespace["settings"]


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_the_config_cell_is_grpo_settings(name, tmp_path):
    from helpers.training.trainer import grpo_settings

    profile = PROFILES[name]
    assert config_from_cell(profile, tmp_path) == grpo_settings(profile, tmp_path)


def test_a_changed_value_in_the_config_cell_fails_the_comparison(tmp_path):
    from helpers.training.trainer import grpo_settings

    edited = cell("05", "grpo-config").replace("beta=profile.beta,", "beta=0.5,")
    assert edited != cell("05", "grpo-config")
    assert config_from_cell(PROFILES["t4"], tmp_path, edited) != grpo_settings(PROFILES["t4"], tmp_path)


def test_an_override_in_the_cell_is_not_a_rewrite(tmp_path):
    """Colab round 4, S1: the check recomputed the chosen settings from the profile, so a learner's change
    in the cell read as Unsloth rewriting it. The cell's own `settings` are what is checked now."""
    from helpers.training.checks import check_config

    settings = {**config_from_cell(PROFILES["cpu"], tmp_path), "temperature": 1.0}
    from trl import GRPOConfig

    effective = check_config(settings, GRPOConfig(**settings))  # raises ConfigRewriteError on a mismatch
    assert effective["temperature"] == 1.0


# ------------------------------------------------------------------------------ GPU path
@pytest.fixture
def fake(monkeypatch, tiny_model_dir):
    yield gpu_fakes.install(monkeypatch, tiny_model_dir)
    gpu_fakes.uninstall()


@pytest.mark.slow
@pytest.mark.parametrize(
    "notebook, edit", [("05", None), ("06", None), ("05", ("max_lora_rank=profile.lora_rank", "max_lora_rank=8"))]
)
def test_the_gpu_load_cells_call_unsloth_as_the_helpers_do(fake, monkeypatch, tmp_path, notebook, edit):
    """Equal calls; and a cell edited in one value (the last case) differs from its helper."""
    from helpers.evaluation.adapters import load_with_adapter
    from helpers.training.engine import release
    from helpers.training.models import load_model

    profile = PROFILES["t4"]
    adapter = tmp_path / "lora_adapter"
    namespace = {
        "profile": profile,
        "GPU": True,
        "DTYPE": torch.float16,
        "OUTPUT_DIR": tmp_path,
        "ADAPTER_DIR": adapter,
    }
    if notebook == "06":  # an adapter of the t4 shape, saved as notebook 05 saves it
        model, _ = load_model(profile)
        model.save_lora(str(adapter))
        release(model)
        del model
        fake.CALLS.clear()
    source = cell(notebook, "load-model")
    exec(source.replace(*edit) if edit else source, namespace)
    if notebook == "05":
        exec(cell("05", "add-lora"), namespace)
    in_cells = {
        name: fake.calls(name) for name in ("FastLanguageModel.from_pretrained", "FastLanguageModel.get_peft_model")
    }
    release(namespace.pop("model"))
    fake.CALLS.clear()
    model, _ = load_with_adapter(profile, adapter) if notebook == "06" else load_model(profile)
    in_helpers = {name: fake.calls(name) for name in in_cells}
    assert len(in_cells["FastLanguageModel.from_pretrained"]) == 1 and in_cells["FastLanguageModel.get_peft_model"]
    assert (in_cells == in_helpers) is (edit is None)
    release(model)


@pytest.mark.slow
def test_the_generate_cell_calls_vllm_as_the_helper_does(fake, tmp_path):
    from helpers.data.gsm8k import load_gsm8k
    from helpers.training.generation import generate
    from helpers.training.models import load_model

    profile = PROFILES["t4"]
    model, tokenizer = load_model(profile)
    adapter = tmp_path / "lora_adapter"
    model.save_lora(str(adapter))
    prompt = load_gsm8k("test", n=1)[0]["prompt"]
    namespace = {"profile": profile, "GPU": True, "model": model, "tokenizer": tokenizer, "torch": torch}
    definition = cell("05", "generate").split("\n\n\nquestion = ")[0]
    exec(definition, namespace)
    recorded = []
    for run in (
        lambda: namespace["generate"]([prompt], lora_path=adapter),
        lambda: generate(model, tokenizer, [prompt], max_new_tokens=profile.max_completion_length, temperature=0,
                         lora_path=adapter),
    ):  # fmt: skip
        fake.CALLS.clear()
        [text] = run()
        calls = {name: fake.calls(name) for name in ("vllm.SamplingParams", "model.fast_generate", "model.load_lora")}
        [generated] = calls["model.fast_generate"]
        request, _, _ = (generated.pop(k) for k in ("lora_request", "prompts", "sampling_params"))
        recorded.append((calls, request.lora_path, text.startswith("<lora ")))
    assert recorded[0] == recorded[1]
    assert recorded[0][0]["vllm.SamplingParams"] == [{"temperature": 0.0, "top_p": 1.0, "max_tokens": 512, "seed": 0}]


# ------------------------------------------------------------------------------ CPU path
@pytest.mark.slow
def test_the_cpu_load_cells_build_load_models_policy(tiny_model_dir, tmp_path):
    """05's CPU cells and helpers.training.models.load_model: the same LoRA config and the same first weights."""
    from helpers.training.cold_start import COLD_START_DIR
    from helpers.training.models import load_model

    profile = PROFILES["cpu"]
    shutil.copytree(tiny_model_dir, tmp_path / COLD_START_DIR)
    namespace = {"profile": profile, "GPU": False, "DTYPE": torch.float32, "OUTPUT_DIR": tmp_path}
    exec(cell("05", "load-model"), namespace)
    exec(cell("05", "add-lora"), namespace)
    model, _ = load_model(profile, tmp_path / COLD_START_DIR)
    in_cell = namespace["model"]
    assert in_cell.peft_config["default"] == model.peft_config["default"]
    assert namespace["tokenizer"].padding_side == "left"
    mine, theirs = in_cell.state_dict(), model.state_dict()
    assert mine.keys() == theirs.keys() and all(torch.equal(mine[k], theirs[k]) for k in mine)


@pytest.mark.slow
def test_the_cpu_generate_cell_equals_the_helpers_greedy_text(tiny_model_dir):
    from helpers.data.gsm8k import load_gsm8k
    from helpers.training.generation import generate
    from helpers.training.models import load_model

    profile = PROFILES["cpu"].replace(max_completion_length=12)
    model, tokenizer = load_model(profile, tiny_model_dir)
    prompts = [row["prompt"] for row in load_gsm8k("test", n=3)]
    namespace = {"profile": profile, "GPU": False, "model": model, "tokenizer": tokenizer, "torch": torch}
    exec(cell("05", "generate").split("\n\n\nquestion = ")[0], namespace)
    assert namespace["generate"](prompts) == generate(model, tokenizer, prompts, max_new_tokens=12, temperature=0)


def test_the_fakes_are_not_left_installed():
    assert "unsloth" not in sys.modules or "fakes" not in str(getattr(sys.modules["unsloth"], "__file__", ""))
