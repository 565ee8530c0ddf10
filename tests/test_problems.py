"""helpers.data.problems: course-written word problems, deterministic, right, and apart between splits."""

import re

import pytest

from helpers.data.draws import SPLITS, split_of
from helpers.data.problems import FAMILIES, KINDS, make_problems, problems_dataset


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("ops", sorted(KINDS))
def test_every_answer_is_its_expression_and_its_solution(ops, family):
    for p in make_problems(60, ops=ops, max_number=30, seed=7, family=family):
        value = eval(p.expression.replace("/", "//"))  # noqa: S307 - our own arithmetic
        assert str(value) == p.answer and int(p.answer) > 0
        assert eval(p.expression) == value  # divisions are exact  # noqa: S307
        assert p.solution.endswith(f"#### {p.answer}")
        last = p.solution.split("\n")[-2]  # the last worked step ends on the answer
        assert re.search(rf"= {p.answer}\b", last), p.solution
        assert p.ops == ops and p.kind in KINDS[ops] and p.family == family
        assert p.template.startswith(p.kind + ".")
        assert all(str(n) in p.question for n in p.numbers)  # the numbers split_of hashes are the question's
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


def test_the_splits_never_share_an_arithmetic_instance():
    drawn = {
        split: make_problems(120 if split == "train" else 40, ops=1, max_number=50, split=split, seed=1)
        for split in SPLITS
    }
    keys = {split: {(p.kind, p.expression) for p in ps} for split, ps in drawn.items()}
    for i, a in enumerate(SPLITS):
        for b in SPLITS[i + 1 :]:
            assert not keys[a] & keys[b], (a, b)
    for split, ps in drawn.items():
        assert all(split_of(p.kind, p.numbers) == split for p in ps)
    pairs = [(a, b) for a in range(2, 60) for b in range(2, 60)]
    shares = {split: sum(split_of("add", ab) == split for ab in pairs) / len(pairs) for split in SPLITS}
    for split, expected in (("train", 12 / 16), ("dev", 1 / 16), ("test", 2 / 16), ("sealed", 1 / 16)):
        assert abs(shares[split] - expected) < 0.02, shares


def test_the_fixed_family_tests_on_every_split_but_train():
    test = make_problems(100, ops=1, split="test", seed=1, family="fixed")
    assert {split_of(p.kind, p.numbers) for p in test} == {"dev", "test", "sealed"}
    with pytest.raises(ValueError, match="split"):
        make_problems(3, split="dev", family="fixed")


def test_the_varied_family_words_every_kind_many_ways_with_distractors():
    for ops, low in ((1, 7), (2, 4), (3, 3)):
        problems = make_problems(600, ops=ops, max_number=50, seed=2)
        for kind in KINDS[ops]:
            assert len({p.template for p in problems if p.kind == kind}) >= low, kind
        extra = [p for p in problems if len(re.findall(r"\d+", p.question)) > len(p.numbers)]
        assert 0.2 < len(extra) / len(problems) < 0.5  # a distractor in about a third
    fixed = make_problems(600, ops=1, seed=2, family="fixed")
    assert len({p.template for p in fixed}) == 12  # three wordings a kind


def test_exclude_keeps_two_draws_apart():
    first = make_problems(30, ops=1, split="test", seed=5)
    taken = {(p.kind, p.numbers) for p in first} | {p.question for p in first}
    second = make_problems(30, ops=1, split="test", seed=5, exclude=taken)
    assert not {(p.kind, p.numbers) for p in second} & taken


def test_bad_knobs_fail_with_a_clear_error(monkeypatch):
    with pytest.raises(ValueError, match="ops must be"):
        make_problems(3, ops=4)
    with pytest.raises(ValueError, match="max_number"):
        make_problems(3, max_number=2)
    with pytest.raises(ValueError, match="split"):
        make_problems(3, split="valid")
    with pytest.raises(ValueError, match="family"):
        make_problems(3, family="other")
    with pytest.raises(ValueError, match="not 1-operation kinds"):
        make_problems(3, kinds=["mul_add"])
    monkeypatch.setattr("helpers.data.draws.NAMES", (("Ava", "she"), ("Liam", "he")))
    monkeypatch.setattr("helpers.data.draws.OBJECTS", ("apples",))
    with pytest.raises(ValueError, match="distinct"):  # 3 wordings x 16 sums x 2 names: fails, never hangs
        make_problems(500, ops=1, max_number=5, kinds=["add"], family="fixed")


def test_problems_dataset_is_shaped_like_gsm8k():
    ds = problems_dataset(make_problems(4, ops=2, seed=0))
    assert set(ds.column_names) == {"question", "prompt", "answer", "ops", "kind"}
    assert ds[0]["prompt"][-1] == {"role": "user", "content": ds[0]["question"]}
    assert "not GSM8K" in ds.info.description and "2 ops up to 20" in ds.info.description


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("ops", [1, 2, 3])
def test_every_worked_solution_earns_the_full_reward_with_its_prompt(ops, family):
    # bug found in review: "81 / 9 = 9" (9 is in the question) earned no format reward
    from helpers.course_format import format_solution, make_prompt
    from helpers.rewards import REWARD_FUNCS

    problems = make_problems(200, ops=ops, max_number=50, split="train", seed=1000, family=family)
    prompts = [make_prompt(p.question) for p in problems]
    completions = [[{"role": "assistant", "content": format_solution(p.solution)}] for p in problems]
    totals = [
        sum(v)
        for v in zip(
            *(f(prompts=prompts, completions=completions, answer=[p.answer for p in problems]) for f in REWARD_FUNCS)
        )
    ]
    assert [p.question for p, t in zip(problems, totals) if t != 4.0] == []
