import json
import math

import pytest

from helpers.evaluation.plots import plot_accuracy
from helpers.evaluation.scoring import RECORD_KEYS, EvalResult, evaluate, read_jsonl, score, summarize
from helpers.evaluation.stats import wilson_interval


def xml(answer: str) -> str:
    return f"<reasoning>\nsome steps\n</reasoning>\n<answer>\n{answer}\n</answer>\n"


# Ten fixed completions for gold "18": 7 correct (5 in the strict XML format, 1 soft only,
# 1 boxed without XML), 3 wrong (wrong number, two hedged answer blocks, no answer).
FAKE = [
    xml("18"),
    xml("18"),
    xml("$18.00"),
    xml("18 dollars"),
    xml("18"),
    "  <reasoning>steps</reasoning> <answer>18</answer> trailing",  # soft format only, correct
    "9 + 9 = 18, so \\boxed{18}",  # no XML, correct
    xml("17"),  # wrong
    xml("7") + "<answer>\n18\n</answer>",  # hedged: fails closed
    "I am not sure.",  # no answer
]


def test_wilson_interval_known_values():
    # Worked by hand from Wilson's formula: 8/10 -> centre 0.7167, half-width 0.2266.
    assert wilson_interval(8, 10) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson_interval(10, 10) == pytest.approx((0.7225, 1.0), abs=1e-4)


@pytest.mark.parametrize("s,n", [(0, 1), (3, 7), (50, 200), (199, 200)])
def test_wilson_interval_is_symmetric_contains_p_and_narrows_with_confidence(s, n):
    low, high = wilson_interval(s, n)
    mirror_low, mirror_high = wilson_interval(n - s, n)
    assert low == pytest.approx(1 - mirror_high) and high == pytest.approx(1 - mirror_low)
    assert 0 <= low <= s / n <= high <= 1
    narrow = wilson_interval(s, n, confidence=0.68)
    assert low <= narrow[0] and narrow[1] <= high


@pytest.mark.parametrize("s,n,confidence", [(1, 0, 0.95), (-1, 5, 0.95), (6, 5, 0.95), (2, 5, 0), (2, 5, 1)])
def test_wilson_interval_rejects_bad_input(s, n, confidence):
    with pytest.raises(ValueError):
        wilson_interval(s, n, confidence)


def test_summary_of_fixed_fake_completions():
    records = score(["q"] * 10, ["18"] * 10, FAKE, tokens=list(range(10)), seconds=[0.5] * 10)
    assert [r["correct"] for r in records] == [True] * 7 + [False] * 3
    assert [r["extracted"] for r in records][-3:] == ["17", None, None]
    assert all(set(RECORD_KEYS) <= set(r) for r in records)
    s = summarize(records)
    assert s["n"] == 10 and s["accuracy"] == pytest.approx(0.7)
    # Wilson 95 % for 7/10, computed by hand: centre 0.6445, half-width 0.2477.
    assert (s["ci_low"], s["ci_high"]) == pytest.approx((0.3968, 0.8922), abs=1e-4)
    assert s["format_rate_strict"] == pytest.approx(0.6)  # 5 correct XML + the wrong "17"
    assert s["format_rate_soft"] == pytest.approx(0.7)  # ... plus the loosely formatted one
    assert s["answer_rate"] == pytest.approx(0.8)
    assert s["mean_tokens"] == pytest.approx(4.5) and s["seconds_per_question"] == pytest.approx(0.5)


def test_summary_skips_missing_tokens_and_rejects_unscored_records():
    records = score(["q", "q"], ["1", "2"], [xml("1"), xml("3")])
    s = summarize(records)
    assert s["accuracy"] == 0.5 and s["mean_tokens"] is None and s["seconds_per_question"] is None
    with pytest.raises(ValueError, match="no records"):
        summarize([])
    with pytest.raises(ValueError, match="correct"):
        summarize([{"question": "q"}])
    with pytest.raises(ValueError, match="length"):
        score(["q"], ["1", "2"], [xml("1")])


