"""helpers.training.callbacks: held-out accuracy during training, written beside the reward; the group log."""

import csv
from types import SimpleNamespace

import pytest

import helpers.training.generation
from helpers.training.callbacks import HELDOUT_COLUMNS, HeldoutAccuracy, score_heldout

ROWS = [{"question": f"What is {a} + 1?", "answer": str(a + 1)} for a in range(4)]


def test_score_heldout_tells_the_answer_block_from_the_last_number():
    texts = ["<answer>1</answer>", "so it is 2", "<answer>9</answer> no, 3", "nothing"]
    got = score_heldout(texts, ["1", "2", "3", "4"])
    assert got == {HELDOUT_COLUMNS[0]: 0.25, HELDOUT_COLUMNS[1]: 0.75}
    with pytest.raises(ValueError):
        score_heldout(["x"], ["1", "2"])


class FakeModel:
    training = True

    def train(self, mode=True):
        self.training = mode


def test_the_callback_evaluates_at_step_0_every_n_steps_and_at_the_end(monkeypatch):
    calls = []

    def fake_generate(model, tokenizer, prompts, **kwargs):
        calls.append(kwargs["temperature"])
        right = len(calls) % 2  # alternately all right, all wrong
        return [f"<answer>{int(p[-1]['content'].split()[2]) + right}</answer>" for p in prompts]

    monkeypatch.setattr(helpers.training.generation, "generate", fake_generate)
    metrics = SimpleNamespace(rows=[])
    cb = HeldoutAccuracy(ROWS, tokenizer=None, every=2, metrics=metrics)
    model = FakeModel()
    state = SimpleNamespace(global_step=0, max_steps=5, is_world_process_zero=True)
    cb.on_train_begin(None, state, None, model=model)
    logged = {}
    for step in range(1, 6):
        state.global_step = step
        logs = {"loss": 0.1, "reward": 1.0}
        cb.on_log(None, state, None, logs=logs, model=model)
        logged[step] = logs
    assert [s for s, _ in cb.history] == [0, 2, 4, 5]
    assert set(calls) == {0.0}  # greedy
    assert metrics.rows[0]["step"] == 0 and metrics.rows[0][HELDOUT_COLUMNS[0]] == 1.0
    assert HELDOUT_COLUMNS[0] in logged[2] and HELDOUT_COLUMNS[0] not in logged[3] and HELDOUT_COLUMNS[0] in logged[5]
    assert [v[HELDOUT_COLUMNS[0]] for _, v in cb.history] == [1.0, 0.0, 1.0, 0.0]
    assert model.training  # train mode restored
    with pytest.raises(ValueError):
        HeldoutAccuracy(ROWS, None, every=0)


def test_train_writes_the_heldout_curve_into_metrics_csv(tiny_model_dir, tmp_path):
    from helpers.data.problems import make_problems, problems_dataset
    from helpers.rewards import REWARD_FUNCS
    from helpers.training.models import load_model
    from helpers.training.profiles import PROFILES
    from helpers.training.trainer import train

    profile = PROFILES["cpu"].replace(
        max_completion_length=8, max_steps=2, heldout_every=1, num_generations=4, per_device_train_batch_size=4
    )
    model, tokenizer = load_model(profile, tiny_model_dir)
    heldout = [p.to_dict() for p in make_problems(3, ops=1, split="test")]
    run = train(
        profile,
        model=model,
        tokenizer=tokenizer,
        output_dir=tmp_path / "run",
        heldout=heldout,
        dataset=problems_dataset(make_problems(2, ops=1)),
        reward_funcs=REWARD_FUNCS,
    )
    with open(run.metrics_csv) as f:
        rows = list(csv.DictReader(f))
    assert [r["step"] for r in rows] == ["0", "1", "2"]
    assert rows[0]["reward"] == "" and rows[1]["reward"] != ""  # step 0: before any rollout
    assert all(r[HELDOUT_COLUMNS[0]] != "" and 0 <= float(r[HELDOUT_COLUMNS[0]]) <= 1 for r in rows)
    assert [s for s, _ in run.heldout] == [0, 1, 2]
    assert run.curves_png.stat().st_size > 10_000


