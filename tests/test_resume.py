"""Runs that survive: resume, kills at any moment, safe loading, non-finite guard."""

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import gymnasium as gym
import numpy as np
import pytest
import torch

import td3_lib.run as run_module
import td3_lib.training as training
from td3_lib import CheckpointError, TD3, TD3Config, train
from td3_lib.run import read_history
from td3_lib.training import TrainingDiverged

CFG = TD3Config(hidden_sizes=(64, 64), start_timesteps=300, total_steps=2000, eval_freq=400,
                eval_episodes=1, batch_size=64)


class Interrupt(Exception):
    pass


def _stop_at(step):
    def callback(t, agent):
        if t >= step:
            raise Interrupt
    return callback


def _same_weights(a, b):
    return all(torch.equal(x, y) for x, y in zip(a.critic.parameters(), b.critic.parameters())) and \
        all(torch.equal(x, y) for x, y in zip(a.actor.parameters(), b.actor.parameters()))


@pytest.mark.slow
def test_resume_with_buffer_equals_uninterrupted(tmp_path):
    full = train("Pendulum-v1", CFG, seed=3, device="cpu", progress=False)
    with pytest.raises(Interrupt):  # interrupted at the evaluation of step 1200
        train("Pendulum-v1", CFG, seed=3, device="cpu", checkpoint_dir=tmp_path, progress=False,
              save_buffer=True, callback=_stop_at(1200))
    saved = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert saved["t"] == 800  # the last complete checkpoint
    resumed = train("Pendulum-v1", seed=3, device="cpu", checkpoint_dir=tmp_path, progress=False,
                    resume=True, save_buffer=True)
    assert [h["eval_mean"] for h in resumed.history] == [h["eval_mean"] for h in full.history]
    assert _same_weights(full.agent, resumed.agent)


@pytest.mark.slow
def test_resume_without_buffer_warns_and_continues(tmp_path):
    with pytest.raises(Interrupt):
        train("Pendulum-v1", CFG, seed=3, device="cpu", checkpoint_dir=tmp_path, progress=False,
              callback=_stop_at(1200))
    with pytest.warns(UserWarning, match="holds no replay buffer"):
        r = train("Pendulum-v1", CFG, seed=3, device="cpu", checkpoint_dir=tmp_path,
                  progress=False, resume=True)
    assert r.steps == CFG.total_steps and r.history[-1]["step"] == CFG.total_steps


@pytest.mark.slow
def test_fresh_run_refuses_to_overwrite_and_resume_checks_config(tmp_path):
    train("Pendulum-v1", CFG, seed=1, device="cpu", checkpoint_dir=tmp_path, progress=False)
    before = (tmp_path / "checkpoint.pt").read_bytes()
    with pytest.raises(FileExistsError, match="already holds a run"):
        train("Pendulum-v1", CFG, seed=1, device="cpu", checkpoint_dir=tmp_path, progress=False)
    with pytest.raises(CheckpointError, match="hidden_sizes"):  # another network shape
        train("Pendulum-v1", CFG.__class__(**{**CFG.to_dict(), "hidden_sizes": [32]}), seed=1,
              device="cpu", checkpoint_dir=tmp_path, progress=False, resume=True)
    with pytest.raises(CheckpointError, match="trained on Pendulum-v1, not MountainCarContinuous-v0"):
        train("MountainCarContinuous-v0", None, seed=1, device="cpu", checkpoint_dir=tmp_path,
              progress=False, resume=True)
    assert (tmp_path / "checkpoint.pt").read_bytes() == before  # nothing lost


_KILL_SCRIPT = textwrap.dedent("""
    import sys, torch
    torch.set_num_threads(1)
    from td3_lib import TD3Config, train
    cfg = TD3Config(hidden_sizes=(64, 64), start_timesteps=300, total_steps=2400, eval_freq=200,
                    eval_episodes=1, batch_size=64)
    train("Pendulum-v1", cfg, seed=5, device="cpu", checkpoint_dir=sys.argv[1], progress=False,
          resume=True, save_buffer=True, total_steps=int(sys.argv[2]))
""")
KILL_CFG = TD3Config(hidden_sizes=(64, 64), start_timesteps=300, total_steps=2400, eval_freq=200,
                     eval_episodes=1, batch_size=64)


