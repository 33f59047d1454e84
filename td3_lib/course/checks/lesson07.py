"""The check of lesson 07's exercise: the learner's exact permutation test, ``permutation_p(a, b)``.

The learner's function runs on cases built to tell the slips apart: five seeds against five at the scale
of Hopper's returns (thousands), groups of unequal sizes (where a test on sums is not a test on means), one
group entirely above the other (where only the observed split and its mirror are as large), and scores with
ties. Each answer is compared with ``td3_lib.stats.permutation_p_value``. While the learner's function runs,
a profile hook watches for that function, however it is reached, so the check cannot be passed by calling
it. The verdict names the slip where it recognises one, never the answer.
"""

from __future__ import annotations

import itertools
import math
import sys

import numpy as np

from ...stats import permutation_p_value

CASES = [
    (np.array([2710.0, 358.3, 2802.1, 1890.6, 1598.5]), np.array([1250.2, 1021.7, 1738.9, 512.4, 1227.3])),
    (np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])),  # every a below every b
    (np.array([3.0, 1.0, 2.0, 7.0]), np.array([2.0, 5.0])),  # sizes differ; splits tie with the observed one
    (np.array([5.0, 1.0, 9.0]), np.array([2.0, 8.0, 4.0, 6.0])),
    (np.array([-180.4, -177.4, -238.1]), np.array([-191.0, -176.7, -423.4, -165.9])),
]
"""(a, b): the scores of two variants, one per seed."""
TOLERANCE = 1e-9


def splits(a: np.ndarray, b: np.ndarray):
    """Each split of the pooled scores into groups of len(a) and len(b), as (group A, group B)."""
    pooled = np.concatenate([a, b])
    for idx in itertools.combinations(range(pooled.size), a.size):
        in_a = np.zeros(pooled.size, dtype=bool)
        in_a[list(idx)] = True
        yield pooled[in_a], pooled[~in_a]


def slips(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """What each plausible slip returns for (a, b), by the hint that names it."""
    gaps = [(x.mean() - y.mean(), x.sum() - y.sum()) for x, y in splits(a, b)]
    observed, total = a.mean() - b.mean(), math.comb(a.size + b.size, a.size)
    at_least = [abs(d) >= abs(observed) - TOLERANCE for d, _ in gaps]
    return {
        "count a split whose gap is as large in size, of either sign: compare absolute values.":
            np.mean([d >= observed - TOLERANCE for d, _ in gaps]),
        "a split whose gap equals the observed one counts too (>=, with the tolerance), the observed split included.":
            np.mean([abs(d) > abs(observed) + TOLERANCE for d, _ in gaps]),
        "the observed split is one of the splits: count it, and divide by all of them.":
            (sum(at_least) - 1) / (total - 1),
        "compare the two groups' means, not their sums: the groups can differ in size.":
            np.mean([abs(s) >= abs(a.sum() - b.sum()) - TOLERANCE for _, s in gaps]),
        "return the share of the splits, a number between 0 and 1, not how many there are.": float(sum(at_least)),
    }


def listed(x: np.ndarray) -> str:
    """Scores as the verdict prints them: ``[1, 2.5, 2710]``."""
    return "[" + ", ".join(f"{v:g}" for v in x) + "]"


def learners_p(fn, a: np.ndarray, b: np.ndarray):
    """(the learner's p as a float, None) or (None, the "Not yet" sentence), with td3_lib's test watched for."""
    library, calls, previous = {permutation_p_value.__code__}, [], sys.getprofile()
    sys.setprofile(lambda frame, event, arg: calls.append(1) if event == "call" and frame.f_code in library else None)
    try:
        got = fn(a.copy(), b.copy())
    except NotImplementedError:
        return None, f"Not yet: {fn.__name__} is still the stub: write its body."
    except Exception as e:  # the learner's code: any error becomes the verdict
        return None, f"Not yet: {fn.__name__} raised {type(e).__name__}: {e}"
    finally:
        sys.setprofile(previous)
    if calls:
        return None, f"Not yet: {fn.__name__} calls td3_lib's permutation_p_value; count the splits yourself."
    try:
        return float(got), None
    except (TypeError, ValueError):
        what = "None" if got is None else f"a {type(got).__name__}"
        return None, f"Not yet: return one number, the share of the splits; {fn.__name__} returned {what}."


def check_permutation_p(fn) -> str:
    """Whether ``fn(a, b)`` is the exact two-sided permutation test of mean(a) - mean(b), in one sentence;
    a slip is named when the learner's answers match it on every case."""
    answers = []
    for a, b in CASES:
        got, problem = learners_p(fn, a, b)
        if problem:
            return problem
        answers.append(got)
    wrong = [(a, b, got) for (a, b), got in zip(CASES, answers) if abs(got - permutation_p_value(a, b)) > TOLERANCE]
    if not wrong:
        return "Right: your test counts every split, both directions, the observed one included."
    predicted = [slips(a, b) for a, b in CASES]
    hint = next((h for h in predicted[0] if all(abs(p[h] - got) <= TOLERANCE for p, got in zip(predicted, answers))),
                None)
    a, b, got = wrong[0]
    return ("Not yet: " + hint if hint else
            f"Not yet: for a = {listed(a)} and b = {listed(b)} your test gives {got:.4f}; "
            "count every split of the pooled scores, each once.")
