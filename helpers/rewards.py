"""GRPO reward functions for the XML answer format, in two sets; notebook 03 compares them with the
originals (:mod:`helpers.original_rewards`) and shows where each original fails.

- ``layout_*`` (:data:`LAYOUT_REWARD_FUNCS`): the originals with their parsing fixed (correctness by
  :func:`helpers.grading.is_correct` on the single ``<answer>`` block, signed and comma integers,
  multi-line blocks, end-of-turn tokens ignored), still paying for the *layout* alone. Hackable: the
  system prompt's own template ``<reasoning>\\n...\\n</reasoning>\\n<answer>\\n...\\n</answer>`` earns
  all 1.5 format points, and a 135M policy trained with them learns exactly that (notebook 05).
- The defaults (:data:`REWARD_FUNCS`) also check the *content* (:func:`content_checked`): real
  reasoning (:func:`is_real_reasoning`) and a number in the answer (:func:`is_parseable_answer`). The
  integer reward (there to teach GSM8K's integer answers) pays only after real work: paid alone, it
  rewarded answering with any number of the question. The template copy scores 0 on every one of them.

All functions take TRL's keyword arguments (``prompts``, ``completions``, ``answer`` column, ...) and
return one float per completion. Completions may be conversational
(``[[{"role": "assistant", "content": "..."}], ...]``) or plain strings.
"""

from __future__ import annotations

import re
from fractions import Fraction
from operator import add, mul, sub, truediv

from helpers.grading import extract_answer, extract_boxed, extract_xml_block, is_correct
from helpers.normalize import normalize_answer
from helpers.numbers import parse_number

CORRECT, INTEGER, FORMAT = 2.0, 0.5, 0.5
XML_TAG, XML_TRAILING_PER_CHAR = 0.125, 0.001

_EOS_RE = re.compile(r"(?:\s*(?:<\|im_end\|>|<\|endoftext\|>|<\|eot_id\|>|</s>))+\s*\Z")
_STRICT_RE = re.compile(r"<reasoning>\n(.+?)\n</reasoning>\n<answer>\n(.+?)\n</answer>\n?", re.S)
_SOFT_RE = re.compile(r"\s*<reasoning>(.+?)</reasoning>\s*<answer>(.+?)</answer>", re.S)
_TAGS = ("<reasoning>", "</reasoning>", "<answer>", "</answer>")
_XML_COUNTED = ("<reasoning>\n", "\n</reasoning>\n", "\n<answer>\n", "\n</answer>")  # count_xml's tags
_INT_RE = re.compile(r"[-+]?\d+")
_ALNUM_RE = re.compile(r"[^\W_]")  # a letter or digit, any script
_NUM = r"(\d+(?:,\d{3})*(?:\.\d+)?)"
_NUMBER_RE = re.compile(_NUM)
_EQUATION_RE = re.compile(_NUM + r"\s*([-+*/x×÷−])\s*" + _NUM + r"\s*=\s*" + _NUM)  # a op b = c
_OPS = {op: f for ops, f in (("+", add), ("-−", sub), ("*x×", mul), ("/÷", truediv)) for op in ops}


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
            raise TypeError(f"completion must be a str or a list of messages, got {type(c).__name__}")
    return texts


def strip_eos(text: str) -> str:
    """Drop trailing end-of-turn tokens (``<|im_end|>``, ``<|endoftext|>``, ``</s>``, ...)."""
    return _EOS_RE.sub("", text)


# ----------------------------------------------------------------- content checks (anti-hacking)
def prompt_texts(prompt) -> list[str]:
    """The texts of one TRL prompt: a string, or the ``content`` of each chat message.

    ``None`` gives the course's :data:`helpers.course_format.SYSTEM_PROMPT`, so that a copy of its
    template is recognised even when the reward function is called without prompts.
    """
    if prompt is None:
        from helpers.course_format import SYSTEM_PROMPT

        return [SYSTEM_PROMPT]
    if isinstance(prompt, str):
        return [prompt]
    return [m.get("content") or "" for m in prompt if isinstance(m, dict)]


def is_copied(block: str, sources: list[str]) -> bool:
    """True when ``block`` (whitespace collapsed) appears verbatim inside one of ``sources``."""
    block = " ".join(block.split())
    return bool(block) and any(block in " ".join(source.split()) for source in sources)


