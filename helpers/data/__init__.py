"""Data: GSM8K (``gsm8k``), the course-written word problems (``problems``), which problems each stretch of
GRPO trains on (``curriculum``), the named problem sets (``problem_sets``: training prompts, test, held-out
and development sets) and the prompting strategies of notebook 01 (``prompting``)."""
