"""The critic-loss shape bug, measured: TD3 on Pendulum-v1 with the correct loss and the buggy one.

The bug: the critic's output Q(s, a) has shape (N, 1); if the target y is
squeezed to shape (N,), then ``F.mse_loss(q, y)`` broadcasts (N, 1) against
(N,) to an (N, N) matrix and averages (q_i - y_j)^2 over every pair i, j.
Each Q(s_i, a_i) is then pulled towards the mean of all N targets of the
batch instead of towards its own y_i. Nothing crashes; torch only warns.

The buggy agent is ``td3_lib.course.pitfalls.SqueezedTargetTD3``: TD3 whose
``critic_loss`` squeezes the target before calling TD3's own (lesson 08's
pitfall 7), the registered variant ``loss (N, 1) against (N,)``. Everything
else (training loop, seeds, evaluation) is ``td3_lib.train`` with
``preset("Pendulum-v1")`` unchanged; the correct runs are the variant TD3.

Usage (the command that wrote td3_lib/course/results/critic_shape_bug.csv):

    python experiments/critic_shape_bug.py
    python -m td3_lib.course.results publish runs/results/critic_shape_bug.csv

Runs are kept under ``--root`` (default runs/lesson_results); the options are those of every
experiment (``td3_lib.course.experiments``).
"""

from td3_lib.course.experiments import Experiment, Sweep, Take, main

BUGGY = "loss (N, 1) against (N,)"  # lesson 08's pitfall 7, a registered variant
SHAPE_BUG = Sweep("critic-shape-bug-0", ("Pendulum-v1",), ("TD3", BUGGY), (0, 1, 2, 3, 4))

EXPERIMENTS = {
    "critic-shape-bug": Experiment("critic_shape_bug.csv", "08", "Pendulum-v1",
                                   ("variant", "seed", "step", "eval_mean", "eval_std", "wall_s"),
                                   (Take(SHAPE_BUG, "TD3", "correct"), Take(SHAPE_BUG, BUGGY, "buggy")),
                                   digits={"eval_mean": 3, "eval_std": 3}, seed_major=True),
}

if __name__ == "__main__":
    main(__doc__, EXPERIMENTS)
