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


def value_of(row: dict, column) -> float:
    """``row[column]``, or ``column(row)`` when it is a function (e.g. the bias, estimate - truth)."""
    return float(column(row)) if callable(column) else float(row[column])


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


def plot_curves(runs, variants, env_id: str, path: Path) -> None:
    """A sweep's figure for one environment: per variant, the mean evaluation return over the
    finished ``runs`` (each with ``variant`` and ``history``) and a band of +-1 std over seeds, at
    the evaluation steps every seed has. Drawn on a bare
    ``Figure``, never through pyplot, so a notebook's backend and figures are left as they were."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.5))
    ax = fig.subplots()
    for variant in variants:
        histories = [r.history for r in runs if r.variant == variant]
        if histories:
            seed_band(ax, histories, "eval_mean", label=variant)
    ax.set(xlabel="environment steps", ylabel="evaluation return (episode return)",
           title=f"{env_id}: mean over seeds, band ±1 std over seeds")
    if ax.lines:
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
