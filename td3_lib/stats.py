"""Scores of runs and statistics over seeds: the one place a score and its spread are computed,
for sweeps, the course's shipped results, the lessons and the benchmarks alike.

A run's score is read off its history (one row per evaluation):

- ``final_score``: the mean of its last ``last_k`` evaluations (``LAST_K`` by default);
- ``table2_score``: the paper's Table 2, each run's mean over its last 10 evaluations, then the
  mean and std over seeds;
- ``table1_score``: the paper's Table 1, the maximum over evaluation steps of the mean-over-seeds
  curve (seeds aligned on the evaluation step), with the std over seeds at that step;
- any of them at an earlier step of a longer run: ``up_to(history, step)``;
- a variant as the paper's two tables score it, at a budget: ``paper_scores(histories, step)``.

Over seeds: ``mean_and_std`` (std with ddof 1), ``bootstrap_ci`` and ``bootstrap_difference_ci``
(percentile bootstrap, ``scipy.stats.bootstrap``: the seeds resampled with replacement 10,000
times from ``numpy.random.default_rng(seed)``), and ``permutation_p_value`` (the exact two-sided
permutation test: every split of the pooled scores counted), and for paired seeds
``paired_permutation_p_value`` (the exact sign-flip test: every flip of the differences' signs counted).
Two variants compared: ``difference(a, b)``, the difference of their means with its interval and p,
and whether it *separates* (the course's rule: the interval excludes 0 and p < 0.05).

SciPy refuses a sample of one score. For the bootstrap that case is computed here: one score
resampled is that score, so the interval of a difference is the other side's, shifted. The
permutation test is counted here for every size, not by ``scipy.stats.permutation_test``: SciPy
refuses one score on a side (1 seed against 5 is a test with 6 splits), and its two-sided p
doubles the smaller one-sided p, which for groups of unequal size (3 seeds against 5) is not the
share of splits with a gap as large as the observed one; one exact count serves every case.
SciPy is imported when an interval is first computed, so ``import td3_lib`` does not load it.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

LAST_K = 3
"""A run's final score by default: the mean of its last LAST_K evaluations (the paper: the last 10 of 200)."""
PAPER_LAST_K = 10
"""The paper's Table 2: each run's mean over its last 10 evaluations (of 200, one every 5,000 steps)."""
N_RESAMPLES = 10_000
MAX_SPLITS = 1_000_000
"""The most splits the exact permutation test counts."""
ALPHA = 0.05
"""A difference separates when its 1 - ALPHA (95%) bootstrap interval excludes 0 and its p is below ALPHA."""


def value_of(row: dict, column) -> float:
    """``row[column]``, or ``column(row)`` when it is a function (e.g. the bias, estimate - truth)."""
    return float(column(row)) if callable(column) else float(row[column])


def final_score(history: list[dict], last_k: int = LAST_K, column="eval_mean") -> float:
    """A run's final score: the mean of ``column`` (the evaluation return, or another column, or a
    function of a row) over its last ``last_k`` evaluations (all of them when it has fewer)."""
    if last_k < 1:
        raise ValueError(f"last_k={last_k!r}: it must be an integer >= 1.")
    return float(np.mean([value_of(h, column) for h in history[-last_k:]]))


def up_to(history: list[dict], step: int) -> list[dict]:
    """A run's history as it stood at ``step``: its evaluations at that step and before (so that a
    longer run is scored as a shorter one would have been). A run that has not reached ``step`` is
    refused, rather than scored on fewer steps than asked."""
    if not history or history[-1]["step"] < step:
        reached = history[-1]["step"] if history else 0
        raise ValueError(f"step={step:,}: the run reached only {reached:,} steps; ask for a step it has reached.")
    return [row for row in history if row["step"] <= step]


def mean_and_std(scores) -> tuple[float, float]:
    """Mean and std over seeds (ddof 1: the spread of the seeds as a sample); std is nan below 2 seeds."""
    scores = np.asarray(scores, dtype=float)
    mean = float(scores.mean()) if scores.size else float("nan")
    return mean, float(scores.std(ddof=1)) if scores.size > 1 else float("nan")


