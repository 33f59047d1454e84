"""Lesson 05's exercise checks: ``check_delayed_update``."""

from __future__ import annotations

import sys

import torch

from ...agent import TD3
from ...buffer import Batch
from ...config import TD3Config
from ...targets import soft_update


DELAYED_CASES = ((2, 0.1), (3, 0.3))
"""(d, tau) of the runs the delayed update is checked on: 6 updates each; tau far from 0.5, so that tau and
1 - tau differ."""
OWN_SOFT_UPDATE = (soft_update.__code__, TD3.update_targets.__code__, TD3.actor_step.__code__)
"""td3_lib's own soft update, seen by its code objects: the exercise is to write the blend."""


def delayed_case(d: int, tau: float) -> tuple:
    """Two agents equal in every weight and generator (the learner's and TD3 with policy_freq = d and this
    tau), and a minibatch; the learner's has tau 0.005 in its config, so its blend must use the tau it is given."""
    agents = []
    for config in (TD3Config(hidden_sizes=(16, 16)), TD3Config(hidden_sizes=(16, 16), policy_freq=d, tau=tau)):
        torch.manual_seed(0)
        agent = TD3(3, [-2.0], [2.0], config)
        noise = torch.Generator().manual_seed(1)
        with torch.no_grad():  # targets a little apart from the learned networks, as after some training
            for p in (*agent.actor_target.parameters(), *agent.critic_target.parameters()):
                p.add_(0.1 * torch.randn(p.shape, generator=noise))
        agents.append(agent)
    g = torch.Generator().manual_seed(0)
    batch = Batch(torch.randn(32, 3, generator=g), torch.rand(32, 1, generator=g) * 4 - 2,
                  torch.randn(32, 1, generator=g), torch.randn(32, 3, generator=g), torch.ones(32, 1))
    return agents[0], agents[1], batch


def parameters(agent: TD3) -> dict:
    """Copies of the four networks' parameters, by network name."""
    return {name: [p.detach().clone() for p in getattr(agent, name).parameters()]
            for name in ("actor", "critic", "actor_target", "critic_target")}


def same(a: list, b: list) -> bool:
    return all(torch.allclose(x, y, rtol=1e-5, atol=1e-6) for x, y in zip(a, b))


def watched(fn, *args) -> tuple:
    """``fn(*args)``, and whether it called td3_lib's own soft update."""
    calls, previous = [], sys.getprofile()
    sys.setprofile(lambda frame, event, arg: calls.append(1) if event == "call" and frame.f_code in OWN_SOFT_UPDATE
                   else None)
    try:
        return fn(*args), bool(calls)
    finally:
        sys.setprofile(previous)


def target_verdict(name: str, got: list, old: list, learned: list, before: list, tau: float, it: int,
                   d: int) -> str | None:
    """What is wrong with the target ``name`` after update ``it``, in one sentence; None when it is right."""
    if it % d and not same(got, old):
        return (f"the {name} moved at update {it}, which is not a multiple of d = {d}: the targets move "
                "only when it % d == 0.")
    if it % d:
        return None
    blend = [torch.lerp(o, p, tau) for o, p in zip(old, learned)]
    if same(got, blend):
        return None
    if same(got, old):
        return (f"the {name} did not move at update {it} (a multiple of d = {d}): blend it too, in place "
                "(p_target.data.copy_(...), or mul_ and add_).")
    if same(got, [torch.lerp(o, p, tau) for o, p in zip(old, before)]):
        return f"the {name} blended towards the network before its step: step the actor first, then blend."
    if same(got, [torch.lerp(o, p, 1 - tau) for o, p in zip(old, learned)]):
        return f"the {name} moved by 1 - tau, not tau: tau and 1 - tau are swapped."
    if same(got, learned):
        return f"the {name} is a copy of the learned network: blend, theta' <- tau * theta + (1 - tau) * theta'."
    return f"the {name} at update {it} is not tau * theta + (1 - tau) * theta' of the network after its step."


def delayed_verdict(fn, d: int, tau: float) -> str | None:
    """Six updates of the learner's ``fn`` after each critic step, beside TD3's own update with
    policy_freq = d: the first thing that differs, in one sentence; None when nothing does."""
    mine, td3, batch = delayed_case(d, tau)
    for it in range(1, 7):
        mine.critic_step(batch)
        mine.total_it = it
        old = parameters(mine)
        stepped = "actor_loss" in td3.update(batch)
        try:
            _, delegated = watched(fn, mine, batch, it, d, tau)
        except Exception as e:  # a learner's slip, reported in one line (the stub's NotImplementedError too)
            return f"delayed_update raised {type(e).__name__}: {e}".rstrip(": ")
        if delegated:
            return "it calls td3_lib's own soft update: write the blend of each parameter yourself."
        now = parameters(mine)
        if stepped and all(same(now[name], old[name]) for name in now):
            return f"nothing moved at update {it}, a multiple of d = {d}: step the actor, then blend both targets."
        if same(now["actor"], old["actor"]) == stepped:
            return (f"at update {it} with d = {d} the actor {'did not step' if stepped else 'stepped'}: the actor "
                    "steps (agent.policy_step) only when it % d == 0.")
        if stepped and not same(now["actor"], parameters(td3)["actor"]):
            return "the actor's step differs from agent.policy_step(batch): take exactly one."
        for name, learned in (("critic_target", "critic"), ("actor_target", "actor")):
            wrong = target_verdict(name, now[name], old[name], now[learned], old[learned], tau, it, d)
            if wrong:
                return wrong
    return None


def check_delayed_update(fn) -> str:
    """Lesson 05: ``delayed_update(agent, batch, it, d, tau)``, the delayed branch of TD3's update ``it``
    (1, 2, 3, ...): when ``it % d == 0``, one actor step (``agent.policy_step(batch)``), then both target
    networks blended towards the learned ones, theta' <- tau * theta + (1 - tau) * theta', per parameter.
    Checked over 6 updates for each (d, tau) of ``DELAYED_CASES`` against ``TD3.update`` with policy_freq = d."""
    for d, tau in DELAYED_CASES:
        wrong = delayed_verdict(fn, d, tau)
        if wrong:
            return f"Not yet: {wrong}"
    return ("Right: the actor steps and both targets blend by tau at updates 2, 4, 6 with d = 2 and 3, 6 with "
            "d = 3, exactly as TD3.update moves them.")
