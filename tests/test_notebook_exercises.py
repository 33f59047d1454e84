"""Every lesson's exercise check accepts a right solution and refuses wrong ones.

The check functions are read from the stored notebooks: each test runs the lesson's set-up cell
(its imports), then the top-level definitions of the cell that defines the check (not the line
that calls it), and hands the check a right solution and several wrong ones, each a plausible
slip. A right one must get "Right", every wrong one "Not yet".
"""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def cell_sources(lesson: str) -> list[str]:
    path = next(NOTEBOOKS.glob(f"{lesson}_*.ipynb"))
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


def definitions(source: str) -> str:
    """``source`` without its top-level expression statements (the calls that run the check)."""
    tree = ast.parse(source)
    tree.body = [node for node in tree.body if not isinstance(node, ast.Expr)]
    return ast.unparse(tree)


def check_from(lesson: str, name: str):
    """The function ``name`` as the lesson defines it, in a namespace holding the lesson's imports."""
    sources = cell_sources(lesson)
    namespace: dict = {}
    setup = next(s for s in sources if "QUICK = os.environ" in s)
    exec(compile(definitions(setup), f"{lesson}-setup", "exec"), namespace)
    cell = next(s for s in sources if f"def {name}(" in s)
    exec(compile(definitions(cell), f"{lesson}-{name}", "exec"), namespace)
    return namespace[name], namespace


def solution(namespace: dict, source: str, name: str):
    """The function ``name`` defined by ``source`` in a copy of the lesson's namespace."""
    scope = dict(namespace)
    exec(compile(textwrap.dedent(source), "solution", "exec"), scope)
    return scope[name]


def verdicts(lesson: str, check: str, name: str, right: str, wrong: dict[str, str]) -> None:
    run, namespace = check_from(lesson, check)
    message = run(solution(namespace, right, name))
    assert message.startswith("Right"), message
    for slip, source in wrong.items():
        message = run(solution(namespace, source, name))
        assert message.startswith("Not yet"), f"{slip}: {message}"


# ------------------------------------------------------------------ 00
def test_00_scale_action():
    verdicts("00", "check_scale_action", "scale_action", """
        def scale_action(u, low, high):
            return (high + low) / 2 + (high - low) / 2 * u
    """, {
        "returns None": "def scale_action(u, low, high):\n    return None",
        "one bound for all": "def scale_action(u, low, high):\n    return high[0] * u",
        "symmetric bounds assumed": "def scale_action(u, low, high):\n    return high * u",
        "whole range as half-range": "def scale_action(u, low, high):\n    return (high + low) / 2 + (high - low) * u",
        "from low, wrong scale": "def scale_action(u, low, high):\n    return low + (high - low) * u",
    })


def test_00_play_random_episode():
    body = """
        def play_random_episode(env_id, seed):
            env = make_env(env_id, seed=seed)
            obs, info = env.reset(seed=seed)
            total, steps = 0.0, 0
            terminated = truncated = False
            {loop}
            env.close()
            return total, steps, terminated, truncated
    """
    loop = lambda text: textwrap.dedent(body).replace("{loop}", textwrap.indent(textwrap.dedent(text), "    ").strip())
    verdicts("00", "check_play_random_episode", "play_random_episode", loop("""
        while not (terminated or truncated):
            obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
            total += reward
            steps += 1
    """), {
        "no loop": loop("pass"),
        "a fixed 200 steps": loop("""
            for _ in range(200):
                obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
                total += reward
                steps += 1
        """),
        "stops before the last reward": loop("""
            while True:
                obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
                steps += 1
                if terminated or truncated:
                    break
                total += reward
        """),
        "counts from 1": loop("""
            steps = 1
            while not (terminated or truncated):
                obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
                total += reward
                steps += 1
        """),
        "flags swapped": loop("""
            while not (terminated or truncated):
                obs, reward, truncated, terminated, info = env.step(env.action_space.sample())
                total += reward
                steps += 1
        """),
    })


def test_00_reference_is_out_of_the_learners_reach():
    _, namespace = check_from("00", "check_play_random_episode")
    assert "reference_episode" not in namespace and "reference" not in namespace