def over_seeds(histories: list[list[dict]], column="eval_mean") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per evaluation step that every history has: the mean and the std (ddof 1) over seeds."""
    steps = sorted(set.intersection(*[{h["step"] for h in history} for history in histories]))
    values = np.array([[value_of(h, column) for h in history if h["step"] in steps] for history in histories])
    std = values.std(axis=0, ddof=1) if len(histories) > 1 else np.zeros(len(steps))
    return np.array(steps), values.mean(axis=0), std


def table2_score(histories: list[list[dict]], last_k: int = PAPER_LAST_K,
                 column="eval_mean") -> tuple[float, float]:
    """The paper's Table 2 score of a variant: each run's mean over its last ``last_k`` (10)
    evaluations, then the mean and std (ddof 1) of those over seeds."""
    return mean_and_std([final_score(history, last_k, column) for history in histories])


def table1_score(histories: list[list[dict]], column="eval_mean") -> tuple[float, float, int]:
    """The paper's Table 1 score ("max average return"): the highest point of the mean-over-seeds
    curve (the seeds aligned on the evaluation step), the std over seeds at that step (ddof 1;
    0 with one seed) and the step."""
    steps, mean, std = over_seeds(histories, column)
    best = int(np.argmax(mean))
    return float(mean[best]), float(std[best]), int(steps[best])


@dataclass(frozen=True)
class PaperScores:
    """A variant scored as the paper's tables score it, its runs cut at one step: ``finals``, each run's
    mean over its last 10 evaluations (the input of a difference between variants), ``table2``, their
    mean and std over seeds, and ``table1``, the peak of the mean curve with its std and step."""

    step: int
    finals: tuple[float, ...]
    table2: tuple[float, float]
    table1: tuple[float, float, int]


def paper_scores(histories: list[list[dict]], step: int) -> PaperScores:
    """``histories`` (one per seed) as they stood at ``step`` (``up_to``: every run must have reached
    it), scored with the paper's Table 2 (``table2_score``) and Table 1 (``table1_score``)."""
    runs = [up_to(history, step) for history in histories]
    finals = tuple(final_score(run, PAPER_LAST_K) for run in runs)
    return PaperScores(step, finals, mean_and_std(finals), table1_score(runs))