def is_placeholder(block: str | None, sources: list[str] = ()) -> bool:
    """A block that stands in for content: no letter or digit at all (``...``, ``…``, ``---``),
    or text copied verbatim from the prompt (``sources``), such as the system prompt's template.
    ``None`` (no block) is not a placeholder."""
    if block is None:
        return False
    return not _ALNUM_RE.search(block) or is_copied(block, sources)


def numbers_in(text: str) -> set:
    """The numbers written in ``text`` as exact values: ``"1,000 and 2.50 or 3"`` -> ``{1000, 5/2, 3}``."""
    return {Fraction(m.replace(",", "")) for m in _NUMBER_RE.findall(text)}


def is_real_reasoning(block: str | None, sources: list[str] = ()) -> bool:
    """Reasoning that is real work: it holds a number that none of ``sources`` (the prompt's texts,
    the question included) holds - a result it computed, as the 9 of ``16 - 3 - 4 = 9`` - or a true
    one-operation equation (:func:`has_true_equation`: the ``81 / 9 = 9`` of "81 cards into boxes of
    9"), and is not a placeholder (:func:`is_placeholder`). ``None`` -> False.

    A restated fact of the question (``Hugo has 35 cookies.``) is not work: a 135M policy learned to
    write exactly that, then answer with one of the question's numbers. Still a check, not a proof of
    work (``"2 + 2 = 4"`` passes where the question has no 4): only the correctness reward needs the
    problem solved.
    """
    if block is None or is_placeholder(block, sources):
        return False
    known = set().union(*(numbers_in(s) for s in sources)) if sources else set()
    return bool(numbers_in(block) - known) or has_true_equation(block)


def has_true_equation(text: str) -> bool:
    """True when ``text`` holds an equation ``a op b = c`` (op one of ``+ - * / x × ÷``) that holds
    exactly: ``"81 / 9 = 9"`` -> True, ``"35 / 5 = 35"`` -> False, ``"1,000 - 1 = 999"`` -> True."""
    for a, op, b, c in _EQUATION_RE.findall(text):
        a, b, c = (Fraction(v.replace(",", "")) for v in (a, b, c))
        if (b or op not in "/÷") and _OPS[op](a, b) == c:
            return True
    return False


def is_parseable_answer(block: str | None) -> bool:
    """An answer block that holds a number after :func:`helpers.grading.normalize_answer`
    (``\\boxed{}`` unwrapped): ``18``, ``$1,234``, ``-3``, ``0.5``, ``3/4``, ``18 dollars``,
    ``3,5`` (a decimal comma: 3.5). ``...``, ``x`` or ``None`` -> False (GSM8K's answers are
    all numbers)."""
    if block is None:
        return False
    return parse_number(normalize_answer(extract_boxed(block) or block)) is not None


def content_checked(text: str, sources: list[str] = ()) -> bool:
    """Whether every *closed* block of a completion holds real content.

    A closed ``<reasoning>`` block must pass :func:`is_real_reasoning`, a closed ``<answer>``
    block :func:`is_parseable_answer`. Blocks that are missing or cut off by the token limit are
    not judged here (the layout checks handle them). The template copy fails; so does
    ``<reasoning>\\nSo 9 * 2 = 18.\\n</reasoning>\\n<answer>\\n...\\n</answer>``.
    """
    reasoning = extract_xml_block(text, "reasoning")
    if "</reasoning>" in text and not is_real_reasoning(reasoning, sources):
        return False
    answer = extract_xml_block(text, "answer")
    return "</answer>" not in text or is_parseable_answer(answer)


def _with_sources(prompts, completions) -> list[tuple[str, list[str]]]:
    """(text, prompt texts) per completion; TRL passes one prompt per completion."""
    texts = completion_texts(completions)
    if prompts is None:
        return [(t, prompt_texts(None)) for t in texts]
    prompts = list(prompts)
    if len(prompts) != len(texts):
        raise ValueError(f"{len(texts)} completions but {len(prompts)} prompts")
    return [(t, prompt_texts(p)) for t, p in zip(texts, prompts)]


# ----------------------------------------------------------------------- reward functions
def correctness_reward_func(prompts=None, completions=(), answer=(), **kwargs) -> list[float]:
    """2.0 when the extracted answer is a number (not an expression left unevaluated) equal to the gold
    ``answer`` (``grading.is_correct``).

    ``"<answer>\\n$1,234\\n</answer>"`` vs ``"1234"`` -> 2.0; two answer blocks -> 0.0;
    ``"<answer>\\n8 + 9\\n</answer>"`` vs ``"17"`` -> 0.0 (arithmetic left undone is not paid).

    Raises:
        ValueError: ``answer`` and ``completions`` differ in length.
    """
    texts = completion_texts(completions)
    if len(texts) != len(answer):
        raise ValueError(f"{len(texts)} completions but {len(answer)} gold answers")
    return [CORRECT if is_correct(extract_answer(t), g) else 0.0 for t, g in zip(texts, answer)]


