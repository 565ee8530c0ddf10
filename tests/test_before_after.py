import json
import math

import numpy as np
import pytest

from helpers.colab.persist import check_adapter_dir
from helpers.evaluation.adapters import load_merged, load_with_adapter, save_merged
from helpers.evaluation.before_after import (
    compare,
    decoding,
    evaluate_before_after,
    run_name,
    save_results,
)
from helpers.evaluation.scoring import EvalResult, reasoning_complete, reasoning_steps, score
from helpers.evaluation.stats import mcnemar, mcnemar_chi2, mcnemar_exact_p, wilson_interval
from helpers.training.profiles import PROFILES

CPU = PROFILES["cpu"]


# ------------------------------------------------------------------------------ statistics
def test_mcnemar_exact_against_hand_computed_binomial_tails():
    # b=1, c=6: n=7, P(X<=1) = (C(7,0) + C(7,1)) / 2^7 = 8/128; two-sided: 16/128 = 0.125
    assert mcnemar_exact_p(1, 6) == pytest.approx(0.125)
    assert mcnemar_exact_p(6, 1) == pytest.approx(0.125)  # symmetric
    # b=2, c=8: n=10, (1 + 10 + 45) / 1024 = 56/1024; two-sided: 112/1024 = 0.109375
    assert mcnemar_exact_p(2, 8) == pytest.approx(0.109375)
    # b=0, c=5: 2 * 1/32 = 0.0625 - five flips all one way is still not significant at 5 %
    assert mcnemar_exact_p(0, 5) == pytest.approx(0.0625)
    # b=0, c=6: 2 * 1/64 = 0.03125
    assert mcnemar_exact_p(0, 6) == pytest.approx(0.03125)
    # b=c=3: 2 * (1 + 6 + 15 + 20)/64 = 1.3125, capped at 1
    assert mcnemar_exact_p(3, 3) == 1.0
    assert mcnemar_exact_p(0, 0) == 1.0


def test_mcnemar_chi_square_with_continuity_correction():
    # b=1, c=6: (|1 - 6| - 1)^2 / 7 = 16/7 = 2.2857; P(chi2_1 >= 2.2857) = 0.1306 (chi-square table)
    chi2, p = mcnemar_chi2(1, 6)
    assert chi2 == pytest.approx(16 / 7)
    assert p == pytest.approx(0.1306, abs=5e-4)
    # b=2, c=8: (6 - 1)^2 / 10 = 2.5 -> p = 0.1138
    chi2, p = mcnemar_chi2(2, 8)
    assert chi2 == pytest.approx(2.5) and p == pytest.approx(0.1138, abs=5e-4)
    # |b - c| = 1: the correction floors the statistic at 0
    assert mcnemar_chi2(3, 4) == (0.0, 1.0)
    # chi2 = 3.841 is the 95 % point: (|0 - 16| - 1)^2 / 16 = 225/16 = 14.06 -> p < 0.001
    assert mcnemar_chi2(0, 16)[1] < 0.001


def test_mcnemar_on_paired_outcomes_counts_the_2x2_table():
    base = [True, True, False, False, False, True, False]
    lora = [True, False, True, True, False, True, True]
    # (T,T) x2, (T,F) x1, (F,T) x3, (F,F) x1
    m = mcnemar(base, lora)
    assert (m.both_right, m.base_only, m.lora_only, m.both_wrong, m.n) == (2, 1, 3, 1, 7)
    # b=1, c=3: 2 * (1 + 4) / 16 = 0.625
    assert m.p_value == pytest.approx(0.625)
    assert m.as_dict()["method"].startswith("exact")


@pytest.mark.parametrize("args", [(-1, 2), (1.5, 2), (True, 2)])
def test_mcnemar_rejects_bad_counts(args):
    with pytest.raises(ValueError, match="non-negative integer"):
        mcnemar_exact_p(*args)
    with pytest.raises(ValueError, match="non-negative integer"):
        mcnemar_chi2(*args)


def test_mcnemar_rejects_unpaired_lists():
    with pytest.raises(ValueError, match="paired"):
        mcnemar([True, False], [True])
    with pytest.raises(ValueError, match="paired"):
        mcnemar([], [])


