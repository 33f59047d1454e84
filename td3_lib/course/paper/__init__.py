"""The TD3 learning curves the paper's authors published, so the course can score the paper's own runs.

Fujimoto, van Hoof and Meger (ICML 2018) published their TD3 runs in their repository, sfujim/TD3,
under ``learning_curves/`` (MIT licence; see ``LICENSE`` here): 10 seeds (0-9) per task, each run
an evaluation every 5,000 steps from step 0 (the untrained actor) to 1,000,000, each evaluation
the mean return of 10 episodes without exploration noise. The runs used the paper's settings:
400-300 networks, Adam at 1e-3, batches of 100, 1,000 random steps first (10,000 on HalfCheetah
and Ant), on gym's v1 MuJoCo tasks.

Here each task is one CSV, ``TD3_<Task>-v1.csv``, with the columns ``seed,step,eval_mean``: all
201 evaluations per seed, step 0 included, the values written with ``repr`` so they read back
exactly. ``learning_curves`` returns the 10 runs as histories (rows ``{"seed", "step",
"eval_mean"}``), step 0 left out as the paper leaves it out: 200 evaluations per run, the input
``td3_lib.stats.table1_score`` and ``table2_score`` take.
"""

from __future__ import annotations

import csv
from importlib import resources

PAPER_TASKS = ("HalfCheetah", "Hopper", "Walker2d", "Ant")
"""The four tasks whose curves are shipped here (of the paper's seven MuJoCo tasks)."""


def paper_env_id(env_id: str) -> str:
    """The paper's id of a task, any version: "Hopper-v5", "Hopper-v4", "Hopper-v1" -> "Hopper-v1"."""
    name = str(env_id).rpartition("-v")[0] or str(env_id)
    if name not in PAPER_TASKS:
        raise ValueError(f"{env_id}: the paper's learning curves cover HalfCheetah, Hopper, Walker2d "
                         "and Ant (any version)")
    return f"{name}-v1"


def learning_curves(env_id: str) -> list[list[dict]]:
    """The paper's 10 TD3 runs on ``env_id`` (any version), seed 0 to 9, each a history of rows
    ``{"seed": int, "step": int, "eval_mean": float}`` sorted by step, step 0 (the untrained actor,
    which the paper does not score) left out: 200 evaluations, steps 5,000 to 1,000,000."""
    path = resources.files(__package__) / f"TD3_{paper_env_id(env_id)}.csv"
    with path.open(newline="") as f:
        rows = [{"seed": int(r["seed"]), "step": int(r["step"]), "eval_mean": float(r["eval_mean"])}
                for r in csv.DictReader(f)]
    runs: dict[int, list[dict]] = {}
    for row in rows:
        if row["step"] > 0:
            runs.setdefault(row["seed"], []).append(row)
    return [sorted(runs[seed], key=lambda row: row["step"]) for seed in sorted(runs)]
