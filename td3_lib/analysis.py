"""Lessons 2, 3 and 5: measuring what the critic believes against what the policy earns."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .agent import TD3
from .envs import make_env
from .rollout import rollout
from .targets import clipped_double_q


def discounted_return(rewards, discount: float) -> float:
    """G_0 = sum_k discount^k * r_k."""
    g = 0.0
    for r in reversed(list(rewards)):
        g = float(r) + discount * g
    return g


def returns_to_go(rewards, discount: float) -> np.ndarray:
    """G_t = r_t + discount * G_{t+1} for every t of one episode (G after the last step is 0)."""
    g, out = 0.0, np.zeros(len(rewards))
    for t in range(len(rewards) - 1, -1, -1):
        g = float(rewards[t]) + discount * g
        out[t] = g
    return out


@dataclass
class ValueBias:
    """The critic's estimate against the true discounted return, on the same states."""

    estimate: float  # mean Q(s, mu(s)) over the states
    true_value: float  # mean discounted return collected from those states on
    n_states: int

    @property
    def bias(self) -> float:
        """estimate - true value: positive means overestimation."""
        return self.estimate - self.true_value


def value_bias(agent: TD3, env_or_id, episodes: int = 5, seed: int = 0, horizon: int | None = None,
               critic: str = "q1") -> ValueBias:
    """Measure the critic's bias: a small, cheaper version of the paper's Figure 1.

    Roll the noise-free policy out for ``episodes`` episodes (reset seeds
    ``seed``, ``seed + 1``, ...); on the first ``horizon`` states of each
    (default: half the episode, so the return still sees many steps ahead)
    compare Q(s, mu(s)) with the discounted return of that one rollout from s,
    cut at the episode's end. The paper instead averages over 10,000 states
    sampled from the replay buffer, each valued by 1,000 rollouts of the
    current policy. ``critic`` is "q1" or "min" (min of the twins).
    """
    discount = agent.config.discount
    env = make_env(env_or_id) if isinstance(env_or_id, str) else env_or_id
    estimates, truths = [], []
    try:
        for i in range(episodes):
            episode = rollout(env, agent.act, seed + i, keep_states=True)
            n = horizon or max(1, len(episode) // 2)
            truths.append(returns_to_go(episode.rewards, discount)[:n])
            s = torch.as_tensor(np.asarray(episode.states[:n], dtype=np.float32), device=agent.device)
            with torch.no_grad():
                q1, q2 = agent.critic(s, agent.actor(s))
                q = q1 if critic == "q1" else clipped_double_q(q1, q2)
            estimates.append(q.squeeze(-1).cpu().numpy())
    finally:
        if isinstance(env_or_id, str):
            env.close()
    est, true = np.concatenate(estimates), np.concatenate(truths)
    return ValueBias(float(est.mean()), float(true.mean()), int(est.size))
