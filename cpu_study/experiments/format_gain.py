"""Write results/cpu-varied-format/format_gain.json: the CPU recipe's gain in valid format and in right
answers over its committed seeds (:func:`cpu_study.seeds.format_gain`), which notebook 05 and
``make train`` print. How the measure was chosen, with its development check: cpu_study/experiments/format_dev.py
and docs/LOG.md.

    python cpu_study/experiments/format_gain.py
"""

import argparse
import json

from cpu_study.blocks import SEED_RUNS
from cpu_study.seeds import format_gain
from helpers.evaluation.reports import FORMAT_GAIN_FILE, RESULTS_DIR

argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()  # --help; no options
out = RESULTS_DIR / "cpu-varied-format" / FORMAT_GAIN_FILE
out.parent.mkdir(exist_ok=True)
out.write_text(json.dumps(format_gain([RESULTS_DIR / run for run in SEED_RUNS]), indent=1) + "\n")
print(out.read_text())
