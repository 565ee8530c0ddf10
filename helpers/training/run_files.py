"""The names of the files a GRPO run writes into its folder, in one place (no imports: the study and the
command line read them without loading torch)."""

METRICS_FILE = "metrics.csv"  # one row per step (helpers.training.callbacks.MetricsCSV; the from-scratch loop's alike)
GROUPS_FILE = "groups.jsonl"  # one line per group GRPO trained on (helpers.training.callbacks.GroupLog)
EFFECTIVE_CONFIG_FILE = "effective_config.json"  # the trainer's settings after TRL's and Unsloth's rewrites
