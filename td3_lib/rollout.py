"""One episode of a policy in an environment, and evaluation built on it.

Evaluation, recording a clip, the value-bias measurement and the benchmarks
all run episodes through ``rollout``, so they share one episode loop. The
course's two-step tasks step their own episodes, two steps long, in their
probes (course/tasks.py) and in lesson 04's clip (course/narrow_peak_clip.py),
and the Pendulum probe steps 32 starts side by side (course/tasks.py). What an
episode is measured with lives here too: its discounted returns to go
(``returns_to_go``) and the critic's estimates on its states (``critic_values``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from .envs import opened_env


@dataclass
class Episode:
    """What one rollout saw: the states it acted in and the rewards it got."""

    rewards: list[float] = field(default_factory=list)
    states: list[np.ndarray] = field(default_factory=list)  # filled only with keep_states=True

    @property
    def total(self) -> float:
        """The undiscounted return, sum of the rewards."""
        return float(sum(self.rewards))

    def __len__(self) -> int:
        return len(self.rewards)


def rollout(env, policy: Callable[[np.ndarray], np.ndarray], seed: int | None = None,
            keep_states: bool = False) -> Episode:
    """Run ``policy`` (observation -> action) for one episode from ``env.reset(seed=seed)``."""
    obs, _ = env.reset(seed=seed)
    episode, done = Episode(), False
    while not done:
        if keep_states:
            episode.states.append(obs)
        obs, reward, terminated, truncated, _ = env.step(policy(obs))
        episode.rewards.append(float(reward))
        done = terminated or truncated
    return episode


def evaluation_episodes(agent, env, episodes: int, seed: int | None = None,
                        keep_states: bool = False) -> list[Episode]:
    """``episodes`` noise-free episodes of ``agent`` in ``env``; episode i is reset with ``seed + i``."""
    if isinstance(episodes, bool) or not isinstance(episodes, (int, np.integer)) or episodes < 1:
        raise ValueError(f"episodes={episodes!r} is invalid: it must be an integer >= 1.")
    return [rollout(env, agent.act, None if seed is None else seed + i, keep_states=keep_states)
            for i in range(episodes)]


def evaluate(agent, env_or_id, episodes: int = 10, seed: int | None = None) -> np.ndarray:
    """Returns of ``episodes`` noise-free episodes; episode i is reset with ``seed + i``.

    ``env_or_id`` is an environment (used as it is, wrappers included, and
    left open) or an id (made here and closed).
    """
    with opened_env(env_or_id) as env:
        return np.array([e.total for e in evaluation_episodes(agent, env, episodes, seed)])


def returns_to_go(rewards, discount: float) -> np.ndarray:
    """G_t = r_t + discount * G_{t+1} for every t of one episode (G after the last step is 0)."""
    g, out = 0.0, np.zeros(len(rewards))
    for t in range(len(rewards) - 1, -1, -1):
        g = float(rewards[t]) + discount * g
        out[t] = g
    return out


def critic_values(agent, states) -> tuple[np.ndarray, np.ndarray]:
    """Q1(s, pi(s)) and Q2(s, pi(s)) of a TD3 ``agent`` on ``states``, as arrays."""
    s = torch.as_tensor(np.asarray(states, dtype=np.float32), device=agent.device)
    with torch.no_grad():
        q1, q2 = agent.critic(s, agent.actor(s))
    return q1.squeeze(-1).cpu().numpy(), q2.squeeze(-1).cpu().numpy()