def test_wilson_interval_against_hand_computation():
    # 8/10, z = 1.96: p = 0.8, z^2 = 3.8416, denominator 1 + 0.38416 = 1.38416;
    # centre (0.8 + 0.19208) / 1.38416 = 0.71676;
    # half-width 1.96 * sqrt(0.016 + 0.0096040) / 1.38416 = 1.96 * 0.160012 / 1.38416 = 0.22658
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.71676 - 0.22658, abs=1e-4)
    assert high == pytest.approx(0.71676 + 0.22658, abs=1e-4)
    # 0/12: centre = half-width = (z^2/24) / (1 + z^2/12) = 0.16007 / 1.32013 = 0.12125 -> [0, 0.2425]
    low, high = wilson_interval(0, 12)
    assert low == 0.0 and high == pytest.approx(2 * 0.16007 / 1.32013, abs=1e-4)


# --------------------------------------------------------------------- reasoning completeness
@pytest.mark.parametrize(
    "text, steps",
    [
        ("<reasoning>\n16 - 3 - 4 = 9.\n9 * 2 = 18.\n</reasoning>\n<answer>\n18\n</answer>", 2),
        ("<reasoning>She has 9 eggs. At $2.50 each, 9 * 2.5 = 22.5!</reasoning>", 2),  # decimals don't split
        ("<reasoning>\n\n18\n\n</reasoning><answer>18</answer>", 1),
        ("<reasoning>\n  \n...\n</reasoning>", 0),  # blank lines and bare punctuation are not steps
        ("<reasoning>\nFirst 3 + 4 = 7.\nThen 7 * 2 = 14.", 0),  # cut off before </reasoning>
        ("<reasoning>a. b.</reasoning><reasoning>c. d.</reasoning>", 0),  # two blocks
        ("</reasoning> 1. 2. 3. <reasoning>", 0),  # tags in the wrong order
        ("The answer is 18. Because 9 * 2 = 18.", 0),  # no block at all
        (None, 0),
    ],
)
def test_reasoning_steps(text, steps):
    assert reasoning_steps(text) == steps
    assert reasoning_complete(text) == (steps >= 2)


def test_reasoning_complete_threshold_is_configurable_and_checked():
    text = "<reasoning>One step only.</reasoning>"
    assert reasoning_complete(text, min_steps=1) and not reasoning_complete(text)
    with pytest.raises(ValueError, match="min_steps"):
        reasoning_complete(text, min_steps=0)


# ------------------------------------------------------------------------ comparison table
GOOD = "<reasoning>\n9 eggs are left.\n9 * 2 = 18.\n</reasoning>\n<answer>\n18\n</answer>\n"


def _results() -> tuple[EvalResult, EvalResult]:
    questions = ["q0", "q1", "q2", "q3"]
    golds = ["18", "5", "7", "1,000"]
    base = ["<answer>18</answer>", "the answer is 5", "<answer>6</answer>", "<answer>1000</answer>"]
    lora = [GOOD, GOOD.replace("18", "5"), "<answer>6</answer>", "<answer>999</answer>"]
    return (
        EvalResult(score(questions, golds, base, tokens=[5, 6, 5, 6], seconds=[1.0] * 4)),
        EvalResult(score(questions, golds, lora, tokens=[30, 31, 5, 6], seconds=[2.0] * 4)),
    )


def test_compare_pairs_questions_and_finds_flips():
    base, lora = _results()
    c = compare(base, lora)
    # base right on q0, q3; lora right on q0, q1 -> q1 wrong->right, q3 right->wrong
    assert c.wrong_to_right == [1] and c.right_to_wrong == [3]
    assert (c.mcnemar.both_right, c.mcnemar.base_only, c.mcnemar.lora_only, c.mcnemar.both_wrong) == (1, 1, 1, 1)
    assert c.summaries["base"]["correct"] == 2 and c.summaries["lora"]["correct"] == 2
    assert c.summaries["base"]["reasoning_rate"] == 0.0 and c.summaries["lora"]["reasoning_rate"] == 0.5
    assert c.summaries["lora"]["format_rate_strict"] == 0.5
    flips = c.flips(c.wrong_to_right)
    assert list(flips["LoRA answer"]) == ["5"] and list(flips["gold"]) == ["5"]
    assert c.flips([1])["base answer"].tolist() == [None]  # nothing extracted: None, not NaN


