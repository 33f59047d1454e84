"""Lesson 01's exercise checks (``td3_lib.course.checks``) say "Right" to a right solution and "Not yet" to
each wrong one (a plausible slip), and the lesson calls its check and defines none."""

from __future__ import annotations

import inspect
import textwrap

import torch

from checks_helpers import assert_calls_its_checks, assert_verdicts
from td3_lib.course import checks
from td3_lib.course.checks import lesson01


STEP = """
    def critic_update(agent, batch, discount):
        with torch.no_grad():
            next_action = {actor}(batch.next_obs)
            next_q = {critic}.q1(batch.next_obs, next_action)
            y = batch.reward + {target}
        loss = {loss}
        {zero}
        loss.backward()
        {step}
        return {ret}
"""
RIGHT = dict(actor="agent.actor_target", critic="agent.critic_target",
             target="discount * (1 - batch.terminated) * next_q",
             loss="F.mse_loss(agent.critic.q1(batch.obs, batch.action), y)",
             zero="agent.critic_optimizer.zero_grad()", step="agent.critic_optimizer.step()", ret="loss")


def critic_step(**change) -> str:
    return textwrap.dedent(STEP).format(**{**RIGHT, **change})


def test_01_critic_update():
    assert_verdicts(checks.check_critic_update, "critic_update", [
        critic_step(),
        critic_step(ret="loss.item()", zero="agent.critic_optimizer.zero_grad(set_to_none=True)"),
        critic_step(loss="((agent.critic(batch.obs, batch.action)[0] - y) ** 2).mean()"),
        """
        def critic_update(agent, batch, discount):
            next_q, _ = agent.critic_target(batch.next_obs, agent.actor_target(batch.next_obs))
            y = bellman_target(batch.reward, 1.0 - batch.terminated, next_q, discount).detach()
            current_q, _ = agent.critic(batch.obs, batch.action)
            loss = F.mse_loss(current_q, y)
            agent.critic_optimizer.zero_grad()
            loss.backward()
            agent.critic_optimizer.step()
            agent.critic_optimizer.zero_grad()
            return loss
        """,
    ], {
        "the stub": "def critic_update(agent, batch, discount):\n    raise NotImplementedError",
        "nothing done": "def critic_update(agent, batch, discount):\n    return None",
        "done = terminated or truncated": critic_step(
            target="discount * (1 - torch.maximum(batch.terminated, batch.truncated)) * next_q"),
        "not_done forgotten": critic_step(target="discount * next_q"),
        "the discount forgotten": critic_step(target="(1 - batch.terminated) * next_q"),
        "the critic as target critic": critic_step(critic="agent.critic"),
        "the actor as target actor": critic_step(actor="agent.actor"),
        "a minus in the target": critic_step(target="- discount * (1 - batch.terminated) * next_q"),
        "gradient ascent": critic_step(loss="-F.mse_loss(agent.critic.q1(batch.obs, batch.action), y)"),
        "no optimiser step": critic_step(step="pass"),
        "no zero_grad": critic_step(zero="pass"),
        "no loss returned": critic_step(ret="None"),
        "both critics trained": critic_step(loss="sum(F.mse_loss(q, y) for q in agent.critic(batch.obs, batch.action))"),
        "no torch.no_grad()": """
            def critic_update(agent, batch, discount):
                next_q = agent.critic_target.q1(batch.next_obs, agent.actor_target(batch.next_obs))
                y = batch.reward + discount * (1 - batch.terminated) * next_q
                loss = F.mse_loss(agent.critic.q1(batch.obs, batch.action), y)
                agent.critic_optimizer.zero_grad()
                loss.backward()
                agent.critic_optimizer.step()
                return loss
        """,
        "the critic as target, with its gradient": """
            def critic_update(agent, batch, discount):
                y = batch.reward + discount * (1 - batch.terminated) * agent.critic.q1(batch.next_obs, agent.actor_target(batch.next_obs).detach())
                loss = F.mse_loss(agent.critic.q1(batch.obs, batch.action), y)
                agent.critic_optimizer.zero_grad()
                loss.backward()
                agent.critic_optimizer.step()
                return loss
        """,
        "td3_lib's own step called": """
            def critic_update(agent, batch, discount):
                batch = Batch(batch.obs, batch.action, batch.reward, batch.next_obs, 1 - batch.terminated)
                return agent.critic_step(batch)[0]
        """,
        "the targets soft-updated too": critic_step(step="agent.critic_optimizer.step(); agent.update_targets()"),
    }, {"the stub": "still the stub", "nothing done": "did not move", "done = terminated or truncated": "truncated",
        "not_done forgotten": "not_done", "the discount forgotten": "discount", "the critic as target critic": "critic_target",
        "the actor as target actor": "actor_target", "a minus in the target": "subtracts", "gradient ascent": "minus sign",
        "no optimiser step": "step()", "no zero_grad": "zero_grad", "no loss returned": "return the loss",
        "no torch.no_grad()": "no_grad", "the critic as target, with its gradient": "critic_target",
        "td3_lib's own step called": "yourself", "the targets soft-updated too": "only agent.critic"})


def test_01_the_check_compares_with_td3_libs_own_step():
    """The reference is TD3.critic_step on the same minibatch; the check's case has targets apart from the
    networks (else the target-network slips could not show) and a minibatch with both flags in it."""
    assert "critic_step(" in inspect.getsource(lesson01.critic_verdict)
    agent, batch = lesson01.critic_case(0)
    assert not all(torch.equal(p, q) for p, q in zip(agent.critic.parameters(), agent.critic_target.parameters()))
    only_truncated = (batch.truncated == 1) & (batch.terminated == 0)
    assert only_truncated.any() and (batch.terminated == 1).any()


def test_01_the_lesson_calls_its_check_and_defines_none():
    assert_calls_its_checks("01", {"critic_update": "raise NotImplementedError"})
