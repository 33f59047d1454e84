"""Lesson 05: the critic's error when the actor steps, on Pendulum-v1: five schedules (SCHEDULES in
td3_lib/course/delay.py, with the warm start and the measures), cold and warm, seeds 0-4, 12,000 steps.
Named before the runs: the primary measure is q_error_before (|Q1 - Q^pi| just before the actor's step)
averaged per run over the warm window (WARM_WINDOW: steps 8,000-12,000); warm d=2 against d=1.

    python experiments/delay.py --jobs 2   # runs/results/delay_mechanism_pendulum.csv
"""
from td3_lib.course.delay import COLUMNS, SCHEDULES, SEEDS, STEPS, variant_name
from td3_lib.course.experiments import Experiment, Sweep, Take, main

TAKES = tuple(Take(Sweep(f"delay-rate-{start or 'cold '}{i}".replace(" ", "-"), ("Pendulum-v1",), (variant_name(t, start),), SEEDS, STEPS,
                         {"policy_freq": p, "tau": tau, "eval_freq": 1_000}), variant_name(t, start), start + label)
              for start in ("", "warm ") for i, (label, p, t, tau) in enumerate(SCHEDULES) if start + label != "warm d=1")
FIELDS = ("variant", "policy_freq", "tau", "seed", "step", *COLUMNS, "eval_mean", "wall_s")
EXPERIMENTS = {"delay-mechanism": Experiment("delay_mechanism_pendulum.csv", "05", "Pendulum-v1", FIELDS, TAKES, {"eval_mean": 3})}
if __name__ == "__main__":
    main(__doc__, EXPERIMENTS)
