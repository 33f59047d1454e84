"""Library plots are drawn on bare Figures: a notebook's matplotlib backend and open figures survive them."""

import matplotlib
import matplotlib.pyplot as plt
import pytest

from td3_lib.plots import plot_curves, plot_history, seed_band, steps_axis

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
    plot_curves({"TD3": [HISTORY, HISTORY], "DDPG": [HISTORY], "TD3-DP": []}, "Pendulum-v1", tmp_path / "curves.png")
    assert matplotlib.get_backend() == "pdf"
    assert plt.get_fignums() == [mine.number]
    assert (tmp_path / "curves.png").stat().st_size > 1000


def test_a_seed_band_is_the_mean_over_seeds_and_one_std_around_it():
    from matplotlib.figure import Figure

    ax = Figure().subplots()
    low = [{"step": s, "eval_mean": v} for s, v in ((100, 0.0), (200, 2.0), (300, 4.0))]
    high = [{"step": s, "eval_mean": v} for s, v in ((100, 2.0), (200, 6.0))]  # one evaluation short
    seed_band(ax, [low, high], label="TD3")
    line, = ax.lines
    assert line.get_label() == "TD3 (n=2)"
    assert list(line.get_xdata()) == [100, 200] and list(line.get_ydata()) == [1.0, 4.0]
    band = ax.collections[0].get_paths()[0].vertices
    # std over seeds (ddof 1): sqrt(2) at step 100, sqrt(8) at step 200
    assert band[:, 1].min() == pytest.approx(1.0 - 2 ** 0.5) and band[:, 1].max() == pytest.approx(4.0 + 8 ** 0.5)


def test_a_steps_axis_reads_its_ticks_as_thousands_and_millions():
    from matplotlib.figure import Figure

    ax = Figure().subplots()
    steps_axis(ax)
    label = ax.xaxis.get_major_formatter()
    ticks = [0, 500, 2_500, 12_500, 250_000, 1_000_000, 1_500_000, -200_000, 0.2 * 1.5 * 1_000_000]
    assert [label(x) for x in ticks] == ["0", "500", "2.5k", "12.5k", "250k", "1M", "1.5M", "−200k", "300k"]


def test_a_steps_axis_labels_its_ticks_and_changes_nothing_else():
    from matplotlib.figure import Figure

    before = dict(matplotlib.rcParams)
    left, right = Figure().subplots(1, 2)
    for ax in (left, right):
        ax.plot([0, 1_000_000], [0, 1])
    steps_axis(left)
    left.figure.canvas.draw()
    labels = [t.get_text() for t in left.get_xticklabels()]
    assert labels == [left.xaxis.get_major_formatter()(x) for x in left.get_xticks()] and "1M" in labels
    assert "1.00" in [t.get_text() for t in right.get_xticklabels()]  # matplotlib's own (times 1e6), left alone
    assert dict(matplotlib.rcParams) == before
