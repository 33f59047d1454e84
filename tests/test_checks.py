"""Every exercise check of ``td3_lib.course.checks`` says "Right" to a right solution and "Not yet" to each
wrong one (a plausible slip)."""

from __future__ import annotations

import pytest
import torch

from td3_lib import soft_update
from td3_lib.course.checks import check_delayed_update

# ------------------------------------------------------------------ lesson 00
import inspect  # noqa: E402  (each lesson's section imports what it needs, so sections stay apart)
import re  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from td3_lib import bellman_target, make_env  # noqa: E402
from td3_lib.buffer import Batch  # noqa: E402
from td3_lib.course import checks  # noqa: E402
from td3_lib.course.checks import lesson01  # noqa: E402


def defined(source: str, name: str, **scope):
    """The function ``name`` that ``source`` defines, with ``scope`` (and torch, F, np, make_env) around it."""
    namespace = dict(torch=torch, F=F, np=np, make_env=make_env, bellman_target=bellman_target, Batch=Batch, **scope)
    exec(compile(textwrap.dedent(source), name, "exec"), namespace)
    return namespace[name]


def assert_verdicts(check, name: str, right: list[str], wrong: dict[str, str], says: dict[str, str] = {}) -> None:
    """Every right solution gets "Right"; every slip "Not yet", with the words ``says[slip]`` where given."""
    for source in right:
        message = check(defined(source, name))
        assert message.startswith("Right"), message
    for slip, source in wrong.items():
        message = check(defined(source, name))
        assert message.startswith("Not yet"), f"{slip}: {message}"
        assert says.get(slip, "") in message, f"{slip}: {message}"


def test_00_discounted_return():
    stub = "def discounted_return(rewards, discount):\n    {}"
    assert_verdicts(checks.check_discounted_return, "discounted_return", [
        stub.format("return sum(discount ** k * r for k, r in enumerate(rewards))"),
        """
        def discounted_return(rewards, discount):
            total = 0.0
            for r in reversed(rewards):
                total = r + discount * total
            return total
        """,
        stub.format("return np.dot(discount ** np.arange(len(rewards)), rewards)"),
    ], {
        "the stub": stub.format("raise NotImplementedError"),
        "returns None": stub.format("return None"),
        "no discount": stub.format("return sum(rewards)"),
        "the first reward discounted": stub.format("return sum(discount ** (k + 1) * r for k, r in enumerate(rewards))"),
        "discount on the wrong end": stub.format("return sum(discount ** k * r for k, r in enumerate(reversed(rewards)))"),
        "the last reward left out": stub.format("return sum(discount ** k * r for k, r in enumerate(rewards[:-1]))"),
        "a list back": stub.format("return [discount ** k * r for k, r in enumerate(rewards)]"),
    }, {"the stub": "still the stub", "no discount": "without the discount", "the first reward discounted": "in full",
        "discount on the wrong end": "later", "returns None": "one number"})


def test_00_scale_action():
    stub = "def scale_action(u, low, high):\n    {}"
    assert_verdicts(checks.check_scale_action, "scale_action", [
        stub.format("return (high + low) / 2 + (high - low) / 2 * u"),
        stub.format("return low + (u + 1) / 2 * (high - low)"),
    ], {
        "returns None": stub.format("return None"),
        "the stub": stub.format("raise NotImplementedError"),
        "one bound for all": stub.format("return high[0] * u"),
        "symmetric bounds assumed": stub.format("return high * u"),
        "whole range as half-range": stub.format("return (high + low) / 2 + (high - low) * u"),
        "from low, wrong scale": stub.format("return low + (high - low) * u"),
    })


EPISODE = """
    def play_random_episode(env_id, seed):
        env = make_env(env_id, seed=seed)
        obs, info = env.reset(seed=seed)
        total, steps = 0.0, 0
        terminated = truncated = False
        {loop}
        env.close()
        return total, steps, terminated, truncated
"""


def episode(loop: str) -> str:
    return textwrap.dedent(EPISODE).replace("{loop}", textwrap.indent(textwrap.dedent(loop), "    ").strip())


def test_00_play_random_episode():
    assert_verdicts(checks.check_play_random_episode, "play_random_episode", [episode("""
        while not (terminated or truncated):
            obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
            total += reward
            steps += 1
    """)], {
        "no loop": episode("pass"),
        "a fixed 200 steps": episode("""
            for _ in range(200):
                obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
                total += reward
                steps += 1
        """),
        "stops before the last reward": episode("""
            while True:
                obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
                steps += 1
                if terminated or truncated:
                    break
                total += reward
        """),
        "counts from 1": episode("""
            steps = 1
            while not (terminated or truncated):
                obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
                total += reward
                steps += 1
        """),
        "flags swapped": episode("""
            while not (terminated or truncated):
                obs, reward, truncated, terminated, info = env.step(env.action_space.sample())
                total += reward
                steps += 1
        """),
        "stops at truncation only": episode("""
            while not truncated:
                obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
                total += reward
                steps += 1
        """),
    })


