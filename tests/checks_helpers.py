"""What the exercise-check tests of several lessons (tests/test_checks_NN.py) share: a learner's function
built from its source, the verdicts a check gives a list of right and wrong solutions, and a lesson's
notebook cells with the checks they import and call."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from td3_lib import bellman_target, make_env
from td3_lib.buffer import Batch

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


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


def notebook_cells(lesson: str, cell_type: str = "code") -> list[str]:
    """The sources of the ``cell_type`` cells ("code" or "markdown") of lesson ``lesson``'s notebook,
    notebooks/LESSON_*.ipynb."""
    path = next(NOTEBOOKS.glob(f"{lesson}_*.ipynb"))
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == cell_type]


def assert_calls_its_checks(lesson: str, exercises: dict[str, str]) -> None:
    """The lesson defines no check, imports each from td3_lib.course.checks (and nothing else from there),
    defines each exercise's function and calls its check alone in one line."""
    sources = notebook_cells(lesson)
    assert not any(re.search(r"^def check_", s, re.M) for s in sources), f"lesson {lesson} defines a check"
    imported = {name.strip() for s in sources for line in re.findall(r"from td3_lib\.course\.checks import ([^\n]+)", s)
                for name in line.split(",")}
    assert imported == {f"check_{name}" for name in exercises}, imported
    for name, stub in exercises.items():
        assert any(s.lstrip().startswith(f"def {name}(") and stub in s for s in sources), f"{name}: its stub"
        assert f"print(check_{name}({name}))" in sources, f"check_{name}: not called alone in one line"
