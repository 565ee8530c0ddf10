"""Helpers behind the GRPO course notebooks.

One module per concept: ``profiles`` (run settings), ``hardware`` (GPU, profile pick, precision),
``persist`` (Google Drive, Hub, finding an adapter), ``data`` (GSM8K), ``grading`` and
``rewards`` (reward functions), ``grpo`` (the loss by hand), ``models`` (loading and
generation), ``cold_start`` (SFT before GRPO), ``training`` (TRL GRPOTrainer), ``pipeline``
(the main job: cold start -> GRPO -> evaluation), ``distributed`` (several processes under
``accelerate launch``), ``prompting`` (CoT strategies), ``evaluation``
(accuracy with intervals), ``comparison`` (before/after GRPO), ``plots``, ``colab`` and
``install`` (the notebooks' install cell).
Importing this package does not import torch, so the notebooks' install cell can use it.
"""

__version__ = "0.1.0"
