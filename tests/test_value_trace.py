"""Lesson 05's measurements: the value trace on fixed states and the spread of a trace around its trend,
checked on critics and traces with known answers."""

import numpy as np
import pytest
import torch

from td3_lib import TD3, TD3Config, train
from td3_lib.course.analysis import ValueTrace, residual_spread

LOW, HIGH = np.array([-2.0, 0.0], np.float32), np.array([2.0, 10.0], np.float32)  # middle (0, 5)


class Linear(torch.nn.Module):
    """Q1(s, a) = sum_i s_i + 2 * sum_j a_j, and Q2 = Q1 - 1."""

    def forward(self, obs, action):
        q = obs.sum(-1, keepdim=True) + 2 * action.sum(-1, keepdim=True)
        return q, q - 1

    def q1(self, obs, action):
        return self(obs, action)[0]


def centred_agent() -> TD3:
    """An agent whose actor gives the middle of the bounds, (0, 5), for every state, and whose critic is Linear."""
    torch.manual_seed(0)
    agent = TD3(3, LOW, HIGH, TD3Config(hidden_sizes=(16, 16)), device="cpu")
    with torch.no_grad():
        agent.actor.net[-1].weight.zero_()
        agent.actor.net[-1].bias.zero_()
    agent.critic = Linear()
    return agent


def test_value_trace_records_the_mean_of_q1_at_the_actors_action():
    """pi(s) = (0, 5), so Q1(s, pi(s)) = sum(s) + 10: the mean over the states is known by hand."""
    states = np.array([[1.0, 2.0, 3.0], [-4.0, 0.5, 0.5], [0.0, 0.0, -2.0]], np.float32)
    trace, agent = ValueTrace(states), centred_agent()
    trace(100, agent)
    agent.critic = type("Shifted", (Linear,), {"forward": lambda self, o, a: Linear.forward(self, o, a + 1)})()
    trace(200, agent)  # Q1(s, pi(s) + 1) = sum(s) + 2 * (0 + 1 + 5 + 1) = sum(s) + 14
    assert trace.steps == [100, 200]
    assert trace.values == pytest.approx([(6.0 - 3.0 - 2.0) / 3 + 10, (6.0 - 3.0 - 2.0) / 3 + 14])


def test_value_trace_as_a_train_callback():
    cfg = TD3Config(hidden_sizes=(16, 16), start_timesteps=100, total_steps=300, eval_freq=100,
                    eval_episodes=1, batch_size=32)
    states = np.zeros((4, 3), np.float32)
    trace = ValueTrace(states)
    result = train("Pendulum-v1", cfg, seed=0, device="cpu", progress=False, callback=trace)
    assert trace.steps == [row["step"] for row in result.history] == [100, 200, 300]
    with torch.no_grad():
        q1, _ = result.agent.critic(torch.as_tensor(states), result.agent.actor(torch.as_tensor(states)))
    assert trace.values[-1] == pytest.approx(float(q1.mean()), rel=1e-6)


@pytest.mark.parametrize("trend", [lambda t: 3 * t + 1, lambda t: 0.5 * t ** 2 - 2 * t + 7, lambda t: -t ** 2])
def test_residual_spread_ignores_a_linear_or_quadratic_trend(trend):
    """Across a window of 2k + 1 points the moving average of a t^2 is a t^2 + a k (k + 1) / 3: the residual
    is the same at every t, so its std is 0, however steep the trend."""
    t = np.arange(60, dtype=float)
    assert residual_spread(trend(t), window=11) == pytest.approx(0.0, abs=1e-9)


def test_residual_spread_of_alternating_noise():
    """v = +-1 alternating, window 3: the moving average is -v / 3, so the residual is 4 v / 3 at every t."""
    v = (-1.0) ** np.arange(12)
    assert residual_spread(v, window=3) == pytest.approx(4 / 3)
    assert residual_spread(v + 0.25 * np.arange(12) ** 2, window=3) == pytest.approx(4 / 3)  # trend added


def test_residual_spread_of_white_noise_and_its_limits():
    noise = np.random.default_rng(0).normal(0.0, 2.0, 200_000)
    assert residual_spread(noise, window=11) == pytest.approx(2.0 * np.sqrt(1 - 1 / 11), rel=0.01)
    assert np.isnan(residual_spread(np.arange(11.0), window=11))  # one full window: no spread to measure
    for window in (2, 4, 1):
        with pytest.raises(ValueError, match=f"window={window} is invalid: it must be an odd integer >= 3"):
            residual_spread(noise, window=window)
