"""Quiet bugs of TD3 and DDPG code, each as the smallest change to a correct TD3 (lesson 08).

A pitfall that changes the agent is a subclass of ``TD3`` that overrides the one method the
bug lives in, and nothing else (pitfall 5 also thaws its target critic, as plain copies are, where
the bug is silent); a pitfall on the environment's side is a gymnasium wrapper.
``PITFALLS`` is the one table of them. Train one as any other agent::

    pitfall = PITFALLS["Q1 loss twice"]
    result = train(pitfall.make_env(), config, agent=pitfall.agent, seed=0)

Each pitfall is also a registered variant of its name (``td3_lib.sweep``), so an experiment
sweeps it over seeds like any other. td3_lib itself stays correct: nothing here changes ``TD3`` or ``train``. Pitfall 4 of the
lesson (``if seed:``, which skips seed 0) lives in a training script's seeding, not in the
agent or the environment, so it has no entry here; ``train`` seeds every seed, 0 included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import gymnasium as gym
import numpy as np
import torch.nn.functional as F

from ..agent import TD3
from ..envs import make_env
from ..sweep.variants import VARIANTS, Variant, register
from .tasks import TwoKnobs  # pitfall 2's task (lesson 08 imports it from here too)


class UniformDraws:
    """A numpy Generator whose ``normal`` draws what ``np.random.rand`` draws: uniform on [0, 1)."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def normal(self, loc=0.0, scale=1.0, size=None):
        return self.rng.random(size)  # the bug: mean 0.5, never negative


class UniformNoiseTD3(TD3):
    """Pitfall 1: exploration noise from ``np.random.rand`` (uniform on [0, 1)) instead of ``randn``."""

    def act(self, obs, noise: float = 0.0, rng: np.random.Generator | None = None) -> np.ndarray:
        if noise > 0:
            rng = UniformDraws(rng if rng is not None else np.random.default_rng())
        return super().act(obs, noise, rng)


class OneBoundTD3(TD3):
    """Pitfall 2: every action dimension scaled by ``high[0]``, as ``max_action = high[0]`` does."""

    def __init__(self, obs_dim, action_low, action_high, config=None, device="cpu"):
        super().__init__(obs_dim, action_low, action_high, config, device)
        for actor in (self.actor, self.actor_target):  # the bug: pi(s) = high[0] * tanh(f(s))
            actor.action_center.zero_()
            actor.action_half_range.fill_(float(self.action_high[0]))


class TimeLimitAsTerminal(gym.Wrapper):
    """Pitfall 3: a time limit reported as a terminal state, so the replay buffer stores it as one."""

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated or truncated, truncated, info  # the bug


class TargetCriticAsCurrentTD3(TD3):
    """Pitfall 5: the current Q taken from the target critic, so the critic is never trained.

    The bug is silent where the target networks are plain copies whose weights still require
    gradients (``copy.deepcopy`` leaves them so, as in the authors' code): ``backward()`` then
    fills the target critic's gradients, which no optimiser steps, and ``critic_optimizer``
    finds no gradient on the critic. td3_lib freezes its targets, and there the buggy line
    makes ``backward()`` raise; this class thaws the target critic to reproduce the silent
    version, and changes the loss's one line. The critic keeps its initial weights, and the
    soft updates pull the target towards them.
    """

    def __init__(self, obs_dim, action_low, action_high, config=None, device="cpu"):
        super().__init__(obs_dim, action_low, action_high, config, device)
        self.critic_target.requires_grad_(True)  # plain copies, as copy.deepcopy leaves them

    def critic_loss(self, obs, action, target_q):
        current_q1, current_q2 = self.critic_target(obs, action)  # the bug: self.critic
        critic_loss = F.mse_loss(current_q1.float(), target_q) + F.mse_loss(current_q2.float(), target_q)
        return critic_loss, current_q1


class Q1LossTwiceTD3(TD3):
    """Pitfall 6: Q1's loss counted twice, so Q2 is never trained (a copy-paste slip)."""

    def critic_loss(self, obs, action, target_q):
        current_q1, current_q2 = self.critic(obs, action)
        critic_loss = F.mse_loss(current_q1, target_q) + F.mse_loss(current_q1, target_q)  # the bug: q2
        return critic_loss, current_q1


class SqueezedTargetTD3(TD3):
    """Pitfall 7: the critic loss between Q of shape (N, 1) and a target squeezed to (N,).

    ``F.mse_loss`` broadcasts the two to an (N, N) matrix and averages (Q_i - y_j)^2
    over every pair, so each Q(s_i, a_i) is pulled towards the mean target of the
    batch; torch only warns ("Using a target size ...").
    """

    def critic_loss(self, obs, action, target_q):
        return super().critic_loss(obs, action, target_q.squeeze(-1))  # the bug: (N, 1) -> (N,)


@dataclass(frozen=True)
class Pitfall:
    """One bug: its number in lesson 08, its name (its label in the shipped results), the buggy
    line as it would read in code like the authors', and what reproduces it: an agent class, an
    env wrapper, or both."""

    number: int
    name: str
    line: str
    agent: type[TD3] = TD3
    wrapper: Callable[[gym.Env], gym.Env] | None = None
    env: str | Callable[[], gym.Env] = "Pendulum-v1"
    """Where lesson 08 measures it: an environment id, or a class for an unregistered task."""

    def make_env(self, env_id: str | None = None) -> gym.Env:
        """The pitfall's environment (or ``env_id``), with its wrapper when it has one."""
        source = env_id or self.env
        env = make_env(source) if isinstance(source, str) else source()
        return self.wrapper(env) if self.wrapper is not None else env

    def variant(self) -> Variant:
        """The pitfall as a sweep's variant of its name: TD3's switches, its agent class, and its
        wrapper around the grid's environment."""
        return Variant(self.name, VARIANTS["TD3"], agent=self.agent,
                       env=self.make_env if self.wrapper is not None else None)


PITFALLS: dict[str, Pitfall] = {p.name: p for p in (
    Pitfall(1, "uniform noise (rand)",
            "action = actor(state) + np.random.rand(action_dim) * expl_noise * max_action",
            agent=UniformNoiseTD3),
    Pitfall(2, "one bound (high[0])",
            "max_action = float(env.action_space.high[0])",
            agent=OneBoundTD3, env=TwoKnobs),
    Pitfall(3, "time limit as terminal",
            "replay_buffer.add(state, action, reward, next_state, terminated or truncated)",
            wrapper=TimeLimitAsTerminal),
    Pitfall(5, "target critic as current",
            "current_Q1, current_Q2 = critic_target(state, action)",
            agent=TargetCriticAsCurrentTD3),
    Pitfall(6, "Q1 loss twice",
            "critic_loss = mse(current_Q1, target_Q) + mse(current_Q1, target_Q)",
            agent=Q1LossTwiceTD3),
    Pitfall(7, "loss (N, 1) against (N,)",
            "critic_loss = mse(current_Q1, target_Q.squeeze())",
            agent=SqueezedTargetTD3),
)}
"""Name -> pitfall: the one table of the bugs that change the agent or the environment."""

for _pitfall in PITFALLS.values():  # each one a variant a sweep can run by its name
    register(_pitfall.variant())
