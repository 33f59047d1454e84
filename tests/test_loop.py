"""The training loop's behaviour policy and storage, and the value-bias measurement, on a scripted env."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from td3_lib import TD3Config, evaluate
from td3_lib.course.analysis import value_bias
from td3_lib.run import RunState
from td3_lib.training import explore, run_loop

LOW, HIGH = np.array([-1.0, 0.0], np.float32), np.array([1.0, 10.0], np.float32)  # half-ranges 1 and 5


class Corridor(gym.Env):
    """Reward 1 per step; even-numbered episodes terminate at their 4th step; a time limit of 6 truncates."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    action_space = gym.spaces.Box(LOW, HIGH)

    def __init__(self, terminate=True):
        self.terminate, self.episode, self.k = terminate, -1, 0
        self.terminated_flags = []  # what the environment said at every step, in order

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episode, self.k = self.episode + 1, 0
        return self.obs(), {}

    def obs(self):
        return np.array([self.k / 10, self.episode % 2], np.float32)

    def step(self, action):
        assert self.action_space.contains(np.asarray(action, np.float32)), action
        self.k += 1
        terminated = self.terminate and self.episode % 2 == 0 and self.k == 4
        self.terminated_flags.append(terminated)
        return self.obs(), 1.0, terminated, False, {}


def make_run(env, **cfg):
    cfg = TD3Config(hidden_sizes=(8, 8), batch_size=8, eval_freq=10**6, **cfg)
    return RunState("Corridor", cfg, seed=0, device=torch.device("cpu"), obs_dim=2, low=LOW, high=HIGH)


def copy_rng(run):
    rng = np.random.default_rng()
    rng.bit_generator.state = run.exploration_rng.bit_generator.state
    return rng


def test_loop_stores_terminated_not_truncated():
    inner = Corridor()
    env = gym.wrappers.TimeLimit(inner, max_episode_steps=6)
    run = make_run(env, start_timesteps=40, total_steps=40)
    run_loop(run, env, gym.wrappers.TimeLimit(Corridor(), 6))
    n = len(run.buffer)
    assert n == 40 and any(inner.terminated_flags) and not all(inner.terminated_flags)
    want = 1.0 - np.array(inner.terminated_flags, np.float32)
    np.testing.assert_array_equal(run.buffer.not_done[:n, 0].numpy(), want)  # truncations keep not_done = 1


def corridor_observations(steps):
    """(obs, next_obs) of the first ``steps`` steps in Corridor under a time limit of 6: an even
    episode ends at its 4th step, an odd one at its 6th, and each starts again from k = 0."""
    pairs, episode = [], 0
    while len(pairs) < steps:
        length = 4 if episode % 2 == 0 else 6
        pairs += [([k / 10, episode % 2], [(k + 1) / 10, episode % 2]) for k in range(length)]
        episode += 1
    return np.array(pairs[:steps], np.float32)


def test_loop_stores_each_observation_with_its_successor():
    env = gym.wrappers.TimeLimit(Corridor(), max_episode_steps=6)
    run = make_run(env, start_timesteps=40, total_steps=40)
    run_loop(run, env, gym.wrappers.TimeLimit(Corridor(), 6))
    want = corridor_observations(40)
    np.testing.assert_array_equal(run.buffer.obs[:40].numpy(), want[:, 0])
    np.testing.assert_array_equal(run.buffer.next_obs[:40].numpy(), want[:, 1])


def test_before_start_timesteps_uniform_in_bounds_and_no_update():
    env = gym.wrappers.TimeLimit(Corridor(), max_episode_steps=6)
    run = make_run(env, start_timesteps=40, total_steps=40)
    rng = copy_rng(run)
    run_loop(run, env, env)
    want = np.stack([rng.uniform(LOW, HIGH).astype(np.float32) for _ in range(40)])
    np.testing.assert_array_equal(run.buffer.action[:40].numpy(), want)
    assert run.agent.total_it == 0


def test_updates_start_after_start_timesteps():
    env = gym.wrappers.TimeLimit(Corridor(), max_episode_steps=6)
    run = make_run(env, start_timesteps=40, total_steps=45)
    run_loop(run, env, env)
    assert run.agent.total_it == 5  # one update per step after the random phase


def test_no_update_before_the_buffer_holds_a_batch():
    env = gym.wrappers.TimeLimit(Corridor(), max_episode_steps=6)
    run = make_run(env, start_timesteps=0, total_steps=10)  # batch_size 8
    run_loop(run, env, env)
    assert run.agent.total_it == 3  # after steps 8, 9 and 10


def test_evaluation_returns_are_the_undiscounted_sums_of_the_rewards():
    """Reward 1 per step: the first evaluation episode terminates at its 4th step, the second reaches the time limit."""
    agent = make_run(Corridor()).agent
    returns = evaluate(agent, gym.wrappers.TimeLimit(Corridor(), max_episode_steps=6), episodes=2, seed=0)
    np.testing.assert_array_equal(returns, [4.0, 6.0])


@pytest.mark.parametrize("expl_noise", [0.1, 3.0])
def test_exploration_noise_is_expl_noise_times_half_range_clipped(expl_noise):
    run = make_run(Corridor(), start_timesteps=0, total_steps=100, expl_noise=expl_noise)
    obs = np.array([0.3, 1.0], np.float32)
    mu = run.agent.act(obs)
    rng = copy_rng(run)
    actions = np.stack([explore(run, obs, Corridor.action_space) for _ in range(200)])
    noise = rng.normal(0.0, 1.0, (200, 2)) * (expl_noise * (HIGH - LOW) / 2)
    np.testing.assert_allclose(actions, np.clip(mu + noise, LOW, HIGH).astype(np.float32), rtol=1e-6)
    if expl_noise > 1:  # large noise: many actions sit exactly on a bound
        assert (actions == LOW).any() and (actions == HIGH).any()


def test_value_bias_of_a_constant_critic():
    """Q = 7 everywhere, reward 1 per step for 6 steps: the true values of the first 3 states are known."""
    run = make_run(Corridor())
    agent = run.agent
    with torch.no_grad():
        agent.critic.weights[-1].zero_()
        agent.critic.biases[-1].fill_(7.0)
    env = gym.wrappers.TimeLimit(Corridor(terminate=False), max_episode_steps=6)
    bias = value_bias(agent, env, episodes=2, seed=0)
    g = agent.config.discount
    true = np.mean([sum(g ** k for k in range(6 - t)) for t in range(3)])  # G_t = sum_k g^k r_{t+k}
    assert bias.n_states == 6
    assert bias.estimate == pytest.approx(7.0)
    assert bias.true_value == pytest.approx(true)
    assert bias.bias == pytest.approx(7.0 - true)
