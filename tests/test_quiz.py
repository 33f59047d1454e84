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


def test_sealing_a_letter_that_is_not_a_choice_is_one_line_and_writes_nothing(sealed):
    before = sealed.read_text()
    with pytest.raises(SystemExit) as exit_:
        quiz.main(["99-q2", "d", "abc", "a hint", "the explanation"])
    assert str(exit_.value.code) == "error: Quiz 99-q2: correct='d' must be one of the choices 'abc'."
    assert sealed.read_text() == before


def test_right_wrong_unanswered_invalid(sealed):
    assert quiz.feedback("99-q1", "b") == (True, "Correct: (b).\n\nBecause min < max.")
    assert quiz.feedback("99-q1", " B ")[0] is True  # case and spaces forgiven
    assert quiz.feedback("99-q1", "a") == (False, "Not yet: (a) is not right. Hint: look at the minimum")
    right, text = quiz.feedback("99-q1", None)
    assert right is False and text.startswith("Not answered yet")
    right, text = quiz.feedback("99-q1", "z")
    assert right is False and "'z' is not one of the choices; use one of 'a', 'b', 'c'" in text
    assert quiz.feedback("99-q1", "ab")[0] is False
    with pytest.raises(KeyError, match="No quiz question '99-q2'"):
        quiz.feedback("99-q2", "b")


def test_check_prints_the_feedback_and_returns_nothing_for_the_cell_to_show(sealed, capsys):
    assert quiz.check("99-q1", "b") is None
    assert capsys.readouterr().out == "Correct: (b).\n\nBecause min < max.\n"
    assert quiz.check("99-q1", None) is None
    assert capsys.readouterr().out.startswith("Not answered yet")


def test_the_file_holds_neither_the_letter_nor_the_explanation(sealed):
    text = sealed.read_text()
    assert "Because" not in text and '"b"' not in text
    assert quiz.explanation("99-q1", "a") != "Because min < max."
    assert quiz.explanation("99-q1", "b") == "Because min < max."


def test_seal_refuses_a_letter_outside_the_choices():
    with pytest.raises(ValueError, match="correct='d' must be one of the choices 'abc'"):
        quiz.seal("99-q1", "d", "abc", "", "")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_every_quiz_cell_names_a_sealed_question_and_no_answer(notebook):
    for _, source in quiz_cells(notebook):
        for call in re.findall(r"check\((.*)\)", source):
            question = re.match(r"\s*\"([^\"]+)\"\s*,\s*answer\s*$", call)
            assert question, f"{notebook.name}: {call!r} must be check(\"ID\", answer)"
            assert question.group(1) in quiz.questions(), f"{notebook.name}: {question.group(1)} is not sealed"



def quiz_cells(notebook: Path) -> list[tuple[int, str]]:
    """(index, source) of every quiz cell of ``notebook``."""
    cells = json.loads(notebook.read_text())["cells"]
    return [(i, "".join(c["source"])) for i, c in enumerate(cells)
            if c["cell_type"] == "code" and "check(" in "".join(c["source"])]


def options(source: str) -> dict[str, str]:
    """The options of a quiz cell, letter -> text, from its comment lines "# (a) ..." and their continuations."""
    found, letter = {}, None
    for line in source.splitlines():
        start = re.match(r"#\s*\(([a-z])\)\s*(.*)", line)
        if start:
            letter = start.group(1)
            found[letter] = start.group(2).strip()
        elif line.startswith("#") and letter is not None:
            found[letter] += " " + line.lstrip("#").strip()
        elif not line.startswith("#"):
            letter = None
    return found


def right_letter(question: str) -> str:
    """The sealed right letter, found by trying each choice against its seal."""
    entry = quiz.questions()[question]
    return next(letter for letter in entry["choices"] if quiz.digest(question, letter) == entry["answer"])


def every_quiz() -> list[tuple[Path, int, str, dict]]:
    return [(notebook, index, re.search(r'check\("([^"]+)"', source).group(1), options(source))
            for notebook in NOTEBOOKS for index, source in quiz_cells(notebook)]


def test_each_quiz_cell_lists_the_sealed_choices():
    for notebook, _, question, opts in every_quiz():
        assert "".join(sorted(opts)) == quiz.questions()[question]["choices"], f"{notebook.name} {question}: {opts}"


def test_the_right_option_is_rarely_the_unique_longest():
    """With three options of any length, a learner who picks the longest should not do better than chance."""
    quizzes = every_quiz()
    longest = [question for _, _, question, opts in quizzes
               if sorted(len(t) for t in opts.values())[-1] == len(opts[right_letter(question)])
               and [len(t) for t in opts.values()].count(len(opts[right_letter(question)])) == 1]
    assert len(longest) <= 0.4 * len(quizzes), f"{len(longest)} of {len(quizzes)}: {longest}"


def stored_text(cell: dict) -> str:
    return "".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
                   for o in cell.get("outputs", []))


def shows(number: str, text: str) -> bool:
    """Whether ``text`` prints ``number``, or a number one decimal finer that rounds to it (0.768 shows 0.77)."""
    decimals = len(number.partition(".")[2])
    return any(round(float(found), decimals) == float(number) for found in re.findall(r"\d+\.\d+|\d+", text)
               if len(found.partition(".")[2]) in (decimals, decimals + 1))


def test_no_numeric_answer_is_printed_before_its_quiz():
    """A right option that is a number must not be readable in an output above the quiz."""
    for notebook, index, question, opts in every_quiz():
        answer = opts[right_letter(question)]
        if not re.fullmatch(r"[-+−]?[\d.,]+(\s*(and|,)\s*[-+−]?[\d.,]+)*", answer):
            continue
        cells = json.loads(notebook.read_text())["cells"][:index]
        for number in re.findall(r"\d+\.\d+|\d+", answer):
            shown = [i for i, c in enumerate(cells) if shows(number, stored_text(c))]
            assert not shown, f"{notebook.name} {question}: its answer {number} is printed in cell(s) {shown}"


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


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_a_stored_quiz_cell_shows_its_feedback_alone(notebook):
    """What a learner sees under a quiz: the printed feedback, not also a value the cell returned."""
    cells = json.loads(notebook.read_text())["cells"]
    for index, _ in quiz_cells(notebook):
        kinds = {output["output_type"] for output in cells[index]["outputs"]}
        assert kinds <= {"stream"}, f"{notebook.name} cell {index}: {kinds}"
