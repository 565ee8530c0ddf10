"""Several processes without launching them: the batch arithmetic, the checks made before any model
loads, the main-process-only writing and printing, and the configs/ read by accelerate's own parser
(the 2-process run itself is tests/test_multi_process.py)."""

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from helpers.training.distributed import (
    SetupError,
    check_launch,
    describe_batch,
    global_batch,
    is_main_process,
    process_count,
)
from helpers.training.hardware import GPU
from helpers.training.profiles import PROFILES, shortened

REPO = Path(__file__).resolve().parent.parent
CONFIGS = REPO / "configs"
A100 = GPU("NVIDIA A100-SXM4-40GB", (8, 0), 39.4)
T4 = GPU("Tesla T4", (7, 5), 14.7)


def test_the_launcher_variables_give_rank_and_process_count(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert (process_count(), is_main_process()) == (1, True)
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    assert (process_count(), is_main_process()) == (4, False)


def test_global_batch_is_per_device_times_processes_times_accumulation():
    quick = shortened(PROFILES["cpu"])  # 4 completions per process, groups of 4
    assert [global_batch(quick, n) for n in (1, 2, 8)] == [4, 8, 32]
    assert global_batch(PROFILES["cuda"].replace(gradient_accumulation_steps=4), 2) == 64
    assert describe_batch(2, 4, 1, 4) == (
        "2 processes; global batch 8 completions = 4 per process x 2 processes "
        "x 1 accumulation step (2 prompts x 4 completions)"
    )


def test_partial_groups_are_one_line_naming_the_numbers():
    odd = PROFILES["cuda"].replace(per_device_train_batch_size=6, gradient_accumulation_steps=1)
    with pytest.raises(SetupError) as error:
        global_batch(odd, 3)
    message = str(error.value)
    assert "\n" not in message
    for part in (
        "per_device_train_batch_size 6",
        "3 processes",
        "gradient_accumulation_steps 1",
        "= 18",
        "num_generations 8",
    ):
        assert part in message
    assert global_batch(odd, 4) == 24  # 3 whole groups of 8


def test_a_bad_launch_fails_before_any_model_loads(monkeypatch, tmp_path):
    from helpers.training.pipeline import run_pipeline

    def no_loading(*args, **kwargs):
        raise AssertionError("a model was loaded before the settings were checked")

    monkeypatch.setattr("helpers.training.models.load_model", no_loading)
    monkeypatch.setattr("helpers.training.cold_start.train_cold_start", no_loading)
    monkeypatch.setenv("WORLD_SIZE", "3")
    with pytest.raises(SetupError, match="18 completions"):
        run_pipeline(PROFILES["cpu"].replace(per_device_train_batch_size=6), tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_vllm_server_is_for_plain_trl_and_zero3_has_no_cold_start(monkeypatch):
    with pytest.raises(SetupError, match="profile t4: Unsloth generates with its own vLLM engine"):
        check_launch(PROFILES["t4"].replace(vllm_server_url="http://localhost:8000"), cold_start=False)
    assert check_launch(PROFILES["cuda"].replace(vllm_server_url="http://localhost:8000"), cold_start=False) == 8
    monkeypatch.setenv("ACCELERATE_USE_DEEPSPEED", "true")
    monkeypatch.setenv("ACCELERATE_DEEPSPEED_ZERO_STAGE", "3")
    with pytest.raises(SetupError, match="ZeRO-3 shards the weights that the cold start merges"):
        check_launch(PROFILES["cpu"], cold_start=True)
    cpu_batch = PROFILES["cpu"].per_device_train_batch_size  # 16 prompts x 8 completions, one process
    assert check_launch(PROFILES["cpu"], cold_start=False) == cpu_batch == 128
    monkeypatch.setenv("ACCELERATE_DEEPSPEED_ZERO_STAGE", "2")
    assert check_launch(PROFILES["cpu"], cold_start=True) == cpu_batch


def test_cli_reports_a_setup_error_in_one_line_from_the_main_process_only(monkeypatch, capsys):
    from helpers.cli import main

    monkeypatch.setenv("ACCELERATE_USE_DEEPSPEED", "true")
    monkeypatch.setenv("ACCELERATE_DEEPSPEED_ZERO_STAGE", "3")
    monkeypatch.delenv("GRPO_QUICK", raising=False)
    assert main(["train", "--profile", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error: DeepSpeed ZeRO-3" in err and "Traceback" not in err
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setattr("helpers.training.distributed.quiet_if_replica", lambda: True)  # keep pytest's stdout
    assert main(["train", "--profile", "cpu"]) == 2
    assert capsys.readouterr().err == ""


def test_a_replica_prints_nothing_and_the_main_process_does():
    code = (
        "import warnings; from helpers.training.distributed import quiet_if_replica; replica = quiet_if_replica(); "
        "print('printed'); warnings.warn('warned'); import sys; sys.stderr.write(f'replica={replica}')"
    )
    runs = {
        rank: subprocess.run(
            [sys.executable, "-c", code],
            cwd=REPO,
            capture_output=True,
            text=True,
            env={**os.environ, "RANK": rank},
            timeout=60,
        )
        for rank in ("0", "1")
    }
    assert runs["0"].stdout == "printed\n" and "warned" in runs["0"].stderr and "replica=False" in runs["0"].stderr
    assert runs["1"].stdout == "" and "warned" not in runs["1"].stderr and "replica=True" in runs["1"].stderr


def test_metrics_csv_is_written_by_the_main_process_only(tmp_path):
    from helpers.training.callbacks import MetricsCSV

    logs = {"loss": 0.1, "reward": 0.5}
    replica = MetricsCSV(tmp_path / "replica.csv")
    replica.on_log(None, SimpleNamespace(global_step=1, is_world_process_zero=False), None, logs=logs)
    assert not replica.path.exists()
    main = MetricsCSV(tmp_path / "main.csv")
    main.on_log(None, SimpleNamespace(global_step=1, is_world_process_zero=True), None, logs=logs)
    assert main.path.read_text().splitlines()[0] == "step,loss,reward,step_time_s"


def test_summary_without_evaluation_says_why_and_keeps_the_batch():
    from helpers.evaluation.reports import pipeline_summary

    training = SimpleNamespace(processes=4, global_batch=32, heldout=[])
    summary = pipeline_summary(
        PROFILES["cuda"],
        {},
        {"grpo_s": 10.0},
        reward_set="checked",
        dataset=None,
        training=training,
        skipped="DeepSpeed ZeRO-3 shards the weights",
    )
    assert summary["evaluation"] == {"skipped": "DeepSpeed ZeRO-3 shards the weights"}
    assert summary["stages"] == {} and summary["mcnemar_start_vs_grpo"] == {}
    assert summary["distributed"] == {
        "processes": 4,
        "per_device_train_batch_size": 8,
        "gradient_accumulation_steps": 1,
        "num_generations": 8,
        "global_batch": 32,
    }


# ------------------------------------------------------------------- configs/, as accelerate reads them
def launch_args(config: str, *extra: str):
    """``accelerate launch --config_file configs/<config> <extra> -m helpers train``, parsed and
    completed from the YAML by accelerate's own launcher code (nothing is started)."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser

    argv = ["--config_file", str(CONFIGS / config), *extra, "-m", "helpers", "train", "--profile", "cuda"]
    args, defaults, _ = _validate_launch_command(launch_command_parser().parse_args(argv))
    if args.use_deepspeed:  # as accelerate.commands.launch.launch_command does
        args.deepspeed_fields_from_accelerate_config = ",".join(defaults.deepspeed_config)
    return args


def test_multi_gpu_config_is_ddp_on_one_machine_with_the_process_count_of_the_command():
    from accelerate.utils.launch import prepare_multi_gpu_env

    args = launch_args("multi_gpu.yaml", "--num_processes", "4")
    assert args.multi_gpu and not args.use_deepspeed and args.num_machines == 1
    env = prepare_multi_gpu_env(args)
    assert (args.nproc_per_node, env["ACCELERATE_MIXED_PRECISION"]) == ("4", "no")


def test_multi_node_config_changes_only_machine_rank_and_main_ip():
    from accelerate.utils.launch import prepare_multi_gpu_env

    args = launch_args("multi_node.yaml", "--machine_rank", "1", "--main_process_ip", "10.0.0.1")
    prepare_multi_gpu_env(args)
    assert args.multi_gpu and (args.num_machines, args.num_processes) == (2, 8)
    assert (args.nnodes, args.node_rank, args.nproc_per_node) == ("2", 1, "4")
    assert args.rdzv_endpoint == "10.0.0.1:29500"  # the main machine, the config's port


@pytest.mark.parametrize("gpu", [A100, T4, None], ids=["bf16", "fp16", "fp32"])
@pytest.mark.parametrize("config, stage", [("deepspeed_zero2.yaml", 2), ("deepspeed_zero3.yaml", 3)])
def test_deepspeed_configs_take_batch_clipping_and_precision_from_the_grpo_config(
    config, stage, gpu, monkeypatch, tmp_path
):
    """The environment `accelerate launch` derives from the YAML builds accelerate's DeepSpeedPlugin
    (what every process gets), and the profile's GRPOConfig fills its "auto" values with no mismatch.
    GRPOConfig itself is built outside that environment: under it, transformers wants the deepspeed
    package, an optional extra that CI does not install."""
    from accelerate.utils import DeepSpeedPlugin
    from accelerate.utils.launch import prepare_deepspeed_cmd_env

    from helpers.training.trainer import build_grpo_config

    monkeypatch.setattr("helpers.training.hardware.gpu_info", lambda: gpu)
    profile = PROFILES["cuda"] if gpu else PROFILES["cpu"]
    grpo = build_grpo_config(profile, tmp_path)
    args = launch_args(config, "--num_processes", "4")
    _, env = prepare_deepspeed_cmd_env(args)
    assert (env["ACCELERATE_USE_DEEPSPEED"], env["ACCELERATE_DEEPSPEED_ZERO_STAGE"]) == ("true", str(stage))
    for key in [k for k in os.environ if k.startswith("ACCELERATE_")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        if key.startswith("ACCELERATE_"):
            monkeypatch.setenv(key, value)
    plugin = DeepSpeedPlugin()
    # TrainingArguments exports its own precision over the config's 'no' before it builds the plugin
    plugin.set_mixed_precision("fp16" if grpo.fp16 else "bf16" if grpo.bf16 else env["ACCELERATE_MIXED_PRECISION"])
    batch = global_batch(profile, 4)
    plugin.deepspeed_config_process(
        must_match=True,
        **{  # raises on any mismatch, as the Trainer would
            "train_micro_batch_size_per_gpu": grpo.per_device_train_batch_size,
            "gradient_accumulation_steps": grpo.gradient_accumulation_steps,
            "train_batch_size": batch,
            "gradient_clipping": grpo.max_grad_norm,
            "fp16.enabled": grpo.fp16,
            "bf16.enabled": grpo.bf16,
            "zero_optimization.stage": stage,
        },
    )
    ds = plugin.deepspeed_config
    assert (ds["train_micro_batch_size_per_gpu"], ds["gradient_accumulation_steps"]) == (
        profile.per_device_train_batch_size,
        profile.gradient_accumulation_steps,
    )
    assert (ds["gradient_clipping"], ds["fp16"]["enabled"], ds["bf16"]["enabled"]) == (
        profile.max_grad_norm,
        grpo.fp16,
        grpo.bf16,
    )
    assert ds["train_batch_size"] % profile.num_generations == 0
    assert plugin.zero3_save_16bit_model == (stage == 3)  # ZeRO-3: the adapter is gathered to be saved


def test_vllm_server_mode_builds_the_grpo_config_for_the_cuda_profile(monkeypatch, tmp_path):
    from helpers.training.trainer import build_grpo_config

    monkeypatch.setattr("helpers.training.hardware.gpu_info", lambda: A100)
    monkeypatch.setattr("helpers.training.distributed.process_count", lambda: 3)  # a process of a launch
    config = build_grpo_config(PROFILES["cuda"].replace(vllm_server_url="http://10.0.0.2:8000"), tmp_path)
    assert (config.use_vllm, config.vllm_mode, config.vllm_server_base_url) == (True, "server", "http://10.0.0.2:8000")
    assert config.bf16 and config.log_level_replica == "error" and not config.ddp_find_unused_parameters
    plain = build_grpo_config(PROFILES["cuda"], tmp_path)
    assert not plain.use_vllm and plain.vllm_server_base_url is None
    monkeypatch.setattr("helpers.training.distributed.process_count", lambda: 1)  # one: notebook 05's config
    assert build_grpo_config(PROFILES["cuda"], tmp_path).log_level_replica == "warning"
