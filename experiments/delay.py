"""Lesson 05: the critic's error when the actor steps, the actor's delay (policy_freq) and the target networks'
delay (target_freq) as two switches: Pendulum-v1's preset, 10,000 steps, an evaluation every 1,000, seeds 0-4;
d=1 (1, 1), d=2 (2, 2: TD3's runs), actor/2 (2, 1), targets/2 (1, 2). Measures: td3_lib/course/delay.py.

    python experiments/delay.py --jobs 2   # runs/results/delay_mechanism_pendulum.csv
"""
from td3_lib.course.delay import COLUMNS
from td3_lib.course.experiments import Experiment, Sweep, Take, main

DELAYS = (("d=1", 1, 1), ("d=2", 2, 2), ("actor/2", 2, 1), ("targets/2", 1, 2))  # (label, policy_freq, target_freq)
VARIANT = "delay probe, targets every {}"
TAKES = tuple(Take(Sweep(f"delay-mechanism-{i}", ("Pendulum-v1",), (VARIANT.format(t),), (0, 1, 2, 3, 4), 10_000,
                         {"policy_freq": p, "eval_freq": 1_000}), VARIANT.format(t), label) for i, (label, p, t) in enumerate(DELAYS))
FIELDS = ("variant", "policy_freq", "seed", "step", *COLUMNS, "eval_mean", "wall_s")
EXPERIMENTS = {"delay-mechanism": Experiment("delay_mechanism_pendulum.csv", "05", "Pendulum-v1", FIELDS, TAKES, {"eval_mean": 3})}
if __name__ == "__main__":
    main(__doc__, EXPERIMENTS)
