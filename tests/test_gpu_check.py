"""benchmarks/gpu_check.py: its arithmetic, and its smoke run on the CPU (the GPU run itself needs a GPU)."""

import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
import torch

from conftest import script_module
from td3_lib import TD3Config, preset

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_check.py"


@pytest.fixture(scope="module")
def gpu_check():
    sys.path.insert(0, str(SCRIPT.parent))  # its sibling modules, as when it runs as a script
    try:
        yield script_module(SCRIPT, "gpu_check", registered=True)
    finally:
        sys.path.remove(str(SCRIPT.parent))


@pytest.fixture(scope="module")
def gpu_report(gpu_check):
    return sys.modules["gpu_report"]


@pytest.fixture(scope="module")
def training_clock(gpu_check):
    return sys.modules["training_clock"]


@pytest.fixture(scope="module")
def gpu_batched(gpu_check):
    return sys.modules["gpu_batched"]


def test_phase_rates_take_evaluation_time_out_and_set_the_warm_up_interval_apart(gpu_check):
    # (step, seconds since the start, evaluation seconds so far, evaluation steps so far)
    marks = [(0, 0.0, 0.0, 0), (100, 1.0, 0.5, 50), (200, 3.0, 0.5, 50), (300, 4.0, 1.0, 150), (400, 4.6, 1.1, 160)]
    rates = gpu_check.phase_rates(marks, random_steps=100)
    assert rates["random_steps_per_s"] == pytest.approx(100 / 0.5)
    assert rates["first_learning_steps_per_s"] == pytest.approx(100 / 2.0)  # warm-up, capture
    assert rates["learning_steps_per_s"] == pytest.approx((100 / 0.5 + 100 / 0.5) / 2)
    assert rates["evaluation_steps_per_s"] == pytest.approx(160 / 1.1)


def test_extrapolation_counts_the_presets_random_learning_and_evaluation_steps(gpu_check):
    rates = {"random_steps_per_s": 500.0, "learning_steps_per_s": 100.0, "evaluation_steps_per_s": 1000.0}
    full = preset("Hopper-v5")
    estimate = gpu_check.extrapolate("Hopper-v5", rates)
    evaluation_steps = full.total_steps // full.eval_freq * full.eval_episodes * 1000  # episodes of 1000 steps at most
    assert estimate["seconds"] == {"random": round(full.start_timesteps / 500),
                                   "learning": round((full.total_steps - full.start_timesteps) / 100),
                                   "evaluation": round(evaluation_steps / 1000)}
    assert estimate["total_s"] == pytest.approx(sum(estimate["seconds"].values()), abs=2)
    assert estimate["hours"] == pytest.approx(estimate["total_s"] / 3600, abs=1e-4)
    assert "extrapolated" in estimate["how"]


def test_duration_reads_seconds_minutes_or_hours(gpu_report):
    assert [gpu_report.duration(s) for s in (7.4, 90, 5400)] == ["7 s", "2 min", "1.5 h"]


def test_episode_clock_counts_evaluation_episodes_only(training_clock):
    env = training_clock.EpisodeClock(gym.make("Pendulum-v1"))
    env.reset(seed=0)
    for _ in range(200):
        env.step(env.action_space.sample())
    assert env.steps == 200 and env.seconds > 0 and env.started is None  # Pendulum ends at 200 steps
    assert env.episodes == 1
    env.close()


def test_a_batched_runs_evaluation_environments_are_the_ones_timed(training_clock):
    """train_batched makes each member's training environment, then its evaluation environment: the clocks
    sit on the evaluation ones, and count one episode per evaluation of each member."""
    cfg = TD3Config(hidden_sizes=(16, 16), batch_size=16, start_timesteps=40, total_steps=70, eval_freq=40,
                    eval_episodes=1)
    marks = training_clock.timed_batched_run("Pendulum-v1", cfg, [0, 1], "cpu")
    assert [m[0] for m in marks] == [0, 40, 70]  # an evaluation every 40 steps and at the end
    assert marks[-1][3] == 2 * 2 * 200  # two members, two evaluations of a 200-step episode each
    clocks = training_clock.EvaluationClocks()
    train, evaluation = clocks("Pendulum-v1"), clocks("Pendulum-v1")
    assert clocks.clocks == [evaluation] and not isinstance(train, training_clock.EpisodeClock)
    with pytest.raises(RuntimeError, match="counted \\[0\\] episodes, not 2 each"):
        clocks.check(2)


def test_the_batched_equality_checks_hold_on_the_cpu_and_catch_a_difference(gpu_batched):
    spec = sys.modules["batched_blocks"].UpdateSpec(3, 1, (16, 16), 16, 100)
    cfg = spec.config()
    same = gpu_batched.batched_against_single(spec, cfg, 6, "cpu")
    assert same["within_tolerance"] and same["max_abs_diff"] == 0.0  # on the CPU, to the last bit
    assert gpu_batched.graph_against_eager(spec, cfg, 6, "cpu", graph=False)["within_tolerance"]
    a = [torch.ones(3), torch.zeros(2)]
    assert not gpu_batched.compare(a, [torch.ones(3), torch.full((2,), 1e-4)])["within_tolerance"]


def test_a_batched_equality_failure_marks_the_check_broken(gpu_report):
    report = {"errors": {}, "tests": {"returncode": 0},
              "batched": {"equality": {"graph_vs_eager": {"within_tolerance": True}}, "updates": {}, "training": {}}}
    assert not gpu_report.broken(report)
    report["batched"]["equality"]["batched_vs_single"] = {"within_tolerance": False}
    assert gpu_report.broken(report)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_the_full_check_without_a_gpu_is_refused_in_one_line(tmp_path, gpu_check, capsys):
    with pytest.raises(SystemExit) as exit_:
        gpu_check.parse(["--out", str(tmp_path)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "this machine has no CUDA GPU" in err and "--smoke" in err


@pytest.mark.slow
def test_smoke_check_runs_on_the_cpu_and_writes_its_report(tmp_path):
    # the check's own time budget is for GPU machines; here it only has to finish, however busy the CPU
    proc = subprocess.run([sys.executable, str(SCRIPT), "--smoke", "--budget-s", "3000", "--out", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report["smoke"] and not report["errors"]
    assert report["tests"]["returncode"] == 0 and "passed" in report["tests"]["summary"]
    for rows in report["throughput"]["sizes"].values():
        assert rows["eager"]["updates_per_s"] > 0 and rows["compile"]["x_eager"] > 0
    run = report["training"]["eager"]
    # however fast the machine, the preset's budget takes a measurable time (the total is never rounded to 0)
    assert run["learning_steps_per_s"] > 0 and run["preset_budget"]["total_s"] > 0
    assert run["preset_budget"]["hours"] == pytest.approx(run["preset_budget"]["total_s"] / 3600, abs=1e-4)
    assert any("cuda_graph" in s and "CUDA device" in s for s in report["skipped"])
    batched = report["batched"]
    assert all(check["within_tolerance"] for check in batched["equality"].values())
    assert set(batched["updates"]) == {"eager K=1", "eager K=2"} and batched["updates"]["eager K=2"]["x_k1"] > 0
    assert all(run["learning_member_steps_per_s"] > 0 for run in batched["training"].values())
    summary = (tmp_path / "summary.txt").read_text()
    assert "skipped: " in summary and "batched TD3 on Pendulum-v1" in summary
