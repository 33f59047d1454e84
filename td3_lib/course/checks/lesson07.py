"""The check of lesson 07's exercise: the learner's exact sign-flip test of paired scores, ``sign_flip_p(a, b)``.

Seed i of ``a`` is paired with seed i of ``b``. The learner's function runs on cases built to tell the slips
apart: five pairs at the scale of Hopper's returns (thousands), three pairs, differences all of one sign
(where only the observed signs and their mirror are as large: p = 2/2^n), differences with a zero and with
ties that rounding breaks in the last bit, and one large difference among five smaller ones of both signs.
Each answer is compared with ``td3_lib.stats.paired_permutation_p_value``. While the learner's function
runs, a profile hook watches for td3_lib's tests (``paired_permutation_p_value``, ``permutation_p_value``
and ``difference``), however they are reached, so the check cannot be passed by calling them. The verdict
names the slip where it recognises one, never the answer."""

from __future__ import annotations

import itertools

import numpy as np

from ...stats import difference, paired_permutation_p_value, permutation_p_value
from .calls import watched_call

CASES = [
    (np.array([2710.0, 358.3, 2802.1, 1890.6, 1598.5]), np.array([1250.2, 1021.7, 1738.9, 512.4, 1227.3])),
    (np.array([7.0, 9.0, 11.0]), np.array([4.0, 12.0, 6.0])),  # 3 and -3: two flips tie with the observed signs
    (np.array([-180.4, -177.4, -238.1, -165.9]), np.array([-150.2, -170.1, -190.6, -160.3])),  # all below
    (np.array([-165.3, -170.1, -180.2, -166.6, -171.2]), np.array([-165.3, -170.2, -180.4, -166.3, -172.2])),
    (np.array([50.0, 3.0, 7.0, 4.0, 2.0, 14.0]), np.array([26.0, 0.0, 1.0, 6.0, 7.0, 6.0])),
]
"""(a, b): the scores of two variants, seed i of one paired with seed i of the other. The fourth case's
differences are 0, 0.1, 0.2, -0.3 and 1: flipping the 0 changes nothing, and flipping 0.1, 0.2 and -0.3
gives the observed mean again, up to the last bit, so a test without the tolerance misses that tie."""
TOLERANCE = 1e-9
LIBRARY = frozenset({paired_permutation_p_value.__code__, permutation_p_value.__code__, difference.__code__})
"""td3_lib's tests, seen by their code objects however they are reached."""


def flip_means(a: np.ndarray, b: np.ndarray) -> tuple[float, np.ndarray]:
    """The observed mean difference, and the mean of the differences under each of the 2^n flips of their signs."""
    d = a - b
    return d.mean(), np.array([np.dot(signs, d) / d.size for signs in itertools.product((1, -1), repeat=d.size)])


def slips(a: np.ndarray, b: np.ndarray) -> list[tuple[str, float]]:
    """What each plausible slip returns for (a, b), with the hint that names it (a hint may name two)."""
    observed, means = flip_means(a, b)
    at_least = np.abs(means) >= abs(observed) - TOLERANCE
    one_sided = "count a flip whose mean is as large in size, of either sign: compare absolute values."
    return [
        (one_sided, np.mean(means >= observed - TOLERANCE)),
        (one_sided, np.mean(means >= abs(observed) - TOLERANCE)),
        ("a flip whose mean equals the observed one counts too (>=, with the tolerance), the observed signs "
         "included.", np.mean(np.abs(means) > abs(observed) + TOLERANCE)),
        ("the observed signs are one of the flips: count them, and divide by all 2^n flips.",
         (at_least.sum() - 1) / (means.size - 1)),
        ("your test splits the pooled scores, as the unpaired test does: pair seed i of a with seed i of b, "
         "and flip the signs of their differences.", permutation_p_value(a, b)),
        ("return the share of the flips, a number between 0 and 1, not how many there are.", float(at_least.sum())),
    ]


def listed(x: np.ndarray) -> str:
    """Scores as the verdict prints them: ``[1, 2.5, 2710]``."""
    return "[" + ", ".join(f"{v:g}" for v in x) + "]"


def learners_p(fn, a: np.ndarray, b: np.ndarray):
    """(the learner's p as a float, None) or (None, the "Not yet" sentence), with td3_lib's tests watched for."""
    got, problem, called = watched_call(fn, LIBRARY, a.copy(), b.copy())
    if problem:
        return None, problem
    if called:
        return None, f"Not yet: {fn.__name__} calls a test of td3_lib.stats; flip the signs yourself."
    try:
        return float(got), None
    except (TypeError, ValueError):
        what = "None" if got is None else f"a {type(got).__name__}"
        return None, f"Not yet: return one number, the share of the flips; {fn.__name__} returned {what}."


def check_sign_flip_p(fn) -> str:
    """Whether ``fn(a, b)`` is the exact two-sided sign-flip test of mean(a - b), in one sentence; a slip
    is named when the learner's answers match it on every case."""
    answers = []
    for a, b in CASES:
        got, problem = learners_p(fn, a, b)
        if problem:
            return problem
        answers.append(got)
    wrong = [(a, b, got) for (a, b), got in zip(CASES, answers)
             if abs(got - paired_permutation_p_value(a, b)) > TOLERANCE]
    if not wrong:
        return "Right: your test tries every flip of the signs, counts both directions and the observed signs."
    predicted = [slips(a, b) for a, b in CASES]
    hint = next((h for k, (h, _) in enumerate(predicted[0])
                 if all(abs(p[k][1] - got) <= TOLERANCE for p, got in zip(predicted, answers))), None)
    a, b, got = wrong[0]
    return ("Not yet: " + hint if hint else
            f"Not yet: for a = {listed(a)} and b = {listed(b)} your test gives {got:.4f}; "
            "flip the signs of the differences in every way, each once.")
