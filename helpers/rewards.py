"""GRPO reward functions for the XML answer format, fixed, next to the seeds' originals.

The seeds' functions (willccbb's GRPO demo, copied into Unsloth's Qwen2.5 GRPO notebook) are
kept verbatim (minus a print) as ``seed_*`` for teaching. Their failures, each fixed here:

- correctness compares strings: ``$1,234`` vs ``1234`` or ``29.00`` vs ``29`` score 0; and it
  takes the text after the *last* ``<answer>``, so two hedged answers score 2.0.
  Fixed: ``helpers.grading`` (one ``<answer>`` block, math equivalence).
- int reward uses ``str.isdigit``: ``-3`` and ``1,000`` are "not integers".
- strict/soft format use ``.`` without ``re.DOTALL``: multi-line reasoning never matches;
  strict also demands a final ``\\n``, soft rejects leading whitespace.
- xmlcount penalizes a completion that ends right after ``</answer>`` by its whole length,
  and counts a trailing ``<|im_end|>`` as junk.

All functions take TRL's keyword arguments (``prompts``, ``completions``, ``answer`` column,
...) and return one float per completion. Completions may be conversational
(``[[{"role": "assistant", "content": "..."}], ...]``) or plain strings.
"""

from __future__ import annotations

import re

from .grading import extract_answer, is_equivalent, normalize_answer

CORRECT, INTEGER, FORMAT = 2.0, 0.5, 0.5
XML_TAG, XML_TRAILING_PER_CHAR = 0.125, 0.001
_EOS_RE = re.compile(r"(?:\s*(?:<\|im_end\|>|<\|endoftext\|>|<\|eot_id\|>|</s>))+\s*\Z")
_STRICT_RE = re.compile(r"<reasoning>\n(.+?)\n</reasoning>\n<answer>\n(.+?)\n</answer>\n?", re.S)
_SOFT_RE = re.compile(r"\s*<reasoning>(.+?)</reasoning>\s*<answer>(.+?)</answer>", re.S)
_TAGS = ("<reasoning>", "</reasoning>", "<answer>", "</answer>")
_INT_RE = re.compile(r"[-+]?\d+")


def completion_texts(completions) -> list[str]:
    """Texts of TRL completions: conversational (message lists, contents joined) or strings.

    Raises:
        TypeError: a completion that is neither a string nor a list of message dicts.
    """
    texts = []
    for c in completions:
        if isinstance(c, str):
            texts.append(c)
        elif isinstance(c, list) and all(isinstance(m, dict) for m in c):
            texts.append("".join(m.get("content") or "" for m in c))
        else:
            raise TypeError("completion must be a str or a list of messages, "
                            f"got {type(c).__name__}")
    return texts


def strip_eos(text: str) -> str:
    """Drop trailing end-of-turn tokens (``<|im_end|>``, ``<|endoftext|>``, ``</s>``, ...)."""
    return _EOS_RE.sub("", text)


def _one_of_each_tag(text: str) -> bool:
    return all(text.count(tag) == 1 for tag in _TAGS)


def _blocks_filled(m: re.Match | None) -> bool:
    return bool(m) and all(g.strip() for g in m.groups())


def correctness_reward_func(prompts=None, completions=(), answer=(), **kwargs) -> list[float]:
    """2.0 when the extracted answer equals the gold ``answer`` (``grading.is_equivalent``).

    ``"<answer>\\n$1,234\\n</answer>"`` vs ``"1234"`` -> 2.0; two answer blocks -> 0.0.

    Raises:
        ValueError: ``answer`` and ``completions`` differ in length.
    """
    texts = completion_texts(completions)
    if len(texts) != len(answer):
        raise ValueError(f"{len(texts)} completions but {len(answer)} gold answers")
    return [CORRECT if is_equivalent(extract_answer(t), g) else 0.0 for t, g in zip(texts, answer)]


def int_reward_func(prompts=None, completions=(), answer=None, **kwargs) -> list[float]:
    """0.5 when the extracted answer is an integer after normalization.

    ``-3``, ``1,000``, ``$42``, ``\\boxed{42}`` -> 0.5; ``3.5``, ``3,5``, ``x`` or no answer -> 0.0.
    """
    return [INTEGER if _INT_RE.fullmatch(normalize_answer(extract_answer(t))) else 0.0
            for t in completion_texts(completions)]


def strict_format_reward_func(prompts=None, completions=(), answer=None, **kwargs) -> list[float]:
    """0.5 for exactly ``<reasoning>\\n…\\n</reasoning>\\n<answer>\\n…\\n</answer>``.

    An optional final ``\\n`` is allowed. Content may span lines but must not be blank; each
    tag appears once; nothing else around it except a trailing end-of-turn token (``<|im_end|>``).
    """
    out = []
    for t in completion_texts(completions):
        t = strip_eos(t)
        ok = _one_of_each_tag(t) and _blocks_filled(_STRICT_RE.fullmatch(t))
        out.append(FORMAT if ok else 0.0)
    return out


