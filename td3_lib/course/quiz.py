"""The lessons' quiz questions: a multiple-choice answer checked in a code cell, its answer sealed.

A quiz cell sets ``answer`` and calls ``check("02-q1", answer)``. The correct
letter is not in the notebook: ``quiz.json`` (beside this module) keeps, per
question, the SHA-256 of ``"ID:LETTER"`` for the right letter, a hint, and the
explanation enciphered with a key derived from the right letter, so the
explanation can be read only once the question is answered correctly. Four
letters are easy to try one by one; the seal keeps the answer out of the
learner's sight, it is not a secret.

Maintainers add or change a question with ``seal`` and ``save_questions``
(``python -m td3_lib.course.quiz ID LETTER CHOICES "HINT" "EXPLANATION"``).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import sys
from functools import lru_cache
from importlib import resources
from pathlib import Path

try:  # Unix; on Windows, where the lessons run too, sealing a question takes no lock
    import fcntl
except ImportError:
    fcntl = None

QUIZ_FILE = "quiz.json"


def digest(question: str, letter: str) -> str:
    """The seal of one answer: SHA-256 of ``"ID:LETTER"``, hex."""
    return hashlib.sha256(f"{question}:{letter}".encode()).hexdigest()


def keystream(question: str, letter: str, n: int) -> bytes:
    """``n`` bytes derived from the question and its right letter (SHA-256 in counter mode)."""
    blocks = (hashlib.sha256(f"{question}:{letter}:explanation:{i}".encode()).digest()
              for i in range((n + 31) // 32))
    return b"".join(blocks)[:n]


def xor(data: bytes, key: bytes) -> bytes:
    return bytes(a ^ b for a, b in zip(data, key))


def seal(question: str, correct: str, choices: str, hint: str, explanation: str) -> dict:
    """A question's entry in ``quiz.json``: the right letter hashed, the explanation enciphered."""
    if len(correct) != 1 or correct not in choices:
        raise ValueError(f"Quiz {question}: correct={correct!r} must be one of the choices {choices!r}.")
    text = explanation.encode()
    return {"choices": choices, "answer": digest(question, correct), "hint": hint,
            "explanation": base64.b64encode(xor(text, keystream(question, correct, len(text)))).decode()}


def quiz_path() -> Path:
    return Path(str(resources.files(__package__))) / QUIZ_FILE


@lru_cache(maxsize=1)
def questions() -> dict:
    """Every sealed question, by id (read once)."""
    return json.loads(quiz_path().read_text())


def save_questions(entries: dict, path: Path | None = None) -> None:
    """Write ``entries`` (id -> ``seal(...)``) into ``quiz.json``, sorted by id."""
    path = path or quiz_path()
    path.write_text(json.dumps(dict(sorted(entries.items())), indent=1, ensure_ascii=False) + "\n")
    questions.cache_clear()


def explanation(question: str, letter: str) -> str:
    """The question's explanation, deciphered with ``letter`` (garbled unless it is the right one)."""
    entry = questions()[question]
    data = base64.b64decode(entry["explanation"])
    return xor(data, keystream(question, letter, len(data))).decode(errors="replace")


def feedback(question: str, answer) -> tuple[bool, str]:
    """Whether ``answer`` is the right letter for ``question``, and what to tell the learner.

    Right: the explanation. Wrong: "Not yet", with the hint. No answer, or a
    letter that is not a choice: what is expected. Nothing raises for a
    learner's answer, so a notebook runs top to bottom whatever they typed.
    """
    if question not in questions():
        raise KeyError(f"No quiz question {question!r}; known: {', '.join(sorted(questions()))}.")
    entry = questions()[question]
    choices = entry["choices"]
    allowed = ", ".join(repr(c) for c in choices)
    if answer is None:
        return False, f"Not answered yet: set answer to one of {allowed} and run this cell again."
    letter = str(answer).strip().lower()
    if len(letter) != 1 or letter not in choices:
        return False, f"Not yet: {answer!r} is not one of the choices; use one of {allowed}."
    if digest(question, letter) != entry["answer"]:
        return False, f"Not yet: ({letter}) is not right." + (f" Hint: {entry['hint']}" if entry["hint"] else "")
    return True, f"Correct: ({letter}).\n\n{explanation(question, letter)}"


def check(question: str, answer) -> None:
    """A quiz cell's last line: print the ``feedback`` for ``answer`` (and return nothing, so that the
    cell shows the text alone)."""
    print(feedback(question, answer)[1])


@contextlib.contextmanager
def quiz_locked():
    """Hold ``quiz.lock`` (flock, where the system has it): two maintainers sealing at once do not lose
    a question."""
    with open(quiz_path().with_suffix(".lock"), "w") as lock:
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def main(argv=None) -> None:
    """``python -m td3_lib.course.quiz ID LETTER CHOICES HINT EXPLANATION``: add or replace one question."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 5:
        sys.exit("usage: python -m td3_lib.course.quiz ID LETTER CHOICES HINT EXPLANATION")
    with quiz_locked():
        questions.cache_clear()
        entries = dict(questions()) if quiz_path().exists() else {}
        try:
            entries[args[0]] = seal(args[0], args[1], args[2], args[3], args[4])
        except ValueError as error:  # a letter that is not a choice: one line, nothing written
            sys.exit(f"error: {error}")
        save_questions(entries)
    print(f"sealed {args[0]} in {quiz_path()}")


if __name__ == "__main__":
    main()
