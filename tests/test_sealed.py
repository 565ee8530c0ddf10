"""cpu_study.sealed: the sealed test set is the committed one and shares nothing with any other set."""

import pytest

from cpu_study import sealed
from helpers.data.draws import split_of
from helpers.data.problem_sets import (
    dev_problem_set,
    dev_transfer_set,
    eval_problem_set,
    heldout_problems,
    transfer_problem_set,
)
from helpers.data.problems import make_problems
from helpers.training.profiles import CPU


def test_the_draw_is_the_committed_one():
    sets = sealed.sealed_problems()
    assert sealed.digest(sets) == sealed.DIGEST
    assert {name: len(part) for name, part in sets.items()} == {"problems": 192, "transfer": 288}
    for part in sets.values():
        assert len({p.question for p in part}) == len(part)
        assert all(split_of(p.kind, p.numbers) == "sealed" for p in part)


def test_a_changed_generator_is_refused(monkeypatch):
    monkeypatch.setattr(sealed, "DIGEST", "0" * 64)
    with pytest.raises(sealed.SealedSetChanged, match="digest"):
        sealed.sealed_problems()


def _keys(problems):
    problems = list(problems)
    return (
        {p.question for p in problems},
        {(p.template, p.numbers) for p in problems},
        {(p.kind, p.numbers) for p in problems},
    )


def test_no_other_set_shares_a_text_a_template_and_numbers_or_a_kind_and_numbers():
    from helpers.data.curriculum import curriculum_dataset
    from helpers.data.draws import Problem

    sealed_keys = _keys(p for part in sealed.draw().values() for p in part)
    others = {
        "dev": dev_problem_set(),
        "dev transfer": dev_transfer_set(),
        "test": eval_problem_set(CPU),
        "transfer test": transfer_problem_set(CPU),
        "held-out": [Problem(**row) for row in heldout_problems(CPU)],
        "train": [p for ops in (1, 2, 3) for top in (20, 50) for p in make_problems(300, ops=ops, max_number=top)],
    }
    for name, problems in others.items():
        for mine, theirs in zip(sealed_keys, _keys(problems)):
            assert not mine & theirs, name
    prompts = curriculum_dataset(CPU.curriculum, batches=12, prompts_per_batch=16, seed=CPU.seed)
    assert not sealed_keys[0] & set(prompts["question"])


def test_a_run_is_opened_once(tmp_path):
    from cpu_study.sealed_eval import SEALED_SUMMARY_FILE, AlreadyOpened, open_sealed

    (tmp_path / SEALED_SUMMARY_FILE).write_text("{}")
    with pytest.raises(AlreadyOpened):
        open_sealed(tmp_path / "run", tmp_path, CPU)
    with pytest.raises(FileNotFoundError, match="finished"):
        open_sealed(tmp_path / "run", tmp_path / "fresh", CPU)


def test_a_run_that_reused_a_cold_start_is_accepted(tmp_path, monkeypatch):
    """A seed run made with ``--cold-start DIR`` has no cold_start/ of its own; its adapter names it."""
    import json

    from cpu_study.sealed_eval import open_sealed
    from helpers.evaluation import adapters

    cold = tmp_path / "reference" / "cold_start"
    cold.mkdir(parents=True)
    (cold / "config.json").write_text("{}")
    adapter = tmp_path / "seed1" / "lora_adapter"
    adapter.mkdir(parents=True)
    (adapter / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": str(cold)}))

    class Loaded(Exception):
        pass

    def load(profile, adapter_dir, model_path=None):
        assert adapters.adapter_base(adapter_dir) == cold
        raise Loaded

    monkeypatch.setattr(adapters, "load_with_adapter", load)
    with pytest.raises(Loaded):
        open_sealed(tmp_path / "seed1", tmp_path / "dest", CPU)
    (adapter / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": str(tmp_path / "gone")}))
    with pytest.raises(FileNotFoundError, match="cold start"):
        open_sealed(tmp_path / "seed1", tmp_path / "dest", CPU)