class FakeGenerator:
    """Answers question i with its gold number on even seeds, with 99 on odd ones."""

    def __init__(self):
        self.calls = []

    def __call__(self, prompts, *, max_new_tokens, temperature, top_p, seed):
        self.calls.append((len(prompts), seed, temperature))
        return [xml(p[-1]["content"].split()[-1] if seed % 2 == 0 else "99") for p in prompts]


class WordTokenizer:
    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": text.split()}


DATA = [{"question": f"what is {i}", "answer": str(i)} for i in range(5)]


def test_evaluate_batches_scores_and_round_trips_jsonl(tmp_path):
    gen = FakeGenerator()
    result = evaluate(None, WordTokenizer(), DATA, n=4, batch_size=3, generate_fn=gen, desc="test")
    assert gen.calls == [(3, 0, 0.0), (1, 0, 0.0)]  # two batches, greedy, seed 0
    assert [r["question"] for r in result.records] == [d["question"] for d in DATA[:4]]
    assert result.summary["accuracy"] == 1.0 and result.summary["n"] == 4
    assert result.summary["mean_tokens"] == len(xml("0").split())
    assert all(r["seconds"] >= 0 for r in result.records)
    path = result.to_jsonl(tmp_path / "sub" / "records.jsonl")
    assert [json.loads(line)["gold"] for line in open(path)] == ["0", "1", "2", "3"]
    again = EvalResult.from_jsonl(path)
    assert again.records == read_jsonl(path) and again.summary == result.summary
    assert list(result.to_frame().columns[: len(RECORD_KEYS)]) == list(RECORD_KEYS)


def test_evaluate_uses_the_given_prompt_builder_and_extractor():
    seen = []

    def build(question):
        seen.append(question)
        return [{"role": "user", "content": question}]

    result = evaluate(None, None, DATA, build, n=2, generate_fn=FakeGenerator(), extract=lambda c: "1")
    assert seen == ["what is 0", "what is 1"]
    assert [r["correct"] for r in result.records] == [False, True]


def test_self_consistency_votes_over_samples():
    gen = FakeGenerator()  # seeds 0, 2 answer right, seed 1 answers 99
    result = evaluate(None, WordTokenizer(), DATA, n=2, samples=3, temperature=0.7, generate_fn=gen)
    assert [c[1] for c in gen.calls] == [0, 1, 2]
    record = result.records[1]
    assert record["votes"] == ["1", "99", "1"] and record["extracted"] == "1" and record["correct"]
    assert record["completion"] == record["completions"][0]
    assert record["tokens"] == 3 * len(xml("1").split())
    gen2 = FakeGenerator()  # with seed 1, two of three samples say 99: the vote follows them
    wrong = evaluate(None, None, DATA, n=2, samples=3, temperature=0.7, seed=1, generate_fn=gen2)
    assert [r["extracted"] for r in wrong.records] == ["99", "99"]
    assert wrong.summary["accuracy"] == 0.0


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(n=0), "n must be"),
        (dict(n=6), "n must be"),
        (dict(batch_size=0), ">= 1"),
        (dict(samples=3), "temperature"),
        (dict(max_new_tokens=0), ">= 1"),
    ],
)
def test_evaluate_rejects_bad_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        evaluate(None, None, DATA, generate_fn=FakeGenerator(), **kwargs)


def test_evaluate_rejects_bad_data_and_generators():
    with pytest.raises(ValueError, match="'question' and 'answer'"):
        evaluate(None, None, [{"question": "q"}], generate_fn=FakeGenerator())
    with pytest.raises(ValueError, match="empty"):
        evaluate(None, None, [], generate_fn=FakeGenerator())
    with pytest.raises(ValueError, match="generate_fn"):
        evaluate(None, None, DATA)
    with pytest.raises(ValueError, match="lora_path"):
        evaluate(None, None, DATA, generate_fn=FakeGenerator(), lora_path="adapter")
    with pytest.raises(ValueError, match="returned 0 completions"):
        evaluate(None, None, DATA, generate_fn=lambda prompts, **kw: [])


