"""Lesson 03's exercise checks (``td3_lib.course.checks``) say "Right" to a right solution and "Not yet" to
each wrong one (a plausible slip), and the lesson calls its check and defines none."""

from __future__ import annotations

import inspect
import sys
import textwrap

import torch

from checks_helpers import assert_calls_its_checks, assert_verdicts
from td3_lib.course import checks


LOSS_03 = """
    def twin_critic_loss(agent, batch, discount):
        with torch.no_grad():
            next_action = {actor}(batch.next_obs)
            target_q1, target_q2 = {critic}(batch.next_obs, next_action)
            next_q = {pick}
            y = batch.reward + {target}
        current_q1, current_q2 = agent.critic(batch.obs, batch.action)
        return {loss}
"""
RIGHT_03 = dict(actor="agent.actor_target", critic="agent.critic_target", pick="torch.minimum(target_q1, target_q2)",
                target="discount * batch.not_done * next_q", loss="F.mse_loss(current_q1, y) + F.mse_loss(current_q2, y)")


def twin_loss(**change) -> str:
    return textwrap.dedent(LOSS_03).format(**{**RIGHT_03, **change})


def test_03_twin_critic_loss():
    assert_verdicts(checks.check_twin_critic_loss, "twin_critic_loss", [
        twin_loss(),
        twin_loss(pick="torch.where(target_q1 < target_q2, target_q1, target_q2)",
                  loss="((current_q1 - y) ** 2).mean() + ((current_q2 - y) ** 2).mean()"),
        """
        def twin_critic_loss(agent, batch, discount):
            from td3_lib import clipped_double_q
            next_q = clipped_double_q(*agent.critic_target(batch.next_obs, agent.actor_target(batch.next_obs)))
            y = bellman_target(batch.reward, batch.not_done, next_q, discount).detach()
            return sum(F.mse_loss(q, y) for q in agent.critic(batch.obs, batch.action))
        """,
    ], {
        "the stub": "def twin_critic_loss(agent, batch, discount):\n    raise NotImplementedError",
        "returns None": "def twin_critic_loss(agent, batch, discount):\n    return None",
        "max instead of min": twin_loss(pick="torch.maximum(target_q1, target_q2)"),
        "the mean of the two": twin_loss(pick="(target_q1 + target_q2) / 2"),
        "DDPG's target, Q1' alone": twin_loss(pick="target_q1"),
        "Q2' alone": twin_loss(pick="target_q2"),
        "min of the current critics": twin_loss(critic="agent.critic"),
        "the current actor": twin_loss(actor="agent.actor"),
        "each critic to its own target": """
            def twin_critic_loss(agent, batch, discount):
                with torch.no_grad():
                    target_q1, target_q2 = agent.critic_target(batch.next_obs, agent.actor_target(batch.next_obs))
                    y1 = batch.reward + discount * batch.not_done * target_q1
                    y2 = batch.reward + discount * batch.not_done * target_q2
                current_q1, current_q2 = agent.critic(batch.obs, batch.action)
                return F.mse_loss(current_q1, y1) + F.mse_loss(current_q2, y2)
        """,
        "one critic only": twin_loss(loss="F.mse_loss(current_q1, y)"),
        "Q2 only": twin_loss(loss="F.mse_loss(current_q2, y)"),
        "Q1 twice (lesson 08's pitfall)": twin_loss(loss="F.mse_loss(current_q1, y) + F.mse_loss(current_q1, y)"),
        "the two averaged": twin_loss(loss="(F.mse_loss(current_q1, y) + F.mse_loss(current_q2, y)) / 2"),
        "sums, not means": twin_loss(loss="((current_q1 - y) ** 2).sum() + ((current_q2 - y) ** 2).sum()"),
        "no torch.no_grad()": """
            def twin_critic_loss(agent, batch, discount):
                target_q1, target_q2 = agent.critic_target(batch.next_obs, agent.actor_target(batch.next_obs))
                y = batch.reward + discount * batch.not_done * torch.minimum(target_q1, target_q2)
                current_q1, current_q2 = agent.critic(batch.obs, batch.action)
                return F.mse_loss(current_q1, y) + F.mse_loss(current_q2, y)
        """,
        "not_done missing": twin_loss(target="discount * next_q"),
        "the discount missing": twin_loss(target="batch.not_done * next_q"),
        "the target squeezed": twin_loss(loss="F.mse_loss(current_q1, y.squeeze()) + F.mse_loss(current_q2, y.squeeze())"),
        "a number, not a tensor": twin_loss(loss="(F.mse_loss(current_q1, y) + F.mse_loss(current_q2, y)).item()"),
        "the loss detached": twin_loss(loss="(F.mse_loss(current_q1, y) + F.mse_loss(current_q2, y)).detach()"),
        "td3_lib's own target and loss": """
            def twin_critic_loss(agent, batch, discount):
                return agent.critic_loss(batch.obs, batch.action, agent.target_q(batch))[0]
        """,
        "td3_lib's own loss through the class": """
            def twin_critic_loss(agent, batch, discount):
                own = type(agent).critic_loss
                with torch.no_grad():
                    y = batch.reward + discount * batch.not_done * torch.minimum(*agent.critic_target(
                        batch.next_obs, agent.actor_target(batch.next_obs)))
                return own(agent, batch.obs, batch.action, y)[0]
        """,
        "the optimiser stepped too": """
            def twin_critic_loss(agent, batch, discount):
                with torch.no_grad():
                    y = batch.reward + discount * batch.not_done * torch.minimum(*agent.critic_target(
                        batch.next_obs, agent.actor_target(batch.next_obs)))
                loss = sum(F.mse_loss(q, y) for q in agent.critic(batch.obs, batch.action))
                agent.critic_optimizer.zero_grad()
                loss.backward()
                agent.critic_optimizer.step()
                return loss
        """,
    }, {"the stub": "still the stub", "returns None": "None", "max instead of min": "larger",
        "the mean of the two": "averages", "DDPG's target, Q1' alone": "DDPG", "Q2' alone": "Q2' alone",
        "min of the current critics": "agent.critic_target", "the current actor": "agent.actor_target",
        "each critic to its own target": "one target", "one critic only": "only Q1", "Q2 only": "only Q2",
        "Q1 twice (lesson 08's pitfall)": "twice", "the two averaged": "half", "sums, not means": "mean",
        "no torch.no_grad()": "no_grad", "not_done missing": "not_done", "the discount missing": "discount",
        "the target squeezed": "shapes", "a number, not a tensor": "tensor", "the loss detached": "graph",
        "td3_lib's own target and loss": "yourself", "td3_lib's own loss through the class": "yourself",
        "the optimiser stepped too": "changed the networks"})


def test_03_the_check_compares_with_td3_libs_own_loss():
    """The reference is TD3.target_q and TD3.critic_loss of DDPG + clipped double Q; the case's target networks
    stand apart from the networks and keep requires_grad, each target critic is the smaller on some
    transitions, and some transitions ended (else the slips could not show)."""
    module = sys.modules[checks.check_twin_critic_loss.__module__]
    source = inspect.getsource(module.gradients_problem)
    assert "critic_loss(" in source and "target_q(" in source
    agent, batch = module.loss_case(0)
    assert agent.config.clipped_double_q and not agent.config.target_policy_smoothing
    assert not any(torch.equal(p, q) for p, q in zip(agent.critic.parameters(), agent.critic_target.parameters()))
    assert all(p.requires_grad for p in agent.critic_target.parameters())
    with torch.no_grad():
        q1, q2 = agent.critic_target(batch.next_obs, agent.actor_target(batch.next_obs))
    assert (q1 < q2).any() and (q2 < q1).any()
    assert (batch.not_done == 0).any() and (batch.not_done == 1).any()


def test_03_the_lesson_calls_its_check_and_defines_none():
    assert_calls_its_checks("03", {"twin_critic_loss": "raise NotImplementedError"})
