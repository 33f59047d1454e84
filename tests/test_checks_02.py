"""Lesson 02's exercise checks (``td3_lib.course.checks``) say "Right" to a right solution and "Not yet" to
each wrong one (a plausible slip), and the solution the lesson shows is the one tested here."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
import torch

from checks_helpers import notebook_cells
from td3_lib.course.checks import check_bias_from_rollout


BIAS_FROM_ROLLOUT = """
def bias_from_rollout(agent, env, seed):
    obs, _ = env.reset(seed=seed)
    states, rewards, done = [], [], False
    while not done:
        states.append(obs)
        obs, reward, terminated, truncated, _ = env.step(agent.act(obs))
        rewards.append(reward)
        done = terminated or truncated
    returns, g = np.zeros(len(rewards)), 0.0
    for t in reversed(range(len(rewards))):
        g = rewards[t] + agent.config.discount * g
        returns[t] = g
    s = torch.as_tensor(np.array(states), dtype=torch.float32, device=agent.device)
    with torch.no_grad():
        estimates = agent.critic.q1(s, agent.actor(s)).squeeze(1).cpu().numpy()
    return estimates, returns
"""
"""Lesson 02's solution, as its collapsed block gives it."""


def bias_from_rollout_with(*edits: tuple[str, str]):
    """Lesson 02's solution with each (old, new) line edit made: a learner's slip."""
    source = textwrap.dedent(BIAS_FROM_ROLLOUT)
    for old, new in edits:
        assert old in source, old
        source = source.replace(old, new)
    scope = {"np": np, "torch": torch}
    exec(compile(source, "bias_from_rollout", "exec"), scope)
    return scope["bias_from_rollout"]


def test_02_the_solution_is_right():
    message = check_bias_from_rollout(bias_from_rollout_with())
    assert message.startswith("Right"), message


def test_02_the_solution_in_the_lesson_is_the_tested_one():
    """The collapsed solution of lesson 02 is the one these tests call right."""
    cells = notebook_cells("02", "markdown")
    block = next(c for c in cells if "<summary>Solution</summary>" in c and "def bias_from_rollout" in c)
    code = block.split("```python\n")[1].split("```")[0]
    assert code.strip() == textwrap.dedent(BIAS_FROM_ROLLOUT).strip()


SLIPS_02 = {
    "undiscounted sum": [("agent.config.discount * g", "g")],
    "accumulated forwards": [("for t in reversed(range(len(rewards))):", "for t in range(len(rewards)):")],
    "estimate from the target critic": [("agent.critic.q1(s, agent.actor(s))",
                                         "agent.critic_target.q1(s, agent.actor_target(s))")],
    "Q of a noisy action": [("agent.critic.q1(s, agent.actor(s))",
                             "agent.critic.q1(s, torch.as_tensor(agent.act(np.array(states), noise=0.1)))")],
    "a noisy episode": [("env.step(agent.act(obs))", "env.step(agent.act(obs, noise=0.1))")],
    "last reward left out": [("reversed(range(len(rewards)))", "reversed(range(len(rewards) - 1))")],
    "returns one step late": [("reversed(range(len(rewards)))", "reversed(range(len(rewards) - 1))"),
                              ("g = rewards[t] +", "g = rewards[t + 1] +")],
    "states recorded after the step": [("        states.append(obs)\n", ""),
                                       ("        rewards.append(reward)\n",
                                        "        rewards.append(reward)\n        states.append(obs)\n")],
    "the state after the end kept": [("    returns, g =", "    states.append(obs)\n    returns, g =")],
    "stops only at the time limit": [("done = terminated or truncated", "done = truncated")],
    "never resets": [("obs, _ = env.reset(seed=seed)", "obs = np.zeros(3, dtype=np.float32)")],
    "another start": [("env.reset(seed=seed)", "env.reset(seed=seed + 1)")],
    "Q2": [("agent.critic.q1(s, agent.actor(s))", "agent.critic(s, agent.actor(s))[1]")],
}


@pytest.mark.parametrize("slip", SLIPS_02)
def test_02_each_slip_is_not_yet_and_says_what_differs(slip):
    message = check_bias_from_rollout(bias_from_rollout_with(*SLIPS_02[slip]))
    assert message.startswith("Not yet"), f"{slip}: {message}"


@pytest.mark.parametrize("slip, says", [
    ("undiscounted sum", "plain sum"), ("accumulated forwards", "forwards"),
    ("estimate from the target critic", "target critic"), ("last reward left out", "missing the last reward"),
    ("returns one step late", "one step late"), ("states recorded after the step", "one state late"),
    ("stops only at the time limit", "stop when terminated or truncated"), ("never resets", "before resetting"),
    ("Q of a noisy action", "noise-free action"), ("the state after the end kept", "one of each per state"),
])
def test_02_the_verdict_names_the_slip(slip, says):
    assert says in check_bias_from_rollout(bias_from_rollout_with(*SLIPS_02[slip]))


@pytest.mark.parametrize("stub", ["def f(agent, env, seed):\n    raise NotImplementedError",
                                  "def f(agent, env, seed):\n    ...",
                                  "def f(agent, env, seed):\n    return 1.0"])
def test_02_a_stub_gets_not_yet_and_no_exception(stub):
    scope: dict = {}
    exec(stub, scope)
    assert check_bias_from_rollout(scope["f"]).startswith("Not yet")