def lesson_code(lesson: str) -> list[str]:
    """The sources of a lesson's code cells."""
    import json
    from pathlib import Path

    path = next((Path(__file__).resolve().parent.parent / "notebooks").glob(f"{lesson}_*.ipynb"))
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


def assert_calls_its_checks(lesson: str, exercises: dict[str, str]) -> None:
    """The lesson defines no check, imports each from td3_lib.course.checks (and nothing else from there),
    defines each exercise's function and calls its check alone in one line."""
    sources = lesson_code(lesson)
    assert not any(re.search(r"^def check_", s, re.M) for s in sources), f"lesson {lesson} defines a check"
    imported = {name.strip() for s in sources for line in re.findall(r"from td3_lib\.course\.checks import ([^\n]+)", s)
                for name in line.split(",")}
    assert imported == {f"check_{name}" for name in exercises}, imported
    for name, stub in exercises.items():
        assert any(s.lstrip().startswith(f"def {name}(") and stub in s for s in sources), f"{name}: its stub"
        assert f"print(check_{name}({name}))" in sources, f"check_{name}: not called alone in one line"


def test_00_the_lesson_calls_its_checks_and_defines_none():
    assert_calls_its_checks("00", {"discounted_return": "raise NotImplementedError", "scale_action": "return None",
                                   "play_random_episode": "# YOUR CODE HERE"})


# ------------------------------------------------------------------ lesson 01
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


# ------------------------------------------------------------------ lesson 02
import textwrap  # noqa: E402  (each lesson's section holds its own imports)

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from td3_lib.course.checks import check_bias_from_rollout  # noqa: E402

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
    import json
    from pathlib import Path

    lesson = Path(__file__).resolve().parents[1] / "notebooks" / "02_overestimation_bias.ipynb"
    cells = ["".join(c["source"]) for c in json.loads(lesson.read_text())["cells"] if c["cell_type"] == "markdown"]
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


# ------------------------------------------------------------------ lesson 03
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


# ------------------------------------------------------------------ lesson 04
import textwrap  # noqa: E402  (each lesson's section imports what it needs)

import pytest  # noqa: E402
import torch  # noqa: E402

from td3_lib.course.checks import check_smoothed_target_action  # noqa: E402

SMOOTHED_RIGHT = {
    "as the lesson's solution": """
        h = (high - low) / 2
        noise = torch.randn(next_action.shape, generator=generator) * (policy_noise * h)
        c = noise_clip * h
        noise = torch.maximum(torch.minimum(noise, c), -c)
        return torch.maximum(torch.minimum(next_action + noise, high), low)""",
    "the noise drawn another way (a normal per dimension)": """
        h = (high - low) / 2
        noise = torch.stack([torch.normal(0.0, float(policy_noise * h[j]), next_action.shape[:1], generator=generator)
                             for j in range(next_action.shape[1])], dim=1)
        noise = noise.clamp(-noise_clip * h, noise_clip * h)
        return (next_action + noise).clamp(low, high)""",
}
SMOOTHED_WRONG = {
    "the stub": "return None",
    "the stub that raises": "raise NotImplementedError",
    "scalar bounds high[0] and low[0]": """
        h = (high[0] - low[0]) / 2
        noise = (torch.randn(next_action.shape, generator=generator) * policy_noise * h).clamp(-noise_clip * h, noise_clip * h)
        return (next_action + noise).clamp(low[0].item(), high[0].item())""",
    "noise not scaled by h": """
        h = (high - low) / 2
        noise = torch.randn(next_action.shape, generator=generator) * policy_noise
        return (next_action + noise.clamp(-noise_clip * h, noise_clip * h)).clamp(low, high)""",
    "clip the action before adding the noise": """
        h = (high - low) / 2
        noise = (torch.randn(next_action.shape, generator=generator) * policy_noise * h).clamp(-noise_clip * h, noise_clip * h)
        return next_action.clamp(low, high) + noise""",
    "no final clamp": """
        h = (high - low) / 2
        noise = (torch.randn(next_action.shape, generator=generator) * policy_noise * h).clamp(-noise_clip * h, noise_clip * h)
        return next_action + noise""",
    "the noise clipped to noise_clip, not noise_clip * h": """
        h = (high - low) / 2
        noise = (torch.randn(next_action.shape, generator=generator) * policy_noise * h).clamp(-noise_clip, noise_clip)
        return (next_action + noise).clamp(low, high)""",
    "the noise clipped to policy_noise * h": """
        h = (high - low) / 2
        noise = (torch.randn(next_action.shape, generator=generator) * policy_noise * h).clamp(-policy_noise * h, policy_noise * h)
        return (next_action + noise).clamp(low, high)""",
    "the noise clipped on one side only": """
        h = (high - low) / 2
        noise = (torch.randn(next_action.shape, generator=generator) * policy_noise * h).clamp(max=noise_clip * h)
        return (next_action + noise).clamp(low, high)""",
    "uniform noise of the same width": """
        h = (high - low) / 2
        noise = (torch.rand(next_action.shape, generator=generator) * 2 - 1) * noise_clip * h
        return (next_action + noise).clamp(low, high)""",
    "the generator ignored": """
        h = (high - low) / 2
        noise = (torch.randn(next_action.shape) * policy_noise * h).clamp(-noise_clip * h, noise_clip * h)
        return (next_action + noise).clamp(low, high)""",
    "a batch of one action returned": """
        return next_action[:1]""",
}


