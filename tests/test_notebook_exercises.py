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


def library_verdicts(lesson: str, run, name: str, right: str, wrong: dict[str, str]) -> None:
    """``verdicts`` for a check the library holds (``run``), with solutions in the lesson's namespace."""
    namespace: dict = {}
    setup = next(s for s in cell_sources(lesson) if "QUICK = os.environ" in s)
    exec(compile(definitions(setup), f"{lesson}-setup", "exec"), namespace)
    assert namespace[run.__name__] is run  # the lesson imports the library's check
    assert run(solution(namespace, right, name)).startswith("Right")
    for slip, source in wrong.items():
        message = run(solution(namespace, source, name))
        assert message.startswith("Not yet"), f"{slip}: {message}"


# ------------------------------------------------------------------ 06
def test_06_count_updates():
    verdicts("06", "check_count_updates", "count_updates", """
        def count_updates(cfg):
            critic = max(0, cfg.total_steps - max(cfg.start_timesteps, cfg.batch_size - 1))
            return critic, critic // cfg.policy_freq
    """, {
        "the stub": "def count_updates(cfg):\n    return None",
        "batch size ignored": "def count_updates(cfg):\n    critic = cfg.total_steps - cfg.start_timesteps\n    return critic, critic // cfg.policy_freq",
        "actor at every step": "def count_updates(cfg):\n    critic = max(0, cfg.total_steps - max(cfg.start_timesteps, cfg.batch_size - 1))\n    return critic, critic",
        "actor rounded up": "def count_updates(cfg):\n    critic = max(0, cfg.total_steps - max(cfg.start_timesteps, cfg.batch_size - 1))\n    return critic, -(-critic // cfg.policy_freq)",
        "every step updates": "def count_updates(cfg):\n    return cfg.total_steps, cfg.total_steps // cfg.policy_freq",
    })
