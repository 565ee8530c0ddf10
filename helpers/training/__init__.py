"""Training machinery: run settings (``profiles``, ``hardware``), loading models, their vLLM engine
and generating (``models``, ``engine``, ``generation``), the cold start (``cold_start``), TRL's GRPO
trainer and its callbacks (``trainer``, ``callbacks``, ``fast_rollouts``), the main job
(``pipeline``), several processes (``distributed``), and what notebook 07's from-scratch loop runs on
and its check against TRL (``loop_runs``, ``trl_check``)."""
