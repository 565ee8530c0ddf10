"""Prompting strategies for GSM8K, measured in notebook 01 before any training.

One builder per strategy, each ``question -> chat messages`` (``[{"role", "content"}, ...]``):

* :func:`direct_prompt` - the final answer only, no reasoning.
* :func:`few_shot_prompt` - k worked problems from the GSM8K **train** split as earlier chat
  turns (in-context learning, Brown et al. 2020); :func:`make_few_shot` draws them once.
* :func:`cot_prompt` - chain of thought (Wei et al. 2022) with one worked exemplar written
  for this course, ending in ``\\boxed{}``.
* :func:`zero_shot_cot_prompt` - "Let's think step by step" (Kojima et al. 2022).
* :func:`long_cot_prompt` - asks for extended reasoning with an explicit verification step.

Plus self-consistency (Wang et al. 2022), the inference-time way to buy accuracy with more
reasoning: sample k completions at temperature > 0 and take the :func:`majority_vote` of their
answers (``helpers.evaluation.scoring.evaluate(..., samples=k)``).

Grading: every strategy asks for the answer in ``\\boxed{}`` and is graded with
:func:`helpers.grading.extract_answer` + :func:`helpers.grading.is_equivalent`. Only the
direct strategy falls back to the last number in the text (:func:`extract_direct`), because a
model told to "just answer" often writes a bare number.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from helpers.course_format import extract_hash_answer
from helpers.grading import extract_answer, is_equivalent, is_evaluated
from helpers.normalize import normalize_answer

BOX_INSTRUCTION = "Write the final answer as \\boxed{number}."
DIRECT_SYSTEM = (
    "Answer the math question with the final answer only. Do not explain or show any work. " + BOX_INSTRUCTION
)
FEW_SHOT_SYSTEM = 'Solve the math problem the way the worked examples do, then write "The answer is \\boxed{number}."'
COT_SYSTEM = (
    "You are a careful math tutor. Solve the problem step by step: write down what is "
    "given, do one calculation per line, and explain each step. " + BOX_INSTRUCTION
)
ZERO_SHOT_COT_TRIGGER = "Let's think step by step."
LONG_COT_SYSTEM = (
    "Take your time and reason at length before you answer.\n"
    "1. Restate what the question asks and list every quantity it gives.\n"
    "2. Make a plan, then solve step by step, showing every calculation.\n"
    "3. Verify: check the result a second way (work backwards from your answer, or redo each "
    "calculation) and make sure it answers exactly what was asked. If you find a mistake, fix "
    "it and verify again.\n"
    "4. Only then write the final answer as \\boxed{number}."
)
# A worked exemplar written for this course (not from GSM8K).
COT_EXAMPLE_QUESTION = (
    "A baker fills 14 trays with 12 muffins each. She sells 150 muffins in the morning and "
    "gives away one third of the muffins that are left. How many muffins does she still have?"
)
COT_EXAMPLE_SOLUTION = (
    "The baker makes 14 * 12 = 168 muffins.\n"
    "After selling 150, she has 168 - 150 = 18 muffins left.\n"
    "She gives away one third of them: 18 / 3 = 6 muffins.\n"
    "So she still has 18 - 6 = 12 muffins.\n"
    "The answer is \\boxed{12}."
)
_CALCULATOR_RE = re.compile(r"<<[^<>]*>>")  # GSM8K's calculator annotations, <<48/2=24>>
_LAST_NUMBER_RE = re.compile(r"[-+]?\$?\d[\d,]*(?:\.\d+)?")


# ----------------------------------------------------------------------------- builders
def _check_question(question: str) -> str:
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"question must be a non-empty string, got {question!r}")
    return question


def direct_prompt(question: str) -> list[dict]:
    """Final answer only: ``[system, user]``; graded with :func:`extract_direct`.

    Raises:
        ValueError: empty question.
    """
    return [{"role": "system", "content": DIRECT_SYSTEM}, {"role": "user", "content": _check_question(question)}]


def worked_solution(solution: str) -> str:
    """A GSM8K solution as a chat answer: calculator annotations removed and the
    ``#### 72`` line replaced by ``The answer is \\boxed{72}.``

    ``"48/2 = <<48/2=24>>24 clips.\\n#### 24"`` -> ``"48/2 = 24 clips.\\nThe answer is \\boxed{24}."``

    Raises:
        ValueError: no ``####`` in the solution.
    """
    answer = extract_hash_answer(solution)
    steps = _CALCULATOR_RE.sub("", solution.split("####")[0]).strip()
    return f"{steps}\nThe answer is \\boxed{{{answer}}}."


def few_shot_examples(k: int = 4, seed: int = 0, data_dir=None) -> list[dict]:
    """``k`` worked problems drawn at random (``seed``) from the GSM8K **train** split.

    Each is ``{"question", "solution"}`` with the solution in :func:`worked_solution` form.
    Uses the same source as :func:`helpers.data.gsm8k.load_gsm8k` (``data_dir`` / ``GSM8K_DIR``, the
    hub, or the embedded sample, whose train and test problems are disjoint); never the test split.

    Raises:
        ValueError: ``k`` outside ``1..len(train)``.
    """
    from helpers.data.gsm8k import read_rows  # the raw rows keep the worked solutions

    rows, _source = read_rows("train", data_dir)
    if not 1 <= k <= len(rows):
        raise ValueError(f"k must be between 1 and {len(rows)} (train size), got {k}")
    picked = random.Random(seed).sample(range(len(rows)), k)
    return [{"question": rows[i]["question"], "solution": worked_solution(rows[i]["answer"])} for i in picked]


def few_shot_prompt(question: str, examples: list[dict]) -> list[dict]:
    """System, then one user/assistant turn per worked example, then the question.

    ``examples`` come from :func:`few_shot_examples` (train split).

    Raises:
        ValueError: empty question or no examples, or an example is the question itself.
    """
    _check_question(question)
    if not examples:
        raise ValueError("few-shot prompting needs at least one example")
    messages = [{"role": "system", "content": FEW_SHOT_SYSTEM}]
    for ex in examples:
        if " ".join(ex["question"].split()) == " ".join(question.split()):
            raise ValueError("a few-shot example is the question being asked")
        messages += [{"role": "user", "content": ex["question"]}, {"role": "assistant", "content": ex["solution"]}]
    return messages + [{"role": "user", "content": question}]


def make_few_shot(k: int = 4, seed: int = 0, data_dir=None) -> Callable[[str], list[dict]]:
    """A ``question -> messages`` builder with ``k`` train examples drawn once (see above)."""
    examples = few_shot_examples(k, seed, data_dir)
    build = partial(few_shot_prompt, examples=examples)
    build.examples = examples  # for display in the notebook
    return build


def cot_prompt(question: str) -> list[dict]:
    """Chain of thought with one worked exemplar (:data:`COT_EXAMPLE_QUESTION`) ending in
    ``\\boxed{}``: ``[system, user, assistant, user]``.

    Raises:
        ValueError: empty question.
    """
    return [
        {"role": "system", "content": COT_SYSTEM},
        {"role": "user", "content": COT_EXAMPLE_QUESTION},
        {"role": "assistant", "content": COT_EXAMPLE_SOLUTION},
        {"role": "user", "content": _check_question(question)},
    ]


def zero_shot_cot_prompt(question: str) -> list[dict]:
    """The question followed by "Let's think step by step." and the ``\\boxed{}`` instruction.

    Raises:
        ValueError: empty question.
    """
    content = f"{_check_question(question)}\n\n{ZERO_SHOT_COT_TRIGGER} {BOX_INSTRUCTION}"
    return [{"role": "user", "content": content}]


def long_cot_prompt(question: str) -> list[dict]:
    """Extended reasoning with explicit verification (:data:`LONG_COT_SYSTEM`): ``[system, user]``.

    Raises:
        ValueError: empty question.
    """
    return [{"role": "system", "content": LONG_COT_SYSTEM}, {"role": "user", "content": _check_question(question)}]


# ----------------------------------------------------------------------------- extraction
def last_number(text: str | None) -> str | None:
    """The last number written in ``text`` (``"so 1,234 dollars."`` -> ``"1,234"``), or None.

    Only the direct strategy uses this fallback; the grader normalizes the result.
    """
    if not isinstance(text, str):
        return None
    matches = _LAST_NUMBER_RE.findall(text)
    return matches[-1].rstrip(",") if matches else None


def extract_direct(text: str | None) -> str | None:
    """:func:`helpers.grading.extract_answer`, falling back to :func:`last_number`."""
    answer = extract_answer(text)
    return answer if answer is not None else last_number(text)


# --------------------------------------------------------------------------- self-consistency
def majority_vote(answers: list[str | None]) -> str | None:
    """The most common answer among k samples (self-consistency); ``None`` if none answered.

    Answers are grouped with the grader's own equivalence (:func:`helpers.grading.is_equivalent`,
    each answer against the first answer of every group so far), so they vote by value, not by
    spelling: ``"18"``, ``"$18.00"``, ``"18 apples"`` and ``"3 \\times 6"`` are four votes for
    18. Answers that normalize to nothing (``None``, ``""``) do not vote. Ties go to the group
    whose first answer comes earliest, so the result never depends on hashing or sort order.
    Returns the winning group's first evaluated spelling (:func:`helpers.grading.is_evaluated`: a number,
    not arithmetic left to do), else its first raw answer: ``["7", "18", "$18.00", "7"]`` -> ``"7"``
    (2 votes each, 7 seen first); ``["3 \\times 6", "18"]`` -> ``"18"`` (one group of two, and the grader
    marks an unevaluated ``3 \\times 6`` wrong).
    """
    groups: list[list] = []  # each group's spellings (its votes), in order of first occurrence
    for answer in answers:
        if not normalize_answer(answer):
            continue
        group = next((g for g in groups if is_equivalent(answer, g[0], warn=False)), None)
        if group is None:
            groups.append([answer])
        else:
            group.append(answer)
    if not groups:
        return None
    spellings = max(groups, key=len)  # max keeps the first of a tie
    return next((a for a in spellings if is_evaluated(a)), spellings[0])


# ------------------------------------------------------------------------------ registry
@dataclass(frozen=True)
class Strategy:
    """A prompting strategy: its builder, the answer extractor, a one-line description."""

    name: str
    build_prompt: Callable[[str], list[dict]]
    extract: Callable[[str | None], str | None]
    description: str


def strategies(k_shots: int = 4, seed: int = 0, data_dir=None) -> dict[str, Strategy]:
    """The five strategies of notebook 01, by name, in teaching order.

    ``k_shots`` train examples are drawn once with ``seed`` for the few-shot strategy.
    """
    few_shot = make_few_shot(k_shots, seed, data_dir)
    items = [
        Strategy("direct", direct_prompt, extract_direct, "final answer only (graded with a last-number fallback)"),
        Strategy("few-shot", few_shot, extract_answer, f"{k_shots} worked train problems"),
        Strategy("cot", cot_prompt, extract_answer, "step by step, one worked exemplar"),
        Strategy("zero-shot-cot", zero_shot_cot_prompt, extract_answer, '"Let\'s think step by step"'),
        Strategy("long-cot", long_cot_prompt, extract_answer, "extended reasoning + verification"),
    ]
    return {s.name: s for s in items}
