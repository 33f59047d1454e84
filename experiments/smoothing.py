"""Lesson 04's experiments: what target policy smoothing does to the critic and to the policy.

    python experiments/smoothing.py pendulum      # runs/results/smoothing_pendulum.csv
    python experiments/smoothing.py narrow-peak   # runs/results/smoothing_narrow_peak.csv

``pendulum``: TD3 and TD3 - TPS (``target_policy_smoothing=False``, all else equal) on
Pendulum-v1, 5 seeds: the TD3 and TD3-TPS runs of ``lesson_results.py pendulum`` (the sweep
``PENDULUM``, read where they are finished, trained there where not). At every evaluation (every
500 steps) the history records ``q_peak`` (``td3_lib.course.analysis.peak_height``: Q1(s, mu(s))
minus the mean of Q1(s, a) over actions a near mu(s), drawn like the smoothing noise, on up to 64
states of the evaluation episodes), the critic's roughness, its value estimate against the true
discounted return, and the return.

``narrow-peak``: the same two variants, 5 seeds, 15,000 steps, on ``NarrowPeak-v0``
(``td3_lib.course.tasks.NarrowPeak``, a two-step task whose reward has a narrow peak along the
action) with 64-64 networks and 1,000 random steps first (``NARROW_PEAK_SETTINGS``). At every
evaluation (every 500 steps) the row records the noise-free return, the position the actor
chooses at the first step, and the mean return of 100 episodes whose every action is perturbed
by Gaussian noise of std 0.1 (the size of the exploration noise): the ``narrow peak`` probe.

Runs are kept under ``--root`` (default runs/lesson_results); the options are those of every
experiment (``td3_lib.course.experiments``).
"""

from td3_lib.course.experiments import PENDULUM, Experiment, Sweep, Take, main
from td3_lib.course.tasks import NARROW_PEAK_SETTINGS

SEEDS = (0, 1, 2, 3, 4)
VARIANTS = ("TD3", "TD3-TPS")
NARROW_PEAK = Sweep("narrow-peak-0", ("NarrowPeak-v0",), VARIANTS, SEEDS, steps=15_000,
                    overrides=NARROW_PEAK_SETTINGS, probes=("narrow peak",))

EXPERIMENTS = {
    "pendulum": Experiment("smoothing_pendulum.csv", "04", "Pendulum-v1",
                           ("variant", "seed", "step", "eval_mean", "eval_std", "q_estimate", "q_true",
                            "q_roughness", "q_peak", "wall_s"),
                           tuple(Take(PENDULUM, v) for v in VARIANTS)),
    "narrow-peak": Experiment("smoothing_narrow_peak.csv", "04", "NarrowPeak-v0 (td3_lib.course.tasks)",
                              ("variant", "seed", "step", "eval_mean", "position", "perturbed_return", "wall_s"),
                              tuple(Take(NARROW_PEAK, v) for v in VARIANTS)),
}

if __name__ == "__main__":
    main(__doc__, EXPERIMENTS)