def is_integer_answer(text: str) -> bool:
    """The extracted answer (:func:`helpers.grading.extract_answer`) is an integer after normalization: an
    answer block holding ``-3``, ``1,000`` or ``$42``, or ``\\boxed{42}`` -> True; ``3.5``, ``3,5``, ``x`` or no
    answer -> False."""
    return bool(_INT_RE.fullmatch(normalize_answer(extract_answer(text))))


def layout_int_reward_func(prompts=None, completions=(), answer=None, **kwargs) -> list[float]:
    """0.5 when the extracted answer is an integer (:func:`is_integer_answer`), whatever came before
    it. Hackable: restate a fact of the question and answer with one of its numbers -> 0.5."""
    return [INTEGER if is_integer_answer(t) else 0.0 for t in completion_texts(completions)]


def int_reward_func(prompts=None, completions=(), answer=None, **kwargs) -> list[float]:
    """0.5 when the extracted answer is an integer (:func:`is_integer_answer`) and follows real
    reasoning (:func:`is_real_reasoning` against the prompt, and every closed block checked).

    ``<reasoning>\\n35 / 5 = 7\\n</reasoning>\\n<answer>\\n7\\n</answer>`` -> 0.5; the same answer after
    ``Hugo has 35 cookies.`` (a fact of the question) or with no reasoning block -> 0.0.

    Raises:
        ValueError: ``prompts`` given with a length other than ``completions``'.
    """
    return [
        INTEGER
        if is_integer_answer(t)
        and content_checked(t, src)
        and is_real_reasoning(extract_xml_block(t, "reasoning"), src)
        else 0.0
        for t, src in _with_sources(prompts, completions)
    ]


def _layout(text: str, match) -> bool:
    """Each tag exactly once, ``match(text)`` matches and no block of it is blank."""
    if not all(text.count(tag) == 1 for tag in _TAGS):
        return False
    m = match(text)
    return bool(m) and all(g.strip() for g in m.groups())


def strict_layout(text: str) -> bool:
    """Exactly ``<reasoning>\\n…\\n</reasoning>\\n<answer>\\n…\\n</answer>`` (optional final
    ``\\n``, then only end-of-turn tokens); blocks may span lines but not be blank; each tag once."""
    return _layout(strip_eos(text), _STRICT_RE.fullmatch)


def soft_layout(text: str) -> bool:
    """``<reasoning>…</reasoning>`` then ``<answer>…</answer>``, any whitespace around and between,
    trailing text allowed; blocks not blank; each tag exactly once."""
    return _layout(text, _SOFT_RE.match)


def layout_strict_format_reward_func(prompts=None, completions=(), answer=None, **kwargs) -> list[float]:
    """0.5 for the strict layout (:func:`strict_layout`), whatever the blocks hold. Hackable:
    the template copy ``<reasoning>\\n...\\n</reasoning>\\n<answer>\\n...\\n</answer>`` -> 0.5."""
    return [FORMAT if strict_layout(t) else 0.0 for t in completion_texts(completions)]


def layout_soft_format_reward_func(prompts=None, completions=(), answer=None, **kwargs) -> list[float]:
    """0.5 for the soft layout (:func:`soft_layout`), whatever the blocks hold. Hackable."""
    return [FORMAT if soft_layout(t) else 0.0 for t in completion_texts(completions)]


def layout_xmlcount_reward_func(prompts=None, completions=(), answer=None, **kwargs) -> list[float]:
    """:func:`count_xml` of each completion (0.0 to 0.5), whatever the blocks hold. Hackable."""
    return [count_xml(t) for t in completion_texts(completions)]


def strict_format_reward_func(prompts=None, completions=(), answer=None, **kwargs) -> list[float]:
    """0.5 for the strict layout (:func:`strict_layout`) holding real reasoning and a number.

    Both blocks must pass :func:`content_checked`: real reasoning (:func:`is_real_reasoning`: a number
    that is not in the prompt, ``prompts``, TRL's, default the course's system prompt), and an answer that
    parses as a number. ``<reasoning>\\n9 * 2 = 18\\n</reasoning>\\n<answer>\\n18\\n</answer>``
    -> 0.5; the template copy, or reasoning ``"Let me think."`` -> 0.0.

    Raises:
        ValueError: ``prompts`` given with a length other than ``completions``'.
    """
    return [
        FORMAT if strict_layout(t) and content_checked(t, s) else 0.0 for t, s in _with_sources(prompts, completions)
    ]


