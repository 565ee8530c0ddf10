"""helpers.data.transfer: a problem family in wordings no training problem uses, apart by split."""

import re

import pytest

from helpers.data.draws import NAMES, OBJECTS, SPLITS, split_of
from helpers.data.problems import KINDS, make_problems
from helpers.data.transfer import IN_TRAINING, TRANSFER_KINDS, make_transfer_problems


@pytest.mark.parametrize("top", [20, 60])
def test_every_answer_is_its_expression_and_its_solution(top):
    for p in make_transfer_problems(240, max_number=top, split="train", seed=3):
        assert eval(p.expression) == int(p.answer) > 0  # noqa: S307 - our own arithmetic
        assert p.solution.endswith(f"#### {p.answer}") and re.search(rf"= {p.answer}\b", p.solution.split("\n")[-2])
        assert p.family == "transfer" and p.ops == TRANSFER_KINDS[p.kind] and p.template.startswith(p.kind + ".")
        assert all(str(n) in p.question for n in p.numbers)


def test_kinds_in_turn_deterministic_distinct_and_in_their_split():
    problems = make_transfer_problems(48, split="test", seed=1)
    assert [p.kind for p in problems] == list(TRANSFER_KINDS) * 4
    assert (
        problems == make_transfer_problems(48, split="test", seed=1) != make_transfer_problems(48, split="test", seed=2)
    )
    assert len({p.question for p in problems}) == 48
    assert all(split_of(p.kind, p.numbers) == "test" for p in problems)
    assert set(IN_TRAINING) <= set(KINDS[1] + KINDS[2]) and set(IN_TRAINING) < set(TRANSFER_KINDS)


def test_every_kind_has_several_wordings_and_numbers_pass_20_at_60():
    problems = make_transfer_problems(600, max_number=60, split="train", seed=0)
    for kind in TRANSFER_KINDS:
        assert len({p.template for p in problems if p.kind == kind}) >= 3, kind
    assert sum(max(p.numbers) > 20 for p in problems) > 300


def test_exclude_and_bad_arguments():
    first = make_transfer_problems(24, split="dev", seed=4)
    taken = {(p.kind, p.numbers) for p in first}
    assert not taken & {(p.kind, p.numbers) for p in make_transfer_problems(24, split="dev", seed=4, exclude=taken)}
    for bad, match in (
        ({"n": 0}, "n must"),
        ({"kinds": ["pow"]}, "unknown"),
        ({"split": "x"}, "split"),
        ({"max_number": 3}, "max_number"),
    ):
        with pytest.raises(ValueError, match=match):
            make_transfer_problems(**{"n": 3, **bad})


def _skeleton(question: str) -> str:
    """The question with its numbers, names and objects blanked: what a wording is."""
    s = re.sub(r"\d+", "#", question)
    for name, _ in NAMES:
        s = re.sub(rf"\b{name}\b", "N", s)
    for obj in OBJECTS:
        s = s.replace(obj, "O")
    return s.lower()


def _ngrams(text: str, k: int = 5) -> set:
    words = re.findall(r"[a-z#']+", text)
    return {" ".join(words[i : i + k]) for i in range(len(words) - k + 1)}


def test_no_transfer_wording_shares_five_words_in_a_row_with_a_training_wording():
    training = set()
    for family in ("varied", "fixed"):
        for ops in KINDS:
            for p in make_problems(400, ops=ops, max_number=50, split="train", seed=9, family=family):
                training |= _ngrams(_skeleton(p.question))
    shared = {}
    for p in make_transfer_problems(1200, max_number=60, split="train", seed=9):
        common = _ngrams(_skeleton(p.question)) & training
        if common:
            shared[p.template] = sorted(common)
    assert shared == {}


def test_training_frames_are_absent():
    banned = ("buys", "gives", " in all", "in total", "altogether", "holds # o", "shares them", "in each", "fewer")
    for p in make_transfer_problems(600, max_number=60, split="train", seed=5):
        assert not [b for b in banned if b in _skeleton(p.question)], p.question


def test_sets_of_every_split_exist():
    for split in SPLITS:
        assert len(make_transfer_problems(24, split=split, seed=0)) == 24
