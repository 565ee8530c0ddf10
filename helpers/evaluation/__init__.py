"""Evaluation machinery: scoring completions and summaries (``scoring``), the statistics (``stats``),
before/after GRPO (``before_after``, ``adapters``), ``summary.json`` and the tables (``reports``), a run's
provenance (``provenance``) and the figures (``plots``)."""
