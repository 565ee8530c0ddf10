"""Evaluation machinery: scoring completions and summaries (``scoring``), the statistics (``stats``:
Wilson intervals, McNemar, pass@k), before/after GRPO (``before_after``, ``adapters``), pass@k runs
(``pass_at_k``), ``summary.json`` and the tables (``reports``), and the figures (``plots``)."""
