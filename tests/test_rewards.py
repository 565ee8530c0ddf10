"""Tests for helpers.rewards: the issue's cases, the TRL interface and the seeds' failures."""

import json

import pytest

from cpu_study import control_rewards as C
from helpers import rewards as R
from helpers.course_format import extract_hash_answer
from helpers.grading import GradingWarning
from helpers.original_rewards import ORIGINAL_REWARD_FUNCS

GOLD = "<reasoning>\nFirst 3*4=12.\nThen 12+6=18.\n</reasoning>\n<answer>\n18\n</answer>\n"
FIXED = dict(
    xml=R.xmlcount_reward_func,
    soft=R.soft_format_reward_func,
    strict=R.strict_format_reward_func,
    int=R.int_reward_func,
    correct=R.correctness_reward_func,
)


def score(text, gold="18", funcs=FIXED):
    """Reward of one conversational completion under each named function."""
    conv = [[{"role": "assistant", "content": text}]]
    return {name: f(prompts=[[]], completions=conv, answer=[gold])[0] for name, f in funcs.items()}


def formatted(answer, reasoning="Some steps: 3 * 4 = 12.\nMore steps."):
    return f"<reasoning>\n{reasoning}\n</reasoning>\n<answer>\n{answer}\n</answer>\n"


# The issue's table: (completion, gold, expected rewards)
CASES = [
    (GOLD, "18", dict(soft=0.5, strict=0.5, correct=2.0, xml=0.5, int=0.5)),
    (GOLD[:-1], "18", dict(strict=0.5, xml=0.5, soft=0.5, correct=2.0)),
    ("\n" + GOLD, "18", dict(soft=0.5, correct=2.0)),
    (formatted("-3"), "3", dict(correct=0.0, int=0.5)),
    (formatted("$1,234"), "1234", dict(correct=2.0, int=0.5)),
    (formatted("29.00"), "29", dict(correct=2.0)),
    (formatted("18."), "18", dict(correct=2.0)),
    (formatted("3,5"), "35", dict(correct=0.0, int=0.0)),
    (formatted("\\boxed{42}"), "42", dict(correct=2.0, int=0.5)),
    ("\\boxed{\\frac{1}{3}}", "\\frac{1}{2}", dict(correct=0.0)),
    ("Guess \\boxed{2}, no wait, it is \\boxed{3}.", "3", dict(correct=2.0)),
    ("<answer>\n7\n</answer>\n<answer>\n18\n</answer>\n", "18", dict(correct=0.0, soft=0.0)),
    ("<answer></answer>", "18", dict(correct=0.0, int=0.0, soft=0.0, strict=0.0)),
    (formatted("0.5"), "1/2", dict(correct=2.0, int=0.0)),
    (formatted("1,000"), "1000", dict(int=0.5, correct=2.0)),
]


@pytest.mark.parametrize("text, gold, expected", CASES)
def test_issue_cases(text, gold, expected):
    got = score(text, gold)
    assert {k: got[k] for k in expected} == pytest.approx(expected)


def test_unparseable_gold_scores_zero_and_warns():
    with pytest.warns(GradingWarning):
        assert score("\\boxed{\\frac{64}{400}}", "\\frac{63}{400")["correct"] == 0.0


@pytest.mark.parametrize("end", ["<|im_end|>", "\n<|im_end|>", "<|endoftext|>"])
def test_trailing_eos_token_does_not_cost_format(end):
    got = score(GOLD + end)
    assert got["xml"] == 0.5 and got["strict"] == 0.5


def test_xmlcount_penalizes_trailing_text_but_stays_nonnegative():
    assert score(GOLD + "bye")["xml"] == pytest.approx(0.5 - 0.003)
    assert score(GOLD + "x" * 5000)["xml"] >= 0.0


