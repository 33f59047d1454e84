"""The course's plots: a learner's run against the shipped agent's training curve.

The seed bands the lessons draw (``seed_band``, ``over_seeds``) and the step axis (``steps_axis``)
are the engine's (``td3_lib.plots``, ``td3_lib.stats``), imported here so a lesson finds every plot in
one place."""

from __future__ import annotations

from ..plots import seed_band, steps_axis
from ..pretrained import reference_history
from ..stats import over_seeds

__all__ = ["plot_against_reference", "seed_band", "steps_axis", "over_seeds"]


def plot_against_reference(history: list[dict], env_id: str, ax=None, label: str = "your run"):
    """Plot a run's evaluation curve next to the shipped agent's training curve (on ``ax``, or on
    a new pyplot figure that the notebook shows)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    ref = reference_history(env_id)
    ax.plot([h["step"] for h in ref], [h["eval_mean"] for h in ref], label="shipped agent's training",
            color="grey")
    ax.plot([h["step"] for h in history], [h["eval_mean"] for h in history], label=label, marker="o")
    ax.set(xlabel="environment steps", ylabel="evaluation return (mean over episodes)",
           title=f"{env_id}: your run against the shipped agent")
    steps_axis(ax)
    ax.legend()
    return ax
