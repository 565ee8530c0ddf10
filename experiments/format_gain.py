"""Write results/cpu-varied-format/format_gain.json: the CPU recipe's gain in valid format and in right
answers over its committed seeds (:func:`helpers.evaluation.seeds.format_gain`), which notebook 05 and
``make train`` print. How the measure was chosen, with its development check: experiments/format_dev.py
and docs/LOG.md.

    python experiments/format_gain.py
"""

import json

from helpers.evaluation.blocks import SEED_RUNS
from helpers.evaluation.reports import RESULTS_DIR
from helpers.evaluation.seeds import FORMAT_GAIN_FILE, format_gain

out = RESULTS_DIR / "cpu-varied-format" / FORMAT_GAIN_FILE
out.parent.mkdir(exist_ok=True)
out.write_text(json.dumps(format_gain([RESULTS_DIR / run for run in SEED_RUNS]), indent=1) + "\n")
print(out.read_text())
