"""The house rules that keep td3_lib readable, checked on its source: the engine apart from the course
wing, only the lessons' side importing the course, ``import td3_lib`` light, short modules and
functions, no nonlocal, and no library code that switches matplotlib's backend."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "td3_lib"
ENGINE = ("agent", "networks", "targets", "buffer", "config", "envs", "rollout", "training", "run",
          "checkpoint", "cuda_graph", "tables", "batched", "batched_training")
ENGINE_HELPERS = ("progress",)  # the progress bar train draws
SOURCES = sorted(PACKAGE.rglob("*.py"))
CHECKED = SOURCES + sorted((ROOT / "benchmarks").rglob("*.py")) + sorted((ROOT / "experiments").rglob("*.py"))
"""Where the size rules hold: the library, the benchmarks and the experiment specifications."""
COURSE = "td3_lib.course"


def module_name(path: Path) -> str:
    """``td3_lib/sweep/summary.py`` -> ``td3_lib.sweep.summary`` (a package's ``__init__`` is the package)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> list[tuple[str, bool]]:
    """Every module ``path`` imports, relative imports resolved, each with whether the import sits
    inside a function (a lazy import, run only when the function is called)."""
    tree, found = ast.parse(path.read_text()), []
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for scope in [tree, *[n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]]:
        lazy = scope is not tree
        for node in ast.walk(scope) if lazy else iter_module_level(scope):
            if isinstance(node, ast.ImportFrom):
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.level and node.module else (base if node.level else node.module)
                found += [(f"{module}.{a.name}", lazy) for a in node.names]
            elif isinstance(node, ast.Import):
                found += [(a.name, lazy) for a in node.names]
    return found


def iter_module_level(tree):
    """The nodes of a module outside its functions (a class body's methods count as functions)."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def td3_lib_modules(path: Path) -> set[str]:
    """The td3_lib modules ``path`` imports, as their first name below td3_lib."""
    return {name.split(".")[1] for name, _ in imports(path) if name.startswith("td3_lib.")}


def test_imports_are_resolved():
    summary = dict(imports(PACKAGE / "sweep" / "summary.py"))
    assert "td3_lib.stats.final_score" in summary and "td3_lib.sweep.grid.SweepRun" in summary
    cli = imports(PACKAGE / "__main__.py")
    assert ("td3_lib.course.analysis.critic_probe", True) in cli  # inside a function: lazy


@pytest.mark.parametrize("module", ENGINE)
def test_the_engine_imports_only_the_engine(module):
    """Not the course wing (td3_lib.course), the shipped agents, the sweep, the plots or the video tools."""
    outside = td3_lib_modules(PACKAGE / f"{module}.py") - set(ENGINE) - set(ENGINE_HELPERS)
    assert not outside, f"{module}.py imports {sorted(outside)}"


@pytest.mark.parametrize("path", [p for p in CHECKED if not p.is_relative_to(PACKAGE / "course")],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_only_the_lessons_side_imports_the_course(path):
    """The course wing is imported by itself, the notebooks and experiments/ only. The command line
    may reach it lazily, inside the function of an option that asks for it (``--probe critic``), so
    that ``python -m td3_lib`` does not load it otherwise; the update benchmark's plain contender is
    the course's reference TD3."""
    if path.is_relative_to(ROOT / "experiments"):
        return
    course = [(name, lazy) for name, lazy in imports(path) if name == COURSE or name.startswith(COURSE + ".")]
    if path == PACKAGE / "__main__.py":
        course = [(name, lazy) for name, lazy in course if not lazy]
    if path.is_relative_to(ROOT / "benchmarks"):
        course = [(name, lazy) for name, lazy in course if not name.startswith(f"{COURSE}.reference.")]
    assert not course, f"{path.relative_to(ROOT)} imports {course[0][0]}"


def test_import_td3_lib_loads_neither_the_course_nor_ray_nor_pyplot():
    code = ("import json, sys, td3_lib; print(json.dumps(sorted(m for m in sys.modules if m.startswith("
            "('td3_lib.course', 'ray', 'matplotlib.pyplot', 'scipy')))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert json.loads(out.stdout) == []


@pytest.mark.parametrize("path", CHECKED, ids=lambda p: str(p.relative_to(ROOT)))
def test_short_modules_short_functions_no_nonlocal(path):
    text = path.read_text()
    assert text.count("\n") <= 400, f"{path.name}: {text.count(chr(10))} lines"
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert node.end_lineno - node.lineno < 50, f"{path.name}: {node.name} is over 50 lines"
        assert not isinstance(node, ast.Nonlocal), f"{path.name}:{node.lineno} uses nonlocal"
    if path.is_relative_to(PACKAGE):
        assert "matplotlib.use(" not in text and "switch_backend(" not in text


def test_the_notebooks_import_only_what_exists():
    """Every ``from td3_lib... import name`` line of the lessons names a module and names that exist."""
    import importlib.util

    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(notebook.read_text())["cells"]:
            source = "".join(cell["source"]) if cell["cell_type"] == "code" else ""
            for node in ast.walk(ast.parse(clean(source))):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("td3_lib"):
                    module = importlib.import_module(node.module)
                    missing = [a.name for a in node.names if not hasattr(module, a.name)
                               and importlib.util.find_spec(f"{node.module}.{a.name}") is None]
                    assert not missing, f"{notebook.name}: {node.module} has no {missing}"


def clean(source: str) -> str:
    """A cell's Python: IPython's magics and shell lines (%, !) left out."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


@pytest.mark.parametrize("path", sorted((ROOT / "experiments").rglob("*.py")), ids=lambda p: p.name)
def test_experiments_are_specifications_run_through_the_sweep(path):
    """An experiment names its sweeps and results; the sweep runs them (on Ray, or in the process when
    Ray cannot start): no process pool of its own, no edit of the import path."""
    found = {module for module, _ in imports(path)}
    assert not found & {"multiprocessing", "concurrent.futures", "subprocess"}, f"{path.name} runs processes itself"
    assert "sys.path" not in path.read_text(), f"{path.name} edits sys.path"