def smoothed_target_action_from(body: str):
    scope = {"torch": torch}
    source = "def smoothed_target_action(next_action, low, high, policy_noise, noise_clip, generator=None):\n"
    exec(source + textwrap.indent(textwrap.dedent(body).strip("\n"), "    "), scope)
    return scope["smoothed_target_action"]


@pytest.mark.parametrize("body", SMOOTHED_RIGHT.values(), ids=SMOOTHED_RIGHT.keys())
def test_04_the_smoothed_target_action_right_is_right(body):
    assert check_smoothed_target_action(smoothed_target_action_from(body)).startswith("Right")


@pytest.mark.parametrize("body", SMOOTHED_WRONG.values(), ids=SMOOTHED_WRONG.keys())
def test_04_each_slip_in_the_smoothed_target_action_is_not_yet(body):
    verdict = check_smoothed_target_action(smoothed_target_action_from(body))
    assert verdict.startswith("Not yet"), verdict


# ------------------------------------------------------------------ lesson 05
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


# ------------------------------------------------------------------ lesson 06
from td3_lib import TD3, train  # noqa: E402
from td3_lib.config import TD3Config, preset  # noqa: E402
from td3_lib.course.checks import check_count_updates, check_td3_update  # noqa: E402
from td3_lib.course.checks.lesson06 import updates_made  # noqa: E402

COUNT = "def count_updates(cfg):\n    {}"
COUNT_RIGHT = "critic = max(0, cfg.total_steps - max(cfg.start_timesteps, cfg.batch_size - 1))\n    return {}"
COUNT_SLIPS = {
    "the stub": ("return None", "returns None"),
    "the stub that raises": ("raise NotImplementedError", "still the stub"),
    "one number": (COUNT_RIGHT.format("critic"), "return a pair"),
    "batch size ignored": ("critic = cfg.total_steps - cfg.start_timesteps\n    return critic, critic // cfg.policy_freq",
                           "batch_size=256"),
    "the actor at every update": (COUNT_RIGHT.format("critic, critic"), "you give"),
    "the actor rounded up": (COUNT_RIGHT.format("critic, -(-critic // cfg.policy_freq)"), "you give"),
    "every step an update": ("return cfg.total_steps, cfg.total_steps // cfg.policy_freq", "you give"),
    "one update too few": ("critic = cfg.total_steps - max(cfg.start_timesteps, cfg.batch_size)\n"
                           "    return critic, critic // cfg.policy_freq", "you give"),
    "negative before the first update": ("critic = cfg.total_steps - max(cfg.start_timesteps, cfg.batch_size - 1)\n"
                                         "    return critic, critic // cfg.policy_freq", "total_steps=200"),
}


def test_06_count_updates():
    assert_verdicts(check_count_updates, "count_updates", [
        COUNT.format(COUNT_RIGHT.format("critic, critic // cfg.policy_freq")),
        """
        def count_updates(cfg):
            first = max(cfg.start_timesteps + 1, cfg.batch_size)   # the first step that updates
            critic = max(0, cfg.total_steps - first + 1)
            return critic, critic // cfg.policy_freq
        """,
    ], {slip: COUNT.format(body) for slip, (body, _) in COUNT_SLIPS.items()},
        {slip: says for slip, (_, says) in COUNT_SLIPS.items()})


