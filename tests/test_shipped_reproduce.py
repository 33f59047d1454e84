"""A shipped result is made by the code beside it: the first evaluations of shipped Pendulum-v1 runs,
trained again here exactly as the sweep trains them (the variant's config, its probes, one torch
thread), equal the rows of their CSV to the CSV's rounding.

The runs are seed 3 of TD3 and of DDPG (AHE) in pendulum_variants.csv, the sweep ``PENDULUM``'s runs,
which smoothing_pendulum.csv and pitfalls_pendulum.csv share (tests/test_experiments.py checks that
they hold the same values). The first 3,000 steps are the 1,000 random steps and 2,000 updates: six
evaluations, each with the critic's probe. Float results can differ in their last bits on another CPU
(the manifest records the one that made each result); on the machine that made a result, they are
the same."""

import pytest

from td3_lib.course import results as shipped
from td3_lib.course.experiments import PENDULUM
from td3_lib.run import HISTORY_NAME, read_history
from td3_lib.sweep.grid import variant_config
from td3_lib.sweep.tasks import train_variant
from td3_lib.sweep.variants import get_probe, get_variant

STEPS = 3_000
RESULT = "pendulum_variants.csv"
COLUMNS = ("eval_mean", "eval_std", "q_estimate", "q_true", "q_roughness", "q_peak")


def retrained(variant: str, seed: int, run_dir) -> list[dict]:
    """The sweep's run of ``variant`` and ``seed`` on Pendulum-v1, trained by the sweep's own
    ``train_variant`` to STEPS (the budget ends the loop and nothing else: an evaluation falls on
    STEPS either way); its history as train wrote it. The tests run with one torch thread, as every
    sweep run does (conftest.py)."""
    config = variant_config("Pendulum-v1", variant, PENDULUM.overrides, steps=STEPS)
    train_variant("Pendulum-v1", get_variant(variant), seed, config, run_dir, "cpu",
                  probes=tuple(map(get_probe, PENDULUM.probes)))
    return read_history(run_dir / HISTORY_NAME)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["TD3", "DDPG"])
def test_the_first_evaluations_of_a_shipped_pendulum_run_are_trained_again_exactly(variant, tmp_path):
    seed = 3
    rows = [r for r in shipped.histories(shipped.load(RESULT), variant)[seed] if r["step"] <= STEPS]
    history = retrained(variant, seed, tmp_path)
    assert [r["step"] for r in rows] == [h["step"] for h in history] == list(range(500, STEPS + 1, 500))
    for row, h in zip(rows, history):
        for column in COLUMNS:
            assert row[column] == pytest.approx(round(h[column], 4), abs=1e-4, nan_ok=True), (row["step"], column)
