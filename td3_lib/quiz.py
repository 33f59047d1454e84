"""The lessons' quiz questions: a multiple-choice answer checked in a code cell.

A quiz cell sets ``answer`` to one of the choices and calls ``check``; it is
stored unanswered, so the stored output is the prompt. The explanation sits
in a collapsed cell below it, to be opened after answering.
"""

from __future__ import annotations


def check(answer, correct: str, choices: str = "abcd", hint: str = "") -> bool:
    """Print whether ``answer`` (a letter among ``choices``) is the ``correct`` one; return it.

    A wrong letter gets "Not yet: ..." with ``hint``; no answer or a letter
    that is not a choice says what is expected. Nothing raises, so a notebook
    runs top to bottom whatever the learner typed.
    """
    allowed = ", ".join(repr(c) for c in choices)
    if answer is None:
        print(f"Not answered yet: set answer to one of {allowed} and run this cell again.")
        return False
    letter = str(answer).strip().lower()
    if letter not in choices or len(letter) != 1:
        print(f"Not yet: {answer!r} is not one of the choices; use one of {allowed}.")
        return False
    if letter != correct:
        print(f"Not yet: ({letter}) is not right." + (f" Hint: {hint}" if hint else ""))
        return False
    print(f"Correct: ({letter}). Open the explanation below to check your reasoning.")
    return True
