"""What a learner meets: resuming a run's budget, divergence, their own environment."""

import dataclasses
import gymnasium as gym
import numpy as np
import pytest
import torch

import td3_lib.training as training
from td3_lib import TD3, TD3Config, TrainingDiverged, train
from td3_lib.__main__ import main

CFG = TD3Config(hidden_sizes=(32, 32), start_timesteps=300, total_steps=600, eval_freq=200,
                eval_episodes=1, batch_size=32)


# ------------------------------------------------------------------ resume keeps the budget
@pytest.mark.slow
def test_cli_resume_keeps_the_saved_budget_and_steps_raises_it(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", "--env", "Pendulum-v1", "--steps", "600", "--out", str(out), "--quiet",
                 "--no-video", "--save-buffer"]) == 0
    assert main(["train", "--env", "Pendulum-v1", "--out", str(out), "--resume", "--quiet", "--no-video"]) == 0
    assert "600 steps" in capsys.readouterr().out  # the preset's 15,000 did not replace the saved 600
    assert main(["train", "--env", "Pendulum-v1", "--out", str(out), "--resume", "--steps", "1000",
                 "--quiet", "--no-video", "--save-buffer"]) == 0
    state = torch.load(out / "checkpoint.pt", weights_only=True)
    assert state["step"] == 1000 and state["agent"]["config"]["total_steps"] == 1000
    assert len(state["buffer"]["obs"]) == 1000  # the saved 600 transitions fit the larger buffer


@pytest.mark.slow
def test_raised_budget_with_saved_buffer_equals_a_longer_run(tmp_path):
    train("Pendulum-v1", CFG, seed=2, device="cpu", checkpoint_dir=tmp_path, progress=False, save_buffer=True)
    longer = dataclasses.replace(CFG, total_steps=1000)
    resumed = train("Pendulum-v1", longer, seed=2, device="cpu", checkpoint_dir=tmp_path, progress=False,
                    resume=True, save_buffer=True)
    full = train("Pendulum-v1", longer, seed=2, device="cpu", progress=False)
    assert [h["step"] for h in resumed.history] == [200, 400, 600, 800, 1000]
    # capacity 600 then 1000 against 1000 throughout: nothing wraps, so the runs are the same
    assert [h["eval_mean"] for h in resumed.history] == [h["eval_mean"] for h in full.history]


# ------------------------------------------------------------------ divergence
@pytest.mark.slow
def test_divergence_in_the_first_window_names_its_step_and_evaluates_nothing(tmp_path, monkeypatch,
                                                                          nan_reward_at):
    evaluated = []
    monkeypatch.setattr(training, "evaluation_episodes", lambda *a, **k: evaluated.append(1) or [])
    env = nan_reward_at(gym.make("Pendulum-v1"), at=320)
    cfg = TD3Config(hidden_sizes=(32, 32), start_timesteps=300, total_steps=1000, eval_freq=400,
                    eval_episodes=1, batch_size=64)
    with pytest.raises(TrainingDiverged) as err:
        train(env, cfg, seed=0, device="cpu", checkpoint_dir=tmp_path, progress=False)
    step = int(str(err.value).split("at step ")[1].split(";")[0])
    assert 320 <= step <= 400, str(err.value)  # counted from the first update (step 301), not from 0
    assert "no checkpoint was written" in str(err.value)
    assert evaluated == [] and not (tmp_path / "best_actor.pt").exists()


def test_non_finite_weights_are_never_evaluated_or_kept(tmp_path, monkeypatch):
    class Poisoned(TD3):
        def update(self, batch):  # weights turn NaN with no NaN loss logged first
            with torch.no_grad():
                self.actor.net[0].weight.fill_(float("nan"))
            return {"critic_loss": torch.zeros(())}

    monkeypatch.setattr(training, "evaluation_episodes", lambda *a, **k: pytest.fail("a non-finite actor was evaluated"))
    cfg = TD3Config(hidden_sizes=(32, 32), start_timesteps=100, total_steps=600, eval_freq=200,
                    eval_episodes=1, batch_size=32)
    with pytest.raises(TrainingDiverged, match="actor's weights became non-finite by step 200"):
        train("Pendulum-v1", cfg, seed=0, device="cpu", checkpoint_dir=tmp_path, progress=False, agent=Poisoned)
    assert not (tmp_path / "best_actor.pt").exists() and not (tmp_path / "checkpoint.pt").exists()


# ------------------------------------------------------------------ the learner's own environment
class Reach(gym.Env):
    """A learner's own task, never registered: move a point towards 0 on a line."""

    observation_space = gym.spaces.Box(-10.0, 10.0, (1,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x, self.k = float(self.np_random.uniform(-5, 5)), 0
        return np.array([self.x], np.float32), {}

    def step(self, action):
        self.x, self.k = self.x + float(action[0]), self.k + 1
        return np.array([self.x], np.float32), -abs(self.x), False, self.k >= 20, {}


def test_train_accepts_an_unregistered_env():
    result = train(Reach(), CFG, seed=0, device="cpu", progress=False)
    assert result.env_id == "Reach" and len(result.history) == 3


def test_evaluation_keeps_the_learners_wrappers():
    env = gym.wrappers.TransformReward(gym.make("Pendulum-v1"), lambda r: r + 1000.0)
    result = train(env, CFG, seed=0, device="cpu", progress=False)
    assert all(h["eval_mean"] > 150_000 for h in result.history)  # 200 steps of at least +983.7


def test_an_explicit_eval_env_is_used_and_left_open():
    eval_env = gym.wrappers.TransformReward(Reach(), lambda r: 0.0)
    result = train(Reach(), CFG, seed=0, device="cpu", progress=False, eval_env=eval_env)
    assert [h["eval_mean"] for h in result.history] == [0.0, 0.0, 0.0]
    eval_env.reset(seed=0)  # still usable: train closes only what it made


class Closing(gym.Wrapper):
    closed = []

    def close(self):
        Closing.closed.append(self)
        super().close()


def test_environments_made_by_train_are_closed_when_set_up_fails(tmp_path, monkeypatch):
    monkeypatch.setattr(training, "make_env", lambda env_id, **k: Closing(gym.make(env_id)))
    train("Pendulum-v1", CFG, seed=0, device="cpu", checkpoint_dir=tmp_path, progress=False)
    Closing.closed.clear()
    with pytest.raises(FileExistsError):  # the directory already holds a run
        train("Pendulum-v1", CFG, seed=0, device="cpu", checkpoint_dir=tmp_path, progress=False)
    assert len(Closing.closed) == 2  # the training and the evaluation environment


def test_an_env_that_cannot_be_copied_needs_an_eval_env():
    class Uncopyable(Reach):
        def __deepcopy__(self, memo):
            raise TypeError("no copies")
    with pytest.raises(ValueError, match="pass one as train\\(..., eval_env=...\\)"):
        train(Uncopyable(), CFG, seed=0, device="cpu", progress=False)
