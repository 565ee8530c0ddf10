"""The running example (helpers.example): one GSM8K question, a group of four, as TRL holds it."""

import json

import pytest
import torch

from helpers.data.gsm8k import read_rows, running_example
from helpers.example import LABELS
from helpers.original_rewards import ORIGINAL_REWARD_FUNCS
from helpers.rewards import REWARD_FUNCS, reward_table


@pytest.fixture(scope="module")
def tokenizer(smollm2_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(smollm2_dir)


def _rewards(example, funcs=REWARD_FUNCS):
    return reward_table(funcs, example.completions, example.answer, prompts=[example.prompt] * 4)["total"].tolist()


def test_the_gsm8k_group_earns_what_notebook_02_says(tokenizer, gsm8k_dir):
    example = running_example(tokenizer, gsm8k_dir)
    assert example.labels == LABELS and len(example.completions) == 4
    assert _rewards(example) == [4.0, 2.0, 0.0, 0.125]
    assert example.completions[2] == f"The answer is {example.answer}."
    row = read_rows("test", gsm8k_dir)[0][0]  # GSM8K test row 0, read at run time
    assert example.question == row["question"] and row["answer"].endswith(f"#### {example.answer}")


def test_tensors_are_what_trls_generation_step_hands_over(tokenizer, gsm8k_dir):
    example = running_example(tokenizer, gsm8k_dir)
    ids, mask, eos = example.completion_ids, example.completion_mask, tokenizer.eos_token_id
    g, c = ids.shape
    assert (g, c) == tuple(mask.shape) and example.prompt_ids.shape[0] == g and example.prompt_mask.all()
    lengths = mask.sum(1)
    for i in range(3):  # finished: the mask ends on the (first) EOS, padding after it is masked
        assert ids[i, lengths[i] - 1] == eos and eos not in ids[i, : lengths[i] - 1].tolist()
    assert lengths[:3].max() == c  # the length limit is the longest finished completion
    assert lengths[3] == c and eos not in ids[3].tolist()  # cut off: no EOS, every token counts
    text = tokenizer.apply_chat_template(example.prompt, tokenize=False, add_generation_prompt=True)
    assert tokenizer.decode(example.prompt_ids[0]) == text
    assert tokenizer.decode(ids[0, : lengths[0] - 1]) == example.completions[0]


def test_a_course_written_problem_works_the_same(tokenizer, tmp_path):
    row = {
        "question": "A box holds 3 rows of 4 pens, and 5 more pens lie on top. How many pens are there?",
        "answer": "The rows hold 3 * 4 = <<3*4=12>>12 pens.\nWith the loose ones: 12 + 5 = <<12+5=17>>17.\n#### 17",
    }
    (tmp_path / "test.jsonl").write_text(json.dumps(row) + "\n")
    example = running_example(tokenizer, tmp_path)
    assert example.answer == "17" and "<answer>\n12\n</answer>" in example.completions[1]  # stops at 12
    assert "<<" not in example.completions[0]
    assert _rewards(example) == [4.0, 2.0, 0.0, 0.125]
    assert _rewards(example, ORIGINAL_REWARD_FUNCS)[0] < 4.0  # the seeds' format rewards miss multi-line reasoning


def test_a_first_step_that_already_holds_the_answer_still_gives_a_wrong_early_answer(tokenizer, tmp_path):
    # (The solution computes something: a restated fact of the question is not real reasoning.)
    row = {
        "question": "Tom has 12 albums of 100 stamps each. How many stamps does he have?",
        "answer": "He has 1,200 stamps.\n#### 1,200",
    }
    (tmp_path / "test.jsonl").write_text(json.dumps(row) + "\n")
    example = running_example(tokenizer, tmp_path)
    assert "<answer>\n1,2001\n</answer>" in example.completions[1]  # not 1200, which would be right
    assert _rewards(example)[1] < _rewards(example)[0] == 4.0


def test_a_tokenizer_without_pad_pads_with_eos_and_one_without_eos_is_refused(tokenizer, gsm8k_dir):
    import copy

    no_pad = copy.deepcopy(tokenizer)
    no_pad.pad_token = None
    example = running_example(no_pad, gsm8k_dir)
    assert (
        example.completion_mask.sum(1).tolist() == running_example(tokenizer, gsm8k_dir).completion_mask.sum(1).tolist()
    )
    no_eos = copy.deepcopy(tokenizer)
    no_eos.eos_token = None
    with pytest.raises(ValueError, match="EOS"):
        running_example(no_eos, gsm8k_dir)


def test_plots_of_the_running_example(tokenizer, gsm8k_dir):
    import matplotlib

    matplotlib.use("Agg")
    from helpers.diagrams import (
        CRITIC_STEPS,
        GROUP_STEPS,
        PIPELINE_STEPS,
        plot_critic_vs_group,
        plot_group_baseline,
        plot_grpo_pipeline,
        plot_token_grid,
    )
    from helpers.grpo import group_advantages

    example = running_example(tokenizer, gsm8k_dir)
    rewards = torch.tensor(_rewards(example))
    fig = plot_group_baseline(rewards, group_advantages(rewards, 4), example.labels, show=False)
    left, right = fig.axes
    assert [round(p.get_height(), 3) for p in left.patches if p.get_width() < 1][:4] == [4.0, 2.0, 0.0, 0.125]
    assert any(f"{rewards.mean():.2f}" in t.get_text() for t in left.get_legend().get_texts())
    assert [t.get_text() for t in right.texts] == ["+1.31", "+0.25", "-0.81", "-0.75"]

    values = torch.randn(example.completion_ids.shape)
    fig = plot_token_grid(
        values, example.completion_mask, example.labels, "t", marks=values > 1, center=0.0, show=False
    )
    image = fig.axes[0].images[0].get_array()
    assert image.mask[2, 8:].all() and not image.mask[0].any()  # padding blank, real tokens drawn
    with pytest.raises(ValueError, match="labels"):
        plot_token_grid(values, example.completion_mask, example.labels[:3], "t", show=False)
    with pytest.raises(ValueError, match="labels"):
        plot_group_baseline(rewards, rewards, example.labels[:2], show=False)
    boxes = [
        t.get_text() for t in plot_grpo_pipeline(show=False).axes[0].texts if t.get_text()
    ]  # arrows are empty texts
    assert boxes == list(PIPELINE_STEPS)
    texts = [t.get_text() for t in plot_critic_vs_group(show=False).axes[0].texts if t.get_text()]
    assert texts == list(CRITIC_STEPS) + list(GROUP_STEPS) + ["PPO", "GRPO"]
