"""Plots of a run's evaluation history."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .results import value_of


def plot_history(history: list[dict], path: Path, title: str) -> None:
    """Save the evaluation curve (mean, and +-1 std over the evaluation episodes) as an image.

    Drawn on a bare ``Figure``, never through pyplot: a notebook's backend and open figures
    are left as they were."""
    from matplotlib.figure import Figure

    steps = np.array([h["step"] for h in history])
    mean = np.array([h["eval_mean"] for h in history])
    std = np.array([h["eval_std"] for h in history])
    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    ax.plot(steps, mean, label="evaluation mean")
    ax.fill_between(steps, mean - std, mean + std, alpha=0.25, label="+-1 std over episodes")
    ax.set(xlabel="environment steps", ylabel="episode return", title=title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def over_seeds(histories: list[list[dict]], column="eval_mean") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per evaluation step that every history has: the mean and the std (ddof 1) over seeds."""
    steps = sorted(set.intersection(*[{h["step"] for h in history} for history in histories]))
    values = np.array([[value_of(h, column) for h in history if h["step"] in steps] for history in histories])
    std = values.std(axis=0, ddof=1) if len(histories) > 1 else np.zeros(len(steps))
    return np.array(steps), values.mean(axis=0), std


def seed_band(ax, histories: list[list[dict]], column="eval_mean", label: str = "", **style) -> None:
    """Draw the mean over seeds as a line and +-1 std over seeds as a band, on ``ax``."""
    steps, mean, std = over_seeds(histories, column)
    line, = ax.plot(steps, mean, label=f"{label} (n={len(histories)})", **style)
    ax.fill_between(steps, mean - std, mean + std, alpha=0.2, color=line.get_color())
