"""Lesson 05's experiments: target networks (the paper's Figure 3) and the policy delay d.

    python experiments/target_networks.py figure3         # runs/results/target_networks_pendulum.csv
    python experiments/target_networks.py delay           # runs/results/policy_delay_pendulum.csv
    python experiments/target_networks.py figure3-hopper  # runs/results/target_networks_hopper_v5.csv

``figure3`` is the paper's Figure 3 (Section 5.2) on Pendulum-v1: the critic's value estimate of
fixed states, for tau = 1 (the target is the critic itself), 0.1 and 0.01, under a fixed policy
and under a learned one, 3 seeds each (one sweep per tau).

- The fixed policy is the shipped trained actor (``td3_lib.pretrained``, 64-64): the variant
  ``fixed policy`` (``td3_lib.course.tasks.FixedPolicyTD3``) starts from it and never takes an
  actor step; the critic learns, and the target networks still move at the delayed step.
- The learned policy is TD3 itself, from a random actor, as in any run.

``delay`` trains TD3 (tau = 0.005) with d = ``policy_freq`` = 1, 2 and 5, 3 seeds.

Everything else is ``preset("Pendulum-v1")``: TD3 with clipped double Q, target policy smoothing
and d = 2 (in ``figure3``), 15,000 steps, 1,000 random first. Every 100 steps the run is evaluated
(2 episodes) and the value estimate is recorded (the probe ``Pendulum-v1 value``: the mean of
Q1(s, pi(s)) over 32 fixed states drawn as Pendulum's reset draws them, seed 0). Every 1,000 steps
the true value of the current actor on the same states is recorded too (``Pendulum-v1 true
value``: Pendulum is deterministic, so one noise-free rollout of 400 steps from each state gives it).

``figure3-hopper`` is the same experiment on the paper's own task, MuJoCo's Hopper-v5, with
``preset("Hopper-v5")`` (the authors' current settings: 256-256, 25,000 random steps first,
discount 0.99), 100,000 steps per run, 2 seeds. The fixed policy is the shipped trained Hopper-v5
actor (``fixed Hopper-v5 policy``). The fixed states are the first states of 32 episodes reset
with seeds 0 to 31; the value estimate is recorded every 1,000 steps (after a one-episode
evaluation) and the true value every 10,000 steps, as the discounted return of one noise-free
episode of the current actor from each of those resets (up to the 1,000-step time limit).

Runs are kept under ``--root`` (default runs/lesson_results); the options are those of every
experiment (``td3_lib.course.experiments``; ``--jobs 2``: two runs at a time).
"""

from td3_lib.course.experiments import Experiment, Sweep, Take, main

FIELDS = ("variant", "tau", "policy_freq", "seed", "step", "value", "true_value", "eval_mean", "wall_s")
PENDULUM = dict(envs=("Pendulum-v1",), seeds=(0, 1, 2), probes=("Pendulum-v1 value", "Pendulum-v1 true value"))
PENDULUM_EVALUATION = {"eval_freq": 100, "eval_episodes": 2}
HOPPER = dict(envs=("Hopper-v5",), seeds=(0, 1), steps=100_000, probes=("Hopper-v5 value", "Hopper-v5 true value"))
HOPPER_EVALUATION = {"eval_freq": 1_000, "eval_episodes": 1}


def figure3(name: str, fixed: str, evaluation: dict, envs, seeds, probes, steps=None) -> tuple[Take, ...]:
    """The fixed and the learned policy at tau = 1, 0.1 and 0.01, one sweep per tau; fixed policy first."""
    sweeps = [Sweep(f"{name}-{i}", envs, (fixed, "TD3"), seeds, steps, {"tau": tau, **evaluation}, probes)
              for i, tau in enumerate((1.0, 0.1, 0.01))]
    return (tuple(Take(s, fixed, "fixed policy") for s in sweeps)
            + tuple(Take(s, "TD3", "learned policy") for s in sweeps))


def delay(evaluation: dict, envs, seeds, probes) -> tuple[Take, ...]:
    """TD3 with d = 1, 2 and 5 (tau = 0.005), one sweep per d."""
    return tuple(Take(Sweep(f"delay-{i}", envs, ("TD3",), seeds, None, {"tau": 0.005, "policy_freq": d, **evaluation},
                            probes), "TD3", f"d={d}") for i, d in enumerate((1, 2, 5)))


def experiment(file: str, env: str, takes) -> Experiment:
    return Experiment(file, "05", env, FIELDS, takes, digits={"eval_mean": 3}, seed_major=True)


EXPERIMENTS = {
    "figure3": experiment("target_networks_pendulum.csv", "Pendulum-v1",
                          figure3("figure3", "fixed policy", PENDULUM_EVALUATION, **PENDULUM)),
    "delay": experiment("policy_delay_pendulum.csv", "Pendulum-v1", delay(PENDULUM_EVALUATION, **PENDULUM)),
    "figure3-hopper": experiment("target_networks_hopper_v5.csv", "Hopper-v5",
                                 figure3("figure3-hopper", "fixed Hopper-v5 policy", HOPPER_EVALUATION, **HOPPER)),
}

if __name__ == "__main__":
    main(__doc__, EXPERIMENTS)
