"""Lesson 05's exercise checks (``td3_lib.course.checks``) say "Right" to a right solution and "Not yet" to
each wrong one (a plausible slip)."""

from __future__ import annotations

import pytest
import torch

from td3_lib import soft_update
from td3_lib.course.checks import check_delayed_update


def delayed_update(agent, batch, it, d, tau):  # the lesson's solution
    if it % d == 0:
        agent.policy_step(batch)
        for net, target in ((agent.critic, agent.critic_target), (agent.actor, agent.actor_target)):
            for p, p_target in zip(net.parameters(), target.parameters()):
                p_target.data.copy_(tau * p.data + (1 - tau) * p_target.data)


def blend(net, target, weight):
    for p, p_target in zip(net.parameters(), target.parameters()):
        p_target.data.copy_(weight * p.data + (1 - weight) * p_target.data)


def lerp_update(agent, batch, it, d, tau):
    if it % d == 0:
        agent.policy_step(batch)
        with torch.no_grad():
            for net, target in ((agent.critic, agent.critic_target), (agent.actor, agent.actor_target)):
                for p, p_target in zip(net.parameters(), target.parameters()):
                    p_target.lerp_(p, tau)


def stub(agent, batch, it, d, tau):
    ...


def not_written(agent, batch, it, d, tau):
    raise NotImplementedError


def swapped(agent, batch, it, d, tau):
    if it % d == 0:
        agent.policy_step(batch)
        blend(agent.critic, agent.critic_target, 1 - tau)
        blend(agent.actor, agent.actor_target, 1 - tau)


def every_step(agent, batch, it, d, tau):
    if it % d == 0:
        agent.policy_step(batch)
    blend(agent.critic, agent.critic_target, tau)
    blend(agent.actor, agent.actor_target, tau)


def everything_every_step(agent, batch, it, d, tau):
    agent.policy_step(batch)
    blend(agent.critic, agent.critic_target, tau)
    blend(agent.actor, agent.actor_target, tau)


def off_by_one(agent, batch, it, d, tau):
    if (it + 1) % d == 0:
        agent.policy_step(batch)
        blend(agent.critic, agent.critic_target, tau)
        blend(agent.actor, agent.actor_target, tau)


def counts_from_zero(agent, batch, it, d, tau):
    if (it - 1) % d == 0:
        agent.policy_step(batch)
        blend(agent.critic, agent.critic_target, tau)
        blend(agent.actor, agent.actor_target, tau)


def no_critic_target(agent, batch, it, d, tau):
    if it % d == 0:
        agent.policy_step(batch)
        blend(agent.actor, agent.actor_target, tau)


def no_actor_target(agent, batch, it, d, tau):
    if it % d == 0:
        agent.policy_step(batch)
        blend(agent.critic, agent.critic_target, tau)


def copied(agent, batch, it, d, tau):
    if it % d == 0:
        agent.policy_step(batch)
        agent.critic_target.load_state_dict(agent.critic.state_dict())
        agent.actor_target.load_state_dict(agent.actor.state_dict())


def targets_before_the_actor(agent, batch, it, d, tau):
    if it % d == 0:
        blend(agent.critic, agent.critic_target, tau)
        blend(agent.actor, agent.actor_target, tau)
        agent.policy_step(batch)


def rebinds(agent, batch, it, d, tau):
    if it % d == 0:
        agent.policy_step(batch)
        for net, target in ((agent.critic, agent.critic_target), (agent.actor, agent.actor_target)):
            for p, p_target in zip(net.parameters(), target.parameters()):
                p_target = tau * p + (1 - tau) * p_target  # noqa: F841  (a new tensor; the target keeps its own)


def config_tau(agent, batch, it, d, tau):
    if it % d == 0:
        agent.policy_step(batch)
        blend(agent.critic, agent.critic_target, agent.config.tau)
        blend(agent.actor, agent.actor_target, agent.config.tau)


def the_library(agent, batch, it, d, tau):
    if it % d == 0:
        agent.policy_step(batch)
        soft_update((agent.critic, agent.actor), (agent.critic_target, agent.actor_target), tau)


def two_actor_steps(agent, batch, it, d, tau):
    if it % d == 0:
        agent.policy_step(batch)
        delayed_update(agent, batch, it, d, tau)


@pytest.mark.parametrize("right", [delayed_update, lerp_update])
def test_05_the_delayed_update_is_right(right):
    assert check_delayed_update(right).startswith("Right")


@pytest.mark.parametrize("slip, says", [
    (stub, "nothing moved at update 2"), (not_written, "raised NotImplementedError"),
    (swapped, "tau and 1 - tau are swapped"), (every_step, "critic_target moved at update 1"),
    (everything_every_step, "the actor stepped"), (off_by_one, "the actor stepped"),
    (counts_from_zero, "the actor stepped"), (no_critic_target, "critic_target did not move"),
    (no_actor_target, "actor_target did not move"), (copied, "is a copy of the learned network"),
    (targets_before_the_actor, "actor_target blended towards the network before its step"), (rebinds, "critic_target did not move at update 2"),
    (config_tau, "is not tau * theta"), (the_library, "calls td3_lib's own soft update"),
    (two_actor_steps, "differs from agent.policy_step")])
def test_05_each_slip_in_the_delayed_update_is_not_yet(slip, says):
    verdict = check_delayed_update(slip)
    assert verdict.startswith("Not yet") and says in verdict, verdict
