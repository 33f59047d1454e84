"""The clip with the critic's estimate drawn in: the numbers it draws are the agent's Q and the discounted
returns the episode earned (the rollout running on past the time limit), each frame has the plot, and an
agent without a trained critic is refused."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from td3_lib import TD3, make_env, variant_config
from td3_lib.critic_video import CriticPlot, critic_episode, record_with_critic, tail_steps
from td3_lib.rollout import rollout


class Countdown(gym.Env):
    """Reward 1 every step; terminates after ``end`` steps if given (else only the time limit stops it)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, end=None, render_mode=None):
        self.end, self.render_mode, self.t = end, render_mode, 0
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0], np.float32), {}

    def step(self, action):
        self.t += 1
        return np.array([self.t / 10], np.float32), 1.0, self.end is not None and self.t >= self.end, False, {}

    def render(self):
        return np.full((24, 32, 3), 8 * self.t, np.uint8)  # frame t shows the grey level 8 t


gym.register("CountdownTest-v0", entry_point=Countdown, max_episode_steps=30)


def fresh_agent(env_id: str = "Pendulum-v1", variant: str = "TD3") -> TD3:
    """An untrained agent with a whole critic: the numbers a clip draws need not be good, only its own."""
    env = make_env(env_id)
    torch.manual_seed(0)
    agent = TD3(env.observation_space.shape[0], env.action_space.low, env.action_space.high,
                variant_config("Pendulum-v1", variant))
    env.close()
    return agent


def test_the_return_runs_on_past_the_time_limit_and_stops_where_the_episode_ends():
    agent = fresh_agent("CountdownTest-v0")
    frames, trace = critic_episode(agent, "CountdownTest-v0", seed=0, discount=0.9)
    tail = tail_steps(0.9)
    assert 0.9 ** tail <= 0.01 < 0.9 ** (tail - 1) and tail == 44
    assert len(frames) == len(trace) == 30 and len(trace.rewards) == 30 + tail and not trace.terminated
    assert [int(f[0, 0, 0]) for f in frames] == [8 * t for t in range(30)]  # frame t shows state s_t
    expected = [(1 - 0.9 ** (30 + tail - t)) / (1 - 0.9) for t in range(30)]  # 1 + 0.9 + ... to the tail's end
    np.testing.assert_allclose(trace.returns, expected)
    gym.register("CountdownEnds-v0", entry_point=Countdown, kwargs={"end": 8}, max_episode_steps=30)
    frames, ended = critic_episode(agent, "CountdownEnds-v0", seed=0, discount=0.9)
    assert len(frames) == len(ended) == len(ended.rewards) == 8 and ended.terminated
    np.testing.assert_allclose(ended.returns, [(1 - 0.9 ** (8 - t)) / (1 - 0.9) for t in range(8)])


def test_the_plot_draws_the_agents_q_and_the_earned_returns():
    agent = fresh_agent()
    frames, trace = critic_episode(agent, "Pendulum-v1", seed=3, max_steps=10, twins=True)
    states = rollout(make_env("Pendulum-v1"), agent.act, seed=3, keep_states=True).states[:10]
    with torch.no_grad():
        q1, q2 = agent.critic(torch.as_tensor(np.array(states)), agent.actor(torch.as_tensor(np.array(states))))
    np.testing.assert_allclose(trace.q1, q1.squeeze(-1).numpy(), rtol=1e-6)
    np.testing.assert_allclose(trace.q2, q2.squeeze(-1).numpy(), rtol=1e-6)
    discounts = agent.config.discount ** np.arange(len(trace.rewards))
    assert trace.returns[0] == pytest.approx(float(np.dot(discounts, trace.rewards)))
    plot = CriticPlot(trace, width=200)
    image = plot.draw(6)
    drawn = {line.get_label(): line.get_ydata() for line in plot.lines.values()}
    assert list(drawn) == list(trace.curves())
    np.testing.assert_allclose(list(drawn.values()),
                               [trace.q1[:7], trace.q2[:7], np.minimum(trace.q1, trace.q2)[:7], trace.returns[:7]])
    texts = [t.get_text() for t in plot.legend.get_texts()]
    assert texts[0].endswith(f"= {trace.q1[6]:.1f}") and texts[-1].endswith(f"= {trace.returns[6]:.1f}")
    assert image.shape[1] == 200 and image.dtype == np.uint8


def test_each_frame_of_the_clip_has_the_plot_under_the_picture(tmp_path, capsys):
    import imageio.v3 as iio

    agent = fresh_agent()
    path = record_with_critic(agent, "Pendulum-v1", tmp_path, seed=3, max_steps=8)
    assert path == tmp_path / "Pendulum-v1-critic.mp4" and str(path) in capsys.readouterr().out
    frames, _ = critic_episode(agent, "Pendulum-v1", seed=3, max_steps=8)
    clip = iio.imread(path)
    assert clip.shape[0] == 8 and clip.shape[2] == 500 and clip.shape[1] > 500 + 150
    for picture, drawn in zip(frames, clip):
        assert np.abs(drawn[:500].astype(int) - picture).mean() < 3  # the picture, as encoded
        plot = drawn[502:]
        assert (plot < 100).mean() > 0.01  # dark pixels: the axes, curves and text on white


def test_an_agent_without_a_trained_critic_is_refused(tmp_path):
    from td3_lib.pretrained import load_pretrained

    with pytest.raises(ValueError) as err:
        record_with_critic(load_pretrained("Pendulum-v1"), "Pendulum-v1", tmp_path)
    assert "actor-only checkpoint" in str(err.value) and "\n" not in str(err.value)
    ddpg = fresh_agent(variant="DDPG")
    with pytest.raises(ValueError, match="leaves Q2 untrained: leave twins=False"):
        record_with_critic(ddpg, "Pendulum-v1", tmp_path, twins=True)
    with pytest.raises(TypeError, match="needs a td3_lib.TD3 agent, not str"):
        record_with_critic("agent", "Pendulum-v1", tmp_path)
    with pytest.raises(ValueError, match="discount=1.0 is invalid"):
        record_with_critic(ddpg, "Pendulum-v1", tmp_path, discount=1.0)
    with pytest.raises(ValueError, match="max_steps=0 is invalid"):
        record_with_critic(ddpg, "Pendulum-v1", tmp_path, max_steps=0)
    assert not list(tmp_path.iterdir())
