"""The committed runs of the from-scratch loop's variants (notebook 07): :func:`read_variant_runs`,
:func:`fresh_steps`, :func:`variant_table`."""

from __future__ import annotations

import math
from pathlib import Path

from helpers.evaluation.reports import METRICS_FILE
from helpers.loop import VARIANTS


def read_variant_runs(results_dir) -> tuple[dict, list]:
    """``({variant: metrics columns}, [missing variants])`` from ``results_dir/<variant>/metrics.csv``, variants in
    :data:`VARIANTS` order (:func:`helpers.evaluation.plots.read_metrics`)."""
    from helpers.evaluation.plots import read_metrics

    results_dir = Path(results_dir)
    found = {
        s: read_metrics(results_dir / s / METRICS_FILE) for s in VARIANTS if (results_dir / s / METRICS_FILE).exists()
    }
    return found, [s for s in VARIANTS if s not in found]


def fresh_steps(m: dict) -> list:
    """The steps of a metrics table (:func:`helpers.evaluation.plots.read_metrics` columns) that sampled a new batch
    (the others reuse it: their KL is measured on the old policy's samples, where k3 is biased)."""
    return [s for s, g in zip(m["step"], m["seconds/generation"]) if s > 0 and g > 0]


def variant_table(runs: dict):
    """A ``DataFrame``, one row per variant run: mean reward over the first and the last 5 steps, the KL of
    the last fresh batch (:func:`fresh_steps`), mean length and grad norm over the last 5 steps, the share
    of clipped tokens, held-out accuracy before (step 0) and after (last evaluation), and the mean step
    time (s, without the held-out evaluations)."""
    import pandas as pd

    def mean(values):
        values = [v for v in values if not math.isnan(v)]
        return sum(values) / len(values) if values else float("nan")

    rows = {}
    for variant, m in runs.items():
        trained = [i for i, s in enumerate(m["step"]) if s > 0]
        first, last = trained[:5], trained[-5:]
        held = [v for v in m.get("heldout/accuracy", []) if not math.isnan(v)]
        rows[variant] = {
            "reward, steps 1-5": mean([m["reward"][i] for i in first]),
            "reward, last 5": mean([m["reward"][i] for i in last]),
            "KL, last fresh batch": m["kl"][m["step"].index(fresh_steps(m)[-1])],
            "length, last 5": mean([m["completions/mean_length"][i] for i in last]),
            "grad norm, last 5": mean([m["grad_norm"][i] for i in last]),
            "clipped tokens, mean": mean([m["clip_ratio/region_mean"][i] for i in trained]),
            "held-out, step 0": held[0] if held else float("nan"),
            "held-out, last": held[-1] if held else float("nan"),
            "seconds per step": mean([m["step_time_s"][i] for i in trained]),
        }
    return pd.DataFrame.from_dict(rows, orient="index")
