"""The CPU study: research about the course, not the course.

Does GRPO on the CPU stand-in (SmolLM2-135M-Instruct, course-written problems) learn, and which recipe?
This package chooses, compares and reports: the recipes and how they were chosen (:mod:`recipes`), the five
seeds of the `varied` recipe (:mod:`seeds`), the sealed set opened once per reference run (:mod:`sealed`,
:mod:`sealed_eval`), control rewards (:mod:`control_rewards`), the ablation's arms (:mod:`arms`,
:mod:`ablation`), group logs (:mod:`groups`), pass@k (:mod:`pass_at_k`), notebook 07's from-scratch loop as a
module (:mod:`loop`) and the runs of its variants (:mod:`variants`), the READMEs' generated blocks
(:mod:`blocks`) and the copies of finished runs kept in ``results/`` (:mod:`reference`). ``experiments/``
holds the scripts that made those runs; ``python -m cpu_study`` is its command line (:mod:`cli`).

It imports the course (:mod:`helpers`); the course never imports it. Notebooks 04, 07 and 08 read it.
"""
