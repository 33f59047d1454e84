"""Lesson 00's exercise checks (``td3_lib.course.checks``) say "Right" to a right solution and "Not yet" to
each wrong one (a plausible slip), and the lesson calls its checks and defines none."""

from __future__ import annotations

import textwrap

from checks_helpers import assert_calls_its_checks, assert_verdicts
from td3_lib.course import checks


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


def test_00_the_lesson_calls_its_checks_and_defines_none():
    assert_calls_its_checks("00", {"discounted_return": "raise NotImplementedError", "scale_action": "return None",
                                   "play_random_episode": "# YOUR CODE HERE"})
