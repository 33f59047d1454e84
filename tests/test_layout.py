"""The house rules that keep td3_lib readable, checked on its source: the engine apart from the course
wing, short modules and functions, no nonlocal, and no library code that switches matplotlib's backend."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "td3_lib"
ENGINE = ("agent", "networks", "targets", "buffer", "config", "envs", "rollout", "training", "run",
          "checkpoint", "cuda_graph")
ENGINE_HELPERS = ("progress",)  # the progress bar train draws
SOURCES = sorted(PACKAGE.rglob("*.py"))


def imported_modules(path: Path) -> set[str]:
    """The td3_lib modules ``path`` imports, as their first name below td3_lib (relative or absolute)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level == 1 or module.startswith("td3_lib"):
                parts = module.removeprefix("td3_lib").strip(".").split(".")
                names.add(parts[0] if parts[0] else node.names[0].name)
        elif isinstance(node, ast.Import):
            names |= {a.name.split(".")[1] for a in node.names if a.name.startswith("td3_lib.")}
    return names


@pytest.mark.parametrize("module", ENGINE)
def test_the_engine_imports_only_the_engine(module):
    """Not the course wing (td3_lib.course), the shipped agents, the sweep, the plots or the video tools."""
    outside = imported_modules(PACKAGE / f"{module}.py") - set(ENGINE) - set(ENGINE_HELPERS)
    assert not outside, f"{module}.py imports {sorted(outside)}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_short_modules_short_functions_no_nonlocal(path):
    text = path.read_text()
    assert text.count("\n") <= 400, f"{path.name}: {text.count(chr(10))} lines"
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert node.end_lineno - node.lineno < 50, f"{path.name}: {node.name} is over 50 lines"
        assert not isinstance(node, ast.Nonlocal), f"{path.name}:{node.lineno} uses nonlocal"
    assert "matplotlib.use(" not in text and "switch_backend(" not in text
