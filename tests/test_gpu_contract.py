"""Contract tests for the GPU code CI cannot run: the code paths of notebooks 05 and 06
on the ``t4``/``bf16`` profiles, run on CPU against test-only fakes of the pinned unsloth, unsloth_zoo
and vLLM (``tests/fakes``). The fakes accept exactly the keyword arguments of the pinned releases
(``fakes/pinned.py``, checked against the wheels' source below), load a tiny real Llama instead of
Qwen, and record every call. A keyword the pinned release lacks, a LoRA loaded per batch, a
precision mismatch Unsloth would refuse, or a second model loaded next to a live vLLM engine fails.
Import order (peft before unsloth) is tested in ``tests/test_import_order.py``.
"""

import ast
import json
import re
import sys
import types
from pathlib import Path

import gpu_fakes
import pytest
import torch
from gpu_fakes import FAKES, L4, T4
from pinned_wheels import cached_wheel, pinned_version, source
from wheel_signatures import extract_vllm_table, function, row_key, signature, vllm_rows, vllm_table

from helpers.training.profiles import PROFILES

pytestmark = pytest.mark.slow
NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


@pytest.fixture
def fake(monkeypatch, tiny_model_dir):
    """The fake GPU stack importable as unsloth / unsloth_zoo / vllm, on a T4; its call recorder."""
    yield gpu_fakes.install(monkeypatch, tiny_model_dir)
    gpu_fakes.uninstall()


def unsloth_precision_check(model, args) -> None:
    """What Unsloth's GRPOTrainer does at construction (unsloth 2026.10.9, unsloth/models/rl.py)."""
    dtype = getattr(model.config, "dtype", None) or model.get_input_embeddings().weight.dtype
    if dtype == torch.float16 and args.bf16:
        raise TypeError("Unsloth: Model is in float16 precision but you want to use bfloat16 precision.")
    if dtype == torch.bfloat16 and args.fp16:
        raise TypeError("Unsloth: Model is in bfloat16 precision but you want to use float16 precision.")


def cell(notebook: str, cell_id: str) -> str:
    [path] = NOTEBOOKS.glob(f"{notebook}_*.ipynb")
    [found] = [c for c in json.loads(path.read_text())["cells"] if c.get("id") == cell_id]
    return "".join(found["source"])


# ------------------------------------------------------------------------------- the table
_function, _signature = function, signature  # read from the wheels' source: tests/wheel_signatures.py


def _pinned():
    import importlib

    sys.path.insert(0, str(FAKES))
    try:
        return importlib.import_module("pinned").PINNED
    finally:
        sys.path.remove(str(FAKES))


@pytest.mark.parametrize(
    "name",
    [
        "FastLanguageModel.from_pretrained",
        "FastLanguageModel.get_peft_model",
        "model.save_pretrained_merged",
        "model.load_lora",
        "unsloth_zoo.vllm_utils.delete_vllm",
        "vllm.SamplingParams",
        "model.fast_generate",
        "vllm.LLM.sleep",
        "vllm.LLM.wake_up",
    ],
)
def test_the_fakes_table_is_the_pinned_wheels_signature(name):
    """The vLLM rows were an intersection of other commits' names (9 SamplingParams
    fields of 0.11.2 missing, best_of among them); every row now is the pinned wheel's own. vLLM's
    wheel (370 MB) is not in CI: its rows are checked against the table extracted from it and
    committed (tests/data/vllm_table.json; the next test holds the table to the wheel where it is
    cached), so they run everywhere instead of being skipped."""
    row = _pinned()[name]
    dist = row.release.rsplit("-", 1)[0]
    if dist == "vllm":
        extracted = vllm_table()["rows"][row_key(row.path, row.qualified)]
        found = (tuple(extracted["params"]), extracted["positional"], extracted["var_keyword"])
    else:
        found = _signature(source(dist, row.path), row.qualified)
    assert found == (row.params, row.positional, row.var_keyword)


