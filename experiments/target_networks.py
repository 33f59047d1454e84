"""Lesson 05's experiments: target networks (the paper's Figure 3) and the policy delay d.

    python experiments/target_networks.py figure3         # runs/results/target_networks_pendulum.csv
    python experiments/target_networks.py delay           # runs/results/policy_delay_pendulum.csv
    python experiments/target_networks.py figure3-hopper  # runs/results/target_networks_hopper_v5.csv

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

``figure3-hopper`` is the same experiment on the paper's own task, MuJoCo's
Hopper-v5, with ``preset("Hopper-v5")`` (the authors' settings: 256-256, 25,000
random steps first, discount 0.99), 100,000 steps per run, 2 seeds. The fixed
policy is the shipped trained Hopper-v5 actor. The fixed states are the first
states of 32 episodes reset with seeds 0 to 31 (Hopper starts upright, with a
little noise); the value estimate is recorded every 1,000 steps (after a
one-episode evaluation) and the true value every 10,000 steps, as the
discounted return of one noise-free episode of the current actor from each of
those resets (up to the 1,000-step time limit; the discount's tail after it is
below 0.005% of the value).

Each run is one process thread (``torch.set_num_threads(1)``); ``--jobs 2``
runs two at a time, seed after seed. A finished run's rows are kept under ``--root`` (default
runs/target_networks), so an interrupted experiment started again skips them.
At the end the rows are written as one CSV, with its manifest entry (this
command), into ``--out`` (default runs/results); ``python -m
td3_lib.course.results publish runs/results/FILE`` ships it in
td3_lib/course/results/.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
from functools import partial
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from td3_lib import TD3, preset, soft_update, train
from td3_lib.course.analysis import ValueTrace, returns_to_go
from td3_lib.envs import opened_env
from td3_lib.pretrained import load_pretrained
from td3_lib.rollout import evaluation_episodes

from common import finish, kept_rows, options

ENV_ID = "Pendulum-v1"
HOPPER = "Hopper-v5"
FIELDS = ("variant", "tau", "policy_freq", "seed", "step", "value", "true_value", "eval_mean", "wall_s")
TRUE_VALUE_EVERY = 1_000
HORIZON = 400


class FixedPolicyTD3(TD3):
    """TD3 whose actor is the shipped trained actor of ``env_id`` and never changes.

    The critics learn as in TD3, and the target networks still move every d-th
    update (the actor's target stays equal to the actor); the actor takes no step.
    """

    env_id = ENV_ID

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        with torch.random.fork_rng():  # building the loaded agent draws random weights: not from the run's stream
            trained = load_pretrained(self.env_id)
        self.actor.load_state_dict(trained.actor.state_dict())
        self.actor_target.load_state_dict(trained.actor.state_dict())

    def actor_step(self, batch):
        soft_update((self.critic, self.actor), (self.critic_target, self.actor_target), self.config.tau)
        with torch.no_grad():
            return self.actor_loss(batch.obs)


class FixedHopperPolicyTD3(FixedPolicyTD3):
    """``FixedPolicyTD3`` with the shipped trained Hopper-v5 actor."""

    env_id = HOPPER


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


class PendulumStates:
    """32 Pendulum states drawn as its reset draws them; their true value by a 400-step rollout from each."""

    def __init__(self):
        self.states = fixed_states()

    def observations(self) -> np.ndarray:
        return observation(self.states)

    def true_values(self, agent: TD3, discount: float) -> np.ndarray:
        return true_values(agent, self.states, discount)


class StartStates:
    """The first states of ``n`` episodes of ``env_id`` reset with seeds 0, 1, ...; their true value by
    one noise-free episode of the actor from each of those resets (the environment's time limit)."""

    def __init__(self, env_id: str, n: int = 32):
        self.env_id, self.n = env_id, n

    def observations(self) -> np.ndarray:
        with opened_env(self.env_id) as env:
            return np.stack([env.reset(seed=i)[0] for i in range(self.n)]).astype(np.float32)

    def true_values(self, agent: TD3, discount: float) -> np.ndarray:
        with opened_env(self.env_id) as env:
            episodes = evaluation_episodes(agent, env, self.n, seed=0)
        return np.array([returns_to_go(e.rewards, discount)[0] for e in episodes])


class Recorder(ValueTrace):
    """``ValueTrace`` on the fixed states, plus the true value of the actor on them every ``true_value_every`` steps."""

    def __init__(self, states, true_value_every: int):
        super().__init__(states.observations())
        self.fixed_states, self.true_value_every = states, true_value_every
        self.true_values: dict[int, float] = {}

    def __call__(self, step: int, agent: TD3) -> None:
        super().__call__(step, agent)
        if step % self.true_value_every == 0:
            truth = self.fixed_states.true_values(agent, agent.config.discount)
            self.true_values[step] = float(truth.mean())


# ---------------------------------------------------------------------- the runs
def figure3_runs() -> list[dict]:
    return [dict(variant=variant, tau=tau, policy_freq=2)
            for variant in ("fixed policy", "learned policy") for tau in (1.0, 0.1, 0.01)]


def delay_runs() -> list[dict]:
    return [dict(variant=f"d={d}", tau=0.005, policy_freq=d) for d in (1, 2, 5)]


PENDULUM = dict(env=ENV_ID, steps=preset(ENV_ID).total_steps, eval_freq=100, eval_episodes=2,
                true_value_every=1_000, states=PendulumStates, fixed=FixedPolicyTD3, seeds=[0, 1, 2])
EXPERIMENTS = {
    "figure3": dict(PENDULUM, file="target_networks_pendulum.csv", runs=figure3_runs),
    "delay": dict(PENDULUM, file="policy_delay_pendulum.csv", runs=delay_runs),
    "figure3-hopper": dict(env=HOPPER, steps=100_000, eval_freq=1_000, eval_episodes=1, true_value_every=10_000,
                           states=partial(StartStates, HOPPER), fixed=FixedHopperPolicyTD3, seeds=[0, 1],
                           file="target_networks_hopper_v5.csv", runs=figure3_runs),
}
"""Each experiment: its environment and budget, how often the value (every evaluation) and the
true value are recorded, its fixed states, its fixed-policy agent, seeds, output file and runs."""


def run_one(name: str, run: dict, seed: int, steps: int) -> list[dict]:
    """One training run of experiment ``name``; its rows, one per evaluation."""
    torch.set_num_threads(1)
    experiment = EXPERIMENTS[name]
    config = dataclasses.replace(preset(experiment["env"]), tau=run["tau"], policy_freq=run["policy_freq"],
                                 total_steps=steps, eval_freq=experiment["eval_freq"],
                                 eval_episodes=experiment["eval_episodes"])
    recorder = Recorder(experiment["states"](), experiment["true_value_every"])
    agent = experiment["fixed"] if run["variant"] == "fixed policy" else TD3
    result = train(experiment["env"], config, seed=seed, device="cpu", progress=False, callback=recorder,
                   agent=agent, probes=())  # the recorder measures what this experiment needs
    return [{**run, "seed": seed, "step": step, "value": round(value, 4),
             "true_value": round(recorder.true_values[step], 4) if step in recorder.true_values else "",
             "eval_mean": round(row["eval_mean"], 3), "wall_s": row["wall_s"]}
            for step, value, row in zip(recorder.steps, recorder.values, result.history)]


def run_file(root: Path, run: dict, seed: int) -> Path:
    name = f"{run['variant'].replace(' ', '_')}_tau{run['tau']}_d{run['policy_freq']}_seed{seed}.csv"
    return root / name


def kept_run(job: tuple[str, dict, int, int, Path]) -> list[dict]:
    """One run's rows: read back when ``path`` holds them, else trained and written there."""
    name, run, seed, steps, path = job
    return kept_rows(path, FIELDS, lambda: run_one(name, run, seed, steps))


def run_all(name: str, seeds: list[int], steps: int, root: Path, jobs: int = 1) -> list[dict]:
    """Every run of the experiment, seed after seed, ``jobs`` at a time; a run whose rows are
    already under ``root`` is read back, not trained."""
    work = [(name, run, seed, steps, run_file(root / name, run, seed))
            for seed in seeds for run in EXPERIMENTS[name]["runs"]()]
    if jobs == 1:
        return [row for job in work for row in kept_run(job)]
    with multiprocessing.get_context("spawn").Pool(jobs, maxtasksperchild=1) as pool:
        return [row for rows in pool.imap(kept_run, work) for row in rows]


def main(argv=None) -> None:
    parser = options(__doc__, "runs/target_networks", EXPERIMENTS)
    parser.add_argument("--jobs", type=int, choices=(1, 2, 3, 4), default=1, help="runs at a time (default 1)")
    args = parser.parse_args(argv)
    experiment = EXPERIMENTS[args.experiment]
    steps = args.steps or experiment["steps"]
    rows = run_all(args.experiment, args.seeds or experiment["seeds"], steps, args.root, args.jobs)
    finish(rows, FIELDS, args, file=experiment["file"], lesson="05", env=experiment["env"], steps=steps,
           run_keys=("variant", "tau", "policy_freq", "seed"))


if __name__ == "__main__":
    main()