def soft_format_reward_func(prompts=None, completions=(), answer=None, **kwargs) -> list[float]:
    """0.5 for the soft layout (:func:`soft_layout`) holding real reasoning and a number
    (:func:`content_checked`, as in :func:`strict_format_reward_func`).

    Raises:
        ValueError: ``prompts`` given with a length other than ``completions``'.
    """
    return [FORMAT if soft_layout(t) and content_checked(t, s) else 0.0 for t, s in _with_sources(prompts, completions)]


def count_xml(text: str) -> float:
    """0.125 per well-placed tag (as in the originals), minus 0.001 per character after the answer.

    Trailing whitespace and end-of-turn tokens (``<|im_end|>``) are not counted as trailing
    text; the result is never negative. Gold format -> 0.5, with or without the final ``\\n``.
    """
    text = strip_eos(text)
    count = XML_TAG * sum(text.count(tag) == 1 for tag in _XML_COUNTED)
    if text.count("\n</answer>") == 1:
        count -= len(text.split("\n</answer>")[-1].strip()) * XML_TRAILING_PER_CHAR
    return max(count, 0.0)


def xmlcount_reward_func(prompts=None, completions=(), answer=None, **kwargs) -> list[float]:
    """:func:`count_xml` (0.0 to 0.5) when every closed block holds real content
    (:func:`content_checked`), else 0.0.

    Partial credit stays for a completion cut off inside its reasoning; a closed placeholder block
    (``...``, the template copy) zeroes it.

    Raises:
        ValueError: ``prompts`` given with a length other than ``completions``'.
    """
    return [count_xml(t) if content_checked(t, s) else 0.0 for t, s in _with_sources(prompts, completions)]


REWARD_FUNCS = [
    xmlcount_reward_func,
    soft_format_reward_func,
    strict_format_reward_func,
    int_reward_func,
    correctness_reward_func,
]
LAYOUT_REWARD_FUNCS = [
    layout_xmlcount_reward_func,
    layout_soft_format_reward_func,
    layout_strict_format_reward_func,
    layout_int_reward_func,
    correctness_reward_func,
]
REWARD_SETS = {"checked": REWARD_FUNCS, "layout": LAYOUT_REWARD_FUNCS}  # what `python -m helpers train --rewards` names


def short_name(func) -> str:
    """``original_strict_format_reward_func`` -> ``strict``: the column name in :func:`reward_table`."""
    name = getattr(func, "__name__", str(func))
    for prefix in ("original_", "layout_"):
        name = name.removeprefix(prefix)
    return name.removesuffix("_reward_func").removesuffix("_format")


def reward_table(funcs, completions, answer, *, prompts=None, index=None):
    """Each reward function's reward for each completion, and their sum, as GRPO sees them (TRL
    adds the reward functions with weight 1 before computing the group advantages).

    Args:
        funcs: reward functions with TRL's signature (:data:`REWARD_FUNCS`, the originals, your own).
        completions: ``N`` completions, strings or TRL's conversational format.
        answer: ``N`` gold labels, or one label for all.
        prompts: ``N`` prompts (conversational) or None; the content checks compare against them.
        index: ``N`` row labels (default ``0..N-1``).

    Returns:
        A pandas ``DataFrame`` of shape ``(N, len(funcs) + 1)``: one column per function
        (:func:`short_name`) and ``total``.

    Raises:
        ValueError: ``answer``, ``prompts`` or ``index`` do not have ``N`` entries.
    """
    import pandas as pd

    completions = [[{"role": "assistant", "content": c}] if isinstance(c, str) else c for c in completions]
    n = len(completions)
    answer = [answer] * n if isinstance(answer, str) else list(answer)
    for name, values in (("answer", answer), ("prompts", prompts), ("index", index)):
        if values is not None and len(values) != n:
            raise ValueError(f"{name} has {len(values)} entries for {n} completions")
    table = pd.DataFrame(
        {short_name(f): f(prompts=prompts, completions=completions, answer=answer) for f in funcs}, index=index
    )
    table["total"] = table.sum(axis=1)
    return table