def test_the_committed_vllm_table_is_the_pinned_wheels():
    """The table is of the pinned release, covers every vLLM row of fakes/pinned.py, and, where the
    wheel is cached, equals what the refresh recipe extracts from it (python tests/wheel_signatures.py WHEEL)."""
    table, rows = vllm_table(), vllm_rows()
    assert table["release"] == f"vllm-{pinned_version('vllm')}"
    assert set(table["rows"]) == {row_key(r.path, r.qualified) for r in rows}
    wheel = cached_wheel("vllm")
    if wheel is None:
        pytest.skip("vllm's wheel is not cached: the table above is what CI checks the vLLM rows against")
    assert extract_vllm_table(wheel, rows) == table, "stale table: run python tests/wheel_signatures.py " + str(wheel)


def test_the_fakes_take_their_parameters_from_the_table_alone(fake):
    """Every fake entry point accepts each pinned parameter and nothing else (no list of its own)."""
    from unsloth import FastLanguageModel
    from vllm import SamplingParams

    for name, row in fake.PINNED.items():
        assert fake.record(name, (None,) * row.positional, {}) == dict.fromkeys(row.params[: row.positional])
        assert set(fake.record(name, (), dict.fromkeys(row.params))) == set(row.params)
        with pytest.raises(TypeError, match="positional"):
            fake.record(name, (None,) * (row.positional + 1), {})
    assert SamplingParams(**dict.fromkeys(fake.PINNED["vllm.SamplingParams"].params)).kwargs["best_of"] is None
    with pytest.raises(TypeError, match="positional"):
        SamplingParams(1)  # keywords only (see fakes/pinned.py)
    with pytest.raises(TypeError, match="multiple values"):
        FastLanguageModel.from_pretrained("x", model_name="x")
    fakes_source = "".join(p.read_text() for p in FAKES.rglob("*.py") if p.name != "pinned.py")
    assert not re.findall(r"record\([^)]*, \(", fakes_source), "a fake passes its own parameter list"


@pytest.mark.parametrize(
    "capability, asked, dtype",
    [
        ((7, 5), None, torch.float16),
        ((8, 9), None, torch.bfloat16),
        ((7, 5), torch.bfloat16, torch.float16),
        ((8, 9), torch.float16, torch.float16),
    ],
)
def test_the_fake_picks_unsloths_dtype(fake, capability, asked, dtype):
    """The fake picked bf16 for dtype=None where Unsloth picks fp16 below compute
    capability 8 (unsloth/models/llama.py, checked against the wheel here)."""
    import unsloth
    from unsloth import FastLanguageModel

    text = source("unsloth", "unsloth/models/llama.py")
    assert "dtype = torch.float16 if not SUPPORTS_BFLOAT16 else torch.bfloat16" in text
    assert "Device does not support bfloat16. Will change to float16." in text
    unsloth.CAPABILITY = capability
    model, _ = FastLanguageModel.from_pretrained(model_name="x", dtype=asked)
    assert model.dtype == dtype


def test_standby_shares_are_unsloth_zoos():
    """helpers.training.engine.standby_gpu_memory_utilization mirrors load_vllm's table for vLLM >= 0.11."""
    from helpers.training.engine import standby_gpu_memory_utilization

    text = source("unsloth_zoo", "unsloth_zoo/vllm_utils.py")
    block = text[text.index("# Standby mode sleep/wake cycle") : text.index("standby_target_gpu_util *= 0.95")]
    tiers = [
        (float(a), float(b))
        for a, b in re.findall(r"ten_percent >= ([\d.]+): standby_target_gpu_util = ([\d.]+)", block)
    ]
    [last] = re.findall(r"else: standby_target_gpu_util = ([\d.]+)", block)
    assert tiers and all(standby_gpu_memory_utilization(10 * floor) == round(share * 0.95, 4) for floor, share in tiers)
    assert standby_gpu_memory_utilization(5.0) == round(float(last) * 0.95, 4)


def test_an_unknown_keyword_fails(fake):
    from unsloth import FastLanguageModel
    from vllm import SamplingParams

    with pytest.raises(TypeError, match="max_new_tokens"):
        FastLanguageModel.from_pretrained(model_name="x", max_new_tokens=5)
    SamplingParams(temperature=1.0, best_of=2)  # still a field of vLLM 0.11.2's SamplingParams
    with pytest.raises(TypeError, match="use_beam_search"):
        SamplingParams(temperature=1.0, use_beam_search=True)  # gone from SamplingParams by 0.11.2


