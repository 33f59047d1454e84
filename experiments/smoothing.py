"""Lesson 04's experiments: what target policy smoothing does to the critic and to the policy.

    python experiments/smoothing.py pendulum      # runs/results/smoothing_pendulum.csv
    python experiments/smoothing.py narrow-peak   # runs/results/smoothing_narrow_peak.csv

``pendulum``: TD3 and TD3 - TPS (``target_policy_smoothing=False``, all else
equal) on Pendulum-v1, 5 seeds, ``preset("Pendulum-v1")`` with an evaluation
every 500 steps: the settings of the TD3 and TD3-TPS runs of
``lesson_results.py pendulum``. At every evaluation the history records
``q_peak`` (``td3_lib.course.analysis.peak_height``: Q1(s, mu(s)) minus the mean of
Q1(s, a) over actions a near mu(s), drawn like the smoothing noise, on up to
64 states of the evaluation episodes), the critic's roughness, its value
estimate against the true discounted return, and the return.

``narrow-peak``: the same two variants, 5 seeds, on ``NarrowPeak``, a
two-step task whose reward has a narrow peak along the action (see the class).
At every evaluation (every 500 steps) the row records the noise-free return,
the position the actor chooses at the first step, and the mean return of 100
episodes whose every action is perturbed by Gaussian noise of std 0.1 (the
size of the exploration noise).

Each run is one process thread (``torch.set_num_threads(1)``), one after the
other. A finished run's rows are kept under ``--root`` (default
runs/smoothing), so an interrupted experiment started again skips them. At the
end the rows are written as one CSV, with its manifest entry (this command),
into ``--out`` (default runs/results); ``python -m td3_lib.course.results
publish runs/results/FILE`` ships it in td3_lib/course/results/.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from td3_lib import TD3, TD3Config, train, variant_config
from td3_lib.course.analysis import critic_probe

from common import finish, kept_rows, options

VARIANTS = ("TD3", "TD3-TPS")
SEEDS = [0, 1, 2, 3, 4]


# ---------------------------------------------------------------- the narrow peak
def bump(a: float, width: float) -> float:
    return float(np.exp(-0.5 * (a / width) ** 2))


class NarrowPeak(gym.Env):
    """Two steps, one action in [-1, 1] each.

    Step 1 chooses a position x = a (no reward). Step 2 is paid for its action a:
    r = (1 - 0.4 p) * bump(a, 0.5) + 0.8 p * bump(a, 0.03), with p = (1 - x) / 2
    and bump(a, w) = exp(-a^2 / (2 w^2)). At x = +1 the reward is one broad hill
    of height 1; towards x = -1 the hill sinks to 0.6 and a narrow peak of width
    0.03 grows on top of it, to a total of 1.4 at a = 0. Acting exactly, x = -1
    and a = 0 pay the most (1.4); an action off by a few hundredths loses the peak.
    """

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)  # (step, position x)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.position = None
        return np.zeros(2, np.float32), {}

    def step(self, action):
        a = float(np.clip(np.asarray(action, dtype=np.float64).reshape(-1)[0], -1.0, 1.0))
        if self.position is None:
            self.position = a
            return np.array([1.0, a], np.float32), 0.0, False, False, {}
        return np.array([1.0, self.position], np.float32), narrow_peak_reward(self.position, a), True, False, {}


def narrow_peak_reward(x: float, a: float) -> float:
    """The reward of the second step at position ``x`` for the action ``a``."""
    p = (1.0 - x) / 2.0
    return (1.0 - 0.4 * p) * bump(a, 0.5) + 0.8 * p * bump(a, 0.03)


NARROW_PEAK_CONFIG = TD3Config(hidden_sizes=(64, 64), actor_lr=1e-3, critic_lr=1e-3, start_timesteps=1_000,
                               buffer_size=20_000, total_steps=15_000, eval_freq=500, eval_episodes=1)


class NarrowPeakRecorder:
    """``train`` callback: the chosen position and the return under perturbed actions, at each evaluation."""

    def __init__(self, episodes: int = 100, noise: float = 0.1):
        self.episodes, self.noise = episodes, noise
        self.rows: list[dict] = []

    def __call__(self, step: int, agent: TD3) -> None:
        env, rng = NarrowPeak(), np.random.default_rng(12_345)
        returns = []
        for _ in range(self.episodes):
            obs, _ = env.reset()
            obs, _, _, _, _ = env.step(agent.act(obs, noise=self.noise, rng=rng))
            returns.append(env.step(agent.act(obs, noise=self.noise, rng=rng))[1])
        position = float(agent.act(np.zeros(2, np.float32))[0])
        self.rows.append({"step": step, "position": round(position, 4),
                          "perturbed_return": round(float(np.mean(returns)), 4)})


def narrow_peak_run(variant: str, seed: int, steps: int | None) -> list[dict]:
    config = dataclasses.replace(NARROW_PEAK_CONFIG, target_policy_smoothing=variant == "TD3",
                                 total_steps=steps or NARROW_PEAK_CONFIG.total_steps)
    recorder = NarrowPeakRecorder()
    result = train(NarrowPeak(), config, seed=seed, device="cpu", progress=False, callback=recorder, probes=())
    return [{"variant": variant, "seed": seed, **extra, "eval_mean": round(row["eval_mean"], 4),
             "wall_s": row["wall_s"]} for row, extra in zip(result.history, recorder.rows)]


# ---------------------------------------------------------------------- Pendulum
PENDULUM_OVERRIDES = {"eval_freq": 500}
PROBE_FIELDS = ("eval_mean", "eval_std", "q_estimate", "q_true", "q_roughness", "q_peak", "wall_s")


def pendulum_run(variant: str, seed: int, steps: int | None) -> list[dict]:
    config = variant_config("Pendulum-v1", variant, PENDULUM_OVERRIDES, steps)
    result = train("Pendulum-v1", config, seed=seed, device="cpu", progress=False, probes=(critic_probe,))
    return [{"variant": variant, "seed": seed, "step": row["step"], **{k: round(row[k], 4) for k in PROBE_FIELDS}}
            for row in result.history]


EXPERIMENTS = {
    "pendulum": dict(file="smoothing_pendulum.csv", env="Pendulum-v1", run=pendulum_run,
                     steps=variant_config("Pendulum-v1", "TD3", PENDULUM_OVERRIDES).total_steps,
                     fields=("variant", "seed", "step") + PROBE_FIELDS),
    "narrow-peak": dict(file="smoothing_narrow_peak.csv", env="NarrowPeak (experiments/smoothing.py)",
                        run=narrow_peak_run, steps=NARROW_PEAK_CONFIG.total_steps,
                        fields=("variant", "seed", "step", "eval_mean", "position", "perturbed_return", "wall_s")),
}


# ------------------------------------------------------------------------ output
def run_all(name: str, seeds: list[int], steps: int | None, root: Path) -> list[dict]:
    """Every run of the experiment, each kept under ``root`` once finished (and then not run again)."""
    experiment, rows = EXPERIMENTS[name], []
    for variant in VARIANTS:
        for seed in seeds:
            path = root / name / f"{variant}_seed{seed}_steps{steps or experiment['steps']}.csv"
            rows += kept_rows(path, experiment["fields"], lambda: experiment["run"](variant, seed, steps))
    return rows


def main(argv=None) -> None:
    args = options(__doc__, "runs/smoothing", EXPERIMENTS).parse_args(argv)
    torch.set_num_threads(1)
    experiment = EXPERIMENTS[args.experiment]
    rows = run_all(args.experiment, args.seeds or SEEDS, args.steps, args.root)
    finish(rows, experiment["fields"], args, file=experiment["file"], lesson="04", env=experiment["env"],
           steps=args.steps or experiment["steps"])


if __name__ == "__main__":
    main()
