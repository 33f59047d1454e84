"""Lesson 07's exercise checks (``td3_lib.course.checks``) say "Right" to a right solution and "Not yet" to
each wrong one (a plausible slip), and the lesson calls its check and defines none."""

from __future__ import annotations

import itertools
import sys
import textwrap

import pytest

from checks_helpers import assert_calls_its_checks, defined
from td3_lib.course.checks import check_sign_flip_p


SIGN_FLIP = "def sign_flip_p(a, b):\n{}"
SIGN_FLIP_RIGHT = {
    "as the lesson's solution": """
        d = a - b
        observed = abs(d.mean())
        flips = list(itertools.product((1, -1), repeat=len(d)))
        count = 0
        for signs in flips:
            count += abs((np.array(signs) * d).mean()) >= observed - 1e-9
        return count / len(flips)""",
    "every flip at once, as an array of signs": """
        d = np.asarray(a) - np.asarray(b)
        signs = np.array(list(itertools.product((1, -1), repeat=d.size)))
        means = np.abs(signs @ d) / d.size
        return float(np.mean(means >= abs(d.mean()) - 1e-9))""",
    "a plain loop over the pairs": """
        n = len(a)
        d = [a[i] - b[i] for i in range(n)]
        observed = abs(sum(d) / n)
        hits = 0
        for signs in itertools.product((1, -1), repeat=n):
            total = 0.0
            for s, x in zip(signs, d):
                total += s * x
            hits += abs(total / n) >= observed - 1e-9
        return hits / 2 ** n""",
}
FLIPS = """
d = a - b
means = np.array([(np.array(s) * d).mean() for s in itertools.product((1, -1), repeat=len(d))])
"""
SIGN_FLIP_WRONG = {
    "the stub": ("raise NotImplementedError", "still the stub"),
    "returns None": ("return None", "return one number"),
    "td3_lib's test called": (
        "from td3_lib.stats import paired_permutation_p_value\nreturn paired_permutation_p_value(a, b)", "yourself"),
    "td3_lib's test called through its module": (
        "import td3_lib.stats\nreturn float(td3_lib.stats.paired_permutation_p_value(list(a), list(b)))",
        "yourself"),
    "td3_lib's difference called": ("from td3_lib.stats import difference\nreturn difference(a, b).p", "yourself"),
    "td3_lib's unpaired test called": (
        "from td3_lib.stats import permutation_p_value\nreturn permutation_p_value(a, b)", "yourself"),
    "one-sided": (FLIPS + "return float(np.mean(means >= d.mean() - 1e-9))", "either sign"),
    "abs on the observed mean only": (FLIPS + "return float(np.mean(means >= abs(d.mean()) - 1e-9))",
                                      "either sign"),
    "strictly larger": (FLIPS + "return float(np.mean(np.abs(means) > abs(d.mean()) + 1e-9))", "counts too"),
    "no tolerance": (FLIPS + "return float(np.mean(np.abs(means) >= abs(d.mean())))", ""),
    "the observed signs left out": (
        FLIPS + "return (np.sum(np.abs(means) >= abs(d.mean()) - 1e-9) - 1) / (len(means) - 1)", "count them"),
    "the count, not the share": (FLIPS + "return int(np.sum(np.abs(means) >= abs(d.mean()) - 1e-9))", "share"),
    "the unpaired test instead": ("""
        pooled, observed = np.concatenate([a, b]), abs(a.mean() - b.mean())
        gaps = [abs(pooled[list(i)].mean() - np.delete(pooled, list(i)).mean())
                for i in itertools.combinations(range(len(pooled)), len(a))]
        return float(np.mean(np.array(gaps) >= observed - 1e-9))""", "unpaired"),
    "random flips, not every flip": ("""
        rng, d = np.random.default_rng(0), a - b
        signs = rng.choice([1, -1], size=(2_000, len(d)))
        return float(np.mean(np.abs(signs @ d) / len(d) >= abs(d.mean()) - 1e-9))""", ""),
    "one sign flipped at a time": ("""
        d = a - b
        flips = [np.where(np.arange(len(d)) == i, -1, 1) for i in range(len(d))] + [np.ones(len(d))]
        return float(np.mean([abs((s * d).mean()) >= abs(d.mean()) - 1e-9 for s in flips]))""", ""),
    "a list back": (FLIPS + "return list(np.abs(means) >= abs(d.mean()) - 1e-9)", "one number"),
}


def sign_flip_p_from(body: str):
    return defined(SIGN_FLIP.format(textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")), "sign_flip_p",
                   itertools=itertools)


@pytest.mark.parametrize("body", SIGN_FLIP_RIGHT.values(), ids=SIGN_FLIP_RIGHT.keys())
def test_07_the_sign_flip_test_right_is_right(body):
    verdict = check_sign_flip_p(sign_flip_p_from(body))
    assert verdict.startswith("Right"), verdict


@pytest.mark.parametrize("slip", SIGN_FLIP_WRONG, ids=SIGN_FLIP_WRONG.keys())
def test_07_each_slip_in_the_sign_flip_test_is_not_yet(slip):
    body, says = SIGN_FLIP_WRONG[slip]
    verdict = check_sign_flip_p(sign_flip_p_from(body))
    assert verdict.startswith("Not yet") and says in verdict, f"{slip}: {verdict}"


def test_07_a_slip_the_check_cannot_name_gets_the_case_it_fails_on():
    """No tolerance: the tie that rounding breaks shows, and no other slip's hint is given."""
    verdict = check_sign_flip_p(sign_flip_p_from(SIGN_FLIP_WRONG["no tolerance"][0]))
    assert verdict.startswith("Not yet: for a = [") and "every way" in verdict, verdict


def test_07_the_check_leaves_the_profiler_as_it_found_it():
    def tracer(frame, event, arg):
        return None

    sys.setprofile(tracer)
    try:
        check_sign_flip_p(sign_flip_p_from(SIGN_FLIP_RIGHT["as the lesson's solution"]))
        assert sys.getprofile() is tracer
    finally:
        sys.setprofile(None)


def test_07_the_lesson_calls_its_check_and_defines_none():
    assert_calls_its_checks("07", {"sign_flip_p": "raise NotImplementedError"})
