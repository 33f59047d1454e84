"""The critic-loss shape bug, measured: TD3 on Pendulum-v1 with the correct loss and the buggy one.

The bug: the critic's output Q(s, a) has shape (N, 1); if the target y is
squeezed to shape (N,), then ``F.mse_loss(q, y)`` broadcasts (N, 1) against
(N,) to an (N, N) matrix and averages (q_i - y_j)^2 over every pair i, j.
Each Q(s_i, a_i) is then pulled towards the mean of all N targets of the
batch instead of towards its own y_i. Nothing crashes; torch only warns.

The buggy agent is ``td3_lib.course.pitfalls.SqueezedTargetTD3``: TD3 whose
``critic_loss`` squeezes the target before calling TD3's own (lesson 08's
pitfall 7), passed to ``train(..., agent=SqueezedTargetTD3)``. Everything
else (training loop, seeds, evaluation) is ``td3_lib.train`` with
``preset("Pendulum-v1")`` unchanged.

Usage (the command that wrote td3_lib/course/results/critic_shape_bug.csv):

    python experiments/critic_shape_bug.py
    python -m td3_lib.course.results publish runs/results/critic_shape_bug.csv

Each run is one thread (``torch.set_num_threads(1)``), kept under ``--root``
(default runs/critic_shape_bug) once finished, so an interrupted experiment
started again skips it.
"""

from __future__ import annotations

import dataclasses
import warnings

import torch

from td3_lib import TD3, preset, train
from td3_lib.course.pitfalls import SqueezedTargetTD3

from common import finish, kept_rows, options

ENV_ID = "Pendulum-v1"
FILE = "critic_shape_bug.csv"
FIELDS = ("variant", "seed", "step", "eval_mean", "eval_std", "wall_s")
SEEDS = [0, 1, 2, 3, 4]


AGENTS = {"correct": TD3, "buggy": SqueezedTargetTD3}


def run_one(variant: str, seed: int, steps: int | None) -> list[dict]:
    """One training run of the variant's agent class (``AGENTS``)."""
    config = preset(ENV_ID) if steps is None else dataclasses.replace(preset(ENV_ID), total_steps=steps)
    result = train(ENV_ID, config, seed=seed, device="cpu", progress=False, agent=AGENTS[variant])
    return [{"variant": variant, "seed": seed, "step": row["step"],
             "eval_mean": round(row["eval_mean"], 3), "eval_std": round(row["eval_std"], 3), "wall_s": row["wall_s"]}
            for row in result.history]


def main(argv=None) -> None:
    args = options(__doc__, "runs/critic_shape_bug").parse_args(argv)
    torch.set_num_threads(1)
    # torch warns once that the sizes differ; the point of the experiment is that training goes on anyway.
    warnings.filterwarnings("ignore", message="Using a target size")
    rows = []
    for seed in args.seeds or SEEDS:
        for variant in AGENTS:
            path = args.root / f"{variant}_seed{seed}_steps{args.steps or 'preset'}.csv"
            rows += kept_rows(path, FIELDS, lambda: run_one(variant, seed, args.steps))
    finish(rows, FIELDS, args, file=FILE, lesson="08", env=ENV_ID, steps=args.steps or preset(ENV_ID).total_steps)


if __name__ == "__main__":
    main()
