import re
import helpers.rewards as R
from helpers.grading import extract_xml_block, parse_number, normalize_answer
NUM = re.compile(r"\d+(?:[.,]\d+)*")
def nums(text): return {parse_number(m.replace(",", "")) for m in NUM.findall(text or "")} - {None}
def shows_work(block, sources):
    if block is None: return False
    if R.is_placeholder(block, sources): return False
    known = set().union(*(nums(s) for s in sources))
    return bool(nums(block) - known)
def work_checked(text, sources):
    reasoning = extract_xml_block(text, "reasoning")
    if "</reasoning>" in text and not shows_work(reasoning, sources): return False
    answer = extract_xml_block(text, "answer")
    return "</answer>" not in text or R.is_parseable_answer(answer)
def _mk(layout_pred, value):
    def f(prompts=None, completions=(), answer=None, **kw):
        texts = R.completion_texts(completions)
        return [value(t) if layout_pred(t) and work_checked(t, s) else 0.0 for t, s in zip(texts, R._sources(prompts, len(texts)))]
    return f
def xml_w(prompts=None, completions=(), answer=None, **kw):
    texts = R.completion_texts(completions)
    return [R.count_xml(t) if work_checked(t, s) else 0.0 for t, s in zip(texts, R._sources(prompts, len(texts)))]
soft_w = _mk(R.soft_layout, lambda t: R.FORMAT); soft_w.__name__ = "soft_w"
strict_w = _mk(R.strict_layout, lambda t: R.FORMAT); strict_w.__name__ = "strict_w"
def int_w(prompts=None, completions=(), answer=None, **kw):
    texts = R.completion_texts(completions); ints = R.int_reward_func(prompts, completions, answer)
    return [i if work_checked(t, s) and "</reasoning>" in t else 0.0 for i, t, s in zip(ints, texts, R._sources(prompts, len(texts)))]
def random_reward(prompts=None, completions=(), answer=None, **kw):
    import random
    return [random.random() * 4.0 for _ in completions]
SETS = {
  "work": [xml_w, soft_w, strict_w, R.correctness_reward_func],
  "work_int": [xml_w, soft_w, strict_w, int_w, R.correctness_reward_func],
  "correct_only": [R.correctness_reward_func],
}
