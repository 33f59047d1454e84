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

The paper's two tables on these four tasks are here too, as it prints them (``TABLE1``, ``TABLE2``),
so that a result set beside them is set beside one copy; tests/test_paper.py computes TD3's entries
again from the curves.
"""

from __future__ import annotations

import csv
from importlib import resources

PAPER_TASKS = ("HalfCheetah", "Hopper", "Walker2d", "Ant")
"""The four tasks whose curves are shipped here (of the paper's seven MuJoCo tasks)."""

PAPER_STEPS = 1_000_000
"""The paper's budget per run on these tasks, at which its Tables 1 and 2 score."""

TABLE1 = {
    "HalfCheetah": {"TD3": (9636.95, 859.07), "DDPG (Lillicrap et al.)": 3305.60, "DDPG": 8577.29},
    "Hopper": {"TD3": (3564.07, 114.74), "DDPG (Lillicrap et al.)": 2020.46, "DDPG": 1860.02},
    "Walker2d": {"TD3": (4682.82, 539.64), "DDPG (Lillicrap et al.)": 1843.85, "DDPG": 3098.11},
    "Ant": {"TD3": (4372.44, 1000.33), "DDPG (Lillicrap et al.)": 1005.30, "DDPG": 888.77},
}
"""The paper's Table 1, "max average return over 10 trials of 1 million time steps": the highest point
of the mean-over-seeds curve. TD3 as (mean, std over its 10 seeds at that step, ddof 0); "DDPG" is the
paper's re-tuned DDPG ("Our DDPG", what td3_lib's ``DDPG`` variant is), "DDPG (Lillicrap et al.)" the
original."""

TABLE2 = {
    "HalfCheetah": {"TD3": 9532.99, "TD3-DP": 9590.65, "TD3-TPS": 8987.69, "TD3-CDQ": 9792.80,
                    "DDPG (Lillicrap et al.)": 3162.50, "DDPG": 8401.02, "DDPG+DP": 7588.64,
                    "DDPG+TPS": 9023.40, "DDPG+CDQ": 6470.20},
    "Hopper": {"TD3": 3304.75, "TD3-DP": 2407.42, "TD3-TPS": 2392.59, "TD3-CDQ": 1837.32,
               "DDPG (Lillicrap et al.)": 1731.94, "DDPG": 1061.77, "DDPG+DP": 1465.11,
               "DDPG+TPS": 907.56, "DDPG+CDQ": 1134.14},
    "Walker2d": {"TD3": 4565.24, "TD3-DP": 4695.50, "TD3-TPS": 4033.67, "TD3-CDQ": 2579.39,
                 "DDPG (Lillicrap et al.)": 1520.90, "DDPG": 2362.13, "DDPG+DP": 2459.53,
                 "DDPG+TPS": 2961.36, "DDPG+CDQ": 3979.21},
    "Ant": {"TD3": 4185.06, "TD3-DP": 3754.26, "TD3-TPS": 4155.24, "TD3-CDQ": 849.75,
            "DDPG (Lillicrap et al.)": 816.35, "DDPG": 564.07, "DDPG+DP": 896.13, "DDPG+TPS": 872.17,
            "DDPG+CDQ": 3818.71},
}
"""The paper's Table 2, its ablation: each run's mean over its last 10 evaluations (of 1 million
steps), the mean over 10 seeds, named as td3_lib names its variants: TD3 without one trick ("TD3-DP",
the paper's "TD3 - DP"), and the re-tuned DDPG ("DDPG", the paper's AHE) with one trick added
("DDPG+DP", the paper's "AHE + DP"); "DDPG (Lillicrap et al.)" is the original DDPG."""


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
