"""The command line: a real training run end to end, and one clear line for each bad input."""

import subprocess
import sys

import gymnasium as gym
import pytest
import torch

from conftest import ROW, saved_run
import td3_lib.__main__ as cli
from td3_lib import TD3, TD3Config, envs, train
from td3_lib.__main__ import main
from td3_lib.checkpoint import check_env_id
from td3_lib.envs import RenderingUnavailable
from td3_lib.run import BASE_FIELDS


def run_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "td3_lib", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


@pytest.mark.slow
def test_train_evaluate_play_end_to_end(tmp_path):
    out = tmp_path / "run"
    p = run_cli("train", "--env", "Pendulum-v1", "--steps", "1200", "--out", str(out), "--quiet")
    assert p.returncode == 0, p.stderr
    assert "final evaluation" in p.stdout
    assert "best evaluation" in p.stdout
    for name in ("checkpoint.pt", "best_actor.pt", "history.csv", "curve.png"):
        assert (out / name).stat().st_size > 0
    assert list((out / "videos").glob("*.mp4"))
    for name in ("checkpoint.pt", "best_actor.pt"):
        p = run_cli("evaluate", str(out / name), "--episodes", "2")
        assert p.returncode == 0 and "Pendulum-v1: mean" in p.stdout
    p = run_cli("play", str(out / "checkpoint.pt"), "--out", str(tmp_path / "clips"))
    assert p.returncode == 0 and list((tmp_path / "clips").glob("*.mp4"))
    p = run_cli("play", "--pretrained", "Pendulum-v1", cwd=tmp_path)  # into runs/, which git ignores
    assert p.returncode == 0 and list((tmp_path / "runs" / "pretrained").glob("*.mp4")), p.stderr
    p = run_cli("train", "--env", "Pendulum-v1", "--steps", "1400", "--out", str(out), "--quiet",
                "--resume", "--no-video")
    assert p.returncode == 0, p.stderr
    assert torch.load(out / "checkpoint.pt", weights_only=True)["step"] == 1400


