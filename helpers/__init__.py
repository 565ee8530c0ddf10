"""Helpers behind the GRPO course notebooks.

One module per concept: ``profiles`` (run settings), ``data`` (GSM8K), ``grading`` and
``rewards`` (reward functions), ``grpo`` (the loss by hand), ``models`` (loading and
generation), ``training`` (TRL GRPOTrainer), ``evaluation``, ``plots``.
Importing this package does not import torch, so the notebooks' install cell can use it.
"""

__version__ = "0.1.0"
