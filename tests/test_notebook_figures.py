"""Every notebook cell that draws a figure keeps it as a stored image.

nbval compares text outputs only, so a cell whose figure came out blank or missing
would pass the notebook tests unnoticed; this test reads the stored notebooks instead.
A cell draws when it calls plt.show(), creates a figure (plt.subplots, plt.figure,
plt.subplot_mosaic), or calls seed_band, draw_update, a plot_* function, or a function
defined in the notebook that does one of these.

A cell the learner opts into (a switch such as ``RUN_COMPARISON = False`` that the full budget leaves off)
trains and draws nothing there: its stored output is the one line that says so, "Not run: set ...", and
that line stands in for the figure.
"""

import ast
import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted(Path(__file__).resolve().parent.parent.glob("notebooks/*.ipynb"))

PYPLOT_DRAWING = {"show", "subplots", "figure", "subplot_mosaic"}
DRAWING_FUNCTIONS = {"seed_band", "draw_update"}
NOT_DRAWING = {"plot_history"}  # writes an image file; shows nothing in the notebook


def called_name(call: ast.Call) -> str:
    """``plt.show`` for plt.show(...), ``seed_band`` for seed_band(...), ``"" `` for anything else."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{func.attr}"
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def draws(name: str, helpers: set[str]) -> bool:
    module, _, attr = name.rpartition(".")
    if module == "plt":
        return attr in PYPLOT_DRAWING
    if name in NOT_DRAWING:
        return False
    return name in DRAWING_FUNCTIONS or name in helpers or (not module and name.startswith("plot_"))


def calls(nodes) -> list[str]:
    """The names called in ``nodes``, leaving out the bodies of functions and classes defined there."""
    found, todo = [], list(nodes)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Call):
            found.append(called_name(node))
        todo.extend(ast.iter_child_nodes(node))
    return found


def parse(source: str) -> ast.Module | None:
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def drawing_cells(notebook: Path) -> list[tuple[int, dict]]:
    """(index, cell) of every code cell that draws, in notebook order."""
    cells = json.loads(notebook.read_text())["cells"]
    helpers: set[str] = set()  # functions defined in the notebook whose body draws
    found = []
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        tree = parse(source)
        if tree is None:  # not Python (a magic we did not strip): fall back to the names alone
            if re.search(r"\bplt\.(show|subplots|figure)\(|\b(seed_band|draw_update|plot_\w+)\(", source):
                found.append((index, cell))
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(draws(name, helpers) for name in calls(node.body)):
                    helpers.add(node.name)
        if any(draws(name, helpers) for name in calls(tree.body)):
            found.append((index, cell))
    return found


def has_image(cell: dict) -> bool:
    return any("image/png" in output.get("data", {}) for output in cell.get("outputs", []))


def not_run(cell: dict) -> bool:
    """The cell's stored output is only the opt-in's line, "Not run: set ...": it ran nothing to draw."""
    text = "".join("".join(o.get("text", "")) for o in cell.get("outputs", []) if o.get("output_type") == "stream")
    return len(cell.get("outputs", [])) == 1 and text.startswith("Not run: set ") and text.count("\n") <= 1


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_every_drawing_cell_stores_its_figure(notebook):
    missing = [f"cell {index} ({''.join(cell['source']).splitlines()[0][:60]!r})"
               for index, cell in drawing_cells(notebook) if not has_image(cell) and not not_run(cell)]
    assert not missing, f"{notebook.name}: these cells draw but store no image: " + "; ".join(missing)


def test_the_rule_finds_what_draws(tmp_path):
    cell = lambda source, outputs=(): {"cell_type": "code", "source": [source], "outputs": list(outputs)}
    image = {"output_type": "display_data", "data": {"image/png": "iVBOR", "text/plain": "<Figure>"}}
    cells = [
        cell("fig, ax = plt.subplots()\nax.plot([1, 2])\nplt.show()", [image]),   # 0 draws, stored
        cell("def plot_bias(ax, rows):\n    ax.plot(rows)\n"),                     # 1 only defines
        cell("def panel(rows):\n    fig = plt.figure()\n    return fig\n"),         # 2 only defines a helper
        cell("panel([1, 2])"),                                                      # 3 calls the helper
        cell("seed_band(ax, histories)"),                                           # 4 draws
        cell("plot_history(history, path, 'title')"),                               # 5 writes a file only
        cell("%matplotlib inline\ndraw_update('bellman_target')", [image]),          # 6 draws, stored
        cell("print(np.mean(x))"),                                                  # 7 nothing
    ]
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells}))
    assert [i for i, _ in drawing_cells(path)] == [0, 3, 4, 6]
    assert [i for i, c in drawing_cells(path) if not has_image(c)] == [3, 4]


def test_only_an_opt_in_that_did_not_run_stands_in_for_a_figure():
    stream = lambda text: {"output_type": "stream", "name": "stdout", "text": [text]}
    cell = lambda *outputs: {"cell_type": "code", "source": ["if RUN:\n    plt.show()\n"], "outputs": list(outputs)}
    assert not_run(cell(stream("Not run: set RUN_COMPARISON = True on a GPU runtime.\n")))
    assert not not_run(cell())                                                  # nothing stored
    assert not not_run(cell(stream("10 runs of 1,000,000 steps in 3.1 h\n")))    # it ran, and lost its figure
    assert not not_run(cell(stream("Not run: set RUN = True.\n"), stream("more\n")))
    assert not not_run(cell(stream("Not run: set RUN = True.\nthen it trained\n")))
