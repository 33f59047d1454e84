"""Lesson 06's run in a process of its own: it trains while the lesson goes on, a second start attaches to
it instead of starting another, and a run that stops short says so with the end of its log."""

import os
import signal
import sys
from pathlib import Path

import pytest

from td3_lib.course.background import (LOG_NAME, PID_NAME, BackgroundRun, alive, train_in_background,
                                      training_command)
from td3_lib.run import read_history

TINY = {"hidden_sizes": (16, 16), "start_timesteps": 100, "batch_size": 32, "eval_freq": 100, "eval_episodes": 1}


def test_a_run_trains_in_the_background_and_a_second_start_attaches_to_it(tmp_path):
    run_dir = tmp_path / "run"
    first = train_in_background("Pendulum-v1", run_dir, steps=300, overrides=TINY)
    assert first.command == ("python -m td3_lib train --env Pendulum-v1 --steps 300 --save-buffer --out "
                             f"{run_dir} --resume --quiet --no-video --set=hidden_sizes=16,16 "
                             "--set=start_timesteps=100 --set=batch_size=32 --set=eval_freq=100 --set=eval_episodes=1")
    second = train_in_background("Pendulum-v1", run_dir, steps=300, overrides=TINY)
    assert first.running and second.pid == first.pid and second.process is None and second.running
    history = first.wait(every=0.2)
    assert [row["step"] for row in history] == [100, 200, 300] == [row["step"] for row in read_history(run_dir / "history.csv")]
    assert not first.running and not second.running and not alive(first.pid)
    assert first.status().startswith("finished, step 300 of 300: last evaluation")
    returns = [row["eval_mean"] for row in history]
    assert [row["eval_mean"] for row in second.wait()] == returns
    third = train_in_background("Pendulum-v1", run_dir, steps=300, overrides=TINY)  # the old pid is dead: start again
    assert third.pid != first.pid  # it resumes the finished run, which trains no more
    assert [row["eval_mean"] for row in third.wait(every=0.2)] == returns


def test_a_run_that_stops_short_raises_with_its_log(tmp_path):
    run = train_in_background("NoSuchEnv-v0", tmp_path / "run", steps=300)
    with pytest.raises(RuntimeError, match="stopped before 300 steps; start it again(.|\n)*NoSuchEnv-v0"):
        run.wait(every=0.2)
    assert (tmp_path / "run" / LOG_NAME).exists()
    assert run.status().startswith("stopped: no evaluation yet")


def test_an_interrupted_run_is_stopped_and_a_stale_pid_is_not_alive(tmp_path):
    run = train_in_background("Pendulum-v1", tmp_path / "run", steps=100_000, overrides=TINY)
    os.killpg(run.pid, signal.SIGKILL)
    run.process.wait()
    assert not run.running and not alive(run.pid)
    assert int((tmp_path / "run" / PID_NAME).read_text()) == run.pid
    assert not alive(os.getpid() + 10_000_000) and not alive(os.getpid())  # no such process; not a td3_lib one
    assert BackgroundRun(tmp_path / "run", 100_000, os.getpid()).running is (sys.platform != "linux")


def test_lesson_06s_run_is_the_run_its_full_budget_starts_from():
    """The lesson trains in the background what notebooks/execute.py copies in for its full budget: the
    command of LESSON_06_COMMAND (with one thread), only resumed, quiet and without the end's clip."""
    from conftest import script_module

    execute = script_module(Path(__file__).resolve().parent.parent / "notebooks" / "execute.py", "execute_script")
    _, folder, command, steps = execute.STARTS_FROM["06_td3_assembled.ipynb"]
    lesson = training_command("Hopper-v5", Path("runs/Hopper-v5-seed0"), 300_000)
    made = command.split()
    assert made[0] == "OMP_NUM_THREADS=1" and steps == 300_000 and folder.parts[-2:] == ("runs", "Hopper-v5-seed0")
    out = made.index("--out")
    assert lesson[:-3] == made[1:out + 1] + ["runs/Hopper-v5-seed0"] and lesson[-3:] == ["--resume", "--quiet", "--no-video"]
