"""The course's format, the contract between its prompts, training data and reward functions.

:data:`SYSTEM_PROMPT` asks for ``<reasoning>...</reasoning><answer>...</answer>`` (:func:`make_prompt` puts it
before a question); :func:`format_solution` writes a GSM8K worked solution in it (the cold start's targets, the
running example's right completion). :mod:`helpers.rewards` pays for this format (notebook 03).
"""

from __future__ import annotations

import re

SYSTEM_PROMPT = """Respond in the following format:
<reasoning>
...
</reasoning>
<answer>
...
</answer>"""


def extract_hash_answer(solution: str) -> str:
    """The final answer of a GSM8K solution: the text after ``####``, stripped.

    ``"...so 3 + 4 = 7.\\n#### 7"`` -> ``"7"``. Labels are kept as written (``"1,000"`` stays).

    Raises:
        ValueError: no ``####`` in the solution.
    """
    if "####" not in solution:
        raise ValueError(f"not a GSM8K solution (no '####'): {solution[:80]!r}")
    return solution.split("####")[-1].strip()


def make_prompt(question: str, system_prompt: str = SYSTEM_PROMPT) -> list[dict]:
    """Conversational prompt (TRL format): ``[system, user]`` messages."""
    return [{"role": "system", "content": system_prompt}, {"role": "user", "content": question}]


def format_solution(solution: str) -> str:
    """A GSM8K worked solution in the course's XML format.

    ``"Natalia sold 48/2 = <<48/2=24>>24 clips in May.\\n...\\n#### 72"`` ->
    ``"<reasoning>\\nNatalia sold 48/2 = 24 clips in May.\\n...\\n</reasoning>\\n<answer>\\n72\\n</answer>"``.

    Raises:
        ValueError: no ``####`` label, or no reasoning before it.
    """
    answer = extract_hash_answer(solution)
    steps = re.sub(r"<<[^<>]*>>", "", solution.split("####")[0]).strip()  # drop GSM8K's <<48/2=24>> notes
    if not steps:
        raise ValueError(f"solution has no worked steps before '####': {solution[:80]!r}")
    return f"<reasoning>\n{steps}\n</reasoning>\n<answer>\n{answer}\n</answer>"
