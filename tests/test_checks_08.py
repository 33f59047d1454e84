"""Lesson 08's exercise checks (``td3_lib.course.checks``) say "Right" to a right solution and "Not yet" to
each wrong one (a plausible slip)."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
import torch.nn.functional as F

from td3_lib.course.checks import check_collect, check_critic_loss


COLLECT = """
def collect(env, actor, buffer, steps, expl_noise, rng):
    low, high = env.action_space.low, env.action_space.high
    obs, _ = env.reset()
    for _ in range(steps):
        noise = rng.normal(0.0, expl_noise * (high - low) / 2)
        action = np.clip(actor(obs) + noise, low, high)
        next_obs, reward, terminated, truncated, _ = env.step(action)
        buffer.add(obs, action, reward, next_obs, terminated)
        obs = next_obs
        if terminated or truncated:
            obs, _ = env.reset()
"""


def lesson08_function(source: str, name: str):
    """The function ``name`` that ``source`` defines (numpy as np and torch's F at hand)."""
    scope = {"np": np, "F": F}
    exec(textwrap.dedent(source), scope)
    return scope[name]


def lesson08_slip(source: str, old: str, new: str) -> str:
    """``source`` with one line changed: a plausible slip."""
    assert old in source, old
    return source.replace(old, new)


COLLECT_SLIPS = {
    "the stub": "def collect(env, actor, buffer, steps, expl_noise, rng):\n    raise NotImplementedError",
    "an empty body": "def collect(env, actor, buffer, steps, expl_noise, rng):\n    ...",
    "the time limit stored as terminal (pitfall 3)":
        lesson08_slip(COLLECT, "next_obs, terminated)", "next_obs, terminated or truncated)"),
    "nothing stored as terminal": lesson08_slip(COLLECT, "next_obs, terminated)", "next_obs, False)"),
    "not_done stored instead of terminated": lesson08_slip(COLLECT, "next_obs, terminated)", "next_obs, not terminated)"),
    "a reset only at a goal": lesson08_slip(COLLECT, "if terminated or truncated:", "if terminated:"),
    "no reset at the start": lesson08_slip(COLLECT, "    obs, _ = env.reset()\n    for", "    obs = np.zeros(2)\n    for"),
    "obs never moved on": lesson08_slip(COLLECT, "        obs = next_obs\n", ""),
    "the reset state stored as next_obs": lesson08_slip(COLLECT, """        buffer.add(obs, action, reward, next_obs, terminated)
        obs = next_obs
        if terminated or truncated:
            obs, _ = env.reset()
""", """        if terminated or truncated:
            next_obs, _ = env.reset()
        buffer.add(obs, action, reward, next_obs, terminated)
        obs = next_obs
"""),
    "pi(s) stored instead of the action taken":
        lesson08_slip(COLLECT, "buffer.add(obs, action,", "buffer.add(obs, actor(obs),"),
    "uniform noise from rand (pitfall 1)":
        lesson08_slip(COLLECT, "rng.normal(0.0, expl_noise * (high - low) / 2)", "rng.random(2) * expl_noise * (high - low) / 2"),
    "uniform noise centred at 0": lesson08_slip(COLLECT, "rng.normal(0.0, expl_noise * (high - low) / 2)",
                                       "rng.uniform(-1, 1, 2) * expl_noise * (high - low) / 2"),
    "the noise scaled by high[0] (pitfall 2)":
        lesson08_slip(COLLECT, "rng.normal(0.0, expl_noise * (high - low) / 2)", "rng.normal(0.0, expl_noise * high[0], 2)"),
    "the noise scaled by high": lesson08_slip(COLLECT, "expl_noise * (high - low) / 2", "expl_noise * high"),
    "the noise not scaled": lesson08_slip(COLLECT, "expl_noise * (high - low) / 2", "expl_noise * np.ones(2)"),
    "no clipping": lesson08_slip(COLLECT, "np.clip(actor(obs) + noise, low, high)", "actor(obs) + noise"),
    "clipped to high[0] (pitfall 2)": lesson08_slip(COLLECT, "np.clip(actor(obs) + noise, low, high)",
                                           "np.clip(actor(obs) + noise, -high[0], high[0])"),
}


def test_08_collect_right():
    verdict = check_collect(lesson08_function(COLLECT, "collect"))
    assert verdict.startswith("Right"), verdict


def test_08_collect_a_loop_written_another_way_is_right_too():
    other = lesson08_slip(lesson08_slip(COLLECT, "        obs = next_obs\n        if terminated or truncated:\n            obs, _ = env.reset()\n",
                      "        obs = env.reset()[0] if terminated or truncated else next_obs\n"),
                 "rng.normal(0.0, expl_noise * (high - low) / 2)", "expl_noise * (high - low) / 2 * rng.standard_normal(2)")
    verdict = check_collect(lesson08_function(other, "collect"))
    assert verdict.startswith("Right"), verdict


@pytest.mark.parametrize("name", COLLECT_SLIPS)
def test_08_collect_slips(name):
    verdict = check_collect(lesson08_function(COLLECT_SLIPS[name], "collect"))
    assert verdict.startswith("Not yet"), f"{name}: {verdict}"


CRITIC_LOSS = """
def critic_loss(agent, batch, target_q):
    current_q1, current_q2 = agent.critic(batch.obs, batch.action)
    loss_1 = F.mse_loss(current_q1, target_q)
    loss_2 = F.mse_loss(current_q2, target_q)
    return loss_1 + loss_2
"""

CRITIC_LOSS_SLIPS = {
    "as given in the lesson: both bugs": """
        def critic_loss(agent, batch, target_q):
            y = target_q.view(-1)
            current_q1, current_q2 = agent.critic(batch.obs, batch.action)
            loss_1 = ((current_q1 - y) ** 2).mean()
            loss_2 = ((current_q1 - y) ** 2).mean()
            return loss_1 + loss_2
    """,
    "the shape fixed, Q1 still twice (pitfall 6)": lesson08_slip(CRITIC_LOSS, "F.mse_loss(current_q2", "F.mse_loss(current_q1"),
    "Q2 fixed, the target squeezed (pitfall 7)": lesson08_slip(CRITIC_LOSS, "target_q)\n", "target_q.squeeze())\n"),
    "TD3's own loss called": """
        def critic_loss(agent, batch, target_q):
            return agent.critic_loss(batch.obs, batch.action, target_q)[0]
    """,
    "TD3's own loss called through the class": """
        def critic_loss(agent, batch, target_q):
            own = type(agent).critic_loss
            return own(agent, batch.obs, batch.action, target_q)[0]
    """,
    "the target critic as the current Q (pitfall 5)": lesson08_slip(CRITIC_LOSS, "agent.critic(", "agent.critic_target("),
    "sums instead of means": """
        def critic_loss(agent, batch, target_q):
            current_q1, current_q2 = agent.critic(batch.obs, batch.action)
            return ((current_q1 - target_q) ** 2).sum() + ((current_q2 - target_q) ** 2).sum()
    """,
    "half the loss: the two averaged": lesson08_slip(CRITIC_LOSS, "return loss_1 + loss_2",
                                                               "return (loss_1 + loss_2) / 2"),
    "returns None": "def critic_loss(agent, batch, target_q):\n    return None",
    "the stub": "def critic_loss(agent, batch, target_q):\n    raise NotImplementedError",
}


def test_08_critic_loss_right():
    verdict = check_critic_loss(lesson08_function(CRITIC_LOSS, "critic_loss"))
    assert verdict.startswith("Right"), verdict


@pytest.mark.parametrize("name", CRITIC_LOSS_SLIPS)
def test_08_critic_loss_slips(name):
    verdict = check_critic_loss(lesson08_function(CRITIC_LOSS_SLIPS[name], "critic_loss"))
    assert verdict.startswith("Not yet"), f"{name}: {verdict}"
