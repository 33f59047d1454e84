"""Lesson 02's exercise checks: ``check_bias_from_rollout``."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import torch

from ...agent import TD3


FALLS_AT = 37
"""The step at which the second episode of ``check_bias_from_rollout`` ends, ``terminated``, like a hopper
that falls; the first is Pendulum's own, cut by its time limit (``truncated``) at step 200."""


class SteppedAfterEnd(RuntimeError):
    """An episode was stepped before its reset or after its end."""


class EndGuard(gym.Wrapper):
    """Refuses a step before the first reset or after the episode ended (``terminated`` or ``truncated``);
    with ``falls_at``, ends the episode at that step, ``terminated``."""

    def __init__(self, env, falls_at: int | None = None):
        super().__init__(env)
        self.falls_at, self.t, self.ended = falls_at, 0, None

    def reset(self, **kwargs):
        self.t, self.ended = 0, False
        return self.env.reset(**kwargs)

    def step(self, action):
        if self.ended is None:
            raise SteppedAfterEnd("it stepped the environment before resetting it: start with env.reset(seed=seed)")
        if self.ended:
            raise SteppedAfterEnd(f"it stepped on after the episode ended at step {self.t}: stop when "
                                  "terminated or truncated")
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.t += 1
        terminated = terminated or self.t == self.falls_at
        self.ended = terminated or truncated
        return obs, reward, terminated, truncated, info


def bias_exercise_agent(seed: int = 0):
    """A DDPG agent on Pendulum-v1, 200 updates into training, so that its critic and its target differ."""
    from ...buffer import ReplayBuffer
    from ...config import preset
    from ...envs import make_env

    config = dataclasses.replace(preset("Pendulum-v1"), clipped_double_q=False, target_policy_smoothing=False,
                                 delayed_policy_updates=False)
    env, rng = make_env("Pendulum-v1"), np.random.default_rng(seed)
    torch.manual_seed(seed)
    agent, buffer = TD3(3, env.action_space.low, env.action_space.high, config), ReplayBuffer(3, 1, 400)
    obs, _ = env.reset(seed=seed)
    for _ in range(400):
        action = rng.uniform(-2.0, 2.0, size=1).astype(np.float32)
        next_obs, reward, terminated, truncated, _ = env.step(action)
        buffer.add(obs, action, reward, next_obs, terminated)
        obs = env.reset()[0] if terminated or truncated else next_obs
    generator = torch.Generator().manual_seed(seed)
    for _ in range(200):
        agent.update(buffer.sample(64, generator=generator))
    return agent


def as_values(x) -> np.ndarray:
    """A learner's array, list or tensor as a flat float array."""
    return np.asarray(x.detach().cpu() if isinstance(x, torch.Tensor) else x, dtype=float).reshape(-1)


def return_slip(got, rewards, discount: float) -> str:
    """What returns that are not the discounted returns-to-go look like."""
    from ..analysis import returns_to_go

    slips = {"the plain sum of the rewards from s_t on: weigh the reward k steps ahead by discount ** k":
             returns_to_go(rewards, 1.0),
             "accumulated forwards, from the first step: the return from s_t holds the rewards from t on, so "
             "run the loop from the last step back to the first": returns_to_go(rewards[::-1], discount)[::-1],
             "missing the last reward: the return from the last state is its own reward, as nothing follows":
             np.append(returns_to_go(rewards[:-1], discount), 0.0),
             "one step late: G_t starts with r_t, the reward for the action taken in s_t":
             np.append(returns_to_go(rewards, discount)[1:], 0.0)}
    return next((f"your returns are {name}." for name, wrong in slips.items() if np.allclose(got, wrong)),
                "your returns are not the discounted returns-to-go of the noise-free policy's episode "
                "(agent.act(obs), from env.reset(seed=seed)).")


def estimate_slip(got, agent, states) -> str:
    """What estimates that are not Q1(s, pi(s)) look like."""
    s = torch.as_tensor(np.asarray(states, dtype=np.float32), device=agent.device)
    with torch.no_grad():
        slips = {"the target critic's: measure the critic the actor climbs, agent.critic.q1":
                 (agent.critic_target.q1(s, agent.actor_target(s)), agent.critic_target.q1(s, agent.actor(s))),
                 "Q2's: the estimate is Q1(s, pi(s))": (agent.critic(s, agent.actor(s))[1],),
                 "one state late: pair each state with its own estimate": (agent.critic.q1(s[1:], agent.actor(s[1:])),)}
    for name, values in slips.items():
        if any(np.allclose(got[:len(v)], as_values(v), rtol=1e-4, atol=1e-4) for v in values):
            return f"your estimates are {name}."
    return "your estimates are not Q1(s, pi(s)) at the noise-free action pi(s) = agent.actor(s)."


def check_bias_from_rollout(fn) -> str:
    """Lesson 02: ``fn(agent, env, seed)`` runs the noise-free policy for one episode from ``env.reset(seed=
    seed)`` and returns (estimates, returns), one of each per state the agent acted in: Q1(s_t, pi(s_t)) and
    the discounted return from s_t to the episode's end. Tried on an episode cut by the time limit and on
    one that ends ``terminated`` (at step ``FALLS_AT``)."""
    from ...envs import make_env
    from ...rollout import rollout
    from ..analysis import critic_values, returns_to_go

    agent = bias_exercise_agent()
    for seed, falls_at, how in ((10_000, None, "cut by the time limit"), (10_001, FALLS_AT, "ended by a fall")):
        with EndGuard(make_env("Pendulum-v1"), falls_at) as env:
            episode = rollout(env, agent.act, seed=seed, keep_states=True)
        n, true, (q1, _) = len(episode), returns_to_go(episode.rewards, agent.config.discount), critic_values(agent, episode.states)
        name = f"{getattr(fn, '__name__', 'your function')}(agent, env, seed={seed})"
        try:
            with EndGuard(make_env("Pendulum-v1"), falls_at) as env:
                result = fn(agent, env, seed)
            if result is None:
                return f"Not yet: {name} returned None; return the pair (estimates, returns)."
            estimates, returns = (as_values(x) for x in result)
        except NotImplementedError:
            return f"Not yet: {name} raised NotImplementedError: write its body."
        except SteppedAfterEnd as error:
            return f"Not yet: on the episode from reset seed {seed} ({how} at step {n}), {error}."
        except Exception as error:  # a slip or a wrong return: a verdict, never a raise
            return f"Not yet: {name} raised {type(error).__name__}: {error}"
        if len(estimates) != n or len(returns) != n:
            return (f"Not yet: from reset seed {seed} the agent acts in {n} states ({how} at step {n}); you give "
                    f"{len(estimates)} estimates and {len(returns)} returns: one of each per state.")
        if not np.allclose(returns, true, rtol=1e-4, atol=1e-4):
            return f"Not yet: from reset seed {seed}, " + return_slip(returns, np.array(episode.rewards), agent.config.discount)
        if not np.allclose(estimates, q1, rtol=1e-4, atol=1e-4):
            return f"Not yet: from reset seed {seed}, " + estimate_slip(estimates, agent, episode.states)
    return ("Right: on an episode cut by the time limit and on one that ends in a fall, your estimates are "
            "Q1(s, pi(s)) and your returns the discounted returns from each state to the episode's end.")