def test_evaluate_with_a_tiny_model_is_deterministic(tiny_model_dir, gsm8k_dir):
    from helpers.data.gsm8k import load_gsm8k
    from helpers.training.models import load_model
    from helpers.training.profiles import get_profile

    model, tokenizer = load_model(get_profile("cpu", verbose=False), model_path=tiny_model_dir, lora=False)
    test = load_gsm8k("test", n=3)
    runs = [
        evaluate(model, tokenizer, test, max_new_tokens=4, temperature=1.0, seed=s, batch_size=2) for s in (0, 0, 1)
    ]
    completions = [[r["completion"] for r in run.records] for run in runs]
    assert completions[0] == completions[1] != completions[2]
    first = runs[0]
    assert [r["gold"] for r in first.records] == test["answer"]
    assert all(0 <= r["tokens"] <= 8 and r["seconds"] > 0 for r in first.records)
    assert first.summary["n"] == 3 and not math.isnan(first.summary["mean_tokens"])


def test_plot_accuracy_draws_one_bar_per_run_with_interval():
    import matplotlib

    matplotlib.use("Agg")
    summaries = {"a": summarize(score(["q"] * 10, ["18"] * 10, FAKE)), "b": summarize(score(["q"], ["1"], [xml("1")]))}
    fig = plot_accuracy(summaries, show=False)
    ax = fig.axes[0]
    assert [round(p.get_height()) for p in ax.patches] == [70, 100]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
    with pytest.raises(ValueError):
        plot_accuracy({})
    with pytest.raises(ValueError, match="lacks"):
        plot_accuracy({"x": {"accuracy": 0.5}})


def test_records_tell_the_valid_format_from_a_template_copy():
    question = "Janet has 16 eggs. She sells 9 at $2 each. How much does she make?"
    texts = {
        "real": "<reasoning>\n9 * 2 = 18\n</reasoning>\n<answer>\n18\n</answer>",
        "template copy": "<reasoning>\n...\n</reasoning>\n<answer>\n...\n</answer>",
        "copied question": "<reasoning>\nJanet has 16 eggs.\n</reasoning>\n<answer>\n18\n</answer>",
        "word answer": "<reasoning>\n9 * 2 = 18\n</reasoning>\n<answer>\na lot of money\n</answer>",
        "no format": "She makes 18 dollars.",
    }
    records = dict(zip(texts, score([question] * 5, ["18"] * 5, list(texts.values()))))
    assert {k: r["format_strict"] for k, r in records.items()} == {
        "real": True,
        "template copy": True,
        "copied question": True,
        "word answer": True,
        "no format": False,
    }
    assert {k: r["format_valid"] for k, r in records.items()} == {
        "real": True,
        "template copy": False,
        "copied question": False,
        "word answer": False,
        "no format": False,
    }
    assert {k: r["placeholder"] for k, r in records.items()} == {
        "real": False,
        "template copy": True,
        "copied question": True,
        "word answer": False,
        "no format": False,
    }
    s = summarize(list(records.values()))
    assert (s["format_rate_strict"], s["format_rate_valid"], s["placeholder_rate"]) == (0.8, 0.2, 0.4)


def test_an_unevaluated_expression_is_not_scored_correct():
    """``correct`` pays only an evaluated number, as the correctness reward does; ``correct_format_free``
    (the last number of the text) is unchanged."""
    completions = [xml("8 + 9"), xml("17"), "<answer>\n8 + 9\n</answer> = 17"]
    records = score(["q"] * 3, ["17"] * 3, completions)
    assert [r["extracted"] for r in records] == ["8 + 9", "17", "8 + 9"]
    assert [r["correct"] for r in records] == [False, True, False]
    assert [r["correct_format_free"] for r in records] == [False, True, True]
