"""The agent's update, soft target update and checkpoints (the update step by step: test_update.py)."""

import copy

import numpy as np
import pytest
import torch

from td3_lib import CheckpointError, TD3, soft_update
from td3_lib.checkpoint import MT19937_STATE_BYTES, PHILOX_STATE_BYTES, restore_generator
from td3_lib.networks import Actor

def test_soft_update_against_explicit_formula():
    torch.manual_seed(0)
    source, target = Actor(3, [-1], [1], (8,)), Actor(3, [-1], [1], (8,))
    before = [p.clone() for p in target.parameters()]
    soft_update(source, target, tau=0.3)
    for s, b, t in zip(source.parameters(), before, target.parameters()):
        torch.testing.assert_close(t, 0.3 * s + (1 - 0.3) * b)
    soft_update(source, target, tau=1.0)  # tau = 1 copies
    for s, t in zip(source.parameters(), target.parameters()):
        torch.testing.assert_close(t, s)


def test_update_returns_detached_tensors_and_delays_the_actor(make_agent, make_batch):
    agent = make_agent()
    actor_before = copy.deepcopy(agent.actor.state_dict())
    m1 = agent.update(make_batch())
    assert set(m1) == {"critic_loss", "q1"}  # iteration 1: critic only (policy_freq = 2)
    assert all(isinstance(v, torch.Tensor) and not v.requires_grad for v in m1.values())
    for k, v in agent.actor.state_dict().items():
        torch.testing.assert_close(v, actor_before[k])
    m2 = agent.update(make_batch(seed=2))
    assert "actor_loss" in m2 and not m2["actor_loss"].requires_grad
    assert any(not torch.equal(v, actor_before[k]) for k, v in agent.actor.state_dict().items())


def test_update_reports_the_critic_loss_and_q1_before_its_step(make_agent, make_batch):
    """critic_loss = MSE(Q1, y) + MSE(Q2, y) and q1 = mean Q1(s, a), both of the critic before the step,
    y drawn with the smoothing noise the update draws (its generator set back to the same state)."""
    agent, batch = make_agent(), make_batch()
    state = agent.generator.get_state()
    with torch.no_grad():
        y = agent.target_q(batch)
        q1, q2 = agent.critic(batch.obs, batch.action)
    agent.generator.set_state(state)
    metrics = agent.update(batch)
    mse = torch.nn.functional.mse_loss
    torch.testing.assert_close(metrics["critic_loss"], mse(q1, y) + mse(q2, y))
    torch.testing.assert_close(metrics["q1"], q1.mean())


def test_same_seed_same_update(make_agent, make_batch):
    a, b = make_agent(seed=3), make_agent(seed=3)
    for i in range(4):
        ma, mb = a.update(make_batch(seed=i)), b.update(make_batch(seed=i))
        assert torch.equal(ma["critic_loss"], mb["critic_loss"])
    for pa, pb in zip(a.critic.parameters(), b.critic.parameters()):
        assert torch.equal(pa, pb)


def test_save_load_identical_actions_and_training_state(tmp_path, make_agent, make_batch):
    agent = make_agent()
    for i in range(3):
        agent.update(make_batch(seed=i))
    agent.save(tmp_path / "a.pt", env_id="Pendulum-v1")
    loaded = TD3.load(tmp_path / "a.pt", device="cpu", env_id="Pendulum-v1")
    obs = np.random.default_rng(0).normal(size=(50, 3))
    np.testing.assert_array_equal(agent.act(obs), loaded.act(obs))
    assert loaded.total_it == 3 and loaded.config == agent.config
    assert agent.env_id is None and loaded.env_id == "Pendulum-v1"  # a new agent names no environment
    # continuing from the checkpoint continues exactly
    ma, mb = agent.update(make_batch(seed=9)), loaded.update(make_batch(seed=9))
    assert torch.equal(ma["critic_loss"], mb["critic_loss"])


