"""Lesson 04's experiments: what target policy smoothing does to the critic and to the policy.

    python experiments/smoothing.py pendulum      # runs/results/smoothing_pendulum.csv
    python experiments/smoothing.py narrow-peak   # runs/results/smoothing_narrow_peak.csv
    python experiments/smoothing.py lottery-band  # runs/results/smoothing_lottery_band.csv

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

``lottery-band``: the same two variants, 10 seeds, 4,000 steps, on ``LotteryBand-v0``
(``td3_lib.course.tasks.LotteryBand``: a narrow band of actions pays zero-mean reward noise of std
8, so every narrow peak the critic grows there is an error) with NarrowPeak's networks and an
evaluation every 250 steps (``LOTTERY_BAND_SETTINGS``). Each evaluation records the ``lottery band``
probe: the target's error at the second step over 41 states that share one true value (its mean,
``target_bias``, and its spread, ``target_error_spread``), the spread of one-draw targets
(``target_spread``), the position chosen and the policy's exact expected return. Seed s of both
variants shares its first 1,000 (random) steps, so the comparison is paired.

Runs are kept under ``--root`` (default runs/lesson_results); the options are those of every
experiment (``td3_lib.course.experiments``).
"""

from td3_lib.course.experiments import PENDULUM, Experiment, Sweep, Take, main
from td3_lib.course.tasks import LOTTERY_BAND_SETTINGS, NARROW_PEAK_SETTINGS

SEEDS = (0, 1, 2, 3, 4)
VARIANTS = ("TD3", "TD3-TPS")
NARROW_PEAK = Sweep("narrow-peak-0", ("NarrowPeak-v0",), VARIANTS, SEEDS, steps=15_000,
                    overrides=NARROW_PEAK_SETTINGS, probes=("narrow peak",))
LOTTERY_BAND = Sweep("lottery-band-0", ("LotteryBand-v0",), VARIANTS, tuple(range(10)), steps=4_000,
                     overrides=LOTTERY_BAND_SETTINGS, probes=("lottery band",))

EXPERIMENTS = {
    "pendulum": Experiment("smoothing_pendulum.csv", "04", "Pendulum-v1",
                           ("variant", "seed", "step", "eval_mean", "eval_std", "q_estimate", "q_true",
                            "q_roughness", "q_peak", "wall_s"),
                           tuple(Take(PENDULUM, v) for v in VARIANTS)),
    "narrow-peak": Experiment("smoothing_narrow_peak.csv", "04", "NarrowPeak-v0 (td3_lib.course.tasks)",
                              ("variant", "seed", "step", "eval_mean", "position", "perturbed_return", "wall_s"),
                              tuple(Take(NARROW_PEAK, v) for v in VARIANTS)),
    "lottery-band": Experiment("smoothing_lottery_band.csv", "04", "LotteryBand-v0 (td3_lib.course.tasks)",
                               ("variant", "seed", "step", "eval_mean", "position", "true_return", "target_bias",
                                "target_error_spread", "target_spread", "wall_s"),
                               tuple(Take(LOTTERY_BAND, v) for v in VARIANTS)),
}

if __name__ == "__main__":
    main(__doc__, EXPERIMENTS)
