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
