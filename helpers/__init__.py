"""Helpers behind the GRPO course notebooks.

One module per concept: ``profiles`` (run settings), ``hardware`` (GPU, profile pick, precision),
``persist`` (Google Drive, Hub, finding an adapter), ``data`` (GSM8K), ``problems`` (course-written
word problems with a difficulty knob), ``curriculum`` (which problems each stretch of GRPO trains on),
``grading`` and ``rewards`` (reward functions), ``grpo`` (the loss by hand), ``models`` (loading and
generation), ``rollouts`` (cheaper rollouts and log-probs from the same policy), ``cold_start`` (SFT
before GRPO), ``training`` (TRL GRPOTrainer), ``heldout`` (held-out accuracy during training),
``pipeline`` (the main job: cold start -> GRPO -> evaluation), ``distributed`` (several processes under
``accelerate launch``), ``prompting`` (CoT strategies), ``evaluation`` (accuracy with intervals),
``statistics`` (McNemar's paired test), ``pass_at_k`` (pass@k with intervals), ``comparison``
(before/after GRPO), ``plots``, ``colab`` and ``install`` (the notebooks' install cell).
Importing this package does not import torch, so the notebooks' install cell can use it.
"""

__version__ = "0.1.0"
