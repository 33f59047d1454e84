"""td3_lib.stats: each score and statistic against its explicit form, and the shipped numbers the
course quotes."""

import itertools
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from td3_lib.course import results as shipped
from td3_lib.course.paper import learning_curves
from td3_lib.stats import (Difference, bootstrap_ci, bootstrap_difference_ci, countable, difference, final_score,
                           mean_and_std, over_seeds, paired_permutation_p_value, permutation_p_value, score_row,
                           paper_scores, table1_score, table2_score, up_to)


def history(values, start=1000, every=1000) -> list[dict]:
    return [{"step": start + i * every, "eval_mean": float(v)} for i, v in enumerate(values)]


def test_final_score_is_the_mean_of_the_last_k_evaluations():
    runs = history([-1000.0, -500.0, -200.0, -150.0, -100.0])
    assert final_score(runs, 3) == pytest.approx(-150.0)
    assert final_score(runs[:2], 3) == pytest.approx(-750.0)  # fewer than k: all of them
    assert final_score(runs, 2, column=lambda row: row["eval_mean"] / 10) == pytest.approx(-12.5)
    with pytest.raises(ValueError, match="last_k=0"):
        final_score(runs, 0)


def test_up_to_is_the_history_as_it_stood_at_a_step_and_refuses_a_step_not_reached():
    history = [{"step": s, "eval_mean": float(s // 1000)} for s in (5000, 10000, 15000, 20000)]
    assert up_to(history, 10000) == history[:2]
    assert up_to(history, 12000) == history[:2]  # between evaluations: the last one before it
    assert up_to(history, 20000) == history
    assert final_score(up_to(history, 15000), 2) == (10 + 15) / 2
    with pytest.raises(ValueError, match="step=25,000: the run reached only 20,000 steps"):
        up_to(history, 25000)
    with pytest.raises(ValueError, match="reached only 0 steps"):
        up_to([], 5000)


def test_mean_and_std_over_seeds():
    assert mean_and_std([1.0, 2.0, 6.0]) == (3.0, pytest.approx(np.sqrt(7.0)))  # ddof 1: 14 / 2
    mean, std = mean_and_std([4.0])
    assert mean == 4.0 and np.isnan(std)


def test_table2_score_is_each_runs_last_10_evaluations_then_mean_and_std_over_seeds():
    seeds = [history(np.arange(20.0)), history(np.arange(20.0) + 10.0)]
    # the last 10 of 0..19 are 10..19, mean 14.5; the second run's 24.5
    assert table2_score(seeds) == (pytest.approx(19.5), pytest.approx(np.std([14.5, 24.5], ddof=1)))
    assert table2_score(seeds, last_k=1) == (pytest.approx(24.0), pytest.approx(np.std([19.0, 29.0], ddof=1)))


def test_table2_score_weighs_each_run_once_however_many_evaluations_it_has():
    short = history([0.0, 0.0, 30.0])                # fewer than 10: all three, mean 10
    long = history([99.0, 99.0] + [20.0] * 10)       # its last 10: mean 20
    runs = (0.0 + 0.0 + 30.0) / 3, (20.0 * 10) / 10  # not the 13 evaluations pooled: (30 + 200) / 13
    spread = abs(runs[0] - runs[1]) / np.sqrt(2)  # ddof 1 over two seeds
    assert table2_score([short, long]) == (pytest.approx(sum(runs) / 2), pytest.approx(spread))


def test_table1_score_is_the_peak_of_the_mean_over_seeds_curve_at_steps_every_seed_has():
    a = history([0.0, 10.0, 4.0, 100.0])
    b = history([0.0, 2.0, 8.0])  # one evaluation short: the step of a's 100 is not scored
    # mean curve 0, 6, 6: its peak is at the first of equals, 2,000 steps, where the seeds are 10 and 2
    assert table1_score([a, b]) == (6.0, pytest.approx(np.std([10.0, 2.0], ddof=1)), 2000)
    assert table1_score([a]) == (100.0, 0.0, 4000)  # one seed: no spread
    # not the mean of each seed's own maximum (100 and 8: 54)
    steps, mean, std = over_seeds([a, b])
    assert list(steps) == [1000, 2000, 3000] and list(mean) == [0.0, 6.0, 6.0]


def test_table1_std_is_the_spread_over_seeds_at_the_peak_step_not_the_largest_spread_of_the_curve():
    a, b = history([0.0, 20.0, 5.0]), history([10.0, 18.0, 15.0])
    # mean curve 5, 19, 10: the peak is at 2,000 steps, where the seeds are 20 and 18; the spread is
    # larger at 1,000 and 3,000 steps (0 and 10, 5 and 15)
    spread = np.sqrt(((20.0 - 19.0) ** 2 + (18.0 - 19.0) ** 2) / (2 - 1))
    assert table1_score([a, b]) == (19.0, pytest.approx(spread), 2000)


def test_seeds_are_aligned_on_the_evaluation_step_not_on_their_position_in_the_history():
    a = history([1.0, 2.0, 3.0], start=1000)     # steps 1,000, 2,000, 3,000
    b = history([20.0, 30.0, 40.0], start=2000)  # steps 2,000, 3,000, 4,000
    steps, mean, std = over_seeds([a, b])
    assert list(steps) == [2000, 3000] and list(mean) == [(2.0 + 20.0) / 2, (3.0 + 30.0) / 2]
    assert list(std) == pytest.approx([abs(2.0 - 20.0) / np.sqrt(2), abs(3.0 - 30.0) / np.sqrt(2)])  # ddof 1
    assert table1_score([a, b]) == (16.5, pytest.approx(27.0 / np.sqrt(2)), 3000)


def test_paper_scores_cut_each_run_at_the_step_then_score_it_as_tables_1_and_2_do():
    a = history(np.arange(30.0))          # steps 1,000 to 30,000: 0, 1, ... 29
    b = history(np.full(30, 10.0))        # 10 throughout: the mean curve (a + b) / 2 peaks at a's last step
    scores = paper_scores([a, b], 20_000)  # the first 20 evaluations of each: 0..19 and 10s
    assert scores.finals == (14.5, 10.0)   # the last 10 of those: 10..19 and 10s
    assert scores.table2 == (12.25, pytest.approx(4.5 / np.sqrt(2)))  # ddof 1 over the two finals
    assert scores.table1 == (14.5, pytest.approx(9 / np.sqrt(2)), 20_000)  # (19 + 10) / 2 at 20,000, not 30,000
    assert scores.step == 20_000 and paper_scores([a, b], 30_000).table1 == table1_score([a, b])
    assert paper_scores([a, b], 30_000).table2 == table2_score([a, b])
    with pytest.raises(ValueError, match="step=40,000: the run reached only 30,000 steps"):
        paper_scores([a, b], 40_000)


def resampled_quantiles(samples, rng, confidence=0.95, n=10_000):
    """The percentile bootstrap written out: each sample's seeds drawn with replacement from ``rng``
    (an n x size index table per sample, in order), the statistic per row, its two quantiles."""
    means = [s[rng.integers(0, s.size, size=(n, s.size))].mean(axis=1) for s in map(np.asarray, samples)]
    values = means[0] if len(means) == 1 else means[0] - means[1]
    alpha = (1 - confidence) / 2
    return np.quantile(values, alpha), np.quantile(values, 1 - alpha)


def test_bootstrap_interval_is_the_percentile_bootstrap_written_out():
    scores = [-180.0, -150.0, -160.0, -400.0]
    low, high = bootstrap_ci(scores)
    assert (low, high) == pytest.approx(resampled_quantiles([scores], np.random.default_rng(0)), rel=1e-12)
    assert min(scores) <= low < np.mean(scores) < high <= max(scores)
    assert bootstrap_ci(scores, seed=1) == pytest.approx(resampled_quantiles([scores], np.random.default_rng(1)))
    assert bootstrap_ci([5.0, 5.0, 5.0]) == (5.0, 5.0)
    assert bootstrap_ci([7.0]) == (7.0, 7.0)  # one seed: every resample is that seed
    assert all(np.isnan(bootstrap_ci([])))


def test_bootstrap_interval_of_a_difference():
    # mean of [1, 2] resampled is 1, 1.5 or 2 (1/4, 1/2, 1/4); [0, 0] stays 0: the 2.5% and 97.5% points
    assert bootstrap_difference_ci([1.0, 2.0], [0.0, 0.0]) == (1.0, 2.0)
    assert bootstrap_difference_ci([3.0, 3.0], [1.0]) == (2.0, 2.0)
    a, b = [2556.8, 2314.2, 2900.0], [1202.6, 519.2, 700.0]
    low, high = bootstrap_difference_ci(a, b)
    assert (low, high) == pytest.approx(resampled_quantiles([a, b], np.random.default_rng(0)), rel=1e-12)
    assert min(a) - max(b) <= low < np.mean(a) - np.mean(b) < high <= max(a) - min(b)
    shifted = bootstrap_difference_ci(np.add(a, 100.0), np.add(b, 100.0))  # the same draws: a shift cancels
    assert shifted == pytest.approx((low, high))
    # one seed on a side is a constant: the interval is the other side's bootstrap, shifted
    assert bootstrap_difference_ci([10.0], b) == pytest.approx(tuple(10.0 - x for x in bootstrap_ci(b)[::-1]))
    assert bootstrap_difference_ci(a, [10.0]) == pytest.approx(tuple(x - 10.0 for x in bootstrap_ci(a)))


def test_bootstrap_intervals_are_drawn_from_the_seed_they_are_given():
    # Eight scores far apart: the 2.5% and 97.5% points of the resampled means move with the draws.
    scores = [2556.8, 2314.2, 2900.0, 1202.6, 519.2, 700.0, 3120.5, 1833.3]
    a, b = scores[:4], scores[4:]
    for seed in (1, 7):
        drawn = resampled_quantiles([scores], np.random.default_rng(seed))
        assert bootstrap_ci(scores, seed=seed) == pytest.approx(drawn, rel=1e-12)
        drawn = resampled_quantiles([a, b], np.random.default_rng(seed))
        assert bootstrap_difference_ci(a, b, seed=seed) == pytest.approx(drawn, rel=1e-12)
    assert bootstrap_ci(scores, seed=1) != pytest.approx(bootstrap_ci(scores, seed=7), rel=1e-12)


def test_permutation_p_value_counts_every_split():
    # 3 against 3, every score of a above every score of b: of the 20 splits only this one and its
    # mirror image have a gap as large, so 2/20
    assert permutation_p_value([5.0, 6.0, 7.0], [1.0, 2.0, 3.0]) == pytest.approx(2 / 20)
    assert permutation_p_value([1.0, 2.0, 3.0], [5.0, 6.0, 7.0]) == pytest.approx(2 / 20)  # two-sided
    assert permutation_p_value([1.0, 1.0], [1.0, 1.0]) == 1.0  # no gap: every split is as large
    # 5 against 5 fully separated: 2 of C(10, 5) = 252; 2 against 2: 2 of 6
    assert permutation_p_value(list(range(10, 15)), list(range(5))) == pytest.approx(2 / 252)
    assert permutation_p_value([10.0, 11.0], [0.0, 1.0]) == pytest.approx(1 / 3)
    # overlapping: the six splits of 0, 1, 2, 3 into pairs have gaps -2, -1, 0, 0, +1, +2
    assert permutation_p_value([0.0, 3.0], [1.0, 2.0]) == 1.0            # observed 0: all six
    assert permutation_p_value([0.0, 1.0], [2.0, 3.0]) == pytest.approx(2 / 6)   # observed -2: two
    assert permutation_p_value([0.0, 2.0], [1.0, 3.0]) == pytest.approx(4 / 6)   # observed -1: four
    # unequal groups, 1 against 3: the splits put 9, 0, 1 or 2 alone, gaps 8, 4, 8/3, 4/3; observed 8
    assert permutation_p_value([9.0], [0.0, 1.0, 2.0]) == pytest.approx(1 / 4)
    with pytest.raises(ValueError, match="both sides"):
        permutation_p_value([1.0], [])
    with pytest.raises(ValueError, match="too many splits"):
        permutation_p_value(list(range(20)), list(range(20)))


def test_permutation_p_value_equals_a_count_over_every_relabelling():
    """Against the test written out: every assignment of the pooled scores to a, the gap of each."""
    rng = np.random.default_rng(3)
    for n_a, n_b in ((3, 5), (5, 5), (2, 4)):
        a, b = rng.normal(size=n_a) * 100, rng.normal(size=n_b) * 100 + 50
        pooled, observed = np.concatenate([a, b]), abs(a.mean() - b.mean())
        gaps = [abs(pooled[list(i)].mean() - np.delete(pooled, list(i)).mean())
                for i in itertools.combinations(range(n_a + n_b), n_a)]
        assert permutation_p_value(a, b) == pytest.approx(np.mean([g >= observed - 1e-9 for g in gaps]))


def test_difference_is_the_gap_of_the_means_with_its_interval_and_p():
    # every a above every b, 5 against 5: p is 2 of the 252 splits, the interval the bootstrap's
    a, b = [10.0, 11.0, 12.0, 13.0, 14.0], [0.0, 1.0, 1.0, 4.0, 4.0]
    d = difference(a, b)
    assert (d.mean, (d.low, d.high), d.p, d.seeds) == (10.0, bootstrap_difference_ci(a, b), pytest.approx(2 / 252),
                                                        (5, 5))
    assert d.separates
    # b - a: the same interval and p, negated; the seeds swap sides
    assert -d == Difference(-10.0, -d.high, -d.low, d.p, (5, 5))
    assert (-difference([1.0, 2.0], [4.0, 5.0, 9.0])).seeds == (3, 2)
    assert d.text() == f"+10.0, 95% interval [{d.low:+.1f}, {d.high:+.1f}], p = 0.008 (5 v 5 seeds): separates"
    assert Difference(-0.5, -1.0, 0.25, 0.5, (3, 3)).text(".2f") == (
        "-0.50, 95% interval [-1.00, 0.25], p = 0.500 (3 v 3 seeds): does not separate")


def test_a_difference_separates_only_when_its_interval_excludes_0_and_p_is_below_005():
    assert Difference(1.0, 0.1, 5.0, 0.049, (5, 5)).separates and Difference(-1.0, -5.0, -0.1, 0.01, (5, 5)).separates
    assert not Difference(1.0, -0.1, 5.0, 0.01, (5, 5)).separates   # the interval holds 0
    assert not Difference(1.0, 0.1, 5.0, 0.05, (5, 5)).separates    # p is not below 0.05
    assert Difference(1.0, 0.1, 5.0, 0.049, (5, 5)).verdict == "separates"
    assert Difference(1.0, 0.1, 5.0, 0.05, (5, 5)).verdict == "does not separate"
    assert Difference(1.0, -0.1, 5.0, 0.01, (5, 5)).verdict == "does not separate"


def test_a_difference_whose_interval_touches_0_holds_0_and_does_not_separate():
    # The interval is closed: [0, 5] and [-5, 0] hold 0, however small p is.
    assert not Difference(1.0, 0.0, 5.0, 0.001, (5, 5)).separates
    assert not Difference(-1.0, -5.0, 0.0, 0.001, (5, 5)).separates
    assert Difference(-1.0, -5.0, 0.0, 0.001, (5, 5)).verdict == "does not separate"


def test_countable_says_whether_the_exact_test_counts_every_split():
    assert countable(5, 5) and countable(11, 11)          # 252 and 705,432 splits
    assert not countable(11, 12) and not countable(12, 12)  # 1,352,078 and 2,704,156 splits
    with pytest.raises(ValueError, match="too many splits"):
        permutation_p_value(list(range(12)), list(range(12)))


def test_the_exact_permutation_test_counts_up_to_a_million_splits_the_million_included():
    assert countable(1, 999_999) and not countable(1, 1_000_000)  # C(1,000,000, 1) and C(1,000,001, 1) splits


def test_score_row():
    row = score_row("Pendulum-v1", "TD3", [1.0, 2.0, 6.0])
    assert row == {"env": "Pendulum-v1", "variant": "TD3", "n_seeds": 3, "mean": 3.0,
                   "std": pytest.approx(np.sqrt(7.0)), "ci_low": bootstrap_ci([1.0, 2.0, 6.0])[0],
                   "ci_high": bootstrap_ci([1.0, 2.0, 6.0])[1]}


def test_the_shipped_hopper_ablation_gives_the_numbers_the_course_quotes():
    """docs/results.md quotes the Hopper-v5 ablation (300,000 steps): each variant's score (mean ± std over
    its seeds of a run's last 3 evaluations) and each difference it names, with its interval and p; smoothing's
    peak height; and the authors' own TD3 runs cut at 300,000 steps. Each is computed here from the shipped
    CSV and looked for in the page, so a new result fails this test until the page quotes it."""
    page = " ".join((Path(__file__).resolve().parent.parent / "docs" / "results.md").read_text().split())
    rows = shipped.load("hopper_v5_variants.csv")
    scores = {v: shipped.finals(rows, v, last_k=3) for v in ("TD3", "DDPG", "TD3-CDQ", "TD3-TPS", "TD3-DP")}
    minus = lambda text: text.replace("-", "−")  # the page prints a minus sign
    for variant, x in scores.items():
        assert f"{x.mean():.1f} ± {x.std(ddof=1):.1f}" in page, variant
    for a, b in (("TD3", "DDPG"), ("TD3-CDQ", "TD3"), ("TD3-TPS", "TD3"), ("TD3-DP", "TD3")):
        low, high = bootstrap_difference_ci(scores[a], scores[b])
        quoted = (f"{minus(f'{scores[a].mean() - scores[b].mean():+.1f}')}, interval "
                  f"[{minus(f'{low:+.1f}')}, {minus(f'{high:+.1f}')}], p = {permutation_p_value(scores[a], scores[b]):.3f}")
        assert quoted in page, (a, b, quoted)
    # Smoothing's probe: the critic's peak height at the actor's action, without smoothing minus with.
    peak = {v: shipped.finals(rows, v, "q_peak", last_k=3) for v in ("TD3", "TD3-TPS")}
    low, high = bootstrap_difference_ci(peak["TD3-TPS"], peak["TD3"])
    assert (f"{peak['TD3'].mean():.3f} ± {peak['TD3'].std(ddof=1):.3f} with smoothing against "
            f"{peak['TD3-TPS'].mean():.3f} ± {peak['TD3-TPS'].std(ddof=1):.3f} without (without minus with: "
            f"{peak['TD3-TPS'].mean() - peak['TD3'].mean():+.3f}, interval [{minus(f'{low:+.3f}')}, "
            f"{minus(f'{high:+.3f}')}], p = {permutation_p_value(peak['TD3-TPS'], peak['TD3']):.3f})") in page
    # The mark beside them: the authors' own 10 TD3 runs cut at 300,000 steps, scored the same way, quoted once.
    paper_300k = np.array([final_score(up_to(run, 300_000), 3) for run in learning_curves("Hopper-v5")])
    assert page.count(f"{paper_300k.mean():.1f} ± {paper_300k.std(ddof=1):.1f}") == 1


def test_paired_permutation_p_value_counts_every_sign_flip():
    # Differences +1, +2, +3: of the 8 sign flips, only all-plus and all-minus have |mean| >= 2.
    assert paired_permutation_p_value([1, 2, 3], [0, 0, 0]) == pytest.approx(2 / 8)
    # Differences +1, -1: every flip has |mean| 0 or 1 >= 0, so all 4 count.
    assert paired_permutation_p_value([1, 0], [0, 1]) == 1.0
    # Differences 3, 1: flips give |mean| 2, 1, 1, 2; the observed 2 is reached by 2 of 4.
    assert paired_permutation_p_value([3, 1], [0, 0]) == pytest.approx(2 / 4)


def test_paired_permutation_p_value_equals_a_count_by_hand():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=6), rng.normal(size=6)
    d = a - b
    count = 0
    for flips in itertools.product((1, -1), repeat=6):
        count += abs(np.mean(np.array(flips) * d)) >= abs(d.mean()) - 1e-12
    assert paired_permutation_p_value(a, b) == pytest.approx(count / 64)
    # Pairing matters: the same scores, unpaired, give another p.
    assert paired_permutation_p_value(a, b) != pytest.approx(permutation_p_value(a, b))


def test_paired_permutation_p_value_refuses_unequal_lists():
    with pytest.raises(ValueError, match="two equal"):
        paired_permutation_p_value([1, 2, 3], [1, 2])


def exact_two_sided_p(a, b) -> float:
    """The permutation p in exact rational arithmetic, from the scores' decimal strings."""
    pooled = [Fraction(str(x)) for x in a + b]
    def gap(idx):
        in_a = sum(pooled[i] for i in idx)
        return abs(in_a / len(a) - (sum(pooled) - in_a) / len(b))
    observed = gap(range(len(a)))
    splits = list(itertools.combinations(range(len(pooled)), len(a)))
    return sum(gap(idx) >= observed for idx in splits) / len(splits)


@pytest.mark.parametrize("a, b", [([1000.3, 1000.6, 1000.7], [1000.9, 1000.4, 1000.0]),
                                  ([3000.1, 3000.5, 3000.8], [3000.0, 3000.6, 3000.7]),
                                  ([3306.2, 2981.7, 3120.4, 3399.9, 2890.0], [1650.3, 2011.8, 1874.1, 1590.6, 1777.7]),
                                  ([0.1, 0.2, 0.3], [0.3, 0.1, 0.2])])
def test_permutation_tests_count_ties_between_large_scores(a, b):
    """Returns of thousands whose splits tie exactly: floating point gives the tied differences
    different last digits, and a tie must still count (the first two lists are exact 0.9 and 1)."""
    assert permutation_p_value(a, b) == pytest.approx(exact_two_sided_p(a, b))
    flips = list(itertools.product((1, -1), repeat=len(a)))
    d = [Fraction(str(x)) - Fraction(str(y)) for x, y in zip(a, b)]
    exact_paired = sum(abs(sum(s * x for s, x in zip(f, d))) >= abs(sum(d)) for f in flips) / len(flips)
    assert paired_permutation_p_value(a, b) == pytest.approx(exact_paired)