def test_multiline_and_whitespace_formats():
    loose = "  <reasoning>a = 1\nb</reasoning>\n\n<answer> 18 </answer> trailing"
    assert score(loose) == pytest.approx(dict(xml=0.0, soft=0.5, strict=0.0, int=0.5, correct=2.0))
    blank = "<reasoning>\n \n</reasoning>\n<answer>\n18\n</answer>\n"
    assert score(blank)["strict"] == score(blank)["soft"] == 0.0


def test_plain_string_completions_and_reward_list():
    got = R.correctness_reward_func(completions=[GOLD, "nothing"], answer=["18", "18"])
    assert got == [2.0, 0.0]
    assert [f.__name__ for f in R.REWARD_FUNCS] == [
        "xmlcount_reward_func",
        "soft_format_reward_func",
        "strict_format_reward_func",
        "int_reward_func",
        "correctness_reward_func",
    ]
    original_names = ["original_" + f.__name__ for f in R.REWARD_FUNCS]
    assert [f.__name__ for f in ORIGINAL_REWARD_FUNCS] == original_names


def test_an_unevaluated_expression_earns_no_correctness_reward():
    """Regression: ``<answer>8 + 9</answer>`` for 17 was paid 2.0 (``is_equivalent`` evaluates it),
    which paid a policy for leaving the arithmetic to the grader."""
    undone = "<reasoning>\n8 + 9 = 17\n</reasoning>\n<answer>\n8 + 9\n</answer>"
    done = "<reasoning>\n8 + 9 = 17\n</reasoning>\n<answer>\n17\n</answer>"
    for text, paid in ((undone, 0.0), (done, 2.0)):
        conv = [[{"role": "assistant", "content": text}]]
        assert R.correctness_reward_func(completions=conv, answer=["17"]) == [paid]
        assert R.correctness_reward_func(completions=[text], answer=["17"]) == [paid]


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="gold answers"):
        R.correctness_reward_func(completions=[GOLD, GOLD], answer=["18"])
    with pytest.raises(TypeError, match="completion must be"):
        R.int_reward_func(completions=[42])


def test_seed_failures_that_the_course_shows():
    seeds = dict(zip(FIXED, ORIGINAL_REWARD_FUNCS))
    assert score(GOLD, funcs=seeds)["strict"] == 0.0  # multi-line reasoning never matches
    assert score(GOLD, funcs=seeds)["soft"] == 0.0
    assert score(formatted("$1,234"), "1234", funcs=seeds)["correct"] == 0.0  # right, unpaid
    assert score(formatted("-3"), "-3", funcs=seeds)["int"] == 0.0
    hedge = "<answer>\n7\n</answer>\n<answer>\n18\n</answer>\n"
    assert score(hedge, funcs=seeds)["correct"] == 2.0  # hedging pays
    assert score(GOLD[:-1], funcs=seeds)["xml"] < 0.5


def test_every_gsm8k_label_is_correct_against_itself(gsm8k_dir):
    labels = [
        extract_hash_answer(json.loads(line)["answer"])
        for split in ("train", "test")
        for line in open(gsm8k_dir / f"{split}.jsonl")
    ]
    assert len(labels) == 8792
    rewards = R.correctness_reward_func(completions=[formatted(x) for x in labels], answer=labels)
    assert [x for x, r in zip(labels, rewards) if r != 2.0] == []


# ------------------------------------------------------------- reward hacking: the template copy
TEMPLATE_COPY = "<reasoning>\n...\n</reasoning>\n<answer>\n...\n</answer>"  # the system prompt's own
LAYOUT = dict(
    xml=R.layout_xmlcount_reward_func, soft=R.layout_soft_format_reward_func, strict=R.layout_strict_format_reward_func
)
FORMAT_ONLY = {k: FIXED[k] for k in ("xml", "soft", "strict")}


def test_the_system_prompt_holds_the_template_that_gets_copied():
    from helpers.course_format import SYSTEM_PROMPT

    assert SYSTEM_PROMPT.endswith(TEMPLATE_COPY)


