"""The lessons' quiz check: right, wrong, unanswered and invalid answers."""

from td3_lib.quiz import check


def test_right_wrong_unanswered_invalid(capsys):
    assert check("b", "b") is True
    assert "Correct: (b)" in capsys.readouterr().out
    assert check(" B ", "b") is True  # case and spaces forgiven
    capsys.readouterr()
    assert check("a", "b", hint="look at the minimum") is False
    assert capsys.readouterr().out.strip() == "Not yet: (a) is not right. Hint: look at the minimum"
    assert check(None, "b") is False
    assert "Not answered yet" in capsys.readouterr().out
    assert check("z", "b", choices="abc") is False
    assert "'z' is not one of the choices; use one of 'a', 'b', 'c'" in capsys.readouterr().out
    assert check("ab", "b") is False