def test_show_flips_prints_the_count_and_at_most_limit_questions(capsys):
    c = compare(*_results())
    c.show_flips([1, 3], "changed", limit=1)
    out = capsys.readouterr().out
    assert out.startswith("=== changed: 2 question(s) ===")
    assert "[1] q1\ngold: 5   before GRPO: (none)   after GRPO: 5" in out  # no answer extracted: not "nan"
    assert "[1] q1" in out and "[3] q3" not in out and "--- before GRPO ---\nthe answer is 5" in out
    assert GOOD.replace("18", "5").strip() in out


def test_comparison_table_shows_ci_pvalue_and_changes():
    c = compare(*_results())
    table = c.table()
    assert list(table.columns) == ["before GRPO", "after GRPO", "change"]
    low, high = wilson_interval(2, 4)
    assert table.loc["accuracy [Wilson 95 % CI]", "before GRPO"] == f"2/4 = 50.0 % [{100 * low:.1f}, {100 * high:.1f}]"
    assert table.loc["accuracy [Wilson 95 % CI]", "change"] == "+0.0 pts"
    # b = c = 1: 2 * (1 + 2) / 4 = 1.5, capped at 1
    assert table.loc["paired McNemar, exact", "change"].startswith("p = 1.000 (1 wrong->right, 1 right->wrong)")
    assert table.loc["reasoning complete (>= 2 steps)"].tolist() == ["0.0 %", "50.0 %", "+50.0 pts"]
    # GOOD and its "5" copy are valid (real reasoning + a number); base has no reasoning block
    assert table.loc["format, valid (real reasoning + number)"].tolist() == ["0.0 %", "50.0 %", "+50.0 pts"]
    # 2 gained, 0 lost: 2 * (1/4) = 0.5
    assert table.loc["paired McNemar, valid format", "change"] == "p = 0.5 (2 gained, 0 lost)"
    # mean tokens (5 + 6 + 5 + 6)/4 = 5.5 -> (30 + 31 + 5 + 6)/4 = 18.0
    assert table.loc["mean completion tokens"].tolist() == ["5.5", "18.0", "+12.5"]
    assert table.loc["seconds per question"].tolist() == ["1.00", "2.00", "+1.00"]


def test_compare_refuses_unpaired_runs():
    base, lora = _results()
    with pytest.raises(ValueError, match="same questions"):
        compare(base, EvalResult(lora.records[:3]))
    swapped = EvalResult([lora.records[1], lora.records[0], *lora.records[2:]])
    with pytest.raises(ValueError, match="record 0 differs"):
        compare(base, swapped)


def test_save_results_writes_summary_and_records(tmp_path):
    c = compare(*_results())
    summary_path, records_path = save_results(c, tmp_path / "run", profile="cpu", decoding={"temperature": 1.0})
    summary = json.loads(summary_path.read_text())
    assert summary["profile"] == "cpu" and summary["decoding"] == {"temperature": 1.0}
    assert summary["base"]["accuracy"] == 0.5 and summary["mcnemar"]["p_value"] == 1.0
    assert summary["wrong_to_right"] == [1] and summary["right_to_wrong"] == [3]
    rows = [json.loads(line) for line in records_path.read_text().splitlines()]
    assert [r["model"] for r in rows] == ["base"] * 4 + ["lora"] * 4
    assert [r["reasoning_complete"] for r in rows[4:]] == [True, True, False, False]


def test_decoding_uses_the_training_sampling_and_run_names(tmp_path):
    assert decoding(CPU) == {
        "max_new_tokens": CPU.max_completion_length,
        "temperature": CPU.temperature,
        "top_p": CPU.top_p,
    }
    assert decoding(PROFILES["t4"], greedy=True)["temperature"] == 0.0
    assert decoding(PROFILES["t4"])["max_new_tokens"] == PROFILES["t4"].max_completion_length
    assert run_name(tmp_path / "grpo-cpu" / "lora_adapter") == "grpo-cpu"
    assert run_name(tmp_path / "my-adapter", greedy=True) == "my-adapter-greedy"


