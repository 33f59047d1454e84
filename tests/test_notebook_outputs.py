"""What a learner sees first: the stored outputs of every lesson are clean, and every lesson fits an hour.

nbval compares a lesson's text outputs with a fresh quick-mode run, except in cells marked
NBVAL_IGNORE_OUTPUT; it never looks at what those cells stored. This test reads the stored
notebooks themselves:

- every progress-bar widget view has its widget state saved beside it (or it shows as a blank box);
- no output holds a path of the machine that ran it (a warning's /tmp/ipykernel_... line, a
  site-packages path) or a progress bar's text cut short ("…");
- no output says "-0" (a number rounded to zero and printed with its sign);
- a lesson executed at the full budgets (its set-up cell prints "full budgets") holds no output of
  quick mode;
- a lesson has at most MAX_CELLS cells and MAX_WORDS words of prose, and no markdown cell over
  MAX_CELL_WORDS words.

``output_problems`` is also what notebooks/execute.py checks after executing a lesson.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted(Path(__file__).resolve().parent.parent.glob("notebooks/*.ipynb"))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
MACHINE_PATH = re.compile(r"/tmp/|/root/|/home/|/work/|/content/|site-packages|ipykernel_\d|[A-Z]:\\\\")
NEGATIVE_ZERO = re.compile(r"(?<![\w.])[-−]0(?![\w.])")
MODE_LINE = re.compile(r"^(quick mode|full budgets)", re.MULTILINE)
MAX_CELLS, MAX_WORDS, MAX_CELL_WORDS = 55, 3_000, 320


def output_texts(output: dict) -> list[str]:
    """The text a learner reads in one output: streams, text/plain and HTML without embedded data."""
    if output["output_type"] == "stream":
        return ["".join(output["text"])]
    if output["output_type"] == "error":
        return [f"{output['ename']}: {output['evalue']}"]
    data = output.get("data", {})
    texts = ["".join(data[key]) for key in ("text/plain", "text/markdown") if key in data]
    if "text/html" in data:
        texts.append(re.sub(r"data:[^\"']*", "", "".join(data["text/html"])))  # an embedded clip is no text
    return texts


def output_problems(path: Path) -> list[str]:
    """Every rule the stored outputs of the notebook at ``path`` break, one line each."""
    notebook = json.loads(Path(path).read_text())
    state = notebook["metadata"].get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    problems, texts = [], []
    for index, cell in enumerate(notebook["cells"]):
        for output in cell.get("outputs", []):
            view = output.get("data", {}).get(WIDGET_VIEW)
            if view is not None and view["model_id"] not in state:
                problems.append(f"c{index}: a widget view without its widget state")
            if view is not None and "…" in "".join(output["data"].get("text/plain", "")):
                problems.append(f"c{index}: a progress bar's text cut short")
            for text in output_texts(output):
                texts.append(text)
                if MACHINE_PATH.search(text):
                    problems.append(f"c{index}: a machine path: {MACHINE_PATH.search(text).group(0)!r}")
                if NEGATIVE_ZERO.search(text):
                    problems.append(f"c{index}: '-0' in {text[max(0, NEGATIVE_ZERO.search(text).start() - 40):][:80]!r}")
    modes = {m for text in texts for m in MODE_LINE.findall(text)}
    if len(modes) != 1:
        problems.append(f"the set-up cell should print its mode once ('quick mode' or 'full budgets'); found {sorted(modes)}")
    if modes == {"full budgets"} and any("quick mode" in text.lower() for text in texts):
        problems.append("executed at the full budgets, but an output says 'quick mode'")
    return problems


def prose_words(cell: dict) -> int:
    return len(re.findall(r"\w+", "".join(cell["source"])))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_outputs_are_clean(notebook):
    assert output_problems(notebook) == []


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_a_lesson_fits_an_hour(notebook):
    cells = json.loads(notebook.read_text())["cells"]
    prose = [prose_words(c) for c in cells if c["cell_type"] == "markdown"]
    assert len(cells) <= MAX_CELLS, f"{len(cells)} cells"
    assert sum(prose) <= MAX_WORDS, f"{sum(prose)} words of prose"
    long = [(i, prose_words(c)) for i, c in enumerate(cells) if c["cell_type"] == "markdown" and prose_words(c) > MAX_CELL_WORDS]
    assert long == [], f"markdown cells over {MAX_CELL_WORDS} words (index, words): {long}"


def test_the_rules_catch_what_they_are_for(tmp_path):
    bad = {"metadata": {}, "cells": [{"cell_type": "code", "source": [], "outputs": [
        {"output_type": "stream", "name": "stdout", "text": ["full budgets\n"]},
        {"output_type": "stream", "name": "stderr", "text": ["/tmp/ipykernel_22107/3430627244.py:2: UserWarning: x\n"]},
        {"output_type": "display_data", "metadata": {}, "data": {WIDGET_VIEW: {"model_id": "abc"},
                                                                "text/plain": ["eval=-1…"]}},
        {"output_type": "stream", "name": "stdout", "text": ["tau = 1 leaves the panel: -0 to 5\n", "a figure (quick mode)\n"]}]}]}
    path = tmp_path / "bad.ipynb"
    path.write_text(json.dumps(bad))
    problems = "\n".join(output_problems(path))
    for expected in ("without its widget state", "cut short", "machine path", "'-0'", "says 'quick mode'"):
        assert expected in problems, expected


def execute_script():
    """notebooks/execute.py as a module."""
    from conftest import script_module  # not at the top: notebooks/execute.py loads this file outside pytest
    return script_module(NOTEBOOKS[0].parent / "execute.py", "execute_script")


def test_a_lesson_that_starts_from_a_finished_run_gets_its_files_or_a_clear_refusal(tmp_path, monkeypatch):
    """notebooks/execute.py: lesson 06's full budget is a run made beforehand by the command it names,
    copied into the lesson's checkpoint folder (the checkpoint, history and best actor) once it has its
    steps; a folder that holds a run is left alone, and a missing or unfinished run is refused, naming the
    command that makes it."""
    execute = execute_script()
    source, _, command, steps = execute.STARTS_FROM["06_td3_assembled.ipynb"]
    assert command.endswith(f"train --env Hopper-v5 --steps {steps} --save-buffer --out {execute.LESSON_06_RUN}")
    assert source == execute.ROOT / execute.LESSON_06_RUN
    run, folder = tmp_path / "made" / "Hopper-v5-seed0", tmp_path / "notebooks" / "runs" / "Hopper-v5-seed0"
    monkeypatch.setitem(execute.STARTS_FROM, "06_td3_assembled.ipynb", (run, folder, "python make.py", 1_000))
    lesson = Path("06_td3_assembled.ipynb")
    with pytest.raises(FileNotFoundError, match="which is not there: make it with python make.py"):
        execute.start_from_finished_run(lesson)
    run.mkdir(parents=True)
    for name in (*execute.RUN_FILES, "curve.png"):
        (run / name).write_text(name)
    (run / "history.csv").write_text("step,eval_mean\n500,1.0\n")  # stopped half-way
    with pytest.raises(FileNotFoundError, match="which is not there"):
        execute.start_from_finished_run(lesson)
    (run / "history.csv").write_text("step,eval_mean\n500,1.0\n1000,2.0\n")
    execute.start_from_finished_run(lesson)
    assert sorted(p.name for p in folder.iterdir()) == sorted(execute.RUN_FILES)
    (folder / "history.csv").write_text("the lesson's own")
    execute.start_from_finished_run(lesson)
    assert (folder / "history.csv").read_text() == "the lesson's own"


def test_a_lesson_is_executed_without_the_runs_of_its_earlier_executions(tmp_path):
    """notebooks/execute.py removes the lesson's own run folders first (a sweep would otherwise resume its
    finished runs and store a call that trained nothing); other lessons' folders and lesson 06's starting
    run stay."""
    runs = tmp_path / "runs"
    for name in ("07_ablation", "07_TD3", "06_your_agent", "Hopper-v5-seed0", "videos"):
        (runs / name).mkdir(parents=True)
        (runs / name / "history.csv").write_text("x")
    execute_script().fresh_runs(tmp_path / "07_ablations.ipynb")
    assert sorted(p.name for p in runs.iterdir()) == ["06_your_agent", "Hopper-v5-seed0", "videos"]


def stored_clips(notebook: Path) -> list[bytes]:
    """The mp4 clips a lesson's stored outputs embed (``show_video`` and ``show_videos`` embed them as base64)."""
    import base64

    clips = []
    for cell in json.loads(notebook.read_text())["cells"]:
        for output in cell.get("outputs", []):
            html = "".join(output.get("data", {}).get("text/html", ""))
            clips += [base64.b64decode(b) for b in re.findall(r"data:video/mp4;base64,([A-Za-z0-9+/=]+)", html)]
    return clips


def test_lesson_06s_stored_hopper_clips_show_the_hopper(tmp_path):
    """Every clip lesson 06 stores is of Hopper-v5, filmed by the camera that follows it: the hopper is in
    at least 95% of the frames (td3_lib.video.robot_fraction)."""
    from td3_lib.video import robot_fraction

    clips = stored_clips(next(p for p in NOTEBOOKS if p.name.startswith("06_")))
    assert len(clips) == 2  # the shipped hopper and the learner's
    for k, clip in enumerate(clips):
        path = tmp_path / f"clip{k}.mp4"
        path.write_bytes(clip)
        assert robot_fraction(path) >= 0.95, f"clip {k}: the hopper in {robot_fraction(path):.0%} of the frames"
