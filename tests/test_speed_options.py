"""The fast update computes what the plain one does: fused Adam, one fused target update, bf16."""

import dataclasses

import torch


from test_agent import CFG, make_agent, make_batch


def test_fused_adam_matches_the_per_tensor_loop():
    fast, plain = make_agent(), make_agent()
    plain.actor_optimizer = torch.optim.Adam(plain.actor.parameters(), lr=CFG.actor_lr, foreach=False)
    plain.critic_optimizer = torch.optim.Adam(plain.critic.parameters(), lr=CFG.critic_lr, foreach=False)
    for i in range(6):
        fast.update(make_batch(seed=i))
        plain.update(make_batch(seed=i))
    for a, b in ((fast.actor, plain.actor), (fast.critic, plain.critic),
                 (fast.actor_target, plain.actor_target), (fast.critic_target, plain.critic_target)):
        for p, q in zip(a.parameters(), b.parameters()):
            torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def test_target_update_is_polyak_of_both_networks():
    agent = make_agent()
    agent.update(make_batch(seed=0))  # critic step only
    before = [p.clone() for p in (*agent.critic_target.parameters(), *agent.actor_target.parameters())]
    agent.update(make_batch(seed=1))  # critic, actor and target step
    online = [*agent.critic.parameters(), *agent.actor.parameters()]
    targets = [*agent.critic_target.parameters(), *agent.actor_target.parameters()]
    for t, b, o in zip(targets, before, online):
        torch.testing.assert_close(t, b + CFG.tau * (o - b))


def test_bf16_update_keeps_the_api_and_float32_weights():
    agent = make_agent(dataclasses.replace(CFG, bf16=True))
    for i in range(4):
        metrics = agent.update(make_batch(seed=i))
        assert set(metrics) <= {"critic_loss", "q1", "actor_loss"}
        assert all(not v.requires_grad and torch.isfinite(v).all() for v in metrics.values())
    assert set(metrics) == {"critic_loss", "q1", "actor_loss"}
    assert metrics["critic_loss"].dtype == torch.float32
    assert all(p.dtype == torch.float32 for p in (*agent.actor.parameters(), *agent.critic.parameters()))
