import numpy as np
import torch

from td3_lib import TD3, preset
from td3_lib.networks import Actor, TwinCritic


def test_actor_reaches_asymmetric_per_dimension_bounds():
    low, high = np.array([-1.0, 0.0, 10.0]), np.array([1.0, 4.0, 11.0])
    actor = Actor(5, low, high, (16,))
    with torch.no_grad():
        actor.net[-1].weight.mul_(1000)  # saturate tanh: outputs pinned at the bounds
        out = actor(torch.randn(500, 5, generator=torch.Generator().manual_seed(0)))
    lo, hi = torch.as_tensor(low, dtype=torch.float32), torch.as_tensor(high, dtype=torch.float32)
    assert bool((out >= lo).all()) and bool((out <= hi).all())
    # every dimension gets to both of its own ends (high[0] for all would not)
    torch.testing.assert_close(out.min(0).values, lo, atol=1e-3, rtol=0)
    torch.testing.assert_close(out.max(0).values, hi, atol=1e-3, rtol=0)


def test_agent_act_inside_asymmetric_bounds_even_with_noise():
    low, high = np.array([0.0, -5.0]), np.array([2.0, -1.0])
    torch.manual_seed(0)
    agent = TD3(3, low, high, preset("Pendulum-v1"))
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(1000, 3)) * 10
    for noise in (0.0, 0.5, 5.0):
        a = agent.act(obs, noise=noise, rng=rng)
        assert a.shape == (1000, 2) and a.dtype == np.float32
        assert np.all(a >= low) and np.all(a <= high)
    assert agent.act(obs[0]).shape == (2,)


def test_exploration_noise_is_gaussian_in_half_range_units():
    """a = clip(pi(s) + eps, low, high), eps ~ N(0, (noise * h)^2) per dimension, h the half-range."""
    low, high = np.array([0.0, -5.0]), np.array([2.0, 3.0])  # half-ranges 1 and 4
    torch.manual_seed(0)
    agent = TD3(3, low, high, preset("Pendulum-v1"))
    obs = np.random.default_rng(1).normal(size=(50, 3))
    mu = agent.act(obs)
    a = agent.act(obs, noise=0.1, rng=np.random.default_rng(2))
    eps = np.random.default_rng(2).normal(0.0, 1.0, size=mu.shape) * (0.1 * np.array([1.0, 4.0]))
    np.testing.assert_allclose(a, np.clip(mu + eps, low, high), rtol=0, atol=1e-6)


def test_twin_critic_equals_two_separate_networks():
    torch.manual_seed(0)
    critic = TwinCritic(4, 2, (8, 6))
    obs, act = torch.randn(7, 4), torch.randn(7, 2)
    q1, q2 = critic(obs, act)
    for k, q in enumerate((q1, q2)):
        h = torch.cat([obs, act], 1)
        for i, (w, b) in enumerate(zip(critic.weights, critic.biases)):
            h = h @ w[k] + b[k]
            if i < len(critic.weights) - 1:
                h = torch.relu(h)
        torch.testing.assert_close(q, h)
    torch.testing.assert_close(critic.q1(obs, act), q1)
    assert not torch.allclose(q1, q2)  # independently initialised


def test_q1_frozen_gives_action_gradient_but_none_to_critic():
    critic = TwinCritic(3, 1, (8, 8))
    obs = torch.randn(5, 3)
    action = torch.randn(5, 1, requires_grad=True)
    critic.q1(obs, action, frozen=True).sum().backward()
    assert action.grad is not None and action.grad.abs().sum() > 0
    assert all(p.grad is None for p in critic.parameters())
