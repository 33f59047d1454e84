"""Library plots are drawn on bare Figures: a notebook's matplotlib backend and open figures survive them."""

from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import pytest

from td3_lib.course.plots import plot_curves
from td3_lib.plots import plot_history
from td3_lib.sweep import RunRecord

HISTORY = [{"step": s, "eval_mean": -s / 10, "eval_std": 1.0} for s in (100, 200, 300)]


@pytest.fixture
def pdf_backend():
    """A backend no library default would pick, restored after the test."""
    before = matplotlib.get_backend()
    plt.switch_backend("pdf")
    yield
    plt.close("all")
    plt.switch_backend(before)


def test_plot_history_keeps_the_backend_and_figures(pdf_backend, tmp_path):
    mine = plt.figure()
    plot_history(HISTORY, tmp_path / "curve.png", "a run")
    assert matplotlib.get_backend() == "pdf"
    assert plt.get_fignums() == [mine.number]
    assert (tmp_path / "curve.png").stat().st_size > 1000


def test_sweep_curves_keep_the_backend_and_figures(pdf_backend, tmp_path):
    mine = plt.figure()
    runs = [RunRecord("Pendulum-v1", v, s, Path(tmp_path), "finished", HISTORY) for v in ("TD3", "DDPG")
            for s in (0, 1)]
    plot_curves(runs, ["TD3", "DDPG"], "Pendulum-v1", tmp_path / "curves.png")
    assert matplotlib.get_backend() == "pdf"
    assert plt.get_fignums() == [mine.number]
    assert (tmp_path / "curves.png").stat().st_size > 1000
