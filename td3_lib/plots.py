"""The engine's plots: a run's evaluation curve, and learning curves over seeds (the mean over
seeds as a line, +-1 std over seeds as a band).

Each draws on the ``Axes`` it is given or on a bare ``matplotlib.figure.Figure``, never through
pyplot: a notebook's backend and open figures are left as they were."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .stats import over_seeds


def steps_axis(ax) -> None:
    """Label ``ax``'s x axis in environment steps as 0, 50k, 250k, 1M (matplotlib's engineering
    notation), where matplotlib would write 0.2 ... 1.0 and a small "1e6" at the axis's end.
    Only this Axes changes."""
    from matplotlib.ticker import EngFormatter

    ax.xaxis.set_major_formatter(EngFormatter(sep=""))


def plot_history(history: list[dict], path: Path, title: str) -> None:
    """Save the evaluation curve (mean, and +-1 std over the evaluation episodes) as an image."""
    from matplotlib.figure import Figure

    steps = np.array([h["step"] for h in history])
    mean = np.array([h["eval_mean"] for h in history])
    std = np.array([h["eval_std"] for h in history])
    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    ax.plot(steps, mean, label="evaluation mean")
    ax.fill_between(steps, mean - std, mean + std, alpha=0.25, label="+-1 std over episodes")
    ax.set(xlabel="environment steps", ylabel="episode return", title=title)
    steps_axis(ax)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def seed_band(ax, histories: list[list[dict]], column="eval_mean", label: str = "", **style) -> None:
    """Draw the mean over seeds as a line and +-1 std over seeds as a band, on ``ax``, at the
    evaluation steps every history has (``stats.over_seeds``)."""
    steps, mean, std = over_seeds(histories, column)
    line, = ax.plot(steps, mean, label=f"{label} (n={len(histories)})", **style)
    ax.fill_between(steps, mean - std, mean + std, alpha=0.2, color=line.get_color())


def plot_curves(curves: dict[str, list[list[dict]]], title: str, path: Path) -> None:
    """Save learning curves over seeds as an image: per label, the mean evaluation return over its
    histories (one per seed) and a band of +-1 std over seeds. Labels without histories are left out."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.5))
    ax = fig.subplots()
    for label, histories in curves.items():
        if histories:
            seed_band(ax, histories, "eval_mean", label=label)
    ax.set(xlabel="environment steps", ylabel="evaluation return (episode return)",
           title=f"{title}: mean over seeds, band ±1 std over seeds")
    steps_axis(ax)
    if ax.lines:
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