@pytest.mark.parametrize("argv, words", [
    (["train", "--env", "NoSuchEnv-v0"], "Unknown environment 'NoSuchEnv-v0'"),
    (["train", "--env", "no_such_module:Reach-v0"], "Cannot import module 'no_such_module'"),
    (["train", "--env", ":"], "Environment ':': give a registered id, or MODULE:ID with MODULE a module to import"),
    (["train", "--env", ".x:Reach-v0"], "Environment '.x:Reach-v0': give a registered id, or MODULE:ID"),
    (["sweep", "--env", "Pendulum-v1", "--seeds", "3-1", "--out", "s"],
     "Seeds '3-1': '3-1' is no range; a range is low-high with low <= high, such as 0-4."),
    (["train", "--env", "Pendulum-v1", "--steps", "-5"], "must be a positive integer"),
    (["train", "--env", "Pendulum-v1", "--steps", "ten"], "'ten' is not an integer"),
    (["train", "--env", "Pendulum-v1", "--device", "tpu"], "Unknown device 'tpu'"),
    (["train", "--env", "CartPole-v1"], "TD3 needs a continuous action space"),
    (["evaluate", "missing.pt"], "No checkpoint file at missing.pt"),
    (["play", "missing.pt"], "No checkpoint file at missing.pt"),
    (["play", "--pretrained", "CartPole-v1"], "No pretrained agent for 'CartPole-v1'"),
    (["train", "--env", "Pendulum-v1", "--preset", "bogus", "--resume"], "argument --preset: invalid choice: 'bogus'"),
    (["sweep", "--env", "Pendulum-v1", "--preset", "Paper", "--out", "s"], "invalid choice: 'Paper'"),
    (["train"], "the following arguments are required: --env"),
    (["fly"], "invalid choice: 'fly'"),
])
def test_bad_input_exits_2_with_one_line(argv, words, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err
    assert code == 2
    assert words in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("checkpoint.pt"))


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cuda_without_gpu_is_refused(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--env", "Pendulum-v1", "--device", "cuda"]) == 2
    assert "no CUDA GPU" in capsys.readouterr().err


def test_corrupt_checkpoint_on_command_line(tmp_path, capsys):
    (tmp_path / "c.pt").write_bytes(b"\x00" * 100)
    assert main(["evaluate", str(tmp_path / "c.pt")]) == 2
    err = capsys.readouterr().err
    assert "not a readable checkpoint" in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_help_documents_every_option():
    p = run_cli("train", "--help")
    for option in ("--env", "--steps", "--seed", "--device", "--out", "--resume"):
        assert option in p.stdout
    assert run_cli("play", "--help").returncode == 0
    assert "--episodes" in run_cli("evaluate", "--help").stdout


def test_a_resumed_run_keeps_its_own_seed_in_its_curve_and_clip(tmp_path, capsys, monkeypatch):
    """``--seed`` does not change a resumed run's seed (its saved one trains on): the curve's title and
    the clip's reset seed are the run's own."""
    drawn = {}
    monkeypatch.setattr(cli, "plot_history", lambda history, path, title: drawn.update(title=title))
    monkeypatch.setattr(cli, "record", lambda agent, env_id, out, episodes, seed: drawn.update(seed=seed))
    saved_run(tmp_path, TD3Config(hidden_sizes=(16, 16), total_steps=800), seed=3, history=[ROW])
    assert main(["train", "--env", "Pendulum-v1", "--out", str(tmp_path), "--resume", "--seed", "7", "--quiet"]) == 0
    assert drawn == {"title": "TD3 on Pendulum-v1, seed 3", "seed": 1003}


def test_the_critic_probe_is_recorded_only_when_asked_for(tmp_path):
    """``--probe critic`` adds the course's critic columns to the history; without it the command line
    records the returns alone and never loads the course wing."""
    tiny = ["--steps", "400", "--set", "start_timesteps=200", "--set", "eval_freq=200", "--set",
            "eval_episodes=1", "--set", "hidden_sizes=16,16", "--no-video", "--quiet"]
    code = ("import sys; from td3_lib.__main__ import main; "
            "code = main(sys.argv[1:]); print('td3_lib.course' in sys.modules); sys.exit(code)")
    critic = {"q_estimate", "q_true", "q_start", "q_roughness", "q_peak"}
    for probe, columns, course in (([], set(), "False"), (["--probe", "critic"], critic, "True")):
        out = tmp_path / f"run{len(probe)}"
        done = subprocess.run([sys.executable, "-c", code, "train", "--env", "Pendulum-v1", "--out", str(out),
                               *tiny, *probe], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().splitlines()[-1] == course
        header = (out / "history.csv").read_text().splitlines()[0].split(",")
        assert set(header) - set(BASE_FIELDS) - {"wall_s"} == columns


def no_rendering(*args, **kwargs):
    raise RenderingUnavailable(envs.MUJOCO_NO_BACKEND)


def test_a_machine_that_cannot_draw_keeps_the_run_and_refuses_the_clip_in_one_line(tmp_path, capsys, monkeypatch):
    """train: the run is saved and the missing clip is one line (status 0); play: one line, status 2."""
    monkeypatch.setattr(cli, "record", no_rendering)
    out = tmp_path / "run"
    tiny = ["--steps", "300", "--set", "start_timesteps=200", "--set", "eval_freq=300", "--set",
            "eval_episodes=1", "--set", "hidden_sizes=16,16", "--quiet"]
    assert main(["train", "--env", "Pendulum-v1", "--out", str(out), *tiny]) == 0
    err = capsys.readouterr().err
    assert err.strip() == f"no video: {envs.MUJOCO_NO_BACKEND}" and (out / "checkpoint.pt").is_file()
    assert main(["play", str(out / "checkpoint.pt")]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"python -m td3_lib play: error: {envs.MUJOCO_NO_BACKEND}"


def test_a_checkpoint_without_its_environment_cannot_be_played_or_evaluated(tmp_path, capsys):
    TD3(3, [-2.0], [2.0], TD3Config(hidden_sizes=(8, 8))).save(tmp_path / "anonymous.pt")
    for command in ("play", "evaluate"):
        assert main([command, str(tmp_path / "anonymous.pt")]) == 2
        err = capsys.readouterr().err
        assert err.strip() == (f"python -m td3_lib {command}: error: {tmp_path / 'anonymous.pt'} does not say "
                               "which environment it was trained on.")


OWN_TASK = """
import gymnasium as gym
import numpy as np


class Reach(gym.Env):
    \"\"\"Ten steps; the reward is minus the squared distance of the action from the first observation.\"\"\"
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self, render_mode=None):
        self.render_mode = render_mode

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.x, self.t = float(self.np_random.uniform(-1, 1)), 0
        return np.array([self.x, 0.0], np.float32), {}

    def step(self, action):
        self.t += 1
        obs = np.array([self.x, self.t / 10], np.float32)
        return obs, -float((action[0] - self.x) ** 2), False, self.t >= 10, {}


gym.register("OwnReach-v0", entry_point=Reach)
"""


def test_own_environment_trains_from_the_command_line_as_module_colon_id(tmp_path, capsys, monkeypatch):
    """``--env MODULE:ID`` imports the user's module, which registers ID; the run is named by ID, and an
    environment that draws no frames costs the clip alone, in one line."""
    (tmp_path / "own_tasks.py").write_text(OWN_TASK)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    tiny = ["--steps", "300", "--set", "start_timesteps=200", "--set", "eval_freq=300", "--set",
            "eval_episodes=1", "--set", "hidden_sizes=16,16", "--quiet"]
    assert main(["train", "--env", "own_tasks:OwnReach-v0", *tiny]) == 0
    err = capsys.readouterr().err
    assert err.strip() == ("no video: OwnReach-v0 does not draw 'rgb_array' frames: the render_modes in its "
                           "metadata are [].")
    run = tmp_path / "runs" / "OwnReach-v0-seed0"
    assert (run / "checkpoint.pt").is_file() and (run / "best_actor.pt").is_file()
    assert main(["evaluate", str(run / "checkpoint.pt"), "--episodes", "2"]) == 0
    assert capsys.readouterr().out.startswith("own_tasks:OwnReach-v0: mean")


def test_the_td3_script_imports_module_from_the_working_directory_and_names_itself(tmp_path, capsys, monkeypatch):
    """The installed ``td3`` script has its own folder on the path, not the working directory, which
    ``python -m td3_lib`` has: MODULE of ``--env MODULE:ID`` is found there all the same, and its errors
    name the command as it was called."""
    (tmp_path / "cwd_tasks.py").write_text(OWN_TASK.replace("OwnReach-v0", "CwdReach-v0"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.setattr(sys, "argv", ["/venv/bin/td3"])
    try:
        assert envs.registered_id("cwd_tasks:CwdReach-v0") == "CwdReach-v0" and "CwdReach-v0" in gym.registry
    finally:
        gym.registry.pop("CwdReach-v0", None)
        sys.modules.pop("cwd_tasks", None)
    assert main(["evaluate", "missing.pt"]) == 2
    assert capsys.readouterr().err == "td3 evaluate: error: No checkpoint file at missing.pt.\n"


def test_a_run_of_a_users_registered_env_instance_is_evaluated_from_the_command_line(tmp_path, capsys, monkeypatch):
    """``train(gym.make("ID"))`` with ID registered by the user's module saves the id as MODULE:ID, so that
    ``evaluate`` in another process (ID not registered yet) imports the module again; an environment that
    is not registered at all is refused in one line that says how to evaluate it from Python."""
    (tmp_path / "inst_tasks.py").write_text(OWN_TASK.replace("OwnReach-v0", "InstReach-v0"))
    monkeypatch.syspath_prepend(str(tmp_path))
    import inst_tasks
    config = TD3Config(hidden_sizes=(16, 16), start_timesteps=100, total_steps=200, eval_freq=200,
                       eval_episodes=1, batch_size=32)
    train(gym.make("InstReach-v0"), config, device="cpu", checkpoint_dir=tmp_path / "run", progress=False)
    del gym.registry["InstReach-v0"], sys.modules["inst_tasks"]  # as in a new process
    assert main(["evaluate", str(tmp_path / "run" / "checkpoint.pt"), "--episodes", "1"]) == 0
    assert capsys.readouterr().out.startswith("inst_tasks:InstReach-v0: mean")
    check_env_id("InstReach-v0", "inst_tasks:InstReach-v0", "a run saved before ids had their module")  # resumes
    gym.registry.pop("InstReach-v0", None)
    train(inst_tasks.Reach(), config, device="cpu", checkpoint_dir=tmp_path / "own", progress=False)
    assert main(["evaluate", str(tmp_path / "own" / "best_actor.pt")]) == 2
    assert capsys.readouterr().err == (
        f"python -m td3_lib evaluate: error: {tmp_path / 'own' / 'best_actor.pt'} was trained on 'Reach', which is "
        f"not registered here: use it from Python, e.g. evaluate(load_agent('{tmp_path / 'own' / 'best_actor.pt'}'), "
        "YourEnv()), with load_agent from td3_lib.run and evaluate from td3_lib.\n")


NAMESPACED_TASK = OWN_TASK.replace("gym.register(\"OwnReach-v0\", entry_point=Reach)", """
class DrawnReach(Reach):
    \"\"\"Reach, drawn as a grey square.\"\"\"
    metadata = {"render_modes": ["rgb_array"], "render_fps": 25}

    def render(self):
        return np.full((32, 32, 3), 128, np.uint8)


gym.register("myns/NsReach-v0", entry_point=DrawnReach)
""")


def test_a_namespaced_id_names_its_files_and_folders_without_a_slash(tmp_path, capsys, monkeypatch):
    """gymnasium's ``ns/Name-v0`` would make a folder of ``ns`` in every name: the run directory, its clip,
    a sweep's folders and curves name it ``ns_Name-v0`` (``envs.env_file_name``)."""
    from td3_lib.sweep import SweepRun
    from td3_lib.sweep.summary import curves_path

    (tmp_path / "ns_tasks.py").write_text(NAMESPACED_TASK)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    tiny = ["--steps", "200", "--set", "start_timesteps=100", "--set", "eval_freq=200", "--set",
            "eval_episodes=1", "--set", "hidden_sizes=16,16", "--quiet"]
    try:
        assert main(["train", "--env", "ns_tasks:myns/NsReach-v0", *tiny]) == 0, capsys.readouterr().err
    finally:
        gym.registry.pop("myns/NsReach-v0", None)
    run = tmp_path / "runs" / "myns_NsReach-v0-seed0"
    assert (run / "checkpoint.pt").is_file() and (run / "videos" / "myns_NsReach-v0-episode-0.mp4").is_file()
    assert curves_path(tmp_path, "ns_tasks:myns/NsReach-v0") == tmp_path / "curves-myns_NsReach-v0.png"
    assert SweepRun("myns/NsReach-v0", "TD3", 1).path(tmp_path) == tmp_path / "myns_NsReach-v0" / "TD3" / "seed1"
