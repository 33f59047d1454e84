"""One run vocabulary: a checkpoint's keys are RunState's attribute names, TrainResult takes RunState's
names, and a run saved in the first format (td3_lib.run/1, keys t, rng and sample_generator) still
loads and resumes to the same result; format 2's checkpoints lack only format 3's critic_losses.

``tests/data/run_format_1`` was written by td3_lib at commit de0274f (its make.py says how): a
Pendulum-v1 run whose checkpoint, with its replay buffer, is that of step 200, before the first update."""

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import Interrupt, stop_at
from td3_lib import TD3Config, TrainResult, train
from td3_lib.__main__ import main
from td3_lib.checkpoint import CheckpointError
from td3_lib.run import (CHECKPOINT_NAME, RUN_FORMAT, RunState, load_agent, read_history, read_run, saved_config,
                         saved_step)

OLD_RUN = Path(__file__).resolve().parent / "data" / "run_format_1"
CONFIG = TD3Config(hidden_sizes=(16, 16), start_timesteps=300, total_steps=600, eval_freq=200,
                   eval_episodes=1, batch_size=32)  # as make.py's
SEED = 7
RENAMED = {"t": "step", "rng": "exploration_rng", "sample_generator": "minibatch_generator"}


def test_a_checkpoint_saves_each_attribute_under_its_name():
    run = RunState("Pendulum-v1", CONFIG, SEED, torch.device("cpu"), 3, np.array([-2.0]), np.array([2.0]))
    state = run.state_dict(with_buffer=True)
    names = {"env_id", "seed", "step", "episode", "history", "wall_s", "last_return", "critic_losses", "agent",
             "exploration_rng", "minibatch_generator", "buffer"}
    assert all(hasattr(run, name) for name in names) and set(state) - {"format"} == names
    assert state["format"] == RUN_FORMAT


def test_train_result_takes_run_states_names():
    fields = [f.name for f in dataclasses.fields(TrainResult)]
    run = RunState("Pendulum-v1", CONFIG, SEED, torch.device("cpu"), 3, np.array([-2.0]), np.array([2.0]))
    run.step, run.wall_s, run.history = 600, 1.5, [{"step": 600, "eval_mean": -150.0}]
    result = TrainResult.of(run)
    assert all(getattr(result, name) is getattr(run, name) for name in fields)
    assert result.step == result.steps == 600 and result.final_return == -150.0


def test_the_first_formats_checkpoint_is_read_under_todays_names():
    old = torch.load(OLD_RUN / CHECKPOINT_NAME, weights_only=True)
    assert old["format"] == "td3_lib.run/1" and set(RENAMED) <= set(old)
    state = read_run(OLD_RUN / CHECKPOINT_NAME)
    assert state["format"] == RUN_FORMAT and not set(RENAMED) & set(state)
    assert state["critic_losses"].shape == (0,)  # added in format 3: an earlier run kept none
    for old_key, key in RENAMED.items():
        assert_equal(state[key], old[old_key], key)
    assert saved_step(OLD_RUN) == 200 and saved_config(OLD_RUN) == CONFIG
    assert load_agent(OLD_RUN / CHECKPOINT_NAME).total_it == 0


def test_the_first_format_holds_what_todays_code_saves_for_the_same_run(tmp_path):
    """Today's code, stopped at the same point of the same run, saves the same state: every tensor,
    counter and random-number state equal, under the new names (the networks and the buffer are made
    before any update, by seeded draws and the environment, so they do not depend on float kernels)."""
    with pytest.raises(Interrupt):
        train("Pendulum-v1", CONFIG, seed=SEED, device="cpu", checkpoint_dir=tmp_path, progress=False,
              save_buffer=True, callback=stop_at(400))
    new, old = read_run(tmp_path / CHECKPOINT_NAME), read_run(OLD_RUN / CHECKPOINT_NAME)
    assert set(new) == set(old)
    for key in set(new) - {"history", "wall_s", "agent"}:
        assert_equal(new[key], old[key], key)
    for key in ("actor", "critic", "actor_target", "critic_target", "generator", "total_it", "config"):
        assert_equal(new["agent"][key], old["agent"][key], f"agent.{key}")
    assert [h["step"] for h in new["history"]] == [h["step"] for h in old["history"]] == [200]


def assert_equal(a, b, where: str) -> None:
    if isinstance(a, dict):
        assert set(a) == set(b), where
        for k in a:
            assert_equal(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b), where
    else:
        assert a == b or (a != a and b != b), where  # NaN equals NaN here


@pytest.mark.slow
def test_a_run_of_the_first_format_resumes_to_the_uninterrupted_run(tmp_path):
    """Resumed by today's code from the old checkpoint, the run ends where today's code run without
    interruption ends: the same history after the checkpoint, the same weights, bit for bit."""
    shutil.copytree(OLD_RUN, tmp_path / "run")
    resumed = train("Pendulum-v1", seed=SEED, device="cpu", checkpoint_dir=tmp_path / "run", progress=False,
                    resume=True, save_buffer=True)
    full = train("Pendulum-v1", CONFIG, seed=SEED, device="cpu", progress=False)
    assert resumed.step == full.step == CONFIG.total_steps
    assert_equal(without_wall_s(resumed.history[1:]), without_wall_s(full.history[1:]), "history")
    assert_equal(resumed.history[0], read_history(OLD_RUN / "history.csv")[0], "the saved evaluation")
    for name in ("actor", "critic", "actor_target", "critic_target"):
        for p, q in zip(getattr(resumed.agent, name).parameters(), getattr(full.agent, name).parameters()):
            assert torch.equal(p, q), name
    assert read_run(tmp_path / "run" / CHECKPOINT_NAME)["format"] == RUN_FORMAT  # saved anew in today's format


def without_wall_s(history: list[dict]) -> dict:
    return {i: {k: v for k, v in row.items() if k != "wall_s"} for i, row in enumerate(history)}


def test_a_file_of_no_known_format_is_refused(tmp_path):
    torch.save({"format": "td3_lib.run/0", "t": 5}, tmp_path / CHECKPOINT_NAME)
    with pytest.raises(CheckpointError, match="is not a td3_lib training checkpoint"):
        saved_step(tmp_path)
    assert saved_step(tmp_path / "empty") == 0 and saved_config(tmp_path / "empty") is None


def test_a_checkpoint_without_the_keys_of_a_run_is_refused_naming_them(tmp_path, capsys):
    path = tmp_path / CHECKPOINT_NAME
    torch.save({"format": RUN_FORMAT, "env_id": "Pendulum-v1"}, path)
    missing = ("seed, agent, step, episode, history, wall_s, last_return, exploration_rng, "
               "minibatch_generator, buffer")  # critic_losses: a run of format 2 is read with none
    error = f"{path} is not a complete td3_lib training checkpoint: it has no {missing}."
    with pytest.raises(CheckpointError) as refused:
        train("Pendulum-v1", CONFIG, device="cpu", checkpoint_dir=tmp_path, resume=True, progress=False)
    assert str(refused.value) == error
    for argv in (["evaluate", str(path)], ["train", "--env", "Pendulum-v1", "--out", str(tmp_path), "--resume"]):
        assert main(argv) == 2
        assert capsys.readouterr().err == f"python -m td3_lib {argv[0]}: error: {error}\n"


def test_the_keys_a_run_must_have_are_the_keys_a_run_saves(tmp_path):
    from conftest import saved_run
    from td3_lib.run import RUN_KEYS
    from td3_lib.checkpoint import safe_load
    path = saved_run(tmp_path, TD3Config(total_steps=800))
    assert set(safe_load(path)) - {"format"} == set(RUN_KEYS)