def _kill_when(proc, event, what):
    """SIGKILL ``proc`` as soon as ``event()`` holds; the run's budget is too large for it to finish first."""
    while not event():
        assert proc.poll() is None, f"the training process ended before {what}"
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


@pytest.mark.slow
def test_killed_at_checkpoints_and_mid_write_then_resumed_matches_uninterrupted(tmp_path):
    """SIGKILL a real training process just after a checkpoint lands and while one is being
    written; every time the last checkpoint must load, and the resumed run equal an uninterrupted one."""
    run_dir, script = tmp_path / "run", tmp_path / "train.py"
    script.write_text(_KILL_SCRIPT)
    ckpt = run_dir / "checkpoint.pt"
    steps_seen = []
    for kill in range(4):
        proc = subprocess.Popen([sys.executable, "-W", "ignore", str(script), str(run_dir), "1000000"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if kill % 2 == 0:  # just after a new checkpoint is in place
            before = ckpt.stat().st_mtime_ns if ckpt.exists() else 0
            _kill_when(proc, lambda: ckpt.exists() and ckpt.stat().st_mtime_ns != before, "a checkpoint")
        else:  # while the next one is being written (its temporary file exists)
            _kill_when(proc, lambda: any(run_dir.glob(".checkpoint.pt.*.tmp")), "a checkpoint write")
        state = torch.load(ckpt, weights_only=True)  # always complete and readable
        steps_seen.append(state["t"])
        assert read_history(run_dir / "history.csv")  # the CSV too
    assert steps_seen == sorted(steps_seen) and steps_seen[-1] > steps_seen[0]
    assert steps_seen[-1] < KILL_CFG.total_steps
    proc = subprocess.run([sys.executable, "-W", "ignore", str(script), str(run_dir), str(KILL_CFG.total_steps)])
    assert proc.returncode == 0
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        full = train("Pendulum-v1", KILL_CFG, seed=5, device="cpu", progress=False)
    finally:
        torch.set_num_threads(threads)
    resumed = torch.load(ckpt, weights_only=True)
    assert resumed["t"] == KILL_CFG.total_steps
    assert not list(run_dir.glob(".*.tmp"))  # what a kill mid-write left is cleared on resume
    assert [h["eval_mean"] for h in resumed["history"]] == [h["eval_mean"] for h in full.history]
    assert _same_weights(TD3.from_state_dict(resumed["agent"]), full.agent)


class _Payload:
    """Unpickling this would create a file: proof the code ran."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def test_malicious_pickle_refused_without_running(tmp_path):
    marker = str(tmp_path / "payload-ran")
    path = tmp_path / "evil.pt"
    torch.save({"format": "td3_lib.agent/1", "actor": _Payload(marker)}, path)
    with pytest.raises(CheckpointError, match="arbitrary Python objects"):
        TD3.load(path)
    (tmp_path / "checkpoint.pt").write_bytes(path.read_bytes())  # as a run's checkpoint too
    with pytest.raises(CheckpointError, match="arbitrary Python objects"):
        train("Pendulum-v1", CFG, checkpoint_dir=tmp_path, resume=True, progress=False)
    assert not os.path.exists(marker)
    # the same file loaded without protection would run it: the payload is real
    torch.load(path, weights_only=False)
    assert os.path.exists(marker)


def test_truncated_checkpoint_is_a_clear_error(tmp_path):
    torch.manual_seed(0)
    TD3(3, [-2], [2], CFG).save(tmp_path / "a.pt")
    data = (tmp_path / "a.pt").read_bytes()
    for cut in (10, len(data) // 2, len(data) - 10):
        (tmp_path / "cut.pt").write_bytes(data[:cut])
        with pytest.raises(CheckpointError, match="cut.pt is not a readable checkpoint"):
            TD3.load(tmp_path / "cut.pt")


def test_mismatched_network_shape_is_named(tmp_path):
    torch.manual_seed(0)
    agent = TD3(3, [-2], [2], CFG)
    state = agent.state_dict(env_id="Pendulum-v1")
    state["config"]["hidden_sizes"] = [32, 32]  # says one shape, holds another
    torch.save(state, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError, match="bad.pt does not match the network it describes"):
        TD3.load(tmp_path / "bad.pt")


def test_gpu_checkpoint_loads_on_cpu(tmp_path, monkeypatch):
    """A file whose tensors were saved on a GPU (location tag cuda:0) loads onto the CPU."""
    torch.manual_seed(0)
    agent = TD3(3, [-2], [2], CFG)
    import torch.serialization as ser
    monkeypatch.setattr(ser, "location_tag", lambda storage: "cuda:0")
    agent.save(tmp_path / "gpu.pt", env_id="Pendulum-v1")
    monkeypatch.undo()
    if not torch.cuda.is_available():  # plain torch.load would fail on this machine
        with pytest.raises(RuntimeError, match="CUDA"):
            torch.load(tmp_path / "gpu.pt", weights_only=True)
    loaded = TD3.load(tmp_path / "gpu.pt", device="cpu")
    obs = np.ones((4, 3))
    np.testing.assert_array_equal(loaded.act(obs), agent.act(obs))


class _NaNReward(gym.Wrapper):
    """Returns a NaN reward at one step, as a broken environment might."""

    def __init__(self, env, at):
        super().__init__(env)
        self.t, self.at = 0, at

    def step(self, action):
        obs, r, term, trunc, info = self.env.step(action)
        self.t += 1
        return obs, (float("nan") if self.t == self.at else r), term, trunc, info


def test_non_finite_loss_stops_run_naming_step_and_keeps_checkpoint(tmp_path):
    env = _NaNReward(gym.make("Pendulum-v1"), at=700)
    with pytest.raises(TrainingDiverged) as err:
        train(env, CFG, seed=0, device="cpu", checkpoint_dir=tmp_path, progress=False)
    msg = str(err.value)
    step = int(msg.split("at step ")[1].split(";")[0])
    assert 700 <= step <= 800 and "last good checkpoint" in msg
    saved = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert saved["t"] == 400
    assert all(torch.isfinite(v).all() for v in saved["agent"]["critic"].values())


def test_unwritable_dir_and_full_disk_reported_before_training(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("x")

    def no_training(*args, **kwargs):
        raise AssertionError("training started before the checkpoint directory was checked")
    monkeypatch.setattr(TD3, "update", no_training)
    monkeypatch.setattr(training, "evaluation_episodes", no_training)
    with pytest.raises(OSError, match="not writable"):
        train("Pendulum-v1", CFG, checkpoint_dir=tmp_path / "file" / "run", progress=False)
    monkeypatch.setattr(run_module.shutil, "disk_usage",
                        lambda p: shutil._ntuple_diskusage(10**9, 10**9 - 1000, 1000))
    with pytest.raises(OSError, match="Not enough free disk space"):
        train("Pendulum-v1", CFG, checkpoint_dir=tmp_path / "run", progress=False)
    assert not (tmp_path / "run" / "checkpoint.pt").exists()


@pytest.mark.slow
def test_a_run_saved_on_a_gpu_resumes_with_cpu_rng_states(tmp_path, monkeypatch):
    """The GPU resume path on the CPU: every tensor of a run checkpoint tagged cuda:0 (the RNG
    states included) arrives on the CPU, where torch.Generator.set_state needs it on any device."""
    train("Pendulum-v1", CFG, seed=4, device="cpu", checkpoint_dir=tmp_path, progress=False, save_buffer=True)
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    import torch.serialization as ser
    monkeypatch.setattr(ser, "location_tag", lambda storage: "cuda:0")
    torch.save(state, tmp_path / "checkpoint.pt")
    monkeypatch.undo()
    from td3_lib.checkpoint import safe_load
    loaded = safe_load(tmp_path / "checkpoint.pt")
    for rng_state in (loaded["sample_generator"], loaded["agent"]["generator"]):
        assert rng_state.device.type == "cpu" and rng_state.dtype == torch.uint8
    resumed = train("Pendulum-v1", None, device="cpu", checkpoint_dir=tmp_path, progress=False,
                    resume=True, total_steps=CFG.total_steps + 400)
    assert resumed.steps == CFG.total_steps + 400
