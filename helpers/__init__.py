"""Helpers behind the GRPO course notebooks.

Read these first; they import none of the machinery: ``grpo`` (the GRPO objective by hand), ``rewards`` (the
reward functions TRL calls), ``grading`` (extract, normalize and compare a final answer, with ``normalize``,
``numbers``, ``symbolic``), ``example`` (the running example), ``course_format`` (the format the rewards pay
for), ``original_rewards`` (the rewards the course started from), ``loop`` (the data classes of notebook 07's
from-scratch loop, whose functions are the notebook's cells).

The machinery, one sub-package per role: ``data`` (GSM8K, course-written problems, problem sets, prompts),
``training`` (profiles, models and their vLLM engine, TRL trainer, the main job), ``evaluation`` (scoring,
statistics, reports, figures), ``colab`` (install cell, Drive, Hub); ``diagrams`` draws notebook 02's figures,
``cli`` is ``python -m helpers``. Importing this package does not import torch (the install cell uses it). The
CPU study is the sibling package ``cpu_study``: it imports this one, never the reverse.
"""

__version__ = "0.1.0"