# -------------------------------------------------------- model tests (tiny random Llama)
@pytest.fixture(scope="module")
def tiny_adapter(tiny_model_dir, tmp_path_factory):
    """A LoRA with random (non-zero) B matrices on the tiny model, saved like `train` saves it."""
    import torch
    from peft import get_peft_model

    from helpers.training.models import load_model, lora_config

    base, tokenizer = load_model(CPU, tiny_model_dir, lora=False)
    config = lora_config(CPU)
    config.init_lora_weights = False  # random A and B: the adapter changes the model's output
    torch.manual_seed(1)
    model = get_peft_model(base, config)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    path = tmp_path_factory.mktemp("adapter") / "lora_adapter"
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_evaluation_sends_the_training_template_for_base_and_lora(tiny_model_dir, tiny_adapter, monkeypatch):
    """The text generated from equals what TRL's GRPOTrainer builds from the training row."""
    from trl.data_utils import maybe_apply_chat_template

    import helpers.training.generation
    from helpers.data.gsm8k import load_gsm8k

    model, tokenizer = load_with_adapter(CPU, tiny_adapter, tiny_model_dir)
    seen: list[list[str]] = []

    def fake_generate_hf(model, tokenizer, texts, *args):
        seen.append(list(texts))
        return ["<answer>0</answer>"] * len(texts)

    monkeypatch.setattr(helpers.training.generation, "_generate_hf", fake_generate_hf)
    train_rows = load_gsm8k("train", n=3)  # the rows GRPOTrainer sees as its train_dataset
    evaluate_before_after(model, tokenizer, train_rows, **decoding(CPU))
    trl_texts = [maybe_apply_chat_template({"prompt": row["prompt"]}, tokenizer)["prompt"] for row in train_rows]
    assert seen == [trl_texts, trl_texts]  # base run, then LoRA run
    assert trl_texts[0].endswith("<|im_start|>assistant\n") and "<reasoning>" in trl_texts[0]

    # The check can fail: a different prompt builder gives different text.
    from helpers.data.prompting import cot_prompt

    seen.clear()
    evaluate_before_after(model, tokenizer, train_rows, build_prompt=cot_prompt, max_new_tokens=4)
    assert seen[0] != trl_texts


def test_base_run_has_the_adapter_off_and_lora_run_on(tiny_model_dir, tiny_adapter, gsm8k_dir):
    from helpers.data.gsm8k import load_gsm8k
    from helpers.evaluation.scoring import evaluate
    from helpers.training.models import load_model

    model, tokenizer = load_with_adapter(CPU, tiny_adapter, tiny_model_dir)
    questions = load_gsm8k("test", n=2)
    greedy = dict(max_new_tokens=6, temperature=0.0)
    base, lora = evaluate_before_after(model, tokenizer, questions, **greedy)
    plain, _ = load_model(CPU, tiny_model_dir, lora=False)
    reference = evaluate(plain, tokenizer, questions, **greedy)
    assert [r["completion"] for r in base.records] == [r["completion"] for r in reference.records]
    assert [r["completion"] for r in lora.records] != [r["completion"] for r in base.records]


