"""Every exercise check of ``td3_lib.course.checks`` says "Right" to a right solution and "Not yet" to each
wrong one (a plausible slip)."""

from __future__ import annotations

# ------------------------------------------------------------------ lesson 00
import inspect  # noqa: E402  (each lesson's section imports what it needs, so sections stay apart)
import re  # noqa: E402
import textwrap  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from td3_lib import bellman_target, make_env  # noqa: E402
from td3_lib.buffer import Batch  # noqa: E402
from td3_lib.course import checks  # noqa: E402


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
    assert "critic_step(" in inspect.getsource(checks.critic_verdict)
    agent, batch = checks.critic_case(0)
    assert not all(torch.equal(p, q) for p, q in zip(agent.critic.parameters(), agent.critic_target.parameters()))
    only_truncated = (batch.truncated == 1) & (batch.terminated == 0)
    assert only_truncated.any() and (batch.terminated == 1).any()


def test_01_the_lesson_calls_its_check_and_defines_none():
    assert_calls_its_checks("01", {"critic_update": "raise NotImplementedError"})


# ------------------------------------------------------------------ lesson 02

# ------------------------------------------------------------------ lesson 03

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

# ------------------------------------------------------------------ lesson 06
from td3_lib import TD3, train  # noqa: E402
from td3_lib.config import TD3Config, preset  # noqa: E402
from td3_lib.course.checks import check_count_updates, check_td3_update, updates_made  # noqa: E402

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
