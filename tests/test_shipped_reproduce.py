"""A shipped result is made by the code beside it: the first evaluations of shipped Pendulum-v1 runs,
trained again here exactly as the sweep trains them (the variant's config, its probes, one torch
thread), equal the rows of their CSV to the CSV's rounding.

The runs are seed 3 of TD3 and TD3 - TPS in smoothing_pendulum.csv, the sweep ``PENDULUM``'s runs
(pendulum_variants.csv, made by older code, differs from them from step 1,500 on). The first 3,000 steps are the 1,000 random
steps and 2,000 updates: six evaluations, each with the critic's probe. Float results can differ in
their last bits on another CPU (the manifest records the one that made each result); on the machine
that made a result, they are the same."""

import pytest
import torch

from conftest import Interrupt, stop_at
from td3_lib import train
from td3_lib.course import results as shipped
from td3_lib.course.experiments import PENDULUM
from td3_lib.run import HISTORY_NAME, read_history
from td3_lib.sweep.grid import variant_config
from td3_lib.sweep.variants import get_probe, get_variant

STEPS = 3_000
RESULT = "smoothing_pendulum.csv"
COLUMNS = ("eval_mean", "eval_std", "q_estimate", "q_true", "q_roughness", "q_peak")


def retrained(variant: str, seed: int, run_dir) -> list[dict]:
    """The sweep's run of ``variant`` and ``seed`` on Pendulum-v1, stopped at its first evaluation after
    STEPS: its history as train wrote it (the callback stops a run before that evaluation's row is written)."""
    config = variant_config("Pendulum-v1", variant, PENDULUM.overrides)
    spec = get_variant(variant)
    env = spec.environment("Pendulum-v1")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as every sweep run (td3_lib.sweep.tasks.train_run)
    try:
        with pytest.raises(Interrupt):
            train(env, config, seed=seed, device="cpu", checkpoint_dir=run_dir, progress=False, agent=spec.agent,
                  probes=(*map(get_probe, PENDULUM.probes), *spec.probes), callback=stop_at(STEPS + 1))
    finally:
        torch.set_num_threads(threads)
    return read_history(run_dir / HISTORY_NAME)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["TD3", "TD3-TPS"])
def test_the_first_evaluations_of_a_shipped_pendulum_run_are_trained_again_exactly(variant, tmp_path):
    seed = 3
    rows = [r for r in shipped.histories(shipped.load(RESULT), variant)[seed] if r["step"] <= STEPS]
    history = retrained(variant, seed, tmp_path)
    assert [r["step"] for r in rows] == [h["step"] for h in history if h["step"] <= STEPS] == list(range(500, STEPS + 1, 500))
    for row, h in zip(rows, history):
        for column in COLUMNS:
            assert row[column] == pytest.approx(round(h[column], 4), abs=1e-4, nan_ok=True), (row["step"], column)