def test_merged_model_gives_the_same_greedy_output_as_base_plus_lora(tiny_model_dir, tiny_adapter, tmp_path):
    import torch

    from helpers.course_format import make_prompt
    from helpers.training.generation import chat_texts, generate

    model, tokenizer = load_with_adapter(CPU, tiny_adapter, tiny_model_dir)
    prompt = [make_prompt("Tom has 3 apples and buys 4 more. How many apples does he have?")]
    with_lora = generate(model, tokenizer, prompt, max_new_tokens=12, temperature=0)
    with model.disable_adapter():
        without = generate(model, tokenizer, prompt, max_new_tokens=12, temperature=0)
    assert with_lora != without  # the adapter matters, so equality below means something

    merged_dir = save_merged(model, tokenizer, tmp_path / "merged")
    assert (merged_dir / "model.safetensors").exists() and not (merged_dir / "adapter_config.json").exists()
    merged, merged_tokenizer = load_merged(merged_dir, CPU)
    assert not hasattr(merged, "peft_config")
    assert generate(merged, merged_tokenizer, prompt, max_new_tokens=12, temperature=0) == with_lora
    batch = tokenizer(chat_texts(tokenizer, prompt), return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        assert torch.allclose(merged(**batch).logits, model(**batch).logits, atol=1e-4)
    assert hasattr(model, "peft_config")  # merging worked on a copy: the adapter is still there


def test_missing_adapter_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a saved LoRA adapter"):
        check_adapter_dir(tmp_path)
    with pytest.raises(FileNotFoundError, match="adapter_config.json"):
        load_with_adapter(CPU, tmp_path / "nope")


def test_plain_model_without_adapter_is_refused(tiny_model_dir, tmp_path):
    from helpers.training.models import load_model

    plain, tokenizer = load_model(CPU, tiny_model_dir, lora=False)
    with pytest.raises(ValueError, match="no LoRA adapter"):
        evaluate_before_after(plain, tokenizer, [{"question": "1 + 1?", "answer": "2"}])
    with pytest.raises(ValueError, match="no LoRA adapter"):
        save_merged(plain, tokenizer, tmp_path / "merged")
    assert not (tmp_path / "merged").exists()


def test_cli_evaluate_writes_results_and_prints_the_table(tiny_model_dir, tiny_adapter, tmp_path, capsys, gsm8k_dir):
    from helpers.cli import main

    assert (
        main(
            [
                "evaluate",
                "--adapter",
                str(tiny_adapter),
                "--n",
                "2",
                "--profile",
                "cpu",
                "--greedy",
                "--model-path",
                str(tiny_model_dir),
                "--results-dir",
                str(tmp_path),
                "--run",
                "tiny",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "accuracy [Wilson 95 % CI]" in out and "paired McNemar, exact" in out
    run = tmp_path / "tiny"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["base"]["n"] == 2 and summary["decoding"]["temperature"] == 0.0
    assert summary["decoding"]["max_new_tokens"] == CPU.max_completion_length
    assert len((run / "records.jsonl").read_text().splitlines()) == 4
    assert math.isfinite(summary["mcnemar"]["p_value"])


# ---- Failure kind: counts of any integer type ---------------------------------


@pytest.mark.parametrize("to_int", [np.int64, np.int32, np.uint16, int])
def test_mcnemar_accepts_numpy_integer_counts(to_int):
    assert mcnemar_exact_p(to_int(1), to_int(6)) == pytest.approx(0.125)
    assert mcnemar_chi2(to_int(1), to_int(6)) == pytest.approx(mcnemar_chi2(1, 6))
    # 2**n with a numpy n would wrap around at n = 64; the counts are converted to Python ints.
    assert mcnemar_exact_p(to_int(40), to_int(50)) == pytest.approx(mcnemar_exact_p(40, 50))
    counts = np.array([True, False, True]).sum(), np.array([1, 1, 0]).sum()  # numpy sums
    assert mcnemar_exact_p(*counts) == mcnemar_exact_p(2, 2)


@pytest.mark.parametrize("bad", [np.bool_(True), np.float64(6.0), -np.int64(1)])
def test_numpy_non_counts_are_still_rejected(bad):
    with pytest.raises(ValueError, match="non-negative integer"):
        mcnemar_exact_p(bad, 6)


def test_adapter_base_follows_a_reused_cold_start_named_in_the_adapter_config(tmp_path):
    # bug: a run with --cold-start DIR has no cold_start/ beside its adapter, so its adapter was
    # loaded on the raw base model (0 % accuracy where the run itself measured 7 %)
    import json

    from helpers.evaluation.adapters import adapter_base

    reused = tmp_path / "first-run" / "cold_start"
    reused.mkdir(parents=True)
    (reused / "config.json").write_text("{}")
    adapter = tmp_path / "second-run" / "lora_adapter"
    adapter.mkdir(parents=True)
    (adapter / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": str(reused)}))
    assert adapter_base(adapter) == reused
    assert adapter_base(adapter, model_path="elsewhere") == "elsewhere"
    (adapter / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "HuggingFaceTB/x"}))
    assert adapter_base(adapter) is None  # a hub id: the profile's model
    beside = adapter.parent / "cold_start"
    beside.mkdir()
    (beside / "config.json").write_text("{}")
    assert adapter_base(adapter) == beside  # the run's own cold start wins
