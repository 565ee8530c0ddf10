"""helpers.data.problems: course-written word problems, deterministic, right, and apart between splits."""

import re

import pytest

from helpers.data.problems import KINDS, TEST_SHARE, make_problems, problems_dataset, split_of


@pytest.mark.parametrize("ops", sorted(KINDS))
def test_every_answer_is_its_expression_and_its_solution(ops):
    for p in make_problems(60, ops=ops, max_number=30, seed=7):
        value = eval(p.expression.replace("/", "//"))  # noqa: S307 - our own arithmetic
        assert str(value) == p.answer and int(p.answer) > 0
        assert eval(p.expression) == value  # divisions are exact  # noqa: S307
        assert p.solution.endswith(f"#### {p.answer}")
        last = p.solution.split("\n")[-2]  # the last worked step ends on the answer
        assert re.search(rf"= {p.answer}\b", last), p.solution
        assert p.ops == ops and p.kind in KINDS[ops]
        assert all(int(n) <= max(30, 12 * 30 * 3) for n in re.findall(r"\d+", p.question))


def test_the_kinds_come_in_turn_and_the_knob_bounds_the_numbers():
    problems = make_problems(8, ops=1, max_number=9, seed=0)
    assert [p.kind for p in problems] == list(KINDS[1]) * 2
    for p in problems:
        if p.kind in ("add", "sub"):
            assert all(int(n) <= 9 for n in re.findall(r"\d+", p.expression))


def test_same_arguments_same_problems_other_seed_other_problems():
    assert make_problems(20, ops=2, seed=3) == make_problems(20, ops=2, seed=3)
    assert make_problems(20, ops=2, seed=3) != make_problems(20, ops=2, seed=4)
    assert len({p.question for p in make_problems(200, ops=1, seed=0)}) == 200


def test_train_and_test_never_share_an_arithmetic_instance():
    train = make_problems(400, ops=1, seed=1)
    test = make_problems(200, ops=1, split="test", seed=1)
    keys = lambda ps: {(p.kind, p.expression) for p in ps}  # noqa: E731
    assert not keys(train) & keys(test)
    assert all(split_of(p.kind, [int(n) for n in re.findall(r"\d+", p.expression)]) == "test" for p in test)
    share = sum(split_of("add", (a, b)) == "test" for a in range(2, 40) for b in range(2, 40)) / 38**2
    assert abs(share - 1 / TEST_SHARE) < 0.05


def test_bad_knobs_fail_with_a_clear_error(monkeypatch):
    with pytest.raises(ValueError, match="ops must be"):
        make_problems(3, ops=4)
    with pytest.raises(ValueError, match="max_number"):
        make_problems(3, max_number=2)
    with pytest.raises(ValueError, match="split"):
        make_problems(3, split="valid")
    with pytest.raises(ValueError, match="not 1-operation kinds"):
        make_problems(3, kinds=["mul_add"])
    monkeypatch.setattr("helpers.data.problems.NAMES", (("Ava", "she"), ("Liam", "he")))
    monkeypatch.setattr("helpers.data.problems.OBJECTS", ("apples",))
    with pytest.raises(ValueError, match="distinct"):  # 3 wordings x 16 sums x 2 names: fails, never hangs
        make_problems(500, ops=1, max_number=5, kinds=["add"])


def test_problems_dataset_is_shaped_like_gsm8k():
    ds = problems_dataset(make_problems(4, ops=2, seed=0))
    assert set(ds.column_names) == {"question", "prompt", "answer", "ops", "kind"}
    assert ds[0]["prompt"][-1] == {"role": "user", "content": ds[0]["question"]}
    assert "not GSM8K" in ds.info.description and "2 ops up to 20" in ds.info.description


@pytest.mark.parametrize("ops", [1, 2, 3])
def test_every_worked_solution_earns_the_full_reward_with_its_prompt(ops):
    # bug found in review: "81 / 9 = 9" (9 is in the question) earned no format reward
    from helpers.course_format import format_solution, make_prompt
    from helpers.rewards import REWARD_FUNCS

    problems = make_problems(200, ops=ops, split="train", seed=1000)  # the cold start's draw
    prompts = [make_prompt(p.question) for p in problems]
    completions = [[{"role": "assistant", "content": format_solution(p.solution)}] for p in problems]
    totals = [
        sum(v)
        for v in zip(
            *(f(prompts=prompts, completions=completions, answer=[p.answer for p in problems]) for f in REWARD_FUNCS)
        )
    ]
    assert [p.question for p, t in zip(problems, totals) if t != 4.0] == []