def test_06_the_loops_count_is_the_one_the_lesson_quotes():
    """The right answer's count of Hopper-v5's 1M-step run, and the rule it counts, against td3_lib.train's
    own loop on a tiny run (its critic losses: one per update)."""
    assert updates_made(preset("Hopper-v5")) == (975_000, 487_500)
    assert check_count_updates(lambda cfg: updates_made(cfg)).startswith("Right: Hopper-v5's 1M-step run makes "
                                                                        "975,000 critic and 487,500 actor updates.")
    cfg = TD3Config(hidden_sizes=(8, 8), total_steps=300, start_timesteps=50, batch_size=100, policy_freq=3,
                    eval_freq=300, eval_episodes=1)
    counted = {"critic": 0, "actor": 0}

    class Counting(TD3):
        def critic_step(self, batch):
            counted["critic"] += 1
            return super().critic_step(batch)

        def actor_step(self, batch):
            counted["actor"] += 1
            return super().actor_step(batch)

    train("Pendulum-v1", cfg, agent=Counting, device="cpu", progress=False)
    assert updates_made(cfg) == (counted["critic"], counted["actor"]) == (201, 67)


def test_06_the_whole_update_is_checked_from_checks():
    from td3_lib.course.reference import td3_update
    assert check_td3_update(td3_update).startswith("Right")
    assert check_td3_update(lambda agent, batch, it: None).startswith("Not yet")


def test_06_the_lessons_solutions_are_right():
    """The solutions the lesson shows in its collapsed blocks pass the checks it calls."""
    import json
    from pathlib import Path

    path = next((Path(__file__).resolve().parent.parent / "notebooks").glob("06_*.ipynb"))
    blocks = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "markdown"]
    solutions = [re.search(r"```python\n(.*?)```", b, re.S).group(1) for b in blocks if "<summary>Solution" in b]
    assert len(solutions) == 2
    assert check_td3_update(defined(solutions[0], "td3_update")).startswith("Right")
    assert check_count_updates(defined(solutions[1], "count_updates")).startswith("Right")


def test_06_the_lesson_calls_its_checks_and_defines_none():
    assert_calls_its_checks("06", {"td3_update": "raise NotImplementedError", "count_updates": "return None"})


# ------------------------------------------------------------------ lesson 07
import itertools  # noqa: E402

import pytest  # noqa: E402

from td3_lib.course.checks import check_permutation_p  # noqa: E402

