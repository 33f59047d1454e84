"""The course's plots over seeds: a band of +-1 std over seeds, a sweep's curves, a run against
the shipped agent's. Each draws on the ``Axes`` or bare ``Figure`` it is given or makes, never
switching a notebook's matplotlib backend."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..pretrained import reference_history


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


def plot_against_reference(history: list[dict], env_id: str, ax=None, label: str = "your run"):
    """Plot a run's evaluation curve next to the shipped agent's training curve."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    ref = reference_history(env_id)
    ax.plot([h["step"] for h in ref], [h["eval_mean"] for h in ref], label="shipped agent's training",
            color="grey")
    ax.plot([h["step"] for h in history], [h["eval_mean"] for h in history], label=label, marker="o")
    ax.set(xlabel="environment steps", ylabel="evaluation return (mean over episodes)",
           title=f"{env_id}: your run against the shipped agent")
    ax.legend()
    return ax
