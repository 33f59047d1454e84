"""Runs that survive: resume, kills at any moment, safe loading, non-finite guard."""

import dataclasses
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from conftest import ROW, Interrupt, saved_run, stop_at
import td3_lib.run as run_module
import td3_lib.training as training
from td3_lib import CheckpointError, TD3, TD3Config, train
from td3_lib.__main__ import main
from td3_lib.run import read_history
from td3_lib.training import TrainingDiverged

ROOT = Path(__file__).resolve().parents[1]
CFG = TD3Config(hidden_sizes=(64, 64), start_timesteps=300, total_steps=2000, eval_freq=400,
                eval_episodes=1, batch_size=64)


def _same_weights(a, b):
    return all(torch.equal(x, y) for x, y in zip(a.critic.parameters(), b.critic.parameters())) and \
        all(torch.equal(x, y) for x, y in zip(a.actor.parameters(), b.actor.parameters()))


@pytest.mark.slow
def test_resume_with_buffer_equals_uninterrupted(tmp_path):
    full = train("Pendulum-v1", CFG, seed=3, device="cpu", progress=False)
    with pytest.raises(Interrupt):  # interrupted at the evaluation of step 1200
        train("Pendulum-v1", CFG, seed=3, device="cpu", checkpoint_dir=tmp_path, progress=False,
              save_buffer=True, callback=stop_at(1200))
    saved = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert saved["step"] == 800  # the last complete checkpoint
    resumed = train("Pendulum-v1", seed=3, device="cpu", checkpoint_dir=tmp_path, progress=False,
                    resume=True, save_buffer=True)
    assert [h["eval_mean"] for h in resumed.history] == [h["eval_mean"] for h in full.history]
    assert _same_weights(full.agent, resumed.agent)


@pytest.mark.slow
def test_a_run_resumed_between_evaluations_logs_the_history_of_the_uninterrupted_run(tmp_path):
    """The checkpoint after an evaluation waits for the episode's end: with an evaluation every 300
    steps and Pendulum's 200-step episodes, the checkpoint of step 1000 holds the 100 critic losses
    logged since the evaluation of step 900, and the resumed run's row at 1200 averages them with
    the next 200, as the uninterrupted run's does. Every column of every row is equal but the time."""
    cfg = dataclasses.replace(CFG, eval_freq=300, total_steps=1500)
    full = train("Pendulum-v1", cfg, seed=3, device="cpu", progress=False)
    with pytest.raises(Interrupt):
        train("Pendulum-v1", cfg, seed=3, device="cpu", checkpoint_dir=tmp_path, progress=False,
              save_buffer=True, callback=stop_at(1200))
    saved = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert saved["step"] == 1000 and saved["critic_losses"].shape == (100,)
    resumed = train("Pendulum-v1", seed=3, device="cpu", checkpoint_dir=tmp_path, progress=False,
                    resume=True, save_buffer=True)
    assert untimed(resumed.history) == untimed(full.history)
    assert untimed(read_history(tmp_path / "history.csv")) == untimed(full.history)


def untimed(history: list[dict]) -> list[dict]:
    """The rows without their wall-clock time, NaN (no loss logged yet) written as a string so rows compare."""
    return [{k: "nan" if v != v else v for k, v in row.items() if k != "wall_s"} for row in history]