# -------------------------------------------------------------- notebook 05's GPU code path
@pytest.mark.parametrize("name, gpu, dtype", [("t4", T4, torch.float16), ("bf16", L4, torch.bfloat16)])
def test_load_model_and_the_grpo_config_agree_on_precision(fake, monkeypatch, tmp_path, name, gpu, dtype):
    """Notebook 05's settings and model cells on the GPU profiles, against the fakes."""
    from helpers.training.engine import uses_vllm

    monkeypatch.setattr("helpers.training.hardware.gpu_info", lambda: gpu)
    sys.modules["unsloth"].CAPABILITY = gpu.capability
    monkeypatch.setenv("GRPO_PROFILE", name)
    monkeypatch.delenv("GRPO_QUICK", raising=False)
    monkeypatch.delenv("GRPO_DRIVE", raising=False)
    monkeypatch.delenv("GRPO_DRIVE_DIR", raising=False)
    namespace = {"ROOT": str(tmp_path)}
    for cell_id in ("settings", "load-model", "add-lora", "grpo-config"):  # the model, its LoRA, GRPOConfig
        exec(cell("05", cell_id), namespace)
    model, config, profile = namespace["model"], namespace["config"], namespace["profile"]
    [load] = fake.calls("FastLanguageModel.from_pretrained")
    assert load["dtype"] == dtype and load["load_in_4bit"] and load["fast_inference"]
    assert (load["max_lora_rank"], load["max_seq_length"]) == (64, 1024)
    [peft] = fake.calls("FastLanguageModel.get_peft_model")
    assert (peft["r"], peft["lora_alpha"], peft["use_gradient_checkpointing"]) == (64, 64, "unsloth")
    assert uses_vllm(model) and config.use_vllm and profile.name == name
    assert (config.fp16, config.bf16) == (dtype == torch.float16, dtype == torch.bfloat16)
    unsloth_precision_check(model, config)  # would raise at GRPOTrainer(...) on a mismatch


def test_the_old_precision_bug_fails_the_check(fake, monkeypatch, tmp_path):
    """Before the fix: no dtype passed (Unsloth picks bf16 where it can: compute capability >= 8)
    and fp16=True forced, as the t4 settings did on an L4."""
    import unsloth
    from unsloth import FastLanguageModel

    from helpers.training.trainer import build_grpo_config

    unsloth.CAPABILITY = L4.capability
    model, _ = FastLanguageModel.from_pretrained(model_name="unsloth/Qwen2.5-3B-Instruct", load_in_4bit=True)
    config = build_grpo_config(PROFILES["t4"], tmp_path)
    with pytest.raises(TypeError, match="bfloat16 precision but you want to use float16"):
        unsloth_precision_check(model, config)


@pytest.fixture
def t4_model(fake, tmp_path):
    """The t4 policy on the fakes and a LoRA adapter saved from it (as train() saves one)."""
    from helpers.training.models import load_model

    model, tokenizer = load_model(PROFILES["t4"])
    adapter = tmp_path / "run" / "lora_adapter"
    model.save_pretrained(adapter)
    tokenizer.save_pretrained(adapter)
    return model, tokenizer, adapter


def test_generate_with_a_lora_makes_one_request_per_adapter(fake, t4_model, gsm8k_dir):
    """Bug: load_lora at every generate call gave each batch a new LoRA id."""
    from helpers.data.gsm8k import load_gsm8k
    from helpers.evaluation.before_after import evaluate_before_after

    model, tokenizer, adapter = t4_model
    test = load_gsm8k("test", n=6)
    base, lora = evaluate_before_after(
        model, tokenizer, test, adapter, n=6, batch_size=2, max_new_tokens=8, temperature=1.0, top_p=1.0
    )
    generations = fake.calls("model.fast_generate")
    assert len(generations) == 6 and len(fake.calls("model.load_lora")) == 1
    requests = [g["lora_request"] for g in generations]
    assert requests[:3] == [None] * 3 and len({id(r) for r in requests[3:]}) == 1
    assert all(r["completion"].startswith("<base>") for r in base.records)
    assert all(r["completion"].startswith("<lora 1>") for r in lora.records)
    assert {k for call in fake.calls("vllm.SamplingParams") for k in call} == {
        "temperature",
        "top_p",
        "max_tokens",
        "seed",
    }
    model.save_pretrained(adapter)  # a new training run saved over it: a new request, once
    evaluate_before_after(model, tokenizer, test, adapter, n=6, batch_size=2, max_new_tokens=8)
    assert len(fake.calls("model.load_lora")) == 2


