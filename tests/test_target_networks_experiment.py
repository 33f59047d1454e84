"""experiments/target_networks.py (lesson 05's Figure 3): the fixed policy stays the shipped actor,
and the true value is measured on the very states whose value the critic estimates."""

from pathlib import Path

import numpy as np
import pytest
import torch

from td3_lib import Batch, preset
from td3_lib.course.analysis import returns_to_go
from td3_lib.envs import make_env
from td3_lib.pretrained import load_pretrained
from td3_lib.rollout import evaluation_episodes


@pytest.fixture
def target_networks(monkeypatch):
    """The script as a module (its folder on sys.path for ``common``, restored after)."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent.parent / "experiments"))
    import target_networks
    return target_networks


def test_fixed_hopper_policy_is_the_shipped_actor_and_never_moves(target_networks):
    env = make_env("Hopper-v5")
    config = preset("Hopper-v5")
    agent = target_networks.FixedHopperPolicyTD3(env.observation_space.shape[0], env.action_space.low,
                                                 env.action_space.high, config=config, device="cpu")
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


def test_start_states_true_value_is_of_the_states_the_critic_is_asked_about(target_networks):
    states = target_networks.StartStates("Pendulum-v1", n=3)
    agent = load_pretrained("Pendulum-v1")
    with make_env("Pendulum-v1") as env:
        episodes = evaluation_episodes(agent, env, 3, seed=0, keep_states=True)
    np.testing.assert_array_equal(states.observations(), np.stack([e.states[0] for e in episodes]))
    expected = [returns_to_go(e.rewards, 0.9)[0] for e in episodes]
    np.testing.assert_allclose(states.true_values(agent, 0.9), expected, rtol=1e-6)