def percentile_bootstrap(samples: tuple, statistic, confidence: float, n_resamples: int,
                         seed: int) -> tuple[float, float]:
    """SciPy's percentile bootstrap interval of ``statistic`` over independent ``samples``
    (each of two or more scores), resampled from ``default_rng(seed)``."""
    from scipy.stats import bootstrap

    result = bootstrap(samples, statistic, n_resamples=n_resamples, method="percentile",
                       confidence_level=confidence, vectorized=True, rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def mean_of(x, axis=-1):
    return np.mean(x, axis=axis)


def difference_of_means(a, b, axis=-1):
    return np.mean(a, axis=axis) - np.mean(b, axis=axis)


def bootstrap_ci(scores, confidence: float = 0.95, n_resamples: int = N_RESAMPLES,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean over seeds (seeds resampled with replacement)."""
    scores = np.asarray(scores, dtype=float)
    if scores.size < 2:  # no score: no interval; one: every resample is that score
        value = float(scores[0]) if scores.size else float("nan")
        return value, value
    return percentile_bootstrap((scores,), mean_of, confidence, n_resamples, seed)


def bootstrap_difference_ci(a, b, confidence: float = 0.95, n_resamples: int = N_RESAMPLES,
                            seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of mean(a) - mean(b): each variant's seeds resampled with
    replacement, independently of the other's (a's draws first, then b's)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.size == 0 or b.size == 0:
        return float("nan"), float("nan")
    if a.size == 1 or b.size == 1:  # one score is a constant: the interval is the other side's, shifted
        low, high = bootstrap_ci(b if a.size == 1 else a, confidence, n_resamples, seed)
        return (a[0] - high, a[0] - low) if a.size == 1 else (low - b[0], high - b[0])
    return percentile_bootstrap((a, b), difference_of_means, confidence, n_resamples, seed)


def countable(n_a: int, n_b: int) -> bool:
    """Whether the exact permutation test can count every split of n_a and n_b scores (MAX_SPLITS)."""
    return math.comb(n_a + n_b, n_a) <= MAX_SPLITS


def rounding_slack(scores) -> float:
    """How far below the observed difference of means a split's difference may fall and still count
    as a tie: 1e-9 of the largest score. Rounding makes equal differences differ by about 1e-15 of
    the scores' size (a sum's error grows with its terms, not with the gap between groups), so that
    a tie at returns of thousands is missed by any slack scaled to the gap; 1e-9 of the scores is far
    above that error and far below any gap between returns that matters."""
    return 1e-9 * float(np.max(np.abs(scores), initial=0.0))


def permutation_p_value(a, b) -> float:
    """Exact two-sided permutation test of mean(a) - mean(b): the share of all ways of splitting the
    pooled scores into groups of len(a) and len(b) whose difference of means is at least as large
    (in size) as the observed one, the observed split included. Equal variants would give a gap this
    large that often."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.size == 0 or b.size == 0:
        raise ValueError(f"A permutation test needs scores on both sides; got {a.size} and {b.size}.")
    if not countable(a.size, b.size):
        raise ValueError(f"{a.size} and {b.size} seeds: too many splits to count exactly (over a million).")
    pooled, n, splits = np.concatenate([a, b]), a.size, math.comb(a.size + b.size, a.size)
    observed, total, count = abs(a.mean() - b.mean()), pooled.sum(), 0
    at_least = observed - rounding_slack(pooled)  # a split as large as the observed one counts, despite rounding
    for idx in itertools.combinations(range(pooled.size), n):
        in_a = pooled[list(idx)].sum()
        count += abs(in_a / n - (total - in_a) / b.size) >= at_least
    return count / splits


def paired_permutation_p_value(a, b) -> float:
    """Exact two-sided sign-flip test of mean(a - b) for paired scores (seed i of one variant
    against seed i of the other, where the two runs share everything up to the point where the
    variants differ): the share of all 2^n ways of flipping the signs of the differences whose mean
    is at least as large (in size) as the observed one, the observed signs included."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.ndim != 1 or a.shape != b.shape or a.size == 0:
        raise ValueError(f"A paired test needs two equal, non-empty lists of scores; got {np.shape(a)} "
                         f"and {np.shape(b)}.")
    if 2 ** a.size > MAX_SPLITS:
        raise ValueError(f"{a.size} pairs: too many sign flips to count exactly (over a million).")
    d = a - b
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=d.size)))
    means = np.abs(signs @ d) / d.size
    return float(np.mean(means >= abs(d.mean()) - rounding_slack(np.concatenate([a, b]))))


@dataclass(frozen=True)
class Difference:
    """mean(a) - mean(b) over seeds, with its 95% percentile bootstrap interval [low, high], the exact
    permutation test's two-sided p, and the number of seeds on each side."""

    mean: float
    low: float
    high: float
    p: float
    seeds: tuple[int, int]

    @property
    def separates(self) -> bool:
        """The course's rule: the interval excludes 0 and p < ALPHA (0.05); a difference that does not
        separate is one these seeds cannot tell from no difference."""
        return (self.low > 0 or self.high < 0) and self.p < ALPHA

    @property
    def verdict(self) -> str:
        """``separates`` or ``does not separate``, as the course's tables and lessons print it."""
        return "separates" if self.separates else "does not separate"

    def __neg__(self) -> "Difference":
        """mean(b) - mean(a), with this difference's interval and p (negated, not computed again)."""
        return Difference(-self.mean, -self.high, -self.low, self.p, self.seeds[::-1])

    def text(self, fmt: str = "+.1f") -> str:
        """``+721.8, 95% interval [-171.7, +1505.3], p = 0.175 (5 v 5 seeds): does not separate``."""
        return (f"{self.mean:{fmt}}, 95% interval [{self.low:{fmt}}, {self.high:{fmt}}], p = {self.p:.3f} "
                f"({self.seeds[0]} v {self.seeds[1]} seeds): {self.verdict}")


def difference(a, b) -> Difference:
    """mean(a) - mean(b) of two variants' scores over seeds (independent seeds: ``bootstrap_difference_ci``
    and ``permutation_p_value``)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    low, high = bootstrap_difference_ci(a, b, confidence=1 - ALPHA)
    return Difference(float(a.mean() - b.mean()), low, high, permutation_p_value(a, b), (a.size, b.size))


def score_row(env_id: str, variant: str, scores: list[float]) -> dict:
    """One summary row: final scores over seeds -> mean, std (over seeds, ddof 1) and 95% bootstrap CI."""
    mean, std = mean_and_std(scores)
    ci_low, ci_high = bootstrap_ci(scores)
    return {"env": env_id, "variant": variant, "n_seeds": len(scores), "mean": mean, "std": std,
            "ci_low": ci_low, "ci_high": ci_high}
