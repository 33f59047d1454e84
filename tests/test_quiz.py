"""The lessons' quiz check: right, wrong, unanswered and invalid answers; answers sealed, not in the cells."""

import json
import re
from pathlib import Path

import pytest

from td3_lib.course import quiz

NOTEBOOKS = sorted(Path(__file__).resolve().parent.parent.glob("notebooks/*.ipynb"))


@pytest.fixture
def sealed(tmp_path, monkeypatch):
    """A quiz file with one question, (b) right, in place of the shipped one."""
    path = tmp_path / "quiz.json"
    monkeypatch.setattr(quiz, "quiz_path", lambda: path)
    quiz.save_questions({"99-q1": quiz.seal("99-q1", "b", "abc", "look at the minimum", "Because min < max.")})
    yield path
    quiz.questions.cache_clear()


def test_right_wrong_unanswered_invalid(sealed, capsys):
    assert quiz.check("99-q1", "b") is True
    assert capsys.readouterr().out == "Correct: (b).\n\nBecause min < max.\n"
    assert quiz.check("99-q1", " B ") is True  # case and spaces forgiven
    capsys.readouterr()
    assert quiz.check("99-q1", "a") is False
    assert capsys.readouterr().out.strip() == "Not yet: (a) is not right. Hint: look at the minimum"
    assert quiz.check("99-q1", None) is False
    assert "Not answered yet" in capsys.readouterr().out
    assert quiz.check("99-q1", "z") is False
    assert "'z' is not one of the choices; use one of 'a', 'b', 'c'" in capsys.readouterr().out
    assert quiz.check("99-q1", "ab") is False
    with pytest.raises(KeyError, match="No quiz question '99-q2'"):
        quiz.check("99-q2", "b")


def test_the_file_holds_neither_the_letter_nor_the_explanation(sealed):
    text = sealed.read_text()
    assert "Because" not in text and '"b"' not in text
    assert quiz.explanation("99-q1", "a") != "Because min < max."
    assert quiz.explanation("99-q1", "b") == "Because min < max."


def test_seal_refuses_a_letter_outside_the_choices():
    with pytest.raises(ValueError, match="correct='d' must be one of the choices 'abc'"):
        quiz.seal("99-q1", "d", "abc", "", "")


def quiz_calls(notebook: Path) -> list[str]:
    """The source of every code cell of ``notebook`` that calls check(...)."""
    cells = json.loads(notebook.read_text())["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code" and "check(" in "".join(c["source"])]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_every_quiz_cell_names_a_sealed_question_and_no_answer(notebook):
    for source in quiz_calls(notebook):
        for call in re.findall(r"check\((.*)\)", source):
            question = re.match(r"\s*\"([^\"]+)\"\s*,\s*answer\s*$", call)
            assert question, f"{notebook.name}: {call!r} must be check(\"ID\", answer)"
            assert question.group(1) in quiz.questions(), f"{notebook.name}: {question.group(1)} is not sealed"



def test_every_module_imports_and_a_question_seals_without_fcntl(tmp_path):
    """Windows has no fcntl (nor resource): the lessons import there, and sealing a question works
    without its lock."""
    import subprocess
    import sys

    code = f"""
import importlib, pkgutil, sys
from pathlib import Path
sys.modules["fcntl"] = sys.modules["resource"] = None  # as on Windows: importing them fails
import td3_lib
for module in pkgutil.walk_packages(td3_lib.__path__, "td3_lib."):
    importlib.import_module(module.name)
from td3_lib.course import quiz
assert quiz.fcntl is None
quiz.quiz_path = lambda: Path({str(tmp_path)!r}) / "quiz.json"
quiz.main(["99-q1", "b", "abc", "a hint", "the explanation"])
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "99-q1" in json.loads((tmp_path / "quiz.json").read_text())