def test_notebook_05_generates_after_training_with_the_saved_adapter(fake, t4_model, gsm8k_dir):
    """Section 10 on the T4: the question after GRPO with the saved LoRA, then base vs. LoRA on 4 questions."""
    from helpers.data.gsm8k import load_gsm8k

    model, tokenizer, adapter = t4_model
    namespace = {"model": model, "tokenizer": tokenizer, "profile": PROFILES["t4"], "GPU": True, "torch": torch}
    namespace["test_ds"] = load_gsm8k("test", n=4)
    exec(cell("05", "generate"), namespace)  # defines generate, answers the question before training
    namespace["ADAPTER"] = adapter
    exec(cell("05", "after"), namespace)  # section 10: the same question with the LoRA, then 4 questions
    loads = fake.calls("model.load_lora")
    assert Path(loads[0]["save_directory"]) == adapter and namespace["after"].startswith("<lora")
    assert namespace["before"].startswith("<base>") and namespace["N"] == 4


# -------------------------------------------------------------- notebook 06's merged model
def test_merged_save_then_release_then_4bit_reload(fake, t4_model, monkeypatch, gsm8k_dir):
    """Notebook 06 section 8 on the T4: the engine is released before the merged model
    is loaded, and that model is loaded in 4-bit; loading it next to a live engine is refused."""
    import transformers

    from helpers.data.gsm8k import load_gsm8k
    from helpers.evaluation.adapters import load_merged
    from helpers.training.engine import live_vllm_models

    model, tokenizer, adapter = t4_model
    engine = model.vllm_engine
    loads, real_from_pretrained = [], transformers.AutoModelForCausalLM.from_pretrained

    def from_pretrained(path, **kwargs):  # no bitsandbytes on a CPU: record the 4-bit request, load plainly
        loads.append(kwargs)
        return real_from_pretrained(path, dtype=kwargs["dtype"])

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", from_pretrained)
    monkeypatch.setattr(transformers, "BitsAndBytesConfig", lambda **kwargs: kwargs)
    namespace = {
        "model": model,
        "tokenizer": tokenizer,
        "ADAPTER_DIR": adapter,
        "profile": PROFILES["t4"],
        "test_ds": load_gsm8k("test", n=1),
        "GREEDY": dict(max_new_tokens=16, temperature=0.0, top_p=1.0),
        "GPU": True,
    }
    namespace["ROOT"] = adapter.parent.parent  # a local adapter: merged beside it
    exec(cell("06", "merge"), namespace)  # generate with the LoRA, save the merged model
    [merge] = fake.calls("model.save_pretrained_merged")
    assert merge["save_method"] == "merged_16bit" and (adapter.parent / "merged" / "config.json").exists()
    with pytest.raises(RuntimeError, match="release"):
        load_merged(adapter.parent / "merged", PROFILES["t4"])  # the wrong order is refused
    exec(cell("06", "reload"), namespace)  # release, del, reload in 4-bit, generate with HF
    [deleted] = fake.calls("unsloth_zoo.vllm_utils.delete_vllm")
    assert deleted["llm"]() is engine and not engine.alive
    assert "model" not in namespace and live_vllm_models() == 0
    [reload] = loads
    assert reload["quantization_config"]["load_in_4bit"] and reload["device_map"] == "auto"
    assert reload["dtype"] == torch.float16 == reload["quantization_config"]["bnb_4bit_compute_dtype"]


