"""Evaluation machinery: scoring completions and summaries (``scoring``), the statistics (``stats``:
Wilson intervals, McNemar, pass@k), before/after GRPO (``before_after``, ``adapters``), pass@k runs
(``pass_at_k``), ``summary.json`` and the tables (``reports``), a run's provenance
(``provenance``), saving a run for ``results/`` (``reference``), the from-scratch loop's variants
(``variants``), and the figures (``plots``)."""
