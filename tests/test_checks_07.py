"""Lesson 07's exercise checks (``td3_lib.course.checks``) say "Right" to a right solution and "Not yet" to
each wrong one (a plausible slip), and the lesson calls its check and defines none."""

from __future__ import annotations

import itertools
import sys
import textwrap

import pytest

from checks_helpers import assert_calls_its_checks, defined
from td3_lib.course.checks import check_permutation_p


PERMUTATION = "def permutation_p(a, b):\n{}"
PERMUTATION_RIGHT = {
    "as the lesson's solution": """
        pooled, n = np.concatenate([a, b]), len(a)
        observed = abs(a.mean() - b.mean())
        splits = list(itertools.combinations(range(len(pooled)), n))
        count = 0
        for idx in splits:
            in_a = np.zeros(len(pooled), dtype=bool)
            in_a[list(idx)] = True
            count += abs(pooled[in_a].mean() - pooled[~in_a].mean()) >= observed - 1e-9
        return count / len(splits)""",
    "group B as the pooled total minus group A": """
        pooled, total = list(a) + list(b), sum(a) + sum(b)
        observed = abs(sum(a) / len(a) - sum(b) / len(b))
        hits = splits = 0
        for group in itertools.combinations(pooled, len(a)):
            gap = sum(group) / len(a) - (total - sum(group)) / len(b)
            hits += abs(gap) >= observed - 1e-9
            splits += 1
        return hits / splits""",
    "group B as the indices not chosen": """
        pooled = np.concatenate([a, b])
        observed = abs(a.mean() - b.mean())
        gaps = [abs(pooled[list(i)].mean() - np.delete(pooled, list(i)).mean())
                for i in itertools.combinations(range(len(pooled)), len(a))]
        return float(np.mean(np.array(gaps) >= observed - 1e-9))""",
}
PERMUTATION_WRONG = {
    "the stub": ("raise NotImplementedError", "still the stub"),
    "returns None": ("return None", "return one number"),
    "td3_lib's test called": ("from td3_lib.stats import permutation_p_value\nreturn permutation_p_value(a, b)",
                              "count the splits yourself"),
    "td3_lib's test called through its module": (
        "import td3_lib.stats\nreturn float(td3_lib.stats.permutation_p_value(list(a), list(b)))", "yourself"),
    "td3_lib's difference called": ("from td3_lib.stats import difference\nreturn difference(a, b).p", "yourself"),
    "one-sided": ("""
        pooled, observed = np.concatenate([a, b]), a.mean() - b.mean()
        gaps = [pooled[list(i)].mean() - np.delete(pooled, list(i)).mean()
                for i in itertools.combinations(range(len(pooled)), len(a))]
        return float(np.mean(np.array(gaps) >= observed - 1e-9))""", "either sign"),
    "no abs on the splits' gaps": ("""
        pooled, observed = np.concatenate([a, b]), abs(a.mean() - b.mean())
        gaps = [pooled[list(i)].mean() - np.delete(pooled, list(i)).mean()
                for i in itertools.combinations(range(len(pooled)), len(a))]
        return float(np.mean(np.array(gaps) >= observed - 1e-9))""", ""),
    "strictly larger": ("""
        pooled, observed = np.concatenate([a, b]), abs(a.mean() - b.mean())
        gaps = [abs(pooled[list(i)].mean() - np.delete(pooled, list(i)).mean())
                for i in itertools.combinations(range(len(pooled)), len(a))]
        return float(np.mean(np.array(gaps) > observed + 1e-9))""", "counts too"),
    "no tolerance": ("""
        pooled, observed = np.concatenate([a, b]), abs(a.mean() - b.mean())
        gaps = [abs(pooled[list(i)].mean() - np.delete(pooled, list(i)).mean())
                for i in itertools.combinations(range(len(pooled)), len(a))]
        return float(np.mean(np.array(gaps) >= observed + 1e-12))""", ""),
    "sums, not means": ("""
        pooled, observed = np.concatenate([a, b]), abs(a.sum() - b.sum())
        gaps = [abs(pooled[list(i)].sum() - np.delete(pooled, list(i)).sum())
                for i in itertools.combinations(range(len(pooled)), len(a))]
        return float(np.mean(np.array(gaps) >= observed - 1e-9))""", "means, not their sums"),
    "the observed split left out": ("""
        pooled, observed = np.concatenate([a, b]), abs(a.mean() - b.mean())
        gaps = [abs(pooled[list(i)].mean() - np.delete(pooled, list(i)).mean())
                for i in itertools.combinations(range(len(pooled)), len(a))]
        return (np.sum(np.array(gaps) >= observed - 1e-9) - 1) / (len(gaps) - 1)""", "count it"),
    "the count, not the share": ("""
        pooled, observed = np.concatenate([a, b]), abs(a.mean() - b.mean())
        gaps = [abs(pooled[list(i)].mean() - np.delete(pooled, list(i)).mean())
                for i in itertools.combinations(range(len(pooled)), len(a))]
        return int(np.sum(np.array(gaps) >= observed - 1e-9))""", "share"),
    "random shuffles, not every split": ("""
        rng, pooled, observed = np.random.default_rng(0), np.concatenate([a, b]), abs(a.mean() - b.mean())
        hits = 0
        for _ in range(2_000):
            x = rng.permutation(pooled)
            hits += abs(x[:len(a)].mean() - x[len(a):].mean()) >= observed - 1e-9
        return hits / 2_000""", ""),
    "a list back": ("""
        pooled, observed = np.concatenate([a, b]), abs(a.mean() - b.mean())
        return [abs(pooled[list(i)].mean() - np.delete(pooled, list(i)).mean()) >= observed - 1e-9
                for i in itertools.combinations(range(len(pooled)), len(a))]""", "one number"),
}


def permutation_p_from(body: str):
    return defined(PERMUTATION.format(textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")), "permutation_p",
                   itertools=itertools)


@pytest.mark.parametrize("body", PERMUTATION_RIGHT.values(), ids=PERMUTATION_RIGHT.keys())
def test_07_the_permutation_test_right_is_right(body):
    verdict = check_permutation_p(permutation_p_from(body))
    assert verdict.startswith("Right"), verdict


@pytest.mark.parametrize("slip", PERMUTATION_WRONG, ids=PERMUTATION_WRONG.keys())
def test_07_each_slip_in_the_permutation_test_is_not_yet(slip):
    body, says = PERMUTATION_WRONG[slip]
    verdict = check_permutation_p(permutation_p_from(body))
    assert verdict.startswith("Not yet") and says in verdict, f"{slip}: {verdict}"


def test_07_the_check_leaves_the_profiler_as_it_found_it():
    def tracer(frame, event, arg):
        return None

    sys.setprofile(tracer)
    try:
        check_permutation_p(permutation_p_from(PERMUTATION_RIGHT["as the lesson's solution"]))
        assert sys.getprofile() is tracer
    finally:
        sys.setprofile(None)


def test_07_the_lesson_calls_its_check_and_defines_none():
    assert_calls_its_checks("07", {"permutation_p": "raise NotImplementedError"})