@pytest.mark.parametrize(
    "text",
    [
        TEMPLATE_COPY,
        TEMPLATE_COPY + "\n",
        TEMPLATE_COPY + "<|im_end|>",
        TEMPLATE_COPY.replace("...", "\u2026"),
        TEMPLATE_COPY.replace("...", "---"),
    ],
)
def test_template_copy_scores_zero_on_every_checked_reward_but_full_layout_marks(text):
    assert score(text) == dict(xml=0.0, soft=0.0, strict=0.0, int=0.0, correct=0.0)
    assert score(text, funcs=LAYOUT) == dict(xml=0.5, soft=0.5, strict=0.5)


@pytest.mark.parametrize(
    "text",
    [
        GOLD,
        GOLD[:-1],
        GOLD + "<|im_end|>",
        formatted("$1,234", "7 + 5 = 12"),
        formatted("0.5", "1/2 of it"),
        formatted("\\boxed{42}", "6 * 7 = 42"),
    ],
)
def test_a_real_formatted_completion_scores_as_under_the_layout_rewards(text):
    assert score(text, funcs=FORMAT_ONLY) == score(text, funcs=LAYOUT)
    assert score(text, funcs=FORMAT_ONLY)["strict"] == 0.5


@pytest.mark.parametrize(
    "reasoning, answer, why",
    [
        ("...", "18", "placeholder reasoning"),
        ("Let me think about it.", "18", "reasoning without a number or equation"),
        ("9 * 2 = 18", "...", "placeholder answer"),
        ("9 * 2 = 18", "a lot", "answer that is no number"),
        ("Respond in the following format:", "18", "reasoning copied from the system prompt"),
        ("Janet has 16 eggs.", "18", "reasoning copied from the question"),
    ],
)
def test_checked_format_rewards_refuse_each_kind_of_fake_content(reasoning, answer, why):
    question = "Janet has 16 eggs. She sells 9 at $2. How much does she make?"
    conv = [[{"role": "assistant", "content": formatted(answer, reasoning)}]]
    prompts = [
        [{"role": "system", "content": "Respond in the following format:"}, {"role": "user", "content": question}]
    ]
    for f in (R.xmlcount_reward_func, R.soft_format_reward_func, R.strict_format_reward_func):
        assert f(prompts=prompts, completions=conv)[0] == 0.0, (f.__name__, why)
    assert R.layout_strict_format_reward_func(prompts=prompts, completions=conv)[0] == 0.5


def test_xmlcount_keeps_partial_credit_for_a_completion_cut_off_in_its_reasoning():
    cut = "<reasoning>\nShe sells 16 - 3 - 4 = 9 eggs and"
    assert score(cut)["xml"] == 0.125 and score(cut, funcs=LAYOUT)["xml"] == 0.125
    assert score(cut + "\n</reasoning>\n<answer>\n...")["xml"] == 0.375  # 3 tags; answer still open


def test_content_helpers_on_their_own():
    assert R.is_placeholder("...") and R.is_placeholder(" \u2026 ") and not R.is_placeholder("x")
    assert R.is_placeholder("Janet   has\n16 eggs", ["Janet has 16 eggs a day."])
    assert not R.is_placeholder(None)
    assert R.is_real_reasoning("16 - 3 - 4 = 9") and not R.is_real_reasoning("no digits here")
    assert [R.is_parseable_answer(x) for x in ("18", "$1,234", "-3", "3/4", "\\boxed{7}", "3,5", "x", None)] == [
        True,
        True,
        True,
        True,
        True,
        True,
        False,
        False,
    ]  # 3,5: a decimal comma


def test_prompts_of_the_wrong_length_are_an_error():
    with pytest.raises(ValueError, match="prompts"):
        R.strict_format_reward_func(prompts=[[], []], completions=[GOLD])