PERMUTATION = "def permutation_p(a, b):\n{}"
PERMUTATION_RIGHT = {
    "as the lesson's solution": """
        pooled, n = np.concatenate([a, b]), len(a)
        observed = abs(a.mean() - b.mean())
        splits = list(itertools.combinations(range(len(pooled)), n))
        count = 0
        for idx in splits:
            in_a = np.zeros(len(pooled), dtype=bool)
            in_a[list(idx)] = True
            count += abs(pooled[in_a].mean() - pooled[~in_a].mean()) >= observed - 1e-9
        return count / len(splits)""",
    "group B as the pooled total minus group A": """
        pooled, total = list(a) + list(b), sum(a) + sum(b)
        observed = abs(sum(a) / len(a) - sum(b) / len(b))
        hits = splits = 0
        for group in itertools.combinations(pooled, len(a)):
            gap = sum(group) / len(a) - (total - sum(group)) / len(b)
            hits += abs(gap) >= observed - 1e-9
            splits += 1
        return hits / splits""",
    "group B as the indices not chosen": """
        pooled = np.concatenate([a, b])
        observed = abs(a.mean() - b.mean())
        gaps = [abs(pooled[list(i)].mean() - np.delete(pooled, list(i)).mean())
                for i in itertools.combinations(range(len(pooled)), len(a))]
        return float(np.mean(np.array(gaps) >= observed - 1e-9))""",
}
PERMUTATION_WRONG = {
    "the stub": ("raise NotImplementedError", "still the stub"),
    "returns None": ("return None", "return one number"),
    "td3_lib's test called": ("from td3_lib.stats import permutation_p_value\nreturn permutation_p_value(a, b)",
                              "count the splits yourself"),
    "td3_lib's test called through its module": (
        "import td3_lib.stats\nreturn float(td3_lib.stats.permutation_p_value(list(a), list(b)))", "yourself"),
    "td3_lib's difference called": ("from td3_lib.stats import difference\nreturn difference(a, b).p", "yourself"),
    "one-sided": ("""
        pooled, observed = np.concatenate([a, b]), a.mean() - b.mean()
        gaps = [pooled[list(i)].mean() - np.delete(pooled, list(i)).mean()
                for i in itertools.combinations(range(len(pooled)), len(a))]
        return float(np.mean(np.array(gaps) >= observed - 1e-9))""", "either sign"),
    "no abs on the splits' gaps": ("""
        pooled, observed = np.concatenate([a, b]), abs(a.mean() - b.mean())
        gaps = [pooled[list(i)].mean() - np.delete(pooled, list(i)).mean()
                for i in itertools.combinations(range(len(pooled)), len(a))]
        return float(np.mean(np.array(gaps) >= observed - 1e-9))""", ""),
    "strictly larger": ("""
        pooled, observed = np.concatenate([a, b]), abs(a.mean() - b.mean())
        gaps = [abs(pooled[list(i)].mean() - np.delete(pooled, list(i)).mean())
                for i in itertools.combinations(range(len(pooled)), len(a))]
        return float(np.mean(np.array(gaps) > observed + 1e-9))""", "counts too"),
    "no tolerance": ("""
        pooled, observed = np.concatenate([a, b]), abs(a.mean() - b.mean())
        gaps = [abs(pooled[list(i)].mean() - np.delete(pooled, list(i)).mean())
                for i in itertools.combinations(range(len(pooled)), len(a))]
        return float(np.mean(np.array(gaps) >= observed + 1e-12))""", ""),
    "sums, not means": ("""
        pooled, observed = np.concatenate([a, b]), abs(a.sum() - b.sum())
        gaps = [abs(pooled[list(i)].sum() - np.delete(pooled, list(i)).sum())
                for i in itertools.combinations(range(len(pooled)), len(a))]
        return float(np.mean(np.array(gaps) >= observed - 1e-9))""", "means, not their sums"),
    "the observed split left out": ("""
        pooled, observed = np.concatenate([a, b]), abs(a.mean() - b.mean())
        gaps = [abs(pooled[list(i)].mean() - np.delete(pooled, list(i)).mean())
                for i in itertools.combinations(range(len(pooled)), len(a))]
        return (np.sum(np.array(gaps) >= observed - 1e-9) - 1) / (len(gaps) - 1)""", "count it"),
    "the count, not the share": ("""
        pooled, observed = np.concatenate([a, b]), abs(a.mean() - b.mean())
        gaps = [abs(pooled[list(i)].mean() - np.delete(pooled, list(i)).mean())
                for i in itertools.combinations(range(len(pooled)), len(a))]
        return int(np.sum(np.array(gaps) >= observed - 1e-9))""", "share"),
    "random shuffles, not every split": ("""
        rng, pooled, observed = np.random.default_rng(0), np.concatenate([a, b]), abs(a.mean() - b.mean())
        hits = 0
        for _ in range(2_000):
            x = rng.permutation(pooled)
            hits += abs(x[:len(a)].mean() - x[len(a):].mean()) >= observed - 1e-9
        return hits / 2_000""", ""),
    "a list back": ("""
        pooled, observed = np.concatenate([a, b]), abs(a.mean() - b.mean())
        return [abs(pooled[list(i)].mean() - np.delete(pooled, list(i)).mean()) >= observed - 1e-9
                for i in itertools.combinations(range(len(pooled)), len(a))]""", "one number"),
}


def permutation_p_from(body: str):
    return defined(PERMUTATION.format(textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")), "permutation_p",
                   itertools=itertools)


@pytest.mark.parametrize("body", PERMUTATION_RIGHT.values(), ids=PERMUTATION_RIGHT.keys())
def test_07_the_permutation_test_right_is_right(body):
    verdict = check_permutation_p(permutation_p_from(body))
    assert verdict.startswith("Right"), verdict


@pytest.mark.parametrize("slip", PERMUTATION_WRONG, ids=PERMUTATION_WRONG.keys())
def test_07_each_slip_in_the_permutation_test_is_not_yet(slip):
    body, says = PERMUTATION_WRONG[slip]
    verdict = check_permutation_p(permutation_p_from(body))
    assert verdict.startswith("Not yet") and says in verdict, f"{slip}: {verdict}"


def test_07_the_check_leaves_the_profiler_as_it_found_it():
    import sys

    def tracer(frame, event, arg):
        return None

    sys.setprofile(tracer)
    try:
        check_permutation_p(permutation_p_from(PERMUTATION_RIGHT["as the lesson's solution"]))
        assert sys.getprofile() is tracer
    finally:
        sys.setprofile(None)


def test_07_the_lesson_calls_its_check_and_defines_none():
    assert_calls_its_checks("07", {"permutation_p": "raise NotImplementedError"})


# ------------------------------------------------------------------ lesson 08
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
    "mu(s) stored instead of the action taken":
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