def test_an_evaluation_leaves_the_rollouts_random_stream_where_it_was(monkeypatch):
    """Bug: generate() seeds torch's global stream with 0, so after each held-out evaluation every run's
    rollouts drew the same numbers, whatever its seed."""
    import torch

    def seeding_generate(model, tokenizer, prompts, **kwargs):
        torch.manual_seed(0)  # what helpers.training.generation.generate does
        return ["<answer>0</answer>"] * len(prompts)

    monkeypatch.setattr(helpers.training.generation, "generate", seeding_generate)
    torch.manual_seed(3407)
    expected = torch.rand(3)
    torch.manual_seed(3407)
    HeldoutAccuracy(ROWS, tokenizer=None, every=1).evaluate(FakeModel())
    assert torch.equal(torch.rand(3), expected)


def test_group_log_writes_each_generated_batch_once_and_finds_each_prompts_row(tmp_path):
    import json
    from collections import deque

    from datasets import Dataset

    from helpers.training.callbacks import GroupLog

    data = Dataset.from_dict({"question": ["Ann has 3 pens.", "Bo has 5 cups."], "kind": ["add", "sub"]})
    logs = {"prompt": deque(), "completion": deque(), "rewards": {"r": deque()}, "advantages": deque()}
    log = GroupLog(tmp_path / "groups.jsonl", SimpleNamespace(_logs=logs), data, num_generations=2)
    state = SimpleNamespace(global_step=0, is_world_process_zero=True)
    log.on_train_begin(None, state, None)
    logs["prompt"].extend(["<user>Bo has 5 cups.</user>"] * 2 + ["<user>A GSM8K question</user>"] * 2)
    logs["completion"].extend(["a", "b", "c", "d"])
    logs["rewards"]["r"].extend([2.0, 0.0, 1.0, 1.0])
    logs["advantages"].extend([0.7, -0.7, 0.0, 0.0])
    for step in (1, 2):  # num_iterations = 2: the same batch serves two optimizer steps
        state.global_step = step
        log.on_step_end(None, state, None)
    rows = [json.loads(line) for line in open(tmp_path / "groups.jsonl")]
    assert rows == [
        {"step": 1, "group": 0, "row": 1, "kind": "sub", "rewards": {"r": [2.0, 0.0]}, "advantages": [0.7, -0.7]},
        {"step": 1, "group": 1, "row": None, "kind": None, "rewards": {"r": [1.0, 1.0]}, "advantages": [0.0, 0.0]},
    ]
    with pytest.raises(AttributeError, match="_logs"):
        GroupLog(tmp_path / "x.jsonl", SimpleNamespace(), data, num_generations=2)


def test_group_log_resumed_at_a_checkpoint_drops_the_groups_logged_after_it(tmp_path):
    """Bug (Colab round 4, L1): a run resumed at step N appended again the steps logged after N,
    so notebook 05's group counts took them twice."""
    import json

    from datasets import Dataset

    from helpers.training.callbacks import GroupLog

    path = tmp_path / "groups.jsonl"
    path.write_text("".join(json.dumps({"step": s, "group": g}) + "\n" for s in (1, 2, 3) for g in (0, 1)))
    data = Dataset.from_dict({"question": ["Ann has 3 pens."]})
    log = GroupLog(path, SimpleNamespace(_logs={}), data, num_generations=2)
    log.on_train_begin(None, SimpleNamespace(global_step=2, is_world_process_zero=True), None)
    assert [json.loads(line)["step"] for line in path.read_text().splitlines()] == [1, 1, 2, 2]
    log.on_train_begin(None, SimpleNamespace(global_step=0, is_world_process_zero=True), None)
    assert path.read_text() == ""
