"""Helpers behind the GRPO course notebooks.

Read these five first; they import none of the rest:

* ``grpo`` - the GRPO objective by hand: log-probs, advantages, KL estimators, the clipped loss;
* ``loop`` - GRPO from scratch: sample, score, advantages, old and reference log-probs, the step, the loop;
* ``rewards`` - the reward functions TRL calls;
* ``grading`` - extract, normalize, compare a final answer (with ``normalize``, ``numbers``, ``symbolic``);
* ``example`` - the running example carried through the notebooks.

Beside them: ``course_format`` (the prompt and answer format the rewards pay for) and
``original_rewards`` (the reward functions the course started from, for notebook 03's comparison).

The rest is machinery, one sub-package per role: ``data`` (GSM8K, course-written problems, problem
sets, prompts), ``training`` (profiles, models and their vLLM engine, TRL trainer, the main job),
``evaluation`` (scoring, statistics, reports, figures), ``colab`` (install cell, Drive, Hub).
``diagrams`` draws notebook 02's figures; ``cli`` is ``python -m helpers``. Importing this package
does not import torch, so the notebooks' install cell can use it. The CPU study (recipes, seeds, the
sealed set, controls, the ablation) is the sibling package ``cpu_study``: it imports this one, never
the reverse.
"""

__version__ = "0.1.0"
