"""GPU memory and the one vLLM engine a process may start, on CPU against the fakes (``tests/gpu_fakes.py``).

With ``UNSLOTH_VLLM_STANDBY=1`` (the install cell sets it) vLLM allocates the weights and the KV
cache in its sleep-mode pools: one such engine per process, and its memory held until the engine
sleeps (the KV cache) or the process ends (the weights). The fakes model exactly that, so these
tests fail where the code relied on deleting the engine (colab-round3 review: L1, C1, C2, C3).
"""

import json
import struct

import gpu_fakes
import pytest
from gpu_fakes import GIB, FakeGPU
from pinned_wheels import source

from helpers.training.profiles import PROFILES

pytestmark = pytest.mark.slow
T4 = PROFILES["t4"]


@pytest.fixture
def fake(monkeypatch, tiny_model_dir):
    """The fake stack on a T4 with Unsloth's standby (vLLM's sleep mode) on, as in Colab."""
    pinned = gpu_fakes.install(monkeypatch, tiny_model_dir)
    monkeypatch.setenv("UNSLOTH_VLLM_STANDBY", "1")
    yield pinned
    gpu_fakes.uninstall()


def restart(monkeypatch, tiny_model_dir):
    """Runtime > Restart session: a new process, so new vLLM modules and a new allocator."""
    gpu_fakes.install(monkeypatch, tiny_model_dir)
    monkeypatch.setenv("UNSLOTH_VLLM_STANDBY", "1")


def policy_and_adapter(tmp_path):
    from helpers.training.models import load_model

    model, tokenizer = load_model(T4)
    adapter = tmp_path / "run" / "lora_adapter"
    model.save_pretrained(adapter)
    tokenizer.save_pretrained(adapter)
    return model, tokenizer, adapter


# ------------------------------------------------------------------------------- the fakes
def test_the_fake_refuses_a_second_sleep_mode_engine_as_vllm_does(fake):
    """The fake holds what vLLM 0.11.2 does (tests/data/vllm_table.json: gpu_worker.py's assertion)
    and what Unsloth's patched sleep frees (unsloth_zoo: weights skipped, the rest unmapped)."""
    from unsloth._model import FakeEngine
    from vllm.device_allocator.cumem import ONE_INSTANCE, CuMemAllocator
    from wheel_signatures import vllm_table

    assert ["vllm/v1/worker/gpu_worker.py", f'"{ONE_INSTANCE}"'] in vllm_table()["facts"]
    zoo = source("unsloth_zoo", "unsloth_zoo/vllm_utils.py")
    patched_sleep = zoo[zoo.index("def patch_vllm_enable_sleep_mode") : zoo.index("def patch_vllm_reset_caches")]
    assert "if data.tag == 'weights':" in patched_sleep and "unmap_and_release(handle)" in patched_sleep
    first = FakeEngine(sleep_mode=True)
    allocator = CuMemAllocator.get_instance()
    assert allocator.mapped_bytes() == FakeEngine.WEIGHTS_BYTES + FakeEngine.KV_CACHE_BYTES
    first.sleep(1)
    assert allocator.mapped_bytes() == FakeEngine.WEIGHTS_BYTES  # the KV cache went back, the weights stay
    del first
    with pytest.raises(AssertionError, match=ONE_INSTANCE):
        FakeEngine(sleep_mode=True)  # deleting the first did not empty the pools
    FakeEngine(sleep_mode=False)  # without sleep mode vLLM does not check


# ------------------------------------------------------- L1: release frees the KV cache
def test_release_puts_the_engine_to_sleep_so_its_kv_cache_is_freed(fake, tmp_path, monkeypatch):
    """Release() deleted the engine without putting it to sleep: under standby its KV cache (7.8 of
    the T4's 14.7 GiB) stayed in vLLM's pools and the merged reload of notebook 06 section 8 had
    about 3.9 GiB. Unsloth's patched sleep(1) unmaps everything but the weights; release now calls it
    before delete_vllm, as Unsloth itself does before a resume (unsloth/models/rl.py)."""
    from helpers.training.engine import release

    rl = source("unsloth", "unsloth/models/rl.py")
    resume = rl[rl.index("def _maybe_prepare_vllm_for_resume") : rl.index("def _patch_resume_from_checkpoint_memory")]
    assert "enable_sleep_mode" in resume and "llm.sleep(1)" in resume
    gpu = FakeGPU()
    model, _, _ = policy_and_adapter(tmp_path)
    before = gpu.mem_get_info()[0] / GIB
    release(model)
    del model
    after = gpu.mem_get_info()[0] / GIB
    assert before == pytest.approx(14.74 - 0.8 - 10.0, abs=0.01)
    assert after == pytest.approx(14.74 - 0.8 - 2.2, abs=0.01)  # only the weights' pool stays
    calls = [name for name, _ in fake.CALLS if name in ("vllm.LLM.sleep", "unsloth_zoo.vllm_utils.delete_vllm")]
    assert calls == ["vllm.LLM.sleep", "unsloth_zoo.vllm_utils.delete_vllm"]
    assert fake.calls("vllm.LLM.sleep") == [{"level": 1}]


