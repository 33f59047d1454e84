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


# ------------------------------------------------------------------ 02
def test_02_two_action_bias():
    verdicts("02", "check_two_action_bias", "two_action_bias", """
        def two_action_bias(sigma):
            return sigma / np.sqrt(np.pi)
    """, {
        "the stub": "def two_action_bias(sigma):\n    return 0.0",
        "a factor read off the table": "def two_action_bias(sigma):\n    return 0.564 * sigma",
        "the table's values": "def two_action_bias(sigma):\n    return {0.5: 0.285, 1.0: 0.564, 2.0: 1.130}.get(sigma, 0.564 * sigma)",
        "E|x1 - x2| without the half": "def two_action_bias(sigma):\n    return sigma * np.sqrt(2 / np.pi)",
        "pi without the root": "def two_action_bias(sigma):\n    return sigma / np.pi",
        "grows with the variance": "def two_action_bias(sigma):\n    return sigma ** 2 / np.sqrt(np.pi)",
    })


# ------------------------------------------------------------------ 03
def test_03_clipped_target():
    stub = "def clipped_target(reward, not_done, q1_next, q2_next, discount):\n    return {}"
    verdicts("03", "check_clipped_target", "clipped_target",
             stub.format("reward + discount * not_done * torch.minimum(q1_next, q2_next)"), {
        "DDPG's target": stub.format("reward + discount * not_done * q1_next"),
        "the larger critic": stub.format("reward + discount * not_done * torch.maximum(q1_next, q2_next)"),
        "the mean of the two": stub.format("reward + discount * not_done * (q1_next + q2_next) / 2"),
        "not_done forgotten": stub.format("reward + discount * torch.minimum(q1_next, q2_next)"),
        "the second critic alone": stub.format("reward + discount * not_done * q2_next"),
    })


# ------------------------------------------------------------------ 05
def test_05_updates_to_close():
    verdicts("05", "check_updates_to_close", "updates_to_close", """
        def updates_to_close(tau, remaining):
            return math.ceil(math.log(remaining) / math.log(1 - tau))
    """, {
        "the stub": "def updates_to_close(tau, remaining):\n    return None",
        "rounded, not up": "def updates_to_close(tau, remaining):\n    return round(math.log(remaining) / math.log(1 - tau))",
        "rounded down": "def updates_to_close(tau, remaining):\n    return math.floor(math.log(remaining) / math.log(1 - tau))",
        "one too many": "def updates_to_close(tau, remaining):\n    return math.ceil(math.log(remaining) / math.log(1 - tau)) + 1",
        "the lag 1 / tau": "def updates_to_close(tau, remaining):\n    return int(1 / tau)",
    })


# ------------------------------------------------------------------ 07
def test_07_permutation_p():
    verdicts("07", "check_permutation_p", "permutation_p", """
        def permutation_p(a, b):
            pooled, n = np.concatenate([a, b]), len(a)
            observed = abs(a.mean() - b.mean())
            splits = list(itertools.combinations(range(len(pooled)), n))
            count = 0
            for idx in splits:
                in_a = np.zeros(len(pooled), dtype=bool)
                in_a[list(idx)] = True
                count += abs(pooled[in_a].mean() - pooled[~in_a].mean()) >= observed - 1e-9
            return count / len(splits)
    """, {
        "the stub": "def permutation_p(a, b):\n    return None",
        "td3_lib's test called": "def permutation_p(a, b):\n    return permutation_p_value(a, b)",
        "td3_lib's test called through its module": """
            def permutation_p(a, b):
                import td3_lib.stats
                return float(td3_lib.stats.permutation_p_value(list(a), list(b)))
        """,
        "one-sided": """
            def permutation_p(a, b):
                pooled, n = np.concatenate([a, b]), len(a)
                observed = a.mean() - b.mean()
                splits = list(itertools.combinations(range(len(pooled)), n))
                hits = [pooled[list(i)].mean() - np.delete(pooled, list(i)).mean() >= observed - 1e-9 for i in splits]
                return sum(hits) / len(splits)
        """,
        "strictly larger": """
            def permutation_p(a, b):
                pooled, n = np.concatenate([a, b]), len(a)
                observed = abs(a.mean() - b.mean())
                splits = list(itertools.combinations(range(len(pooled)), n))
                hits = [abs(pooled[list(i)].mean() - np.delete(pooled, list(i)).mean()) > observed + 1e-9 for i in splits]
                return sum(hits) / len(splits)
        """,
        "sums, not means": """
            def permutation_p(a, b):
                pooled, n = np.concatenate([a, b]), len(a)
                observed = abs(a.sum() - b.sum())
                splits = list(itertools.combinations(range(len(pooled)), n))
                hits = [abs(pooled[list(i)].sum() - np.delete(pooled, list(i)).sum()) >= observed - 1e-9 for i in splits]
                return sum(hits) / len(splits)
        """,
        "the observed split left out": """
            def permutation_p(a, b):
                pooled, n = np.concatenate([a, b]), len(a)
                observed = abs(a.mean() - b.mean())
                splits = list(itertools.combinations(range(len(pooled)), n))
                hits = [abs(pooled[list(i)].mean() - np.delete(pooled, list(i)).mean()) >= observed - 1e-9 for i in splits]
                return (sum(hits) - 1) / (len(splits) - 1)
        """,
    })
