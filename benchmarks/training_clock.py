"""Timing a training run from inside, as the training benchmarks (gpu_check.py, gpu_batched.py,
batched_speed.py) do.

A run is timed at each of its evaluations, through ``train``'s (or ``train_batched``'s) callback: a
*mark* is (step, seconds since the call began, seconds and steps its evaluation episodes took so far).
The evaluation episodes are timed by an ``EpisodeClock`` around each evaluation environment. From the
marks, ``phase_rates`` gives the steps per second of the random phase and of the learning phase with
the evaluations taken out.
"""

from __future__ import annotations

import statistics
import time
from typing import Sequence

import gymnasium as gym

from td3_lib import TD3Config, make_env, train
from td3_lib.batched_training import train_batched


class EpisodeClock(gym.Wrapper):
    """Seconds, steps and episodes spent in evaluation episodes, from each reset to the episode's end."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.seconds, self.steps, self.episodes, self.started = 0.0, 0, 0, None

    def reset(self, **kwargs):
        self.started = time.perf_counter()
        return self.env.reset(**kwargs)

    def step(self, action):
        result = self.env.step(action)
        self.steps += 1
        if (result[2] or result[3]) and self.started is not None:
            self.seconds += time.perf_counter() - self.started
            self.episodes += 1
            self.started = None
        return result


class EvaluationClocks:
    """``train_batched``'s ``make``: each member's training environment as ``make_env`` makes it, and its
    evaluation environment inside an ``EpisodeClock``. ``train_batched`` makes each member's training
    environment and then its evaluation environment (``batched_training.open_members``), so every second
    environment made is an evaluation one; ``check`` confirms it from the episodes each clock counted."""

    def __init__(self):
        self.made, self.clocks = 0, []

    def __call__(self, env_id: str) -> gym.Env:
        env = make_env(env_id)
        self.made += 1
        if self.made % 2 == 0:
            env = EpisodeClock(env)
            self.clocks.append(env)
        return env

    @property
    def seconds(self) -> float:
        return sum(c.seconds for c in self.clocks)

    @property
    def steps(self) -> int:
        return sum(c.steps for c in self.clocks)

    def check(self, episodes: int) -> None:
        """Raise unless every clock timed exactly ``episodes`` episodes (so it was an evaluation environment)."""
        counted = [c.episodes for c in self.clocks]
        if any(n != episodes for n in counted):
            raise RuntimeError(f"The evaluation clocks counted {counted} episodes, not {episodes} each: "
                               "train_batched no longer makes a member's evaluation environment second.")


def timed_run(env_id: str, cfg: TD3Config, device: str, seed: int = 0) -> list[tuple]:
    """Train one run; at every evaluation, (step, seconds since the start, evaluation seconds and steps so far)."""
    eval_env = EpisodeClock(make_env(env_id))
    marks = []
    started = time.perf_counter()
    try:
        train(env_id, cfg, seed=seed, device=device, progress=False, eval_env=eval_env,
              callback=lambda t, agent: marks.append(
                  (t, time.perf_counter() - started, eval_env.seconds, eval_env.steps)))
    finally:
        eval_env.close()
    return [(0, 0.0, 0.0, 0)] + marks


def timed_batched_run(env_id: str, cfg: TD3Config, seeds: Sequence[int], device: str) -> list[tuple]:
    """Train one run per seed with ``train_batched`` (all with ``cfg``, so they evaluate at the same
    iterations); a mark after the last member's evaluation at each evaluation step, with the evaluation
    seconds and steps of all the members so far."""
    clocks, marks, last = EvaluationClocks(), [], len(seeds) - 1
    started = time.perf_counter()

    def mark(k: int, t: int, agent) -> None:
        if k == last:
            marks.append((t, time.perf_counter() - started, clocks.seconds, clocks.steps))
    train_batched(env_id, cfg, list(seeds), device=device, progress=False, make=clocks, callback=mark)
    evaluations = len(range(cfg.eval_freq, cfg.total_steps + 1, cfg.eval_freq))
    evaluations += cfg.total_steps % cfg.eval_freq != 0  # and one at the end of the budget
    clocks.check(evaluations * cfg.eval_episodes)
    return [(0, 0.0, 0.0, 0)] + marks


def phase_rates(marks: list[tuple], random_steps: int) -> dict:
    """Steps per second between evaluations, evaluation time taken out: the random phase, the
    first learning interval (warm-up, capture), and the learning rate after it (median)."""
    intervals = []
    for (s0, t0, e0, n0), (s1, t1, e1, n1) in zip(marks[:-1], marks[1:]):
        intervals.append({"from_step": s0, "to_step": s1, "steps_per_s": (s1 - s0) / ((t1 - t0) - (e1 - e0))})
    learning = [i["steps_per_s"] for i in intervals if i["from_step"] >= random_steps]
    eval_s, eval_steps = marks[-1][2], marks[-1][3]
    return {"intervals": intervals,
            "random_steps_per_s": statistics.median(i["steps_per_s"] for i in intervals
                                                    if i["to_step"] <= random_steps),
            "first_learning_steps_per_s": learning[0],
            "learning_steps_per_s": statistics.median(learning[1:] or learning),
            "evaluation_steps_per_s": eval_steps / eval_s if eval_s > 0 else None}