def test_reward_sets_differ_only_in_the_format_and_integer_rewards():
    assert C.ALL_REWARD_SETS["checked"] is R.REWARD_FUNCS and C.ALL_REWARD_SETS["layout"] is R.LAYOUT_REWARD_FUNCS
    assert R.REWARD_FUNCS[4:] == R.LAYOUT_REWARD_FUNCS[4:]  # the same correctness reward
    assert [f.__name__ for f in R.LAYOUT_REWARD_FUNCS[:4]] == ["layout_" + f.__name__ for f in R.REWARD_FUNCS[:4]]


# ---- Bug: a restated fact of the question was paid as reasoning ----------------


def test_restating_a_fact_of_the_question_earns_nothing_but_a_lucky_right_answer():
    """A 135M policy trained 30 steps on the earlier checks learned to restate a fact and answer with
    one of the question's numbers (``Hugo has 35 cookies.`` -> 35 for 35 / 5): format paid in full
    (2.0 of 4.0: four 0.5 rewards), correctness never. Now the same completion earns 0."""
    question = "Hugo has 35 cookies. He shares them equally among 5 friends. How many does each friend get?"
    prompts = [
        [{"role": "system", "content": "Respond in the following format:"}, {"role": "user", "content": question}]
    ]

    def total(text, funcs, gold="7"):
        conv = [[{"role": "assistant", "content": text}]]
        return {R.short_name(f): f(prompts=prompts, completions=conv, answer=[gold])[0] for f in funcs}

    restated = formatted("35", "Hugo has 35 cookies.")
    assert sum(total(restated, R.REWARD_FUNCS).values()) == 0.0
    assert sum(total(restated, R.LAYOUT_REWARD_FUNCS).values()) == 2.0  # what the layout-only set still pays
    worked = formatted("7", "35 / 5 = 7 cookies each.")
    assert total(worked, R.REWARD_FUNCS) == dict(xmlcount=0.5, soft=0.5, strict=0.5, int=0.5, correctness=2.0)
    wrong_work = formatted("8", "35 / 5 = 8")  # real work, wrong: the format is still paid
    assert sum(total(wrong_work, R.REWARD_FUNCS).values()) == 2.0
    bare = "<answer>\n7\n</answer>"  # no reasoning: right, but no integer bonus without work
    assert total(bare, R.REWARD_FUNCS)["int"] == 0.0 and total(bare, R.LAYOUT_REWARD_FUNCS)["int"] == 0.5
    assert R.numbers_in("1,000 and 2.50 or 3") == {1000, R.numbers_in("2.5").pop(), 3}
    assert not R.is_real_reasoning("Hugo has 35 cookies and 5 friends.", [question])
    assert R.is_real_reasoning("Hugo has 35 cookies and 5 friends.")  # without the question, 35 is new


def test_a_right_equation_whose_result_is_in_the_question_is_real_work():
    """Bug found in review: "81 cards into boxes of 9" is solved by ``81 / 9 = 9``, and 9 is in the
    question, so the new-number rule paid that right solution no format reward (2.0 instead of 4.0,
    tied with a formatted wrong answer). A true equation now counts; a false one does not."""
    question = "Ravi puts 81 cards into boxes of 9. How many boxes does he fill?"
    prompts = [[{"role": "user", "content": question}]]

    def total(text, gold="9"):
        conv = [[{"role": "assistant", "content": text}]]
        return sum(f(prompts=prompts, completions=conv, answer=[gold])[0] for f in R.REWARD_FUNCS)

    assert total(formatted("9", "81 / 9 = 9.")) == 4.0
    assert total(formatted("9", "81 ÷ 9 = 9 boxes.")) == 4.0
    assert total(formatted("81", "81 / 9 = 81")) == 0.0  # a false equation of the question's numbers
    assert total(formatted("9", "Ravi puts 81 cards into boxes of 9.")) == 2.0  # a copied fact: correctness only
    assert [R.has_true_equation(t) for t in ("1,000 - 1 = 999", "2.5 * 2 = 5", "3 x 4 = 12", "6 / 0 = 0", "7 = 7")] == [
        True,
        True,
        True,
        False,
        False,
    ]


