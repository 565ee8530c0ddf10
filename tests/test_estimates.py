"""T4 times are estimates with a stated source: the arithmetic, and that docs/t4.md and
notebooks 05/06 quote what helpers.colab.persist computes, labelled as estimates."""

import json
from pathlib import Path

import pytest

from helpers.colab.persist import SOURCE, generation_upper_bound_s, hms, seconds_per_step, t4_estimates
from helpers.training.profiles import PROFILES

REPO = Path(__file__).resolve().parent.parent


def test_unsloths_run_gives_24_1_seconds_a_step():
    assert round(seconds_per_step(), 1) == 24.1 and "1:40:29" in SOURCE
    assert hms(PROFILES["t4"].max_steps * seconds_per_step()) == "1 h 40 min"  # the t4 profile: 250 steps
    assert generation_upper_bound_s(8) == seconds_per_step() and hms(generation_upper_bound_s(2 * 1319)) == "2 h 13 min"
    assert hms(480) == "8 min" and hms(3600) == "1 h 00 min"
    with pytest.raises(ValueError, match="completions"):
        generation_upper_bound_s(-1)


def test_the_t4_cap_of_512_makes_the_measured_time_a_lower_bound():
    """Unsloth's 24.1 s a step was measured with completions cut at 200 tokens; the t4 profile allows
    512, so the measured time is the lower bound and 512 / 200 of it the upper bound."""
    from helpers.colab.persist import UNSLOTH_T4_MAX_COMPLETION

    cap = PROFILES["t4"].max_completion_length
    assert (UNSLOTH_T4_MAX_COMPLETION, cap) == (200, 512)
    assert seconds_per_step(cap) == pytest.approx(seconds_per_step() * 512 / 200)
    assert seconds_per_step(100) == seconds_per_step()  # a shorter cap was not measured: no less
    training = t4_estimates()["notebook 05, GRPO training"]
    assert training.startswith("between 1 h 40 min and 4 h 17 min for 250 steps") and "lower bound" in training
    assert t4_estimates()["notebook 06, section 5"].startswith("at most 5 h 39 min for 2,638 completions of up to 512")
    with pytest.raises(ValueError, match="max_completion_length"):
        seconds_per_step(0)


def test_the_t4_times_quoted_are_the_labelled_estimates():
    text = " ".join((REPO / "docs" / "t4.md").read_text().split())
    estimates = t4_estimates(PROFILES["t4"].max_steps)
    for stage in ("install and vLLM start-up", "notebook 05, GRPO training", "notebook 06, section 5"):
        quoted = estimates[stage].split(" (")[0].removeprefix("about ").removeprefix("at most ").split(" for ")[0]
        quoted = quoted.removeprefix("between ")
        assert quoted in text, f"docs/t4.md does not quote {stage}: {quoted}"
    assert "**Estimated**" in text and "24.1 s" in text and "not yet run" in text


@pytest.mark.parametrize("where, stage", [("05", "notebook 05, GRPO training"), ("06", "notebook 06, section 5")])
def test_the_notebooks_print_the_t4_estimate_and_say_it_is_not_measured(where, stage):
    [path] = (REPO / "notebooks").glob(f"{where}_*.ipynb")
    code = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
    assert "t4_estimates(" in code and f'["{stage}"]' in code and "(not measured)" in code
