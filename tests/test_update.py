"""TD3.update against Algorithm 1 written out by hand, and what each step changes."""

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from td3_lib import Batch, TD3, TD3Config

# Large target noise against a small clip, so that clipping acts on most draws.
CFG = TD3Config(hidden_sizes=(16, 16), batch_size=32, policy_noise=0.5, noise_clip=0.2, tau=0.1)
LOW, HIGH = [-2.0, 0.0], [2.0, 10.0]  # asymmetric bounds, half-ranges 2 and 5
SWITCHES = ("clipped_double_q", "target_policy_smoothing", "delayed_policy_updates")


def make_agent(cfg, seed=0):
    torch.manual_seed(seed)
    return TD3(3, LOW, HIGH, cfg)


def make_batch(n=32, seed=1):
    g = torch.Generator().manual_seed(seed)
    not_done = torch.ones(n, 1)
    not_done[::3] = 0.0  # every third transition ends its episode
    action = torch.tensor(LOW) + torch.rand(n, 2, generator=g) * (torch.tensor(HIGH) - torch.tensor(LOW))
    return Batch(torch.randn(n, 3, generator=g), action, torch.randn(n, 1, generator=g),
                 torch.randn(n, 3, generator=g), not_done)


def q_by_hand(critic, i, obs, action):
    """Critic i's network, layer by layer from its weights: ReLU(x W + b) ..., linear output."""
    h = torch.cat([obs, action], dim=-1)
    for k, (w, b) in enumerate(zip(critic.weights, critic.biases)):
        h = h @ w[i] + b[i]
        if k < len(critic.weights) - 1:
            h = torch.relu(h)
    return h


def algorithm1(agent, batch, it):
    """Steps (3)-(8) of the paper's Algorithm 1, written out, on the agent's own networks and optimisers."""
    cfg = agent.config
    obs, action, reward, next_obs, not_done = batch
    h = (agent.high - agent.low) / 2
    with torch.no_grad():
        next_action = agent.actor_target(next_obs)
        if cfg.target_policy_smoothing:  # (3) a~ = pi'(s') + clip(N(0, sigma), -c, c), inside the bounds
            eps = torch.randn(next_action.shape, generator=agent.generator) * (cfg.policy_noise * h)
            eps = torch.max(torch.min(eps, cfg.noise_clip * h), -cfg.noise_clip * h)
            next_action = torch.max(torch.min(next_action + eps, agent.high), agent.low)
        q1_next = q_by_hand(agent.critic_target, 0, next_obs, next_action)
        q2_next = q_by_hand(agent.critic_target, 1, next_obs, next_action)
        next_q = torch.min(q1_next, q2_next) if cfg.clipped_double_q else q1_next
        y = reward + cfg.discount * not_done * next_q  # (4)
    loss = F.mse_loss(q_by_hand(agent.critic, 0, obs, action), y)  # (5)
    if cfg.clipped_double_q:
        loss = loss + F.mse_loss(q_by_hand(agent.critic, 1, obs, action), y)
    agent.critic_optimizer.zero_grad()
    loss.backward()
    agent.critic_optimizer.step()
    if not cfg.delayed_policy_updates or it % cfg.policy_freq == 0:  # (6)
        actor_loss = -q_by_hand(agent.critic, 0, obs, agent.actor(obs)).mean()  # (7)
        agent.actor_optimizer.zero_grad()
        actor_loss.backward()
        agent.actor_optimizer.step()
        with torch.no_grad():  # (8)
            for net, target in ((agent.critic, agent.critic_target), (agent.actor, agent.actor_target)):
                for p, p_target in zip(net.parameters(), target.parameters()):
                    p_target.copy_(cfg.tau * p + (1 - cfg.tau) * p_target)


def networks(agent):
    return {"actor": agent.actor, "actor_target": agent.actor_target,
            "critic": agent.critic, "critic_target": agent.critic_target}


@pytest.mark.parametrize("off", [None, *SWITCHES])
def test_update_equals_algorithm1_by_hand(off):
    cfg = CFG if off is None else dataclasses.replace(CFG, **{off: False})
    agent, by_hand = make_agent(cfg), make_agent(cfg)
    for it in range(1, 7):
        batch = make_batch(seed=it)
        agent.update(batch)
        algorithm1(by_hand, batch, it)
        for name, net in networks(agent).items():
            for p, q in zip(net.parameters(), networks(by_hand)[name].parameters()):
                torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6, msg=f"{name} after iteration {it}")


def snapshot(agent):
    return {name: [p.detach().clone() for p in net.parameters()] for name, net in networks(agent).items()}


def changed(before, after):
    return {name for name in before if any(not torch.equal(a, b) for a, b in zip(before[name], after[name]))}


def test_critic_every_update_actor_and_targets_every_policy_freq():
    cfg = dataclasses.replace(CFG, policy_freq=3)
    agent = make_agent(cfg)
    for it in range(1, 10):
        before = snapshot(agent)
        agent.update(make_batch(seed=it))
        want = {"critic"} | ({"actor", "actor_target", "critic_target"} if it % 3 == 0 else set())
        assert changed(before, snapshot(agent)) == want, f"iteration {it}"


@pytest.mark.parametrize("cdq, trained", [(True, {0, 1}), (False, {0})])
def test_both_critics_trained_only_with_clipped_double_q(cdq, trained):
    agent = make_agent(dataclasses.replace(CFG, clipped_double_q=cdq))
    before = [w.detach().clone() for w in agent.critic.weights]
    agent.critic_step(make_batch())
    moved = {i for i in range(2) if any(not torch.equal(b[i], w[i]) for b, w in zip(before, agent.critic.weights))}
    assert moved == trained


def test_actor_step_raises_q1_of_its_actions():
    """The actor ascends Q1: after one actor step, Q1(s, pi(s)) is higher on the same batch."""
    agent = make_agent(dataclasses.replace(CFG, actor_lr=1e-3))
    batch = make_batch()
    with torch.no_grad():
        before = agent.critic.q1(batch.obs, agent.actor(batch.obs)).mean()
    agent.actor_step(batch)
    with torch.no_grad():
        after = agent.critic.q1(batch.obs, agent.actor(batch.obs)).mean()
    assert after > before
