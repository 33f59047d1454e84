"""Lesson 05's experiments on Pendulum-v1: target networks (the paper's Figure 3) and the policy delay d.

    python experiments/target_networks.py figure3   # runs/results/target_networks_pendulum.csv
    python experiments/target_networks.py delay     # runs/results/policy_delay_pendulum.csv

``figure3`` is the paper's Figure 3 (Section 5.2) on Pendulum-v1: the critic's
value estimate of fixed states, for tau = 1 (the target is the critic itself),
0.1 and 0.01, under a fixed policy and under a learned one, 3 seeds each.

- The fixed policy is the shipped trained actor (``td3_lib.pretrained``,
  64-64): ``FixedPolicyTD3`` starts from it and never takes an actor step; the
  critic learns, and the target networks still move at the delayed step.
- The learned policy is TD3 itself, from a random actor, as in any run.

``delay`` trains TD3 (tau = 0.005) with d = ``policy_freq`` = 1, 2 and 5, 3 seeds.

Everything else is ``preset("Pendulum-v1")``: TD3 with clipped double Q,
target policy smoothing and d = 2 (in ``figure3``), 15,000 steps, 1,000 random
first. Every 100 steps the run is evaluated (2 episodes) and the value estimate
is recorded: the mean of Q1(s, mu(s)) over 32 fixed states drawn as Pendulum's
reset draws them (angle uniform in [-pi, pi], angular velocity in [-1, 1], seed
0). Every 1,000 steps the true value of the current actor on the same states is
measured too: Pendulum is deterministic, so one noise-free rollout of 400 steps
from each state (the discount's tail after 400 steps is below 0.03% of the
value) gives it.

Each run is one process thread (``torch.set_num_threads(1)``), one after the
other. A finished run's rows are kept under ``--root`` (default
runs/target_networks), so an interrupted experiment started again skips them.
At the end the rows are written as one CSV, with its manifest entry (this
command), into ``--out`` (default runs/results); ``python -m
td3_lib.course.results publish runs/results/FILE`` ships it in
td3_lib/course/results/.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from td3_lib import TD3, preset, soft_update, train
from td3_lib.course.analysis import ValueTrace
from td3_lib.pretrained import load_pretrained

from common import finish, kept_rows, options

ENV_ID = "Pendulum-v1"
FIELDS = ("variant", "tau", "policy_freq", "seed", "step", "value", "true_value", "eval_mean", "wall_s")
TRUE_VALUE_EVERY = 1_000
HORIZON = 400


class FixedPolicyTD3(TD3):
    """TD3 whose actor is the shipped trained Pendulum-v1 actor and never changes.

    The critics learn as in TD3, and the target networks still move every d-th
    update (the actor's target stays equal to the actor); the actor takes no step.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        with torch.random.fork_rng():  # building the loaded agent draws random weights: not from the run's stream
            trained = load_pretrained(ENV_ID)
        self.actor.load_state_dict(trained.actor.state_dict())
        self.actor_target.load_state_dict(trained.actor.state_dict())

    def actor_step(self, batch):
        soft_update((self.critic, self.actor), (self.critic_target, self.actor_target), self.config.tau)
        with torch.no_grad():
            return self.actor_loss(batch.obs)


def fixed_states(n: int = 32, seed: int = 0) -> np.ndarray:
    """``n`` Pendulum states (angle, angular velocity), drawn as ``Pendulum-v1.reset`` draws them."""
    rng = np.random.default_rng(seed)
    return np.stack([rng.uniform(-np.pi, np.pi, n), rng.uniform(-1.0, 1.0, n)], axis=1)


def observation(states: np.ndarray) -> np.ndarray:
    """Pendulum's observation (cos theta, sin theta, angular velocity) of each state."""
    return np.stack([np.cos(states[:, 0]), np.sin(states[:, 0]), states[:, 1]], axis=1).astype(np.float32)


def true_values(agent: TD3, states: np.ndarray, discount: float, horizon: int = HORIZON) -> np.ndarray:
    """The discounted return of the noise-free actor from each state, by one rollout each (no time limit)."""
    envs = [gym.make(ENV_ID).unwrapped for _ in states]
    for env, state in zip(envs, states):
        env.reset(seed=0)
        env.state = np.array(state, dtype=np.float64)
    obs, returns = observation(states), np.zeros(len(states))
    for t in range(horizon):
        actions = agent.act(obs)
        steps = [env.step(a) for env, a in zip(envs, actions)]
        returns += discount ** t * np.array([s[1] for s in steps])
        obs = np.stack([s[0] for s in steps]).astype(np.float32)
    return returns


class Recorder(ValueTrace):
    """``ValueTrace`` on the fixed states, plus the true value of the actor every ``TRUE_VALUE_EVERY`` steps."""

    def __init__(self, states: np.ndarray):
        super().__init__(observation(states))
        self.pendulum_states = states
        self.true_values: dict[int, float] = {}

    def __call__(self, step: int, agent: TD3) -> None:
        super().__call__(step, agent)
        if step % TRUE_VALUE_EVERY == 0:
            truth = true_values(agent, self.pendulum_states, agent.config.discount)
            self.true_values[step] = float(truth.mean())


# ---------------------------------------------------------------------- the runs
def figure3_runs() -> list[dict]:
    return [dict(variant=variant, tau=tau, policy_freq=2)
            for variant in ("fixed policy", "learned policy") for tau in (1.0, 0.1, 0.01)]


def delay_runs() -> list[dict]:
    return [dict(variant=f"d={d}", tau=0.005, policy_freq=d) for d in (1, 2, 5)]


EXPERIMENTS = {
    "figure3": dict(file="target_networks_pendulum.csv", seeds=[0, 1, 2], runs=figure3_runs),
    "delay": dict(file="policy_delay_pendulum.csv", seeds=[0, 1, 2], runs=delay_runs),
}


def run_one(run: dict, seed: int, steps: int) -> list[dict]:
    """One training run; its rows, one per evaluation (every 100 steps)."""
    torch.set_num_threads(1)
    config = dataclasses.replace(preset(ENV_ID), tau=run["tau"], policy_freq=run["policy_freq"],
                                 total_steps=steps, eval_freq=100, eval_episodes=2)
    recorder = Recorder(fixed_states())
    agent = FixedPolicyTD3 if run["variant"] == "fixed policy" else TD3
    result = train(ENV_ID, config, seed=seed, device="cpu", progress=False, callback=recorder, agent=agent,
                   probes=())  # the recorder measures what this experiment needs
    return [{**run, "seed": seed, "step": step, "value": round(value, 4),
             "true_value": round(recorder.true_values[step], 4) if step in recorder.true_values else "",
             "eval_mean": round(row["eval_mean"], 3), "wall_s": row["wall_s"]}
            for step, value, row in zip(recorder.steps, recorder.values, result.history)]


def run_file(root: Path, run: dict, seed: int) -> Path:
    name = f"{run['variant'].replace(' ', '_')}_tau{run['tau']}_d{run['policy_freq']}_seed{seed}.csv"
    return root / name


def run_all(name: str, seeds: list[int], steps: int, root: Path) -> list[dict]:
    """Every run of the experiment, each skipped when its rows are already under ``root``."""
    rows = []
    for run in EXPERIMENTS[name]["runs"]():
        for seed in seeds:
            rows += kept_rows(run_file(root / name, run, seed), FIELDS, lambda: run_one(run, seed, steps))
    return rows


def main(argv=None) -> None:
    args = options(__doc__, "runs/target_networks", EXPERIMENTS).parse_args(argv)
    experiment = EXPERIMENTS[args.experiment]
    steps = args.steps or preset(ENV_ID).total_steps
    rows = run_all(args.experiment, args.seeds or experiment["seeds"], steps, args.root)
    finish(rows, FIELDS, args, file=experiment["file"], lesson="05", env=ENV_ID, steps=steps,
           run_keys=("variant", "tau", "policy_freq", "seed"))


if __name__ == "__main__":
    main()
