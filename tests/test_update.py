"""TD3.update against the flat reference TD3 (Algorithm 1 in the authors' shape), and what each step changes."""

import dataclasses

import pytest
import torch

from td3_lib import Batch, TD3, TD3Config
from td3_lib.course.reference import ReferenceTD3
from td3_lib.sweep import SWITCHES

# Large target noise against a small clip, so that clipping acts on most draws.
CFG = TD3Config(hidden_sizes=(16, 16), batch_size=32, policy_noise=0.5, noise_clip=0.2, tau=0.1)
LOW, HIGH = [-2.0, 0.0], [2.0, 10.0]  # asymmetric bounds, half-ranges 2 and 5


def update_agent(cfg, seed=0):
    """A TD3 agent with 3 observations and this file's bounds, its weights drawn after manual_seed(seed)."""
    torch.manual_seed(seed)
    return TD3(3, LOW, HIGH, cfg)


def update_batch(n=32, seed=1):
    """A batch of ``n`` transitions drawn from ``seed``, inside this file's bounds; every third one terminal."""
    g = torch.Generator().manual_seed(seed)
    not_done = torch.ones(n, 1)
    not_done[::3] = 0.0  # every third transition ends its episode
    action = torch.tensor(LOW) + torch.rand(n, 2, generator=g) * (torch.tensor(HIGH) - torch.tensor(LOW))
    return Batch(torch.randn(n, 3, generator=g), action, torch.randn(n, 1, generator=g),
                 torch.randn(n, 3, generator=g), not_done)


def networks(agent):
    return {"actor": agent.actor, "actor_target": agent.actor_target,
            "critic": agent.critic, "critic_target": agent.critic_target}


def linear_layers(actor) -> list[torch.Tensor]:
    return [t for layer in (actor.l1, actor.l2, actor.l3) for t in (layer.weight, layer.bias)]


def twin_layout(critic) -> list[torch.Tensor]:
    """The reference's Q1 (l1-l3) and Q2 (l4-l6) as TwinCritic holds them: each layer's weights
    stacked (2, in, out), then each layer's biases (2, 1, out)."""
    layers = [(critic.l1, critic.l4), (critic.l2, critic.l5), (critic.l3, critic.l6)]
    return ([torch.stack([q1.weight.T, q2.weight.T]) for q1, q2 in layers]
            + [torch.stack([q1.bias, q2.bias])[:, None] for q1, q2 in layers])


def as_td3_lib(ref: ReferenceTD3) -> dict[str, list[torch.Tensor]]:
    return {"actor": linear_layers(ref.actor), "actor_target": linear_layers(ref.actor_target),
            "critic": twin_layout(ref.critic), "critic_target": twin_layout(ref.critic_target)}


def in_order(agent) -> dict[str, list[torch.Tensor]]:
    """td3_lib's four networks: the actor's parameters, the critics' weights then biases."""
    return {"actor": list(agent.actor.parameters()), "actor_target": list(agent.actor_target.parameters()),
            "critic": [*agent.critic.weights, *agent.critic.biases],
            "critic_target": [*agent.critic_target.weights, *agent.critic_target.biases]}


def assert_same_networks(agent, ref, where: str) -> None:
    mine, theirs = in_order(agent), as_td3_lib(ref)
    for name in mine:
        for p, q in zip(mine[name], theirs[name], strict=True):
            torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6, msg=f"{name} {where}")


@pytest.mark.parametrize("off", [None, *SWITCHES])
def test_update_equals_the_reference_td3(off):
    """TD3.update (batched twin critic, fused Adam, fused target update) against the flat reference TD3
    (td3_lib.course.reference: two nn.Linear critics, plain Adam, a loop per parameter), on the same
    weights, minibatches and noise (the reference draws with torch.randn_like from the global generator,
    set where the agent's generator is), for 6 iterations, with each trick switched off in turn."""
    cfg = CFG if off is None else dataclasses.replace(CFG, **{off: False})
    agent = update_agent(cfg)
    ref = ReferenceTD3.from_agent(agent)
    assert_same_networks(agent, ref, "at the start")
    for it in range(1, 7):
        batch = update_batch(seed=it)
        torch.set_rng_state(agent.generator.get_state())  # the same noise
        ref.train(batch)
        agent.update(batch)
        assert_same_networks(agent, ref, f"after iteration {it}")
    assert ref.total_it == agent.total_it == 6


def test_the_reference_keeps_each_action_inside_its_own_bounds():
    ref = ReferenceTD3.from_agent(update_agent(CFG))
    actions = ref.actor(torch.randn(500, 3) * 100)
    target = ReferenceTD3.target_action(ref, torch.randn(500, 3) * 100)
    for a in (actions, target):
        assert (a >= torch.tensor(LOW)).all() and (a <= torch.tensor(HIGH)).all()
    assert ref.select_action([0.1, 0.2, 0.3]).shape == (2,)
    with pytest.raises(ValueError, match="two hidden layers"):
        ReferenceTD3(3, LOW, HIGH, dataclasses.replace(CFG, hidden_sizes=(16, 16, 16)))


def snapshot(agent):
    return {name: [p.detach().clone() for p in net.parameters()] for name, net in networks(agent).items()}


def changed(before, after):
    return {name for name in before if any(not torch.equal(a, b) for a, b in zip(before[name], after[name]))}


def test_critic_every_update_actor_and_targets_every_policy_freq():
    cfg = dataclasses.replace(CFG, policy_freq=3)
    agent = update_agent(cfg)
    for it in range(1, 10):
        before = snapshot(agent)
        agent.update(update_batch(seed=it))
        want = {"critic"} | ({"actor", "actor_target", "critic_target"} if it % 3 == 0 else set())
        assert changed(before, snapshot(agent)) == want, f"iteration {it}"


@pytest.mark.parametrize("cdq, trained", [(True, {0, 1}), (False, {0})])
def test_both_critics_trained_only_with_clipped_double_q(cdq, trained):
    agent = update_agent(dataclasses.replace(CFG, clipped_double_q=cdq))
    before = [w.detach().clone() for w in agent.critic.weights]
    agent.critic_step(update_batch())
    moved = {i for i in range(2) if any(not torch.equal(b[i], w[i]) for b, w in zip(before, agent.critic.weights))}
    assert moved == trained


def test_actor_step_raises_q1_of_its_actions():
    """The actor ascends Q1: after one actor step, Q1(s, pi(s)) is higher on the same batch."""
    agent = update_agent(dataclasses.replace(CFG, actor_lr=1e-3))
    batch = update_batch()
    with torch.no_grad():
        before = agent.critic.q1(batch.obs, agent.actor(batch.obs)).mean()
    agent.actor_step(batch)
    with torch.no_grad():
        after = agent.critic.q1(batch.obs, agent.actor(batch.obs)).mean()
    assert after > before


def test_actor_step_computes_no_gradient_for_the_critics():
    """The actor's loss reaches the critic's weights only through frozen copies: after an actor step the
    critic holds no gradient (a thawed Q1 would fill it, for the next critic step to start from)."""
    agent = update_agent(CFG)
    agent.actor_step(update_batch())
    assert all(p.grad is None for p in agent.critic.parameters())
    assert all(p.grad is not None for p in agent.actor.parameters())
