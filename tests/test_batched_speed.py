"""benchmarks/batched_speed.py: its arithmetic, and its smoke run (the same code at tiny sizes)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import script_module
from td3_lib import TD3Config

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "batched_speed.py"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(SCRIPT.parent))  # its sibling modules, as when it runs as a script
    try:
        yield script_module(SCRIPT, "batched_speed", registered=True)
    finally:
        sys.path.remove(str(SCRIPT.parent))


def test_each_contender_is_compared_at_its_fastest_thread_count_round_by_round(bench):
    rates = {("batched", 1): [100.0, 120.0], ("batched", 2): [150.0, 130.0],
             ("sequential", 1): [50.0, 40.0], ("sequential", 2): [10.0, 20.0],
             ("processes", 1): [60.0, 100.0], ("processes", 2): [30.0, 30.0]}
    blocks = {key: 4 for key in rates}
    cell = bench.summarize_cell(10, rates, blocks)
    assert {name: c["best_threads"] for name, c in cell["contenders"].items()} == \
        {"batched": 2, "sequential": 1, "processes": 1}
    assert cell["contenders"]["batched"]["member_updates_per_s"] == pytest.approx(140.0)
    assert cell["contenders"]["sequential"]["threads"]["2"]["member_updates_per_s"] == pytest.approx(15.0)
    # ratios within each round (150/50 = 3.0, 130/40 = 3.25), then their median
    assert cell["ratios"]["batched / sequential"] == pytest.approx((3.0 + 3.25) / 2)
    assert cell["ratios"]["batched / processes"] == pytest.approx((150 / 60 + 130 / 100) / 2)


def test_training_rates_count_every_members_steps(bench):
    cfg = TD3Config(start_timesteps=100, total_steps=300)
    rates = bench.rates_of(4, cfg, wall=10.0, random_s=2.0, learning_s=8.0, eval_s=0.5)
    assert rates["steps_per_s"] == pytest.approx(4 * 300 / 10.0)
    assert rates["random_steps_per_s"] == pytest.approx(4 * 100 / 2.0)
    assert rates["learning_steps_per_s"] == pytest.approx(4 * 200 / 8.0)


def test_the_thread_count_for_training_comes_from_the_update_part(bench):
    updates = {"64-64": {"cells": {"10": {"contenders": {"batched": {"best_threads": 2}}}}}}
    cfg = TD3Config(hidden_sizes=(64, 64))
    assert bench.best_threads(updates, cfg, 10, "batched") == 2
    assert bench.best_threads(updates, cfg, 5, "batched") == 1  # not measured: one thread


def test_an_odd_number_of_rounds_is_refused_in_one_line(bench, capsys):
    with pytest.raises(SystemExit):
        bench.parse(["--rounds", "3"])
    assert "--rounds 3: it must be an even number >= 2" in capsys.readouterr().err


def test_smoke_run_measures_every_contender_and_writes_its_tables(tmp_path):
    # a fast check that the script runs end to end (its numbers at these sizes mean nothing)
    proc = subprocess.run([sys.executable, str(SCRIPT), "--smoke", "--out", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((tmp_path / "batched_speed.json").read_text())
    assert report["smoke"] and set(report["updates"]) == {"16-16", "24-24"}
    for size in report["updates"].values():
        for k, cell in size["cells"].items():
            assert set(cell["contenders"]) == {"batched", "sequential", "processes"}
            assert all(c["member_updates_per_s"] > 0 for c in cell["contenders"].values())
            assert all(r > 0 for r in cell["ratios"].values())
    cells = report["training"]["Pendulum-v1"]["cells"]
    assert set(cells) == {"1", "2"}
    for cell in cells.values():
        for c in cell["contenders"].values():
            assert len(c["rounds"]) == 2 and c["steps_per_s"] > 0 and c["learning_steps_per_s"] > 0
            assert c["evaluation_s"] > 0  # the evaluation episodes were timed
    table = (tmp_path / "batched_speed.md").read_text()
    assert "| 16-16 | 2 |" in table and "| Pendulum-v1 | 2 |" in table