@pytest.mark.slow
def test_a_finished_run_extended_keeps_its_history_and_is_a_continuation_not_the_longer_run(tmp_path):
    """Only total_steps may change on resume, to extend a finished run (lesson 06 goes on from 300,000
    Hopper steps to 1M). The extended run keeps the shorter run's history and reaches the new budget. The
    shorter run stopped half-way through an episode (Pendulum's are 200 steps long; it stopped at 1,300), and
    the extension goes on in a new episode there, so from then on it is not the run that the longer budget
    makes from the start."""
    full = train("Pendulum-v1", CFG, seed=3, device="cpu", progress=False)
    short = train("Pendulum-v1", dataclasses.replace(CFG, total_steps=1300), seed=3, device="cpu",
                  checkpoint_dir=tmp_path, progress=False, save_buffer=True)
    longer = train("Pendulum-v1", CFG, seed=3, device="cpu", checkpoint_dir=tmp_path, progress=False,
                   save_buffer=True, resume=True)
    assert longer.history[:len(short.history)] == short.history and longer.steps == CFG.total_steps
    evaluations = lambda result: {h["step"]: h["eval_mean"] for h in result.history}
    assert [evaluations(longer)[s] == evaluations(full)[s] for s in (400, 800, 1200, 1600, 2000)] == \
        [True, True, True, False, False]


@pytest.mark.slow
def test_a_run_saved_with_its_buffer_keeps_saving_it_when_resumed_without_asking(tmp_path):
    """Keeping the buffer is the run's own setting, as its config is: started with save_buffer=True and
    resumed without it (``train --resume``), the run still saves its buffer, so a second interruption
    loses nothing either and the run ends as the uninterrupted one does."""
    full = train("Pendulum-v1", CFG, seed=3, device="cpu", progress=False)
    with pytest.raises(Interrupt):
        train("Pendulum-v1", CFG, seed=3, device="cpu", checkpoint_dir=tmp_path, progress=False,
              save_buffer=True, callback=stop_at(1200))
    with pytest.raises(Interrupt):
        train("Pendulum-v1", seed=3, device="cpu", checkpoint_dir=tmp_path, progress=False, resume=True,
              callback=stop_at(1600))
    saved = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert saved["step"] == 1200 and saved["buffer"] is not None
    resumed = train("Pendulum-v1", seed=3, device="cpu", checkpoint_dir=tmp_path, progress=False, resume=True)
    assert [h["eval_mean"] for h in resumed.history] == [h["eval_mean"] for h in full.history]
    assert _same_weights(full.agent, resumed.agent)


@pytest.mark.slow
def test_resume_without_buffer_warns_and_continues(tmp_path):
    with pytest.raises(Interrupt):
        train("Pendulum-v1", CFG, seed=3, device="cpu", checkpoint_dir=tmp_path, progress=False,
              callback=stop_at(1200))
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
    import os, sys, torch
    torch.set_num_threads(1)
    import td3_lib.checkpoint as checkpoint
    from td3_lib import TD3Config, train

    run_dir, name, nth = sys.argv[1], sys.argv[2], int(sys.argv[3])
    writes = []

    def die_at_nth_write(path):  # ends the process once the nth temporary file of ``name`` is complete
        writes.append(path.name)
        if writes.count(name) == nth:
            os._exit(9)

    checkpoint.after_temp_written = die_at_nth_write
    cfg = TD3Config(hidden_sizes=(64, 64), start_timesteps=300, total_steps=2400, eval_freq=200,
                    eval_episodes=1, batch_size=64)
    train("Pendulum-v1", cfg, seed=5, device="cpu", checkpoint_dir=run_dir, progress=False,
          resume=True, save_buffer=True)
