"""The check of lesson 08's exercise: the learner's critic loss against TD3's.

The learner fixes ``critic_loss(agent, batch, target_q)``, which holds two of the lesson's
pitfalls (the target squeezed to shape (N,), and Q1's loss counted twice). ``check_critic_loss``
runs it on two agents and minibatches and compares the loss, and the gradient it gives each
critic, with TD3's ``MSE(Q1, y) + MSE(Q2, y)``. While it runs, a profile hook watches for TD3's own
loss (``critic_loss``, ``critic_step``), however it is reached, so the check cannot be passed by
calling it. Each verdict names what to look at, never the answer.
"""

from __future__ import annotations

import sys
import warnings
from typing import Callable

import torch
import torch.nn.functional as F

from ..agent import TD3
from ..buffer import Batch
from ..config import TD3Config

OWN_LOSS = (TD3.critic_loss.__code__, TD3.critic_step.__code__)
"""TD3's own critic loss, seen by its code objects: on the agent, through the class or a saved reference."""


def loss_case(seed: int) -> tuple:
    """An agent with unequal bounds, a random minibatch of 64 and its target y, the critics' weights,
    and TD3's loss on them with its gradient for each weight."""
    torch.manual_seed(seed)
    agent = TD3(3, [-2.0, 0.0], [2.0, 1.0], TD3Config(hidden_sizes=(32, 32)))
    g = torch.Generator().manual_seed(seed)
    batch = Batch(torch.randn(64, 3, generator=g), torch.rand(64, 2, generator=g) * 2 - 1,
                  torch.randn(64, 1, generator=g), torch.randn(64, 3, generator=g), torch.ones(64, 1))
    y = agent.target_q(batch)
    params = list(agent.critic.parameters())
    q1, q2 = agent.critic(batch.obs, batch.action)
    want = F.mse_loss(q1, y) + F.mse_loss(q2, y)
    return agent, batch, y, params, want, torch.autograd.grad(want, params)


def watched_call(fn: Callable, agent: TD3, batch: Batch, y: torch.Tensor) -> tuple:
    """``fn(agent, batch, y)``, and whether it called TD3's own loss (torch's broadcast warning is
    silenced: the check names that bug itself)."""
    calls, previous = [], sys.getprofile()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sys.setprofile(lambda frame, event, arg: calls.append(1) if event == "call" and frame.f_code in OWN_LOSS
                       else None)
        try:
            return fn(agent, batch, y), bool(calls)
        finally:
            sys.setprofile(previous)


def verdict(got, params: list, want: torch.Tensor, want_grads: tuple) -> str | None:
    """What is wrong with the loss ``got`` against TD3's, in one sentence; None when nothing is."""
    if not torch.is_tensor(got) or got.numel() != 1:
        return "return the loss as a tensor holding one number."
    grads = torch.autograd.grad(got.reshape(()), params, allow_unused=True) if got.requires_grad else [None]
    if all(g is None or not g.any() for g in grads):
        return "no gradient reaches agent.critic: the loss must come from agent.critic's outputs."
    if not any(g is not None and g[1].any() for g in grads):  # index 1 of the stacked weights: Q2
        return "Q2 gets no gradient, so it never trains: is current_q2 in the loss?"
    if not torch.allclose(got.reshape(()), want, rtol=1e-5):
        return (f"your loss is {got.item():.4f}, TD3's {want.item():.4f}: compare the shapes of the critic's "
                "output and of y (an (N, 1) against an (N,) broadcasts).")
    if not all(g is not None and torch.allclose(g, w, rtol=1e-4, atol=1e-7) for g, w in zip(grads, want_grads)):
        return "the loss matches TD3's, but its gradients do not."
    return None


def check_critic_loss(fn: Callable) -> str:
    """Whether ``fn(agent, batch, target_q)`` is TD3's critic loss, in one message ("Right: ..." or "Not yet: ...")."""
    for seed in (0, 1):
        agent, batch, y, params, want, want_grads = loss_case(seed)
        try:
            got, called_own = watched_call(fn, agent, batch, y)
        except Exception as e:
            return f"Not yet: critic_loss raised {type(e).__name__}: {e}"
        if called_own:
            return "Not yet: critic_loss calls TD3's own critic loss; write the two losses yourself."
        problem = verdict(got, params, want, want_grads)
        if problem:
            return f"Not yet: {problem}"
    return "Right: both critics regress onto y, each Q(s, a) against its own target."