def qwen25_3b_checkpoint(path):
    """A merged 16-bit Qwen2.5-3B-Instruct as Unsloth saves it: the real tensor table (36 layers, hidden
    2048, MLP 11008, 2 KV heads of 128, vocabulary 151,936 tied), in a sparse file (no data written)."""
    shapes = {"model.embed_tokens.weight": [151936, 2048], "model.norm.weight": [2048]}
    for i in range(36):
        layer = f"model.layers.{i}."
        for name, shape in {
            "self_attn.q_proj": [2048, 2048],
            "self_attn.k_proj": [256, 2048],
            "self_attn.v_proj": [256, 2048],
            "self_attn.o_proj": [2048, 2048],
            "mlp.gate_proj": [11008, 2048],
            "mlp.up_proj": [11008, 2048],
            "mlp.down_proj": [2048, 11008],
        }.items():
            shapes[layer + name + ".weight"] = shape
        for name, size in (("self_attn.q_proj", 2048), ("self_attn.k_proj", 256), ("self_attn.v_proj", 256)):
            shapes[layer + name + ".bias"] = [size]
        shapes[layer + "input_layernorm.weight"] = shapes[layer + "post_attention_layernorm.weight"] = [2048]
    header, offset = {}, 0
    for name, shape in shapes.items():
        size = 2 * (shape[0] * (shape[1] if len(shape) > 1 else 1))
        header[name] = {"dtype": "F16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    path.mkdir(parents=True, exist_ok=True)
    with open(path / "model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        f.truncate(8 + len(text) + offset)  # sparse: 6.2 GB on paper, nothing on disk
    return path


def test_the_memory_check_asks_what_the_4bit_reload_needs(fake, tmp_path):
    """The check asked for 0.4 x 5.75 GiB + 1 = 3.3 GiB for Qwen2.5-3B; the 4-bit load needs about
    1.9 GiB of weights (NF4 linear layers, 16-bit embedding), within 90 % of the free memory
    (transformers' bitsandbytes quantizer), plus one 16-bit weight being quantized and generation.
    After release the T4 has 11.3 GiB free for it."""
    from helpers.evaluation.adapters import merged_4bit_gib
    from helpers.training.engine import free_gpu_memory, release

    merged = qwen25_3b_checkpoint(tmp_path / "merged")
    assert (merged / "model.safetensors").stat().st_size / GIB == pytest.approx(5.75, abs=0.01)
    needed = merged_4bit_gib(merged)
    assert 2.0 <= needed <= 2.6
    assert merged_4bit_gib(merged, headroom_gib=0.0) == pytest.approx(1.92 / 0.9, abs=0.03)
    gpu = FakeGPU()
    model, _, _ = policy_and_adapter(tmp_path)
    release(model)
    del model
    import torch

    with pytest.MonkeyPatch.context() as patch:
        gpu.patch_torch(patch)
        assert free_gpu_memory(needed, "the merged model in 4-bit") > 11.0
        assert torch.cuda.mem_get_info()[0] / GIB > 11.0


# --------------------------------------------------------------- C1, C2: one engine
def test_a_second_engine_is_refused_with_the_steps_not_vllms_assertion(fake, tmp_path):
    """05's exercise_run and 06's "reload it (section 3)" loaded a second policy with vLLM while one
    had run in the process; vLLM asserted "Sleep mode can only be used for one instance per process".
    load_model now refuses first and says what to do: reuse the policy, or restart."""
    from helpers.training.engine import SecondEngineError, release
    from helpers.training.models import load_model

    model, _, _ = policy_and_adapter(tmp_path)
    with pytest.raises(SecondEngineError, match=r"(?s)already holds.*reuse.*exercise_policy"):
        load_model(T4)
    release(model)
    del model
    with pytest.raises(SecondEngineError, match=r"(?s)one per process.*Restart session"):
        load_model(T4)
    assert len(fake.calls("FastLanguageModel.from_pretrained")) == 1


def test_without_standby_a_released_engine_leaves_room_for_the_next(fake, monkeypatch, tmp_path):
    from helpers.training.engine import release
    from helpers.training.models import load_model

    monkeypatch.delenv("UNSLOTH_VLLM_STANDBY")
    model, _, _ = policy_and_adapter(tmp_path)
    release(model)
    del model
    load_model(T4)  # no sleep-mode pools: vLLM allows it
    assert len(fake.calls("FastLanguageModel.from_pretrained")) == 2


def _lora(model, part):
    import torch

    return torch.cat([p.detach().flatten().clone() for n, p in model.named_parameters() if f"lora_{part}" in n])


def test_an_exercise_on_a_t4_reuses_the_policy_with_a_fresh_lora(fake, tmp_path, tiny_model_dir):
    """Exercise runs on a GPU profile start no engine: the loaded policy gets a fresh LoRA (B = 0, A
    drawn with the profile's seed), so it is the starting point again; on the CPU a new copy is loaded."""
    import torch

    from helpers.training.engine import live_vllm_models
    from helpers.training.models import exercise_policy

    model, tokenizer, _ = policy_and_adapter(tmp_path)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_" in name:
                p.add_(0.5)  # what training did
    same, same_tokenizer = exercise_policy(T4, model, tokenizer)
    assert same is model and same_tokenizer is tokenizer and live_vllm_models() == 1
    assert torch.count_nonzero(_lora(model, "B")) == 0
    first_a = _lora(model, "A")
    exercise_policy(T4, model, tokenizer)
    assert torch.equal(_lora(model, "A"), first_a)  # the profile's seed
    assert len(fake.calls("FastLanguageModel.from_pretrained")) == 1
    cpu_model, _ = exercise_policy(PROFILES["cpu"], None, None, tiny_model_dir)
    assert cpu_model is not model and torch.count_nonzero(_lora(cpu_model, "B")) == 0
    with pytest.raises(ValueError, match="loaded policy"):
        exercise_policy(T4, None, None)


# ------------------------------------------------- C3: section 8 after a restart
def test_after_a_restart_section_8_finds_its_merge_on_disk_and_loads_no_policy(fake, tmp_path, monkeypatch):
    """The GPUMemoryError advice ("restart, run the settings cell, then this section") ended in
    NameErrors: section 8 needed the policy and section 2's and 5's variables. merge_once keeps the
    merged model and the LoRA's answer on disk; after a restart it finds them and loads no policy."""
    import torch

    from helpers.evaluation.adapters import RECORD_FILE, load_merged, merge_once
    from helpers.training.engine import GPUMemoryError, release

    tiny_model_dir = __import__("unsloth").MODEL_DIR
    model, tokenizer, adapter = policy_and_adapter(tmp_path)
    prompt = [{"role": "user", "content": "What is 2 + 2?"}]
    merged, with_lora = merge_once(T4, adapter, tmp_path, prompt, 4, model=model, tokenizer=tokenizer)
    assert merged == adapter.parent / "merged" and (merged / RECORD_FILE).exists() and with_lora.startswith("<lora")
    release(model)
    del model
    busy = FakeGPU(other_gib=12.0)  # another process holds the card
    with pytest.MonkeyPatch.context() as patch:
        busy.patch_torch(patch)
        with pytest.raises(GPUMemoryError, match=r"(?s)Restart session.*settings cell.*section 8.*on disk"):
            load_merged(merged, T4)

    restart(monkeypatch, tiny_model_dir)
    import pinned

    again, text = merge_once(T4, adapter, tmp_path, prompt, 4)
    assert (again, text) == (merged, with_lora) and pinned.calls("FastLanguageModel.from_pretrained") == []
    loads = []
    monkeypatch.setattr("transformers.AutoModelForCausalLM.from_pretrained", lambda path, **kw: loads.append(kw))
    monkeypatch.setattr("transformers.BitsAndBytesConfig", lambda **kwargs: kwargs)
    with pytest.MonkeyPatch.context() as patch:
        FakeGPU().patch_torch(patch)
        load_merged(merged, T4)
    assert loads and loads[0]["dtype"] == torch.float16


def test_a_merge_cut_short_is_done_again_with_a_policy_loaded_and_released(fake, tmp_path, monkeypatch):
    """No record (the session ended before the merge finished): after the restart merge_once loads the
    policy itself, merges, and releases it, so that the next cell can load the merged model."""
    from helpers.evaluation.adapters import RECORD_FILE, merge_once
    from helpers.training.engine import live_vllm_models, release

    tiny_model_dir = __import__("unsloth").MODEL_DIR
    model, _, adapter = policy_and_adapter(tmp_path)
    release(model)
    del model
    restart(monkeypatch, tiny_model_dir)
    import pinned

    merged, text = merge_once(T4, adapter, tmp_path, [{"role": "user", "content": "1 + 1?"}], 4)
    assert (merged / RECORD_FILE).exists() and (merged / "config.json").exists() and text.startswith("<lora")
    assert len(pinned.calls("FastLanguageModel.from_pretrained")) == 1 and live_vllm_models() == 0
    assert [name for name, _ in pinned.CALLS][-2:] == ["vllm.LLM.sleep", "unsloth_zoo.vllm_utils.delete_vllm"]


def test_notebook_06_section_8_after_a_gpu_memory_error_and_a_restart(fake, monkeypatch, tmp_path, gsm8k_dir):
    """C3 on the notebook itself: the GPUMemoryError advice (restart, the install and settings cells, then
    section 8) works when followed. Notebook 06's cells run in order up to a reload against a busy GPU;
    after the restart the settings cell and section 8 alone find the merged model and the LoRA's answer on
    disk, load no policy, and the reload passes the memory check."""
    import transformers
    from test_gpu_contract import cell

    from helpers.training.engine import GPUMemoryError
    from helpers.training.models import load_model

    tiny_model_dir = __import__("unsloth").MODEL_DIR
    monkeypatch.setenv("GRPO_PROFILE", "t4")
    monkeypatch.setenv("GRPO_QUICK", "1")  # t4-quick: short completions
    for name in ("GRPO_DRIVE", "GRPO_DRIVE_DIR", "GRPO_ADAPTER", "GRPO_ADAPTER_DIR"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "content" / "grpo-course"
    adapter = root / "outputs" / "grpo-t4-quick" / "lora_adapter"  # notebook 05's adapter, where 06 looks
    policy, tokenizer = load_model(T4)
    policy.save_pretrained(adapter)
    tokenizer.save_pretrained(adapter)
    del policy
    restart(monkeypatch, tiny_model_dir)  # notebook 05 ran in another runtime
    session = {"ROOT": str(root)}
    for cell_id in ("settings", "adapter", "load-model", "merge"):  # settings, adapter, policy, merge
        exec(cell("06", cell_id), session)
    loads, real = [], transformers.AutoModelForCausalLM.from_pretrained

    def from_pretrained(path, **kwargs):  # the merged model's 4-bit load: recorded, then loaded plainly
        loads.append(kwargs)  # (no bitsandbytes on a CPU)
        return real(path, dtype=kwargs["dtype"])

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", from_pretrained)
    monkeypatch.setattr(transformers, "BitsAndBytesConfig", lambda **kwargs: kwargs)
    with pytest.MonkeyPatch.context() as patch:
        FakeGPU(other_gib=12.0).patch_torch(patch)  # another process holds the card
        with pytest.raises(GPUMemoryError, match=r"(?s)Restart session.*settings cells, then notebook 06's section 8"):
            exec(cell("06", "reload"), session)
    assert not loads

    restart(monkeypatch, tiny_model_dir)  # Runtime > Restart session
    import pinned

    restarted = {"ROOT": str(root)}  # the install cell sets only ROOT here; then the settings cell, section 8
    exec(cell("06", "settings"), restarted)
    exec(cell("06", "merge"), restarted)
    with pytest.MonkeyPatch.context() as patch:
        FakeGPU().patch_torch(patch)
        exec(cell("06", "reload"), restarted)  # the memory check passes: no policy was loaded
    assert pinned.calls("FastLanguageModel.from_pretrained") == [] and len(loads) == 1
    assert restarted["with_lora"] == session["with_lora"] and isinstance(restarted["from_merged"], str)
