"""The fast update computes what the plain one does: fused Adam, one fused target update, bf16."""

import dataclasses

import torch


def test_fused_adam_matches_the_per_tensor_loop(make_agent, make_batch, small_config):
    fast, plain = make_agent(), make_agent()
    plain.actor_optimizer = torch.optim.Adam(plain.actor.parameters(), lr=small_config.actor_lr, foreach=False)
    plain.critic_optimizer = torch.optim.Adam(plain.critic.parameters(), lr=small_config.critic_lr, foreach=False)
    for i in range(6):
        fast.update(make_batch(seed=i))
        plain.update(make_batch(seed=i))
    for a, b in ((fast.actor, plain.actor), (fast.critic, plain.critic),
                 (fast.actor_target, plain.actor_target), (fast.critic_target, plain.critic_target)):
        for p, q in zip(a.parameters(), b.parameters()):
            torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def test_target_update_is_polyak_of_both_networks(make_agent, make_batch, small_config):
    agent = make_agent()
    agent.update(make_batch(seed=0))  # critic step only
    before = [p.clone() for p in (*agent.critic_target.parameters(), *agent.actor_target.parameters())]
    agent.update(make_batch(seed=1))  # critic, actor and target step
    online = [*agent.critic.parameters(), *agent.actor.parameters()]
    targets = [*agent.critic_target.parameters(), *agent.actor_target.parameters()]
    for t, b, o in zip(targets, before, online):
        torch.testing.assert_close(t, b + small_config.tau * (o - b))


def flat(module) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in module.parameters()])


def test_bf16_update_follows_the_float32_one(make_agent, make_batch, small_config):
    """Under bfloat16 autocast (8 bits of mantissa: about 0.4% relative error per product) the
    losses stay within 5% of float32's, and what eight updates change in each network points the
    same way: |delta_bf16 - delta_fp32| is under 25% of |delta_fp32| (norms over all weights; Adam
    scales every step to about lr, so rounding a small gradient moves its step by as much as a large
    one's: measured about 12% for the actor). A broken bf16 step (wrong sign, skipped) is 100% or more.
    Weights and metrics stay float32."""
    bf16, fp32, start = make_agent(dataclasses.replace(small_config, bf16=True)), make_agent(), make_agent()
    for i in range(8):
        mb, mf = bf16.update(make_batch(seed=i)), fp32.update(make_batch(seed=i))
        assert set(mb) == set(mf) and all(not v.requires_grad for v in mb.values())
        torch.testing.assert_close(mb["critic_loss"], mf["critic_loss"], rtol=0.05, atol=1e-3)
        assert mb["critic_loss"].dtype == torch.float32
    for name in ("actor", "critic", "actor_target", "critic_target"):
        b, f, s0 = (flat(getattr(agent, name)) for agent in (bf16, fp32, start))
        assert b.dtype == torch.float32
        moved = torch.linalg.norm(f - s0)
        assert moved > 0
        assert torch.linalg.norm((b - s0) - (f - s0)) < 0.25 * moved, name
