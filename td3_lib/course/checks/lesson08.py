"""The checks of lesson 08's two exercises, each written so that the lesson's pitfalls fail it.

``check_collect`` runs the learner's ``collect(env, actor, buffer, steps, expl_noise, rng)``, TD3's
interaction with the environment, on ``TwoEndings``: a small task whose episodes end one of two ways
(a goal reached, ``terminated``; a time limit, ``truncated``) and whose two action dimensions have
different bounds. It reads back what the learner stored: one transition a step, each next state the
one that followed, ``not_done`` 0 at goals only, actions inside each dimension's bounds, and noise of
mean 0 and spread ``expl_noise`` times each dimension's half-range.

``check_critic_loss`` compares the learner's ``critic_loss(agent, batch, target_q)`` with TD3's
``MSE(Q1, y) + MSE(Q2, y)``, loss and gradients, on two agents and minibatches. While it runs, a
profile hook watches for TD3's own loss (``critic_loss``, ``critic_step``), however it is reached, so
the check cannot be passed by calling it.

Each verdict is one sentence that starts "Right" or "Not yet" and names what to look at, never the
answer. ``td3_lib.course.checks`` is where the lessons import them from.
"""

from __future__ import annotations

import warnings
from typing import Callable

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F

from ...agent import TD3
from ...buffer import Batch, ReplayBuffer
from ...config import TD3Config
from .calls import watched_call


