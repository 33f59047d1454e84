"""Lesson 05's Figure 3 (experiments/target_networks.py): the fixed policy stays the shipped actor, the true
value is measured on the very states whose value the critic estimates, and only every ``every`` steps."""

import numpy as np
import pytest
import torch

from td3_lib import Batch, TD3Config, preset, train
from td3_lib.course.analysis import critic_values, returns_to_go
from td3_lib.course.tasks import FixedHopperPolicyTD3, PendulumStates, StartStates, StatesValue, TrueValue
from td3_lib.envs import make_env
from td3_lib.pretrained import load_pretrained
from td3_lib.rollout import evaluation_episodes
from td3_lib.sweep import get_probe


def test_fixed_hopper_policy_is_the_shipped_actor_and_never_moves():
    env = make_env("Hopper-v5")
    config = preset("Hopper-v5")
    agent = FixedHopperPolicyTD3(env.observation_space.shape[0], env.action_space.low, env.action_space.high,
                                 config=config, device="cpu")
    shipped = load_pretrained("Hopper-v5")
    g = torch.Generator().manual_seed(0)
    batch = Batch(obs=torch.randn(32, 11, generator=g), action=torch.rand(32, 3, generator=g) * 2 - 1,
                  reward=torch.randn(32, 1, generator=g), next_obs=torch.randn(32, 11, generator=g),
                  not_done=torch.ones(32, 1))
    critic_before = [p.clone() for p in agent.critic_target.parameters()]
    for _ in range(2 * config.policy_freq):
        agent.update(batch)
    for a, b in zip(agent.actor.state_dict().values(), shipped.actor.state_dict().values()):
        assert torch.equal(a, b)
    for a, b in zip(agent.actor_target.state_dict().values(), shipped.actor.state_dict().values()):
        assert torch.equal(a, b)
    assert any(not torch.equal(a, b) for a, b in zip(critic_before, agent.critic_target.parameters()))
    env.close()


def test_start_states_true_value_is_of_the_states_the_critic_is_asked_about():
    states = StartStates("Pendulum-v1", n=3)
    agent = load_pretrained("Pendulum-v1")
    with make_env("Pendulum-v1") as env:
        episodes = evaluation_episodes(agent, env, 3, seed=0, keep_states=True)
    np.testing.assert_array_equal(states.observations(), np.stack([e.states[0] for e in episodes]))
    expected = [returns_to_go(e.rewards, 0.9)[0] for e in episodes]
    np.testing.assert_allclose(states.true_values(agent, 0.9), expected, rtol=1e-6)
    assert StatesValue(states)(agent) == {"value": pytest.approx(float(critic_values(agent, states.observations())[0].mean()))}


def test_pendulum_states_true_value_is_the_discounted_return_from_each_state():
    """Pendulum is deterministic: one rollout from a state set by hand gives its value; a state at rest
    upright under a zero torque stays there, so its 400-step return is 0."""
    states = PendulumStates(n=2)
    states.states = np.array([[0.0, 0.0], [np.pi, 0.0]])

    class ZeroTorque:
        def act(self, obs):
            return np.zeros((len(obs), 1), np.float32)

    values = states.true_values(ZeroTorque(), 0.9)
    assert values[0] == 0.0
    assert values[1] == pytest.approx(-(np.pi ** 2) * (1 - 0.9 ** 400) / (1 - 0.9))  # hanging down at rest


def test_the_true_value_is_recorded_only_every_every_steps():
    config = TD3Config(hidden_sizes=(16, 16), start_timesteps=100, total_steps=600, eval_freq=100, eval_episodes=1,
                       batch_size=16)
    states = PendulumStates(n=2)
    result = train("Pendulum-v1", config, seed=0, device="cpu", progress=False,
                   probes=(StatesValue(states), TrueValue(states, every=300)))
    assert [h["step"] for h in result.history if "true_value" in h] == [300, 600]
    assert all("value" in h for h in result.history)
    assert get_probe("Pendulum-v1 true value").every == 1_000 and get_probe("Hopper-v5 true value").every == 10_000
