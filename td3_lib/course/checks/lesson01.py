"""Lesson 01's exercise checks: ``check_critic_update``."""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F

from ...agent import TD3
from ...buffer import Batch
from ...config import TD3Config
from .calls import OWN_CRITIC_STEPS, watched_call


DDPG = TD3Config(hidden_sizes=(32, 32), clipped_double_q=False, target_policy_smoothing=False,
                 delayed_policy_updates=False, discount=0.8)
"""The agent of lesson 01's check: DDPG, small networks, a discount far enough from 1 to be seen."""
CRITIC_SLIPS = {
    "truncated ends": "truncated transitions stop your target: only terminated ends the sum, a time limit does not.",
    "never ends": "your target looks past terminated transitions: multiply Q' by not_done = 1 - terminated.",
    "no discount": "your target leaves out the discount: y = r + discount * not_done * Q'(s', a').",
    "the critic": "your target asks agent.critic; ask the slow copy, agent.critic_target.",
    "the actor": "your target action comes from agent.actor; take it from agent.actor_target.",
    "minus": "your target subtracts the next value: y = r + discount * not_done * Q'(s', a').",
    "negated": "your loss is the squared error with a minus sign: the critic goes *down* (Q - y)**2.",
}


class Transitions(NamedTuple):
    """A minibatch as the environment reported it: one row per transition; both flags 1.0 or 0.0."""

    obs: torch.Tensor
    action: torch.Tensor
    reward: torch.Tensor
    next_obs: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor


def critic_case(seed: int):
    """A DDPG agent whose target networks differ from its networks and keep requires_grad (as a plain
    copy.deepcopy leaves them), a plain SGD optimiser (a weight moves in proportion to its gradient),
    stale gradients in the critic (as a previous step leaves them), and 64 transitions with both flags."""
    torch.manual_seed(seed)
    agent = TD3(3, [-2.0, 0.0], [2.0, 1.0], DDPG)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in (*agent.critic_target.parameters(), *agent.actor_target.parameters()):
            p.add_(0.2 * torch.randn(p.shape, generator=g)).requires_grad_(True)
    agent.critic_optimizer = torch.optim.SGD(agent.critic.parameters(), lr=0.1)
    for p in agent.critic.parameters():
        p.grad = torch.randn(p.shape, generator=g)
    flags = (torch.rand(64, 2, generator=g) < 0.3).float()
    batch = Transitions(torch.randn(64, 3, generator=g), torch.rand(64, 2, generator=g) * 2 - 1,
                        torch.randn(64, 1, generator=g), torch.randn(64, 3, generator=g), flags[:, :1], flags[:, 1:])
    return agent, batch


def slip_losses(agent: TD3, b: Transitions, discount: float) -> dict[str, float]:
    """The critic's loss on ``b`` before any step, done right and with each slip of CRITIC_SLIPS."""
    with torch.no_grad():
        q = agent.critic.q1(b.obs, b.action)

        def loss(critic=agent.critic_target, actor=agent.actor_target, not_done=1 - b.terminated, d=discount, sign=1):
            return float(F.mse_loss(q, b.reward + sign * d * not_done * critic.q1(b.next_obs, actor(b.next_obs))))

        right = loss()
        return {"right": right, "truncated ends": loss(not_done=1 - torch.maximum(b.terminated, b.truncated)),
                "never ends": loss(not_done=1.0), "no discount": loss(d=1.0), "the critic": loss(critic=agent.critic),
                "the actor": loss(actor=agent.actor), "minus": loss(sign=-1), "negated": -right}



def weights(*modules) -> list[torch.Tensor]:
    return [p.detach().clone() for m in modules for p in m.parameters()]


def same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return all(torch.allclose(x, y, rtol=1e-4, atol=1e-6) for x, y in zip(a, b))


def critic_verdict(fn, seed: int) -> str | None:
    """What is wrong with ``fn`` on one case, in one "Not yet" sentence; None when its step is td3_lib's."""
    agent, b = critic_case(seed)
    reference, _ = critic_case(seed)
    reference.critic_step(Batch(b.obs, b.action, b.reward, b.next_obs, 1 - b.terminated))  # td3_lib's own step
    losses, before = slip_losses(agent, b, DDPG.discount), weights(agent.critic)
    others = weights(agent.actor, agent.critic_target, agent.actor_target)
    got, problem, called_own = watched_call(fn, OWN_CRITIC_STEPS, agent, b, DDPG.discount)
    if problem or called_own:
        return problem or f"Not yet: {fn.__name__} calls td3_lib's own critic step; write the steps yourself."
    if any(p.grad is not None for m in (agent.critic_target, agent.actor_target) for p in m.parameters()):
        return "Not yet: gradients reached the target networks: build the target under torch.no_grad()."
    if not same(others, weights(agent.actor, agent.critic_target, agent.actor_target)):
        return "Not yet: only agent.critic may move in this step; the actor and the target networks stay."
    try:
        loss = None if got is None else float(got.detach() if torch.is_tensor(got) else got)
    except (TypeError, ValueError, RuntimeError):
        return f"Not yet: return the loss, one number; yours returned {type(got).__name__}."
    slip = next((s for s, v in losses.items() if loss is not None and math.isclose(loss, v, rel_tol=1e-5)), None)
    if slip not in (None, "right"):
        return "Not yet: " + CRITIC_SLIPS[slip]
    if same(before, weights(agent.critic)):
        return "Not yet: the critic's weights did not move: call agent.critic_optimizer.step() after backward()."
    if slip is None:
        return (f"Not yet: your loss is {loss}, the critic's loss on this minibatch is {losses['right']:.4f}."
                if loss is not None else "Not yet: return the loss, so that training can log it.")
    if not same(weights(reference.critic), weights(agent.critic)):
        return ("Not yet: your loss is right, but the step is not td3_lib's: zero the old gradients "
                "(agent.critic_optimizer.zero_grad()), then backward(), then step().")
    return None


def check_critic_update(fn) -> str:
    """Whether ``fn(agent, batch, discount)`` takes DDPG's critic step, as td3_lib's own pieces take it on the
    same minibatch (two cases), in one sentence: "Right: ..." or "Not yet: ..." naming what to look at."""
    for seed in (0, 1):
        problem = critic_verdict(fn, seed)
        if problem:
            return problem
    return "Right: the target from the target networks, ended by terminated alone, and one step down the critic's loss."