def test_a_generator_state_from_the_other_kind_of_device_seeds_the_generator():
    """A CUDA generator's 16-byte state cannot be set on a CPU generator: it seeds it instead, the same
    state the same stream; a state of no known size is still refused."""
    from_gpu = torch.tensor([7, 0, 0, 0, 0, 0, 0, 0, 64, 0, 0, 0, 0, 0, 0, 0], dtype=torch.uint8)
    assert from_gpu.numel() == PHILOX_STATE_BYTES and torch.Generator().get_state().numel() == MT19937_STATE_BYTES
    draws = []
    for saved in (from_gpu, from_gpu.clone(), from_gpu.flip(0)):
        g = torch.Generator()
        restore_generator(g, saved)
        draws.append(torch.randn(5, generator=g))
    assert torch.equal(draws[0], draws[1]) and not torch.equal(draws[0], draws[2])
    same = torch.Generator().manual_seed(3)
    g = torch.Generator()
    restore_generator(g, same.get_state())  # the same kind of device: exactly that state
    assert torch.equal(torch.randn(5, generator=g), torch.randn(5, generator=same))
    with pytest.raises(RuntimeError):
        restore_generator(torch.Generator(), torch.zeros(7, dtype=torch.uint8))


def test_a_checkpoint_saved_on_the_gpu_loads_and_trains_on_the_cpu(tmp_path, make_agent, make_batch):
    """The state a GPU writes (its generator's 16 bytes) made here: the weights load exactly and
    training goes on, the same file giving the same update."""
    agent = make_agent()
    state = agent.state_dict(env_id="Pendulum-v1")
    state["generator"] = torch.arange(PHILOX_STATE_BYTES, dtype=torch.uint8)
    torch.save(state, tmp_path / "gpu.pt")
    a, b = TD3.load(tmp_path / "gpu.pt"), TD3.load(tmp_path / "gpu.pt")
    obs = np.zeros(3)
    np.testing.assert_array_equal(a.act(obs), agent.act(obs))
    assert torch.equal(a.update(make_batch(seed=1))["critic_loss"], b.update(make_batch(seed=1))["critic_loss"])


def test_actor_only_checkpoint_acts_but_cannot_train(tmp_path, make_agent, make_batch):
    agent = make_agent()
    agent.save(tmp_path / "actor.pt", env_id="Pendulum-v1", actor_only=True)
    loaded = TD3.load(tmp_path / "actor.pt")
    obs = np.zeros(3)
    np.testing.assert_array_equal(agent.act(obs), loaded.act(obs))
    with pytest.raises(RuntimeError, match="actor-only"):
        loaded.update(make_batch())
    agent.save(tmp_path / "full.pt", env_id="Pendulum-v1")
    assert (tmp_path / "actor.pt").stat().st_size < (tmp_path / "full.pt").stat().st_size / 3


def test_load_errors_are_clear(tmp_path, make_agent, make_batch):
    with pytest.raises(FileNotFoundError, match="No checkpoint file at"):
        TD3.load(tmp_path / "missing.pt")
    (tmp_path / "garbage.pt").write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        TD3.load(tmp_path / "garbage.pt")
    torch.save({"weights": torch.zeros(3)}, tmp_path / "foreign.pt")
    with pytest.raises(CheckpointError, match="not a td3_lib agent checkpoint"):
        TD3.load(tmp_path / "foreign.pt")
    make_agent().save(tmp_path / "p.pt", env_id="Pendulum-v1")
    with pytest.raises(CheckpointError, match="trained on Pendulum-v1, not BipedalWalker-v3"):
        TD3.load(tmp_path / "p.pt", env_id="BipedalWalker-v3")


def test_invalid_action_bounds_refused(small_config):
    with pytest.raises(ValueError, match="infinite"):
        TD3(3, [-np.inf], [np.inf], small_config)
    with pytest.raises(ValueError, match="low < high"):
        TD3(3, [1.0], [1.0], small_config)
