"""The course's running example: one GSM8K question and a group of G = 4 completions.

Notebook 02 carries this group from rewards to advantages, ratio, clipped surrogate, KL and loss; notebooks
03 and 05 come back to it. :func:`group_from_solution` writes the completions from the question's own worked
solution (read from GSM8K at run time, never stored here), the kinds a GRPO run meets (:data:`LABELS`):

0. right: the worked solution in the course format, then EOS;
1. stops a step early: the first step only, its result as the answer, then EOS;
2. right, no tags: ``The answer is <gold>.``, then EOS;
3. cut off: the steps, then a re-check that runs into the length limit (no closing tags, no EOS).

The course's reward functions pay them 4.0, 2.0, 0.0 and 0.125.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from helpers.course_format import extract_hash_answer, format_solution, make_prompt
from helpers.grpo import completion_mask as mask_after_eos

LABELS = ("right", "stops a step early", "right, no tags", "cut off")


@dataclass(frozen=True)
class RunningExample:
    """One prompt and its group of G = 4 completions, as TRL's generation step hands them over.

    Attributes:
        question, answer: the GSM8K question and its gold label (the number after ``####``).
        prompt: the chat messages (system + user) that training uses.
        completions: ``G`` texts decoded from ``completion_ids`` (EOS not shown); labels: :data:`LABELS`.
        prompt_ids, prompt_mask: ``(G, P)`` int64, the prompt repeated for each completion.
        completion_ids: ``(G, C)`` int64, right-padded with the pad token (EOS if none); ``C`` = the length limit.
        completion_mask: ``(G, C)`` int64, 1 up to and including the first EOS (TRL's mask).
        source: where the question came from (:func:`helpers.data.gsm8k.read_rows`).
    """

    question: str
    answer: str
    prompt: list
    completions: tuple
    labels: tuple
    prompt_ids: torch.Tensor
    prompt_mask: torch.Tensor
    completion_ids: torch.Tensor
    completion_mask: torch.Tensor
    source: str

    @property
    def batch(self) -> tuple:
        """``(prompt_ids, prompt_mask, completion_ids, completion_mask)`` for :func:`helpers.grpo.completion_logps`."""
        return self.prompt_ids, self.prompt_mask, self.completion_ids, self.completion_mask


def _texts(solution: str, gold: str) -> list[str]:
    """The four completion texts, in :data:`LABELS` order."""
    right = format_solution(solution)
    steps = right.split("<reasoning>\n", 1)[1].split("\n</reasoning>", 1)[0]
    first = steps.split("\n")[0]
    numbers = [n.replace(",", "") for n in re.findall(r"\d[\d,]*", first)]
    wrong = [n for n in numbers if n != gold.replace(",", "")]
    early = wrong[-1] if wrong else gold + "1"  # the first step's result; else a number that is wrong
    return [
        right,
        f"<reasoning>\n{first}\n</reasoning>\n<answer>\n{early}\n</answer>",
        f"The answer is {gold}.",
        "<reasoning>\n" + steps + ("\nLet me check that again.\n" + steps) * 3,
    ]


def group_from_solution(tokenizer, question: str, solution: str, source: str = "") -> RunningExample:
    """The :class:`RunningExample` for a question and its GSM8K-style worked solution (ending ``#### <label>``);
    :func:`helpers.data.gsm8k.running_example` calls it on GSM8K test question 0. The length limit ``C`` is
    the longest finished completion (EOS included); the "cut off" one is truncated to it, as generation
    stops at ``max_completion_length``.

    Args:
        tokenizer: the policy's tokenizer (chat template, EOS and pad tokens).
        source: where the question came from (:attr:`RunningExample.source`).

    Raises:
        ValueError: the tokenizer has no EOS token, or the solution has no worked steps.
    """
    if tokenizer.eos_token_id is None:
        raise ValueError("the tokenizer has no EOS token")
    gold = extract_hash_answer(solution)
    prompt = make_prompt(question)
    ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in _texts(solution, gold)]
    eos = tokenizer.eos_token_id
    width = max(len(x) for x in ids[:3]) + 1
    ids = [x + [eos] for x in ids[:3]] + [ids[3][:width]]
    pad = eos if tokenizer.pad_token_id is None else tokenizer.pad_token_id  # TRL pads with EOS when unset
    completion_ids = torch.tensor([x + [pad] * (width - len(x)) for x in ids])
    text = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
    prompt_ids = torch.tensor([tokenizer(text, add_special_tokens=False)["input_ids"]] * len(ids))
    return RunningExample(
        question=question,
        answer=gold,
        prompt=prompt,
        completions=tuple(tokenizer.batch_decode(completion_ids, skip_special_tokens=True)),
        labels=LABELS,
        prompt_ids=prompt_ids,
        prompt_mask=torch.ones_like(prompt_ids),
        completion_ids=completion_ids,
        completion_mask=mask_after_eos(completion_ids, eos),
        source=source,
    )
