"""Lesson 04's experiments: what target policy smoothing does to the critic and to the policy.

    python experiments/smoothing.py pendulum      # runs/results/smoothing_pendulum.csv
    python experiments/smoothing.py narrow-peak   # runs/results/smoothing_narrow_peak.csv
    python experiments/smoothing.py lottery-band  # runs/results/smoothing_lottery_band.csv

Each trains TD3 and TD3 - TPS (``target_policy_smoothing=False``, all else equal). ``pendulum``: the
runs of ``lesson_results.py pendulum`` (5 seeds), with the critic's probe (``q_peak``: the peak height
at the actor's action). ``narrow-peak``: ``NarrowPeak-v0`` (a reward with a real, narrow peak), 5 seeds,
15,000 steps, recording the position chosen, the return and the return with every action perturbed by
noise of std 0.1 (``NarrowPeakProbe``).

``lottery-band``, a 2 x 2: trained with and without smoothing (TD3, TD3 - TPS; 10 seeds, 4,000 steps on
``LotteryBand-v0``, whose narrow band of actions pays zero-mean noise; seed s of both shares its first
1,000 random steps) x probed at one action and averaged over the smoothing noise, every 250 steps, on
states fixed in advance (``LotteryBandProbe``: 5 positions x 41 dials). The primary measure, named
before the run: ``point_error_spread`` (the spread over the dials of the target's error, read at the
target actor's action) averaged over the evaluations after the random steps, TD3 against TD3 - TPS,
seed by seed. It asks whether training with smoothing lowers the error when both are probed the same
way. The same comparison of ``averaged_error_spread``, and each probe against the other, are secondary.

Runs are kept under ``--root`` (default runs/lesson_results); the options are those of every
experiment (``td3_lib.course.experiments``).
"""

from td3_lib.course.experiments import PENDULUM, Experiment, Sweep, Take, main
from td3_lib.course.tasks import LOTTERY_BAND_SETTINGS, NARROW_PEAK_SETTINGS

SEEDS = (0, 1, 2, 3, 4)
VARIANTS = ("TD3", "TD3-TPS")
NARROW_PEAK = Sweep("narrow-peak-0", ("NarrowPeak-v0",), VARIANTS, SEEDS, steps=15_000,
                    overrides=NARROW_PEAK_SETTINGS, probes=("narrow peak",))
LOTTERY_BAND = Sweep("lottery-band-2x2", ("LotteryBand-v0",), VARIANTS, tuple(range(10)), steps=4_000,
                     overrides=LOTTERY_BAND_SETTINGS, probes=("lottery band 2x2",))

EXPERIMENTS = {
    "pendulum": Experiment("smoothing_pendulum.csv", "04", "Pendulum-v1",
                           ("variant", "seed", "step", "eval_mean", "eval_std", "q_estimate", "q_true",
                            "q_roughness", "q_peak", "wall_s"),
                           tuple(Take(PENDULUM, v) for v in VARIANTS)),
    "narrow-peak": Experiment("smoothing_narrow_peak.csv", "04", "NarrowPeak-v0 (td3_lib.course.tasks)",
                              ("variant", "seed", "step", "eval_mean", "position", "perturbed_return", "wall_s"),
                              tuple(Take(NARROW_PEAK, v) for v in VARIANTS)),
    "lottery-band": Experiment("smoothing_lottery_band.csv", "04", "LotteryBand-v0 (td3_lib.course.tasks)",
                               ("variant", "seed", "step", "eval_mean", "position", "true_return",
                                "point_error_spread", "averaged_error_spread", "point_bias", "averaged_bias",
                                "wall_s"),
                               tuple(Take(LOTTERY_BAND, v) for v in VARIANTS)),
}

if __name__ == "__main__":
    main(__doc__, EXPERIMENTS)
