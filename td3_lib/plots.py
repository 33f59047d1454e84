"""Plots of a run's evaluation history."""

from __future__ import annotations

from pathlib import Path

import numpy as np



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
