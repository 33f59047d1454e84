"""The full-budget experiments behind lessons 01-08, over seeds, shipped in td3_lib/course/results/.

    python experiments/lesson_results.py pendulum      # lessons 01-03 and 07 on Pendulum-v1
    python experiments/lesson_results.py pitfalls      # lesson 08's pitfalls on Pendulum-v1
    python experiments/lesson_results.py hopper-v5     # lessons 03, 04, 06 and 07 on MuJoCo's Hopper-v5
    python experiments/lesson_results.py hopper-v5-1m  # TD3 and DDPG on Hopper-v5 at the paper's 1M steps
    python experiments/lesson_results.py hopper-v5-table2  # the paper's Table 2 on Hopper-v5: all five at 1M

Every run is an ordinary ``train`` run of a sweep (``td3_lib.sweep``) whose history holds, at each evaluation,
the return and the critic's probe (``critic``: value estimate against the true discounted return, the value
at fixed start states, roughness and peak height along the action).

- ``pendulum``: TD3, TD3 without each trick, DDPG (AHE) and DDPG+CDQ, with the preset and an evaluation
  every 500 steps, 5 seeds (``PENDULUM``, shared with smoothing_pendulum.csv and pitfalls_pendulum.csv),
  and TD3 with d = 5.
- ``pitfalls``: TD3 with one bug each (the variants of ``td3_lib.course.pitfalls``), on the same settings;
  the correct baseline is ``PENDULUM``'s TD3, read, not trained again.
- ``hopper-v5``: the paper's own task with the authors' current repository defaults (Hopper-v5's preset:
  256-256 networks, Adam 3e-4, batch 256, 25,000 random steps; the paper used 400-300, Adam 1e-3, batch 100
  and 1,000 random steps, the ``paper`` preset), 300,000 steps (30% of the paper's budget), evaluated every
  5,000 steps over 10 episodes: TD3 and DDPG as the first 300,000 steps of hopper-v5-1m's runs (trained to
  1M), the ablations -CDQ, -TPS and -DP as two sweeps (seeds 0-2, then 3-4).
- ``hopper-v5-1m``: TD3 and DDPG (AHE) to the paper's 1,000,000 steps, 5 seeds, same settings.
- ``hopper-v5-table2``: the paper's Table 2 on Hopper-v5 at 1,000,000 steps: hopper-v5-1m's DDPG and TD3 seeds
  1-4, TD3 seed 0 trained again (its first run recorded no provenance) and the three ablations, 5 seeds each.

Runs are kept under ``--root`` (default runs/lesson_results, ROOT/SWEEP/ENV/VARIANT/seedS) and an experiment started
again trains only the unfinished; the options are every experiment's (``td3_lib.course.experiments``).
"""

from td3_lib.course.experiments import PENDULUM, Experiment, Sweep, Take, main

SEEDS = (0, 1, 2, 3, 4)
FIELDS = ("variant", "policy_freq", "seed", "step", "eval_mean", "eval_std", "critic_loss",
          "q_estimate", "q_true", "q_start", "q_roughness", "q_peak", "wall_s")

PENDULUM_D5 = Sweep("pendulum-1", ("Pendulum-v1",), ("TD3",), SEEDS, overrides={"eval_freq": 500, "policy_freq": 5},
                    probes=("critic",))
HOPPER = ("TD3", "DDPG", "TD3-CDQ", "TD3-TPS", "TD3-DP")
HOPPER_V5_1M = Sweep("hopper-v5-1m-0", ("Hopper-v5",), HOPPER[:2], SEEDS, steps=1_000_000, probes=("critic",))
HOPPER_V5_ABLATIONS = (Sweep("hopper-v5-3", ("Hopper-v5",), HOPPER[2:], (0, 1, 2), steps=300_000, probes=("critic",)),
                       Sweep("hopper-v5-2", ("Hopper-v5",), HOPPER[2:], (3, 4), steps=300_000, probes=("critic",)))
# Table 2 at the paper's budget: the three ablations to 1,000,000 steps, and TD3 seed 0 trained again (its first
# run, the shipped agent's, was made before runs recorded their code, versions and machine).
HOPPER_V5_1M_ABLATIONS = Sweep("hopper-v5-1m-1", ("Hopper-v5",), HOPPER[2:], SEEDS, steps=1_000_000, probes=("critic",))
HOPPER_V5_1M_TD3_AGAIN = Sweep("hopper-v5-1m-2", ("Hopper-v5",), HOPPER[:1], (0,), steps=1_000_000, probes=("critic",))
# Lesson 08's pitfalls, by their names in td3_lib.course.pitfalls.PITFALLS (each a registered variant).
PITFALL_RUNS = ("uniform noise (rand)", "target critic as current", "Q1 loss twice", "time limit as terminal")
PITFALL_SWEEP = Sweep("pitfalls-0", ("Pendulum-v1",), PITFALL_RUNS, SEEDS, overrides={"eval_freq": 500}, probes=("critic",))

EXPERIMENTS = {
    "pendulum": Experiment("pendulum_variants.csv", "01 02 03 07", "Pendulum-v1", FIELDS,
                           tuple(Take(PENDULUM, v) for v in PENDULUM.variants) + (Take(PENDULUM_D5, "TD3", "TD3 (d=5)"),)),
    "pitfalls": Experiment("pitfalls_pendulum.csv", "08", "Pendulum-v1", FIELDS,
                           tuple(Take(PITFALL_SWEEP, name) for name in PITFALL_RUNS)
                           + (Take(PENDULUM, "TD3", "TD3 (correct)"),)),
    "hopper-v5": Experiment("hopper_v5_variants.csv", "03 04 07", "Hopper-v5", FIELDS,
                            tuple(Take(HOPPER_V5_1M, v, until=300_000) for v in HOPPER_V5_1M.variants)
                            + tuple(Take(s, v) for s in HOPPER_V5_ABLATIONS for v in s.variants)),
    "hopper-v5-1m": Experiment("hopper_v5_1m.csv", "02 06 07", "Hopper-v5", FIELDS,
                               tuple(Take(HOPPER_V5_1M, v) for v in HOPPER_V5_1M.variants)),
    "hopper-v5-table2": Experiment("hopper_v5_table2.csv", "07", "Hopper-v5", FIELDS,
                                   (Take(HOPPER_V5_1M_TD3_AGAIN, "TD3"), Take(HOPPER_V5_1M, "TD3", seeds=(1, 2, 3, 4)),
                                    Take(HOPPER_V5_1M, "DDPG"))
                                   + tuple(Take(HOPPER_V5_1M_ABLATIONS, v) for v in HOPPER_V5_1M_ABLATIONS.variants)),
}

if __name__ == "__main__":
    main(__doc__, EXPERIMENTS)
