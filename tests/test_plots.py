import csv

import pytest

from helpers.evaluation.plots import plot_training_curves


def _write(path, columns, rows=3):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["step", "reward", "reward_std", *columns])
        writer.writeheader()
        for step in range(1, rows + 1):
            writer.writerow({"step": step, "reward": 1.0, "reward_std": 0.5, **{c: 0.25 for c in columns}})
    return path


@pytest.mark.parametrize(
    "column, title", [("kl", "KL(policy || reference)"), ("frac_reward_zero_std", "Groups with equal rewards")]
)
def test_the_third_panel_shows_kl_or_without_it_the_flat_groups(tmp_path, column, title):
    fig = plot_training_curves(_write(tmp_path / "metrics.csv", [column]), show=False)
    panel = fig.axes[2]  # row 2, column 1
    assert panel.get_title().startswith(title)
    assert list(panel.lines[0].get_ydata()) == [0.25, 0.25, 0.25]


def test_heldout_runs_plots_problems_right_per_step_and_dashes_the_placebo():
    from helpers.evaluation.plots import plot_heldout_runs

    points = [{"step": 0, "heldout/accuracy": 0.25}, {"step": 4, "heldout/accuracy": 0.5}]
    fig = plot_heldout_runs({"seed 1": points, "placebo": points[:1]}, n=32, show=False)
    seed, placebo = fig.axes[0].lines
    assert list(seed.get_xdata()) == [0, 4] and list(seed.get_ydata()) == [8.0, 16.0]
    assert seed.get_linestyle() == "-" and placebo.get_linestyle() == "--"


@pytest.mark.parametrize("runs", [{}, {"seed 1": []}])
def test_heldout_runs_refuses_nothing_to_plot(runs):
    from helpers.evaluation.plots import plot_heldout_runs

    with pytest.raises(ValueError):
        plot_heldout_runs(runs, n=32, show=False)