# ------------------------------------------------------------------ the interaction loop
class TwoEndings(gym.Env):
    """Episodes that alternate between two endings: even ones reach a goal at step 5 (``terminated``),
    odd ones hit a time limit at step 7 (``truncated``). The state is (episode, step); the reward is
    10 * episode + step + a_0 + a_1, so a stored reward can be traced to its state and action. Action
    bounds [-1, 1] and [0, 4]: the two dimensions differ in width and in centre."""

    GOAL, LIMIT = 5, 7
    observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    action_space = gym.spaces.Box(np.array([-1.0, 0.0], np.float32), np.array([1.0, 4.0], np.float32))

    def __init__(self):
        self.episode, self.t, self.ended = -1, 0, True

    def state(self) -> np.ndarray:
        return np.array([self.episode, self.t], np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episode, self.t, self.ended = self.episode + 1, 0, False
        return self.state(), {}

    def step(self, action):
        if self.ended:
            raise RuntimeError("step() before reset(), or after the episode ended: reset after terminated or truncated")
        reward = 10.0 * self.episode + self.t + float(np.sum(action))
        self.t += 1
        terminated = self.episode % 2 == 0 and self.t == self.GOAL
        truncated = not terminated and self.t == self.LIMIT
        self.ended = terminated or truncated
        return self.state(), reward, terminated, truncated, {}


def run_collect(collect: Callable, mu: np.ndarray, expl_noise: float, steps: int = 2_000) -> ReplayBuffer:
    """The buffer ``collect`` fills on a fresh ``TwoEndings``, acting around the constant ``mu``."""
    buffer = ReplayBuffer(2, 2, steps + 10)
    collect(TwoEndings(), lambda obs: mu.copy(), buffer, steps, expl_noise, np.random.default_rng(0))
    return buffer


def transitions_problem(buffer: ReplayBuffer, steps: int) -> str | None:
    """What is wrong with the stored states, rewards and terminal flags; None when nothing is."""
    if len(buffer) != steps:
        return f"the buffer holds {len(buffer):,} transitions after {steps:,} steps: store one per step."
    n = len(buffer)
    obs, next_obs, action = buffer.obs[:n].numpy(), buffer.next_obs[:n].numpy(), buffer.action[:n].numpy()
    if not np.array_equal(next_obs, obs + [0.0, 1.0]):
        return "some stored next_obs is not the state that followed obs (a reset state, or obs not moved on)."
    if not np.allclose(buffer.reward[:n, 0].numpy(), 10 * obs[:, 0] + obs[:, 1] + action.sum(1), atol=1e-3):
        return "a stored reward does not belong to the stored action: store the action you stepped with."
    goal = (obs[:, 0] % 2 == 0) & (next_obs[:, 1] == TwoEndings.GOAL)
    limit = (obs[:, 0] % 2 == 1) & (next_obs[:, 1] == TwoEndings.LIMIT)
    not_done = buffer.not_done[:n, 0].numpy()
    if np.any(not_done[~goal & ~limit] == 0):
        return "a step in the middle of an episode is stored as terminal: pass terminated itself (add() flips it)."
    if np.any(not_done[limit] == 0):
        return "a transition cut by the time limit is stored as terminal: pass terminated, not truncated."
    if np.any(not_done[goal] == 1):
        return "a goal reached is stored as not terminal: pass terminated."
    return None


def bounds_problem(collect: Callable) -> str | None:
    """What is wrong with the clipping, acting near the top of dimension 1's range; None when nothing is."""
    low, high = TwoEndings.action_space.low, TwoEndings.action_space.high
    action = run_collect(collect, np.array([0.9, 3.8], np.float32), 0.5).action[:2_000].numpy()
    if np.any(action < low - 1e-6) or np.any(action > high + 1e-6):
        return "an action leaves its bounds: clip each dimension to its own low and high."
    if action[:, 1].max() < high[1] - 1e-6:
        return (f"dimension 1 never goes above {action[:, 1].max():.2f}, though its high is {high[1]:.0f}: "
                "clip each dimension to its own bounds.")
    return None


def noise_problem(noise: np.ndarray, want: np.ndarray) -> str | None:
    """What is wrong with the exploration ``noise`` (actions minus mu, nothing clipped), whose spread per
    dimension should be ``want``; None when nothing is."""
    if np.any(np.abs(noise.mean(0)) > 4 * want / np.sqrt(len(noise))):
        return (f"the noise averages {np.array2string(noise.mean(0), precision=3)}, not 0: draw it from a "
                "Gaussian centred at 0.")
    spread = noise.std(0)
    if np.any(np.abs(spread / want - 1) > 0.1):
        return (f"the noise's spread is {np.array2string(spread, precision=3)} per dimension, not "
                f"{np.array2string(want, precision=3)}: a Gaussian whose standard deviation is expl_noise times "
                "each dimension's half-range.")
    return None


def check_collect(collect: Callable) -> str:
    """Whether ``collect(env, actor, buffer, steps, expl_noise, rng)`` is TD3's interaction loop, in
    one message ("Right: ..." or "Not yet: ...")."""
    mu, expl_noise, steps = np.array([0.0, 2.0], np.float32), 0.1, 2_000  # 10 spreads from the bounds
    want = expl_noise * (TwoEndings.action_space.high - TwoEndings.action_space.low) / 2
    try:
        buffer = run_collect(collect, mu, expl_noise, steps)
        problem = (transitions_problem(buffer, steps) or bounds_problem(collect)
                   or noise_problem(buffer.action[:steps].numpy() - mu, want))
    except NotImplementedError:
        return "Not yet: collect raised NotImplementedError: write its body."
    except Exception as e:  # the learner's code, whatever it raises: a verdict, never a traceback
        return f"Not yet: collect raised {type(e).__name__}: {e}"
    if problem:
        return f"Not yet: {problem}"
    return ("Right: Gaussian noise scaled to each dimension, clipped to its bounds, and only a goal "
            "stored as terminal.")


# ------------------------------------------------------------------ the critic loss
OWN_LOSS = (TD3.critic_loss.__code__, TD3.critic_step.__code__)
"""TD3's own critic loss, seen by its code objects: on the agent, through the class or a saved reference."""


def loss_case(seed: int) -> tuple:
    """An agent with unequal bounds, a random minibatch of 64 and its target y, the critics' weights,
    TD3's loss on them and the loss of the broadcast slip, and TD3's gradient for each weight."""
    torch.manual_seed(seed)
    agent = TD3(3, [-2.0, 0.0], [2.0, 1.0], TD3Config(hidden_sizes=(32, 32)))
    g = torch.Generator().manual_seed(seed)
    batch = Batch(torch.randn(64, 3, generator=g), torch.rand(64, 2, generator=g) * 2 - 1,
                  torch.randn(64, 1, generator=g), torch.randn(64, 3, generator=g), torch.ones(64, 1))
    y = agent.target_q(batch)
    params = list(agent.critic.parameters())
    q1, q2 = agent.critic(batch.obs, batch.action)
    want = F.mse_loss(q1, y) + F.mse_loss(q2, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's warning for the broadcast, the slip this value names
        broadcast = (F.mse_loss(q1, y.squeeze(-1)) + F.mse_loss(q2, y.squeeze(-1))).detach()
    return agent, batch, y, params, (want, broadcast), torch.autograd.grad(want, params)



def loss_problem(got, params: list, losses: tuple, want_grads: tuple) -> str | None:
    """What is wrong with the loss ``got`` against TD3's (``losses``: TD3's and the broadcast slip's),
    in one sentence; None when nothing is."""
    want, broadcast = losses
    if not torch.is_tensor(got) or got.numel() != 1:
        return "return the loss as a tensor holding one number."
    grads = torch.autograd.grad(got.reshape(()), params, allow_unused=True) if got.requires_grad else [None]
    if all(g is None or not g.any() for g in grads):
        return "no gradient reaches agent.critic: the loss must come from agent.critic's outputs."
    if not any(g is not None and g[1].any() for g in grads):  # index 1 of the stacked weights: Q2
        return "Q2 gets no gradient, so it never trains: is current_q2 in the loss?"
    if torch.allclose(got.reshape(()), broadcast, rtol=1e-5):
        return (f"your loss is {got.item():.4f}, TD3's {want.item():.4f}: compare the shapes of the critic's "
                "output and of y (an (N, 1) against an (N,) broadcasts).")
    if not torch.allclose(got.reshape(()), want, rtol=1e-5):
        return (f"your loss is {got.item():.4f}, TD3's {want.item():.4f}: each critic's loss is a mean of "
                "squared errors, and the loss is the sum of the two.")
    if not all(g is not None and torch.allclose(g, w, rtol=1e-4, atol=1e-7) for g, w in zip(grads, want_grads)):
        return "the loss matches TD3's, but its gradients do not."
    return None


def check_critic_loss(fn: Callable) -> str:
    """Whether ``fn(agent, batch, target_q)`` is TD3's critic loss, in one message ("Right: ..." or "Not yet: ...")."""
    for seed in (0, 1):
        agent, batch, y, params, losses, want_grads = loss_case(seed)
        got, problem, called_own = watched_call(fn, OWN_LOSS, agent, batch, y)
        if problem:
            return problem
        if called_own:
            return "Not yet: critic_loss calls TD3's own critic loss; write the two losses yourself."
        problem = loss_problem(got, params, losses, want_grads)
        if problem:
            return f"Not yet: {problem}"
    return "Right: both critics regress onto y, each Q(s, a) against its own target."