def test_release_drops_every_reference_to_the_engine_and_the_policy_is_freed_before_the_reload(
    fake, tmp_path, monkeypatch, gsm8k_dir
):
    """Release() cleared only `vllm_engine`, so fast_generate (the engine's bound
    generate), fast_generate_batches, load_lora and save_lora kept the engine alive; and it collected
    garbage before the notebook's `del model`, so the policy (a reference cycle through its
    for_training partial) still held the GPU when the merged model was loaded."""
    import gc
    import weakref

    import transformers

    from helpers.data.gsm8k import load_gsm8k
    from helpers.evaluation.adapters import save_merged
    from helpers.training.engine import ENGINE_ATTRIBUTES, release, uses_vllm
    from helpers.training.models import load_model

    model, tokenizer = load_model(PROFILES["t4"])
    holders = [m for m in [model, *model.modules()] if set(vars(m)) & set(ENGINE_ATTRIBUTES)]
    assert {a for m in holders for a in vars(m) if a in ENGINE_ATTRIBUTES} == set(ENGINE_ATTRIBUTES)  # as Unsloth
    engine = weakref.ref(model.vllm_engine)
    gc.disable()
    try:
        release(model)  # while the model is still referenced (a trainer, another name): the engine goes
        assert engine() is None, "an attribute of the model still references the vLLM engine"
    finally:
        gc.enable()
    assert not uses_vllm(model) and not any(set(vars(m)) & set(ENGINE_ATTRIBUTES) for m in holders)
    del holders

    model, tokenizer = load_model(PROFILES["t4"])  # notebook 06's order, from a fresh policy
    merged_dir = save_merged(model, tokenizer, tmp_path / "merged")
    engine, policy = weakref.ref(model.vllm_engine), weakref.ref(model)
    alive_at_load, real_from_pretrained = [], transformers.AutoModelForCausalLM.from_pretrained

    def from_pretrained(path, **kwargs):
        alive_at_load.append({"engine": engine() is not None, "policy": policy() is not None})
        return real_from_pretrained(path, dtype=kwargs["dtype"])

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", from_pretrained)
    monkeypatch.setattr(transformers, "BitsAndBytesConfig", lambda **kwargs: kwargs)
    namespace = {
        "model": model,
        "tokenizer": tokenizer,
        "profile": PROFILES["t4"],
        "MERGED_DIR": merged_dir,
        "question": load_gsm8k("test", n=1)[0],
        "GREEDY": dict(max_new_tokens=4, temperature=0.0, top_p=1.0),
        "GPU": True,
        "with_lora": "",
    }
    del model
    gc.disable()  # only the code under test collects
    try:
        exec(cell("06", "reload"), namespace)  # release, del, load_merged, generate
    finally:
        gc.enable()
    assert alive_at_load == [{"engine": False, "policy": False}]


def test_notebook_06_reads_a_drive_adapter_and_merges_to_local_disk(fake, t4_model, monkeypatch, tmp_path, gsm8k_dir):
    """On a fresh runtime 06's settings find 05's adapter on Drive by default (GPU
    profile in Colab), and the merged model is written under ROOT, not into the Drive run folder."""
    import shutil

    from helpers.training.engine import uses_vllm

    model, tokenizer, adapter = t4_model
    mount = tmp_path / "content" / "drive"
    run_on_drive = mount / "MyDrive" / "grpo-course" / "outputs" / "grpo-t4"
    mounted = []

    def drive_mount(path):  # the Drive of 05's run, mounted
        mounted.append(path)
        shutil.copytree(adapter, run_on_drive / "lora_adapter")

    colab = types.ModuleType("google.colab")
    colab.drive = types.SimpleNamespace(mount=drive_mount)
    monkeypatch.setitem(sys.modules, "google", types.ModuleType("google"))
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    monkeypatch.setattr("helpers.colab.persist.DRIVE_MOUNT", mount)
    for name in ("GRPO_DRIVE", "GRPO_DRIVE_DIR", "GRPO_ADAPTER", "GRPO_ADAPTER_DIR", "GRPO_QUICK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GRPO_PROFILE", "t4")
    root = tmp_path / "content" / "grpo-course"
    namespace = {"ROOT": str(root)}
    exec(cell("06", "settings"), namespace)  # settings: USE_DRIVE by default, ADAPTER on Drive
    exec(cell("06", "adapter"), namespace)  # locate the adapter
    assert namespace["USE_DRIVE"] and mounted == [str(mount)]
    assert namespace["ADAPTER_DIR"] == run_on_drive / "lora_adapter"
    namespace.update(
        model=model,
        tokenizer=tokenizer,
        uses_vllm=uses_vllm,
        test_ds=__import__("helpers.data.gsm8k", fromlist=["load_gsm8k"]).load_gsm8k("test", n=1),
    )
    exec(cell("06", "merge"), namespace)  # generate with the LoRA, save the merged model
    assert namespace["MERGED_DIR"] == root / "outputs" / "grpo-t4" / "merged"
    assert (root / "outputs" / "grpo-t4" / "merged" / "config.json").exists()
    assert not (run_on_drive / "merged").exists()