# ---- Failure kind: a sentence inside <answer> ---------------------------------


@pytest.mark.parametrize(
    "answer, gold, correct, integer",
    [
        ("The answer is 18.", "18", 2.0, 0.5),
        ("So Janet makes $18 every day.", "18", 2.0, 0.5),
        ("The answer is twelve.", "12", 2.0, 0.5),
        ("She earns \u20ac18/hour", "18", 2.0, 0.5),
        ("She had 20 eggs, ate 2, so 18 are left.", "18", 0.0, 0.0),  # several numbers, no cue
        ("It is not 18.", "18", 0.0, 0.0),
    ],
)
def test_correctness_rewards_grade_a_sentence_inside_the_answer_tags(answer, gold, correct, integer):
    got = score(formatted(answer), gold)
    assert (got["correct"], got["int"]) == (correct, integer)


def test_reward_table_sums_each_function_per_completion():
    gold = "<reasoning>\n3 * 6 = 18\n</reasoning>\n<answer>\n18\n</answer>\n"
    table = R.reward_table(R.REWARD_FUNCS, [gold, "<answer>\n18\n</answer>"], "18", index=["gold", "bare"])
    assert list(table.columns) == ["xmlcount", "soft", "strict", "int", "correctness", "total"]
    assert table.loc["gold", "total"] == 4.0
    assert table.loc["bare", "correctness"] == 2.0 and table.loc["bare", "strict"] == 0.0
    assert list(R.reward_table(ORIGINAL_REWARD_FUNCS, [gold], ["18"]).columns)[:3] == ["xmlcount", "soft", "strict"]
    with pytest.raises(ValueError, match="answer has 1 entries for 2 completions"):
        R.reward_table(R.REWARD_FUNCS, [gold, gold], ["18"])


def test_the_placebo_is_a_fair_coin_that_ignores_the_answer():
    texts = [formatted(str(i)) for i in range(400)]
    paid = C.random_reward_func(completions=texts, answer=["7"] * 400)
    assert set(paid) == {0.0, 1.0} and 0.4 < sum(paid) / 400 < 0.6
    assert C.random_reward_func(completions=texts[:5]) == paid[:5]  # the same text, the same coin
    right = R.correctness_reward_func(completions=texts, answer=["7"] * 400)
    assert right.count(2.0) == 1  # only "7" is right; the coin does not look
    assert C.ALL_REWARD_SETS["placebo"] == [C.random_reward_func]


def test_the_control_sets_take_away_correctness_or_grade_against_another_problem():
    assert C.FORMAT_REWARD_FUNCS == R.REWARD_FUNCS[:4]  # the course's rewards, correctness left out
    assert C.ALL_REWARD_SETS["shuffled"][:4] == C.FORMAT_REWARD_FUNCS
    prompts = [[{"role": "user", "content": q}] for q in ("p1", "p1", "p2", "p2", "p3", "p3")]
    answers = ["5", "5", "9", "9", "12", "12"]
    right = [formatted(a) for a in answers]  # every completion right for its own problem
    assert C.shuffled_correctness_reward_func(prompts, right, answers) == [0.0] * 6
    # graded against the next problem's label: p1's against 9, p2's against 12, p3's against 5
    nexts = [formatted(a) for a in ("9", "9", "12", "12", "5", "5")]
    assert C.shuffled_correctness_reward_func(prompts, nexts, answers) == [2.0] * 6
    # two problems with the same label are still two problems (blocks follow the prompts)
    same = ["7", "7", "7", "7"]
    assert C.shuffled_correctness_reward_func(prompts[:4], [formatted("7")] * 4, same) == [2.0] * 4
    assert C.shuffled_correctness_reward_func(prompts[:2], right[:2], answers[:2]) == [0.0, 0.0]  # one problem
    with pytest.raises(ValueError, match="gold answers"):
        C.shuffled_correctness_reward_func(prompts, right, answers[:2])