""")
KILL_CFG = TD3Config(hidden_sizes=(64, 64), start_timesteps=300, total_steps=2400, eval_freq=200,
                     eval_episodes=1, batch_size=64)


@pytest.mark.slow
def test_killed_mid_write_then_resumed_matches_uninterrupted(tmp_path):
    """End a real training process at exact moments (a checkpoint or history CSV complete in its
    temporary file, not yet renamed); every time the last checkpoint and its CSV must load, and
    the run resumed to its budget must equal an uninterrupted one. Checkpoints land at the first
    episode end (every 200 steps on Pendulum) after each evaluation, so the steps are known."""
    run_dir, script = tmp_path / "run", tmp_path / "train.py"
    script.write_text(_KILL_SCRIPT)
    # (file whose write ends the process, which write of this process, step of the checkpoint left)
    kills = [("checkpoint.pt", 2, 200), ("history.csv", 2, 400), ("checkpoint.pt", 1, 400)]
    for name, nth, step in kills:
        done = subprocess.run([sys.executable, "-W", "ignore", str(script), str(run_dir), name, str(nth)])
        assert done.returncode == 9, f"the process did not end at write {nth} of {name}"
        state = torch.load(run_dir / "checkpoint.pt", weights_only=True)  # complete and readable
        assert state["step"] == step
        assert read_history(run_dir / "history.csv")[-1]["step"] >= state["history"][-1]["step"]
        assert list(run_dir.glob(f".{name}.*.tmp"))  # the kill left its temporary file behind
    done = subprocess.run([sys.executable, "-W", "ignore", str(script), str(run_dir), "none", "1"])
    assert done.returncode == 0
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        full = train("Pendulum-v1", KILL_CFG, seed=5, device="cpu", progress=False)
    finally:
        torch.set_num_threads(threads)
    resumed = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    assert resumed["step"] == KILL_CFG.total_steps
    assert not list(run_dir.glob(".*.tmp"))  # what the kills left is cleared on resume
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




def test_resume_starts_the_run_where_there_is_none_saying_so_with_its_folder(tmp_path):
    """One command both starts and continues a long run (lesson 06's): ``--resume`` in an empty folder
    starts the run, with a warning that names the folder; docs/usage.md says so."""
    usage = " ".join((ROOT / "docs" / "usage.md").read_text().split())
    assert ("`--resume` continues the run saved in `--out`, and starts it there when there is none, so one "
            "command both starts and continues a long run") in usage
    warning = f"No checkpoint in {tmp_path / 'new'} yet: starting a new run."
    with pytest.warns(UserWarning, match=f"^{re.escape(warning)}$"):
        run = training.prepare_run(gym.make("Pendulum-v1"), "Pendulum-v1", CFG, 0, torch.device("cpu"),
                                   tmp_path / "new", resume=True)
    assert run.step == 0 and not (tmp_path / "new").exists()

def zero_bytes(path, at=0.1, size=2000):
    """Damage a file inside, its layout intact: ``size`` bytes zeroed at the fraction ``at`` of it."""
    data = bytearray(path.read_bytes())
    start = int(len(data) * at)
    data[start:start + size] = bytes(size)
    path.write_bytes(bytes(data))


def test_a_checkpoint_damaged_inside_is_refused_naming_its_damaged_member(tmp_path, capsys):
    torch.manual_seed(0)
    TD3(3, [-2], [2], CFG).save(tmp_path / "agent.pt", env_id="Pendulum-v1")
    zero_bytes(tmp_path / "agent.pt")
    assert main(["evaluate", str(tmp_path / "agent.pt"), "--episodes", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"python -m td3_lib evaluate: error: {tmp_path / 'agent.pt'} is damaged: its member "
                          "archive/data/") and "fails its CRC check" in err and err.count("\n") == 1
    zero_bytes(saved_run(tmp_path / "run", CFG))
    with pytest.raises(CheckpointError, match=r"checkpoint.pt is damaged: its member archive/\S+ fails its CRC"):
        train("Pendulum-v1", CFG, device="cpu", checkpoint_dir=tmp_path / "run", resume=True, progress=False)



@pytest.mark.parametrize("buffer", [[], ["--save-buffer"]])
def test_a_budget_below_the_saved_step_is_refused_naming_both(tmp_path, capsys, buffer):
    path = saved_run(tmp_path, CFG, step=800, history=[ROW], save_buffer=bool(buffer))
    before = path.read_bytes()
    argv = ["train", "--env", "Pendulum-v1", "--out", str(tmp_path), "--resume", "--steps", "500", "--no-video",
            "--quiet", *buffer]
    assert main(argv) == 2
    assert capsys.readouterr().err == (f"python -m td3_lib train: error: {path} is saved at step 800: a budget of 500 "
                                       "steps (total_steps, --steps) is below it; resume with at least 800.\n")
    assert path.read_bytes() == before and not (tmp_path / "curve.png").exists()

def test_mismatched_network_shape_is_named(tmp_path):
    torch.manual_seed(0)
    agent = TD3(3, [-2], [2], CFG)
    state = agent.state_dict(env_id="Pendulum-v1")
    state["config"]["hidden_sizes"] = [32, 32]  # says one shape, holds another
    torch.save(state, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError, match=r"bad.pt does not match the network it describes: Error\(s\) in "
                                              r"loading state_dict for Actor: size mismatch for net.0.weight: "
                                              r"copying a param with shape torch.Size\(\[64, 3\]\)"):
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


def test_non_finite_loss_stops_run_naming_step_and_keeps_checkpoint(tmp_path, nan_reward_at):
    env = nan_reward_at(gym.make("Pendulum-v1"), at=700)
    with pytest.raises(TrainingDiverged) as err:
        train(env, CFG, seed=0, device="cpu", checkpoint_dir=tmp_path, progress=False)
    msg = str(err.value)
    step = int(msg.split("at step ")[1].split(";")[0])
    assert 700 <= step <= 800 and "last good checkpoint" in msg
    saved = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert saved["step"] == 400
    assert all(torch.isfinite(v).all() for v in saved["agent"]["critic"].values())


def test_unwritable_dir_and_full_disk_reported_before_training(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("x")

    class NoTraining(TD3):
        def update(self, batch):
            raise AssertionError("training started before the checkpoint directory was checked")

    def no_evaluation(*args, **kwargs):
        raise AssertionError("evaluation started before the checkpoint directory was checked")
    monkeypatch.setattr(training, "evaluation_episodes", no_evaluation)
    with pytest.raises(OSError, match="not writable"):
        train("Pendulum-v1", CFG, checkpoint_dir=tmp_path / "file" / "run", progress=False, agent=NoTraining)
    monkeypatch.setattr(run_module.shutil, "disk_usage",
                        lambda p: shutil._ntuple_diskusage(10**9, 10**9 - 1000, 1000))
    with pytest.raises(OSError, match="Not enough free disk space"):
        train("Pendulum-v1", CFG, checkpoint_dir=tmp_path / "run", progress=False, agent=NoTraining)
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
    for rng_state in (loaded["minibatch_generator"], loaded["agent"]["generator"]):
        assert rng_state.device.type == "cpu" and rng_state.dtype == torch.uint8
    resumed = train("Pendulum-v1", dataclasses.replace(CFG, total_steps=CFG.total_steps + 400), device="cpu",
                    checkpoint_dir=tmp_path, progress=False, resume=True)
    assert resumed.steps == CFG.total_steps + 400


@pytest.mark.slow
def test_a_run_made_with_cuda_graphs_resumes_on_a_cpu_without_them(tmp_path):
    """cuda_graph changes how the update runs, not what it computes: a resume may turn it off (on a
    machine without a GPU); any other field must stay as saved."""
    train("Pendulum-v1", CFG, seed=4, device="cpu", checkpoint_dir=tmp_path, progress=False, save_buffer=True)
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    state["agent"]["config"]["cuda_graph"] = True  # as saved by a run on a GPU with CUDA graphs
    torch.save(state, tmp_path / "checkpoint.pt")
    longer = dataclasses.replace(CFG, total_steps=CFG.total_steps + 400)
    resumed = train("Pendulum-v1", longer, device="cpu", checkpoint_dir=tmp_path, progress=False, resume=True)
    assert resumed.steps == longer.total_steps and not resumed.agent.config.cuda_graph
    with pytest.raises(CheckpointError, match=r"trained with batch_size=64, not 32; resume with the same config "
                                              r"\(only total_steps and cuda_graph may change\)"):
        train("Pendulum-v1", dataclasses.replace(longer, batch_size=32), device="cpu", checkpoint_dir=tmp_path,
              progress=False, resume=True)