# ------------------------------------------------------------------ seed and batching
def test_the_vllm_engine_seed_is_load_vllms_default_whatever_the_profile_says(fake, capsys):
    """Random_state reaches Unsloth, not the vLLM engine. Read from the pinned wheels:
    FastLlamaModel.from_pretrained takes random_state as its own parameter and builds load_vllm's
    arguments without it (only names left in **kwargs are forwarded), so load_vllm's default seeds
    the engine. helpers.training.engine says so (VLLM_ENGINE_SEED) and notebook 05 tells the learner."""
    from helpers.training.engine import VLLM_ENGINE_SEED
    from helpers.training.models import load_model

    llama = source("unsloth", "unsloth/models/llama.py")
    fn = _function(llama, "FastLlamaModel.from_pretrained")
    assert "random_state" in {a.arg for a in fn.args.args}
    [built] = [
        n.value
        for n in ast.walk(fn)
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "load_vllm_kwargs"
    ]
    assert "random_state" not in {k.arg for k in built.keywords}
    assert "allowed_arg in kwargs" in ast.get_source_segment(llama, fn)
    zoo = source("unsloth_zoo", "unsloth_zoo/vllm_utils.py")
    load_vllm = _function(zoo, "load_vllm")
    names = [a.arg for a in load_vllm.args.args]
    default = load_vllm.args.defaults[names.index("random_state") - len(names)]
    assert ast.literal_eval(default) == VLLM_ENGINE_SEED
    assert re.search(r"seed\s*=\s*random_state", ast.get_source_segment(zoo, load_vllm))
    model, _ = load_model(PROFILES["t4"])  # seed 3407
    assert model.vllm_engine.seed == VLLM_ENGINE_SEED != PROFILES["t4"].seed
    assert f"engine seed {VLLM_ENGINE_SEED}, not the profile's 3407" in capsys.readouterr().out
    assert "VLLM_ENGINE_SEED" in cell("05", "wyss-model") and "not seeded" in cell("05", "wyss-model")


def test_evaluation_hands_vllm_hundreds_of_prompts_per_call(fake, t4_model, gsm8k_dir):
    """Notebook 06 gave vLLM 16 questions a call (2 x 1,319 / 16 = 166 calls); it
    now gives it 256 a call, as default_batch_size does: 6 calls a side for the whole test split."""
    from helpers.data.gsm8k import load_gsm8k
    from helpers.evaluation.scoring import VLLM_BATCH, default_batch_size

    model, tokenizer, adapter = t4_model
    namespace = {
        "model": model,
        "tokenizer": tokenizer,
        "ADAPTER_DIR": adapter,
        "profile": PROFILES["t4"],
        "GPU": True,
        "N_GSM8K": 300,
        "STAND_IN": False,
        "GREEDY": dict(max_new_tokens=8, temperature=0.0, top_p=1.0),
        "test_ds": load_gsm8k("test", n=300),
    }
    exec(cell("06", "evaluate"), namespace)  # section 5: base vs base + LoRA
    sizes = [len(call["prompts"]) for call in fake.calls("model.fast_generate")]
    assert list(namespace["comparisons"]) == ["GSM8K test"] and sizes == [256, 44, 256, 44]
    assert default_batch_size(model) == VLLM_BATCH == 256 and 2 * -(-1319 // default_batch_size(model)) == 12