def soft_format_reward_func(prompts=None, completions=(), answer=None, **kwargs) -> list[float]:
    """0.5 for ``<reasoning>…</reasoning>`` then ``<answer>…</answer>`` with any whitespace.

    Leading whitespace and trailing text are allowed, content may span lines but must not be
    blank, and each tag must appear exactly once (two answer blocks -> 0.0).
    """
    out = []
    for t in completion_texts(completions):
        ok = _one_of_each_tag(t) and _blocks_filled(_SOFT_RE.match(t))
        out.append(FORMAT if ok else 0.0)
    return out


def count_xml(text: str) -> float:
    """0.125 per well-placed tag (as in the seeds), minus 0.001 per character after the answer.

    Trailing whitespace and end-of-turn tokens (``<|im_end|>``) are not counted as trailing
    text; the result is never negative. Gold format -> 0.5, with or without the final ``\\n``.
    """
    text = strip_eos(text)
    count = 0.0
    if text.count("<reasoning>\n") == 1:
        count += XML_TAG
    if text.count("\n</reasoning>\n") == 1:
        count += XML_TAG
    if text.count("\n<answer>\n") == 1:
        count += XML_TAG
    if text.count("\n</answer>") == 1:
        count += XML_TAG
        trailing = text.split("\n</answer>")[-1].strip()
        count -= len(trailing) * XML_TRAILING_PER_CHAR
    return max(count, 0.0)


def xmlcount_reward_func(prompts=None, completions=(), answer=None, **kwargs) -> list[float]:
    """``count_xml`` of each completion (0.0 to 0.5)."""
    return [count_xml(t) for t in completion_texts(completions)]


REWARD_FUNCS = [xmlcount_reward_func, soft_format_reward_func, strict_format_reward_func,
                int_reward_func, correctness_reward_func]


# ------------------------------------------------------------------------------------------
# The seeds' originals, verbatim except for a removed debug print. For teaching only.
# Source: willccbb's grpo_demo.py gist, reused in Unsloth's Qwen2.5 (3B) GRPO notebook.
def seed_extract_xml_answer(text: str) -> str:
    answer = text.split("<answer>")[-1]
    answer = answer.split("</answer>")[0]
    return answer.strip()


def seed_correctness_reward_func(prompts, completions, answer, **kwargs) -> list[float]:
    responses = [completion[0]['content'] for completion in completions]
    extracted_responses = [seed_extract_xml_answer(r) for r in responses]
    return [2.0 if r == a else 0.0 for r, a in zip(extracted_responses, answer)]


def seed_int_reward_func(completions, **kwargs) -> list[float]:
    responses = [completion[0]['content'] for completion in completions]
    extracted_responses = [seed_extract_xml_answer(r) for r in responses]
    return [0.5 if r.isdigit() else 0.0 for r in extracted_responses]


def seed_strict_format_reward_func(completions, **kwargs) -> list[float]:
    pattern = r"^<reasoning>\n.*?\n</reasoning>\n<answer>\n.*?\n</answer>\n$"
    responses = [completion[0]["content"] for completion in completions]
    matches = [re.match(pattern, r) for r in responses]
    return [0.5 if match else 0.0 for match in matches]


def seed_soft_format_reward_func(completions, **kwargs) -> list[float]:
    pattern = r"<reasoning>.*?</reasoning>\s*<answer>.*?</answer>"
    responses = [completion[0]["content"] for completion in completions]
    matches = [re.match(pattern, r) for r in responses]
    return [0.5 if match else 0.0 for match in matches]


def seed_count_xml(text) -> float:
    count = 0.0
    if text.count("<reasoning>\n") == 1:
        count += 0.125
    if text.count("\n</reasoning>\n") == 1:
        count += 0.125
    if text.count("\n<answer>\n") == 1:
        count += 0.125
        count -= len(text.split("\n</answer>\n")[-1])*0.001
    if text.count("\n</answer>") == 1:
        count += 0.125
        count -= (len(text.split("\n</answer>")[-1]) - 1)*0.001
    return count


def seed_xmlcount_reward_func(completions, **kwargs) -> list[float]:
    contents = [completion[0]["content"] for completion in completions]
    return [seed_count_xml(c) for c in contents]


SEED_REWARD_FUNCS = [seed_xmlcount_reward_func, seed_soft_format_reward_func,
                     seed_strict_format_reward_func, seed_int_reward_func,
                     seed_correctness_reward_func]
