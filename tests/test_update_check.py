"""Lesson 06's check of the learner's whole update: it passes right solutions and fails wrong ones.

Each wrong solution below is one mistake away from a right one: a step delegated to TD3's own
methods, steps in the wrong order, a missing trick. Each must fail, with a message that says where.
"""

import sys

import pytest
import torch

from td3_lib import TD3, bellman_target, clipped_double_q, smooth_target_action, soft_update
from td3_lib.course import update_check
from td3_lib.course.reference import ReferenceTD3, td3_update
from td3_lib.course.update_check import check_td3_update


# ------------------------------------------------------------------ the pieces of a solution
# The right pieces are the reference TD3's steps (td3_lib.course.reference), run on the lesson's agent;
# each wrong solution below changes one of them, or their order.
R = ReferenceTD3


def target(agent, batch, smoothing=True, minimum=True):
    """Steps (3) and (4), optionally without the smoothing or the minimum (a wrong target)."""
    if smoothing and minimum:
        return R.target_q(agent, batch)
    with torch.no_grad():
        next_action = R.target_action(agent, batch.next_obs) if smoothing else agent.actor_target(batch.next_obs)
        target_q1, target_q2 = agent.critic_target(batch.next_obs, next_action)
        next_q = torch.minimum(target_q1, target_q2) if minimum else target_q1
        return batch.reward + agent.config.discount * batch.not_done * next_q


def critic_step(agent, batch, y):
    R.critic_update(agent, batch, y)


def actor_step(agent, batch):
    R.actor_update(agent, batch)


def soft_updates(agent):
    R.target_update(agent)


# ------------------------------------------------------------------ right solutions
def right(agent, batch, it):
    """Lesson 06's answer key: the reference TD3's steps, its noise drawn with torch.randn_like as the
    authors' code draws it."""
    td3_update(agent, batch, it)


def right_with_library_pieces(agent, batch, it):
    """The same update composed of td3_lib's pure functions (lessons 1 to 5), as TD3 composes it, its
    noise drawn from agent.generator."""
    cfg = agent.config
    with torch.no_grad():
        next_action = smooth_target_action(agent.actor_target(batch.next_obs), agent.low, agent.high,
                                           cfg.policy_noise, cfg.noise_clip, generator=agent.generator)
        y = bellman_target(batch.reward, batch.not_done,
                           clipped_double_q(*agent.critic_target(batch.next_obs, next_action)), cfg.discount)
    critic_step(agent, batch, y)
    if it % cfg.policy_freq == 0:
        actor_step(agent, batch)
        soft_update((agent.critic, agent.actor), (agent.critic_target, agent.actor_target), cfg.tau)


# ------------------------------------------------------------------ wrong solutions
def delegates_through_the_class(agent, batch, it):
    TD3.update(agent, batch)


def delegates_the_target(agent, batch, it):
    critic_step(agent, batch, TD3.target_q(agent, batch))
    if it % agent.config.policy_freq == 0:
        actor_step(agent, batch)
        soft_updates(agent)


SAVED_TARGET_Q, SAVED_CRITIC_LOSS, SAVED_ACTOR_LOSS = TD3.target_q, TD3.critic_loss, TD3.actor_loss


def delegates_through_references_saved_before(agent, batch, it):
    """Every step by hand except the losses, which come from TD3's own functions saved at import."""
    loss, _ = SAVED_CRITIC_LOSS(agent, batch.obs, batch.action, SAVED_TARGET_Q(agent, batch))
    agent.critic_optimizer.zero_grad()
    loss.backward()
    agent.critic_optimizer.step()
    if it % agent.config.policy_freq == 0:
        actor_loss = SAVED_ACTOR_LOSS(agent, batch.obs)
        agent.actor_optimizer.zero_grad()
        actor_loss.backward()
        agent.actor_optimizer.step()
        soft_updates(agent)


def delegates_the_actor_step_and_hides_it(agent, batch, it):
    critic_step(agent, batch, target(agent, batch))
    if it % agent.config.policy_freq == 0:
        try:
            agent.actor_step(batch)
        except Exception:
            actor_step(agent, batch)
            soft_updates(agent)


def soft_update_before_the_actor_step(agent, batch, it):
    critic_step(agent, batch, target(agent, batch))
    if it % agent.config.policy_freq == 0:
        soft_updates(agent)
        actor_step(agent, batch)


def actor_step_before_the_critic_step(agent, batch, it):
    if it % agent.config.policy_freq == 0:
        actor_step(agent, batch)
    critic_step(agent, batch, target(agent, batch))
    if it % agent.config.policy_freq == 0:
        soft_updates(agent)


def no_minimum(agent, batch, it):
    critic_step(agent, batch, target(agent, batch, minimum=False))
    if it % agent.config.policy_freq == 0:
        actor_step(agent, batch)
        soft_updates(agent)


def no_smoothing(agent, batch, it):
    critic_step(agent, batch, target(agent, batch, smoothing=False))
    if it % agent.config.policy_freq == 0:
        actor_step(agent, batch)
        soft_updates(agent)


def no_delay(agent, batch, it):
    critic_step(agent, batch, target(agent, batch))
    actor_step(agent, batch)
    soft_updates(agent)


def noise_in_action_units(agent, batch, it):
    """The authors' noise, (randn_like * policy_noise).clamp(-noise_clip, noise_clip), for bounds of
    [-1, 1] only: not scaled by each dimension's half-range. Right in the first case, wrong on uneven bounds."""
    cfg = agent.config
    with torch.no_grad():
        next_action = agent.actor_target(batch.next_obs)
        noise = (torch.randn_like(next_action) * cfg.policy_noise).clamp(-cfg.noise_clip, cfg.noise_clip)
        next_action = (next_action + noise).clamp(agent.low, agent.high)
        y = batch.reward + cfg.discount * batch.not_done * torch.minimum(*agent.critic_target(batch.next_obs,
                                                                                            next_action))
    critic_step(agent, batch, y)
    if it % cfg.policy_freq == 0:
        actor_step(agent, batch)
        soft_updates(agent)


def noise_from_a_generator_of_its_own(agent, batch, it):
    """Right but for the noise: drawn from a fresh generator, not from the agent's nor the global one."""
    cfg, own = agent.config, torch.Generator().manual_seed(123)
    with torch.no_grad():
        next_action = smooth_target_action(agent.actor_target(batch.next_obs), agent.low, agent.high,
                                           cfg.policy_noise, cfg.noise_clip, generator=own)
        y = bellman_target(batch.reward, batch.not_done,
                           clipped_double_q(*agent.critic_target(batch.next_obs, next_action)), cfg.discount)
    critic_step(agent, batch, y)
    if it % cfg.policy_freq == 0:
        actor_step(agent, batch)
        soft_updates(agent)


def soft_update_every_iteration(agent, batch, it):
    critic_step(agent, batch, target(agent, batch))
    if it % agent.config.policy_freq == 0:
        actor_step(agent, batch)
    soft_updates(agent)


def soft_update_outside_no_grad(agent, batch, it):
    """Right but for step (8): the soft update computed with autograd on, so the target networks'
    weights carry a graph that grows with every update."""
    critic_step(agent, batch, target(agent, batch))
    if it % agent.config.policy_freq == 0:
        actor_step(agent, batch)
        for net, target_net in ((agent.critic, agent.critic_target), (agent.actor, agent.actor_target)):
            for param, target_param in zip(net.parameters(), target_net.parameters()):
                target_param.copy_(agent.config.tau * param + (1 - agent.config.tau) * target_param)


def not_written(agent, batch, it):
    raise NotImplementedError


@pytest.mark.parametrize("solution", [right, right_with_library_pieces], ids=lambda f: f.__name__)
def test_a_right_update_passes(solution):
    assert check_td3_update(solution).startswith("Right: critic, critic_target, actor and actor_target match")


@pytest.mark.parametrize("solution, says", [
    (delegates_through_the_class, "your function called TD3.update, which this check does not allow"),
    (delegates_the_target, "your function called TD3.target_q, which this check does not allow: "
                           "write step (3)-(4) yourself"),
    (delegates_the_actor_step_and_hides_it, "your function called TD3.actor_step"),
    (delegates_through_references_saved_before, "your function called TD3.target_q"),
    (soft_update_before_the_actor_step, "in iteration 2 (an actor iteration), from the critic's optimiser step "
                                        "to the actor's optimiser step, TD3.update changes actor; yours changed "
                                        "actor, actor_target, critic_target"),
    (actor_step_before_the_critic_step, "in iteration 2 (an actor iteration), TD3.update takes 2 optimiser "
                                        "step(s): the critic's optimiser step, the actor's optimiser step; your "
                                        "function took 2: the actor's optimiser step, the critic's"),
    (no_minimum, "in iteration 1 (a critic-only iteration), at the critic's optimiser step, your critic differs"),
    (no_smoothing, "in iteration 1 (a critic-only iteration), at the critic's optimiser step, your critic differs"),
    (no_smoothing, "Your function drew no target-smoothing noise"),
    (noise_in_action_units, "With policy_freq=3, tau=0.1, discount=0.9, learning rates 1e-2 and uneven bounds, in "
                            "iteration 1 (a critic-only iteration), at the critic's optimiser step, your critic"),
    (noise_from_a_generator_of_its_own, "at the critic's optimiser step, your critic differs"),
    (no_delay, "in iteration 1 (a critic-only iteration), TD3.update takes 1 optimiser step(s): the critic's "
               "optimiser step; your function took 2"),
    (soft_update_every_iteration, "in iteration 1 (a critic-only iteration), from the critic's optimiser step "
                                  "to the end of the iteration, TD3.update changes no network; yours changed "
                                  "actor_target, critic_target"),
    (soft_update_outside_no_grad, "after iteration 2, your critic_target's weights carry an autograd graph: "
                                  "step (8) must move the targets under torch.no_grad()"),
    (not_written, "td3_update still raises NotImplementedError"),
], ids=lambda x: x.__name__ if callable(x) else "")
def test_a_wrong_update_fails_and_says_where(solution, says):
    verdict = check_td3_update(solution)
    assert verdict.startswith("Not yet: ") and says in verdict, verdict


def largest_gap(solution, case, iterations=6) -> float:
    """After ``iterations``, the largest difference between ``solution``'s networks and TD3.update's."""
    torch.manual_seed(0)
    lib_agent = TD3(obs_dim=24, action_low=case.low, action_high=case.high, config=case.config)
    agent = TD3.from_state_dict(lib_agent.state_dict())
    g = torch.Generator().manual_seed(1)
    for it in range(1, iterations + 1):
        batch = update_check.random_batch(g, case.low, case.high)
        lib_agent.update(batch)
        with update_check.one_noise_source(agent, []):
            solution(agent, batch, it)
    mine, yours = update_check.snapshot(lib_agent), update_check.snapshot(agent)
    return max(float((a - b).abs().max()) for name in update_check.NETWORKS for a, b in zip(mine[name], yours[name]))


def test_in_the_case_with_large_steps_an_order_error_is_far_beyond_the_tolerance():
    """With the default tau and learning rates a soft update before the actor step moves the targets by
    about tau * lr (1.5e-6, inside the tolerance: only which network moved when gives it away); in the
    second case (tau 0.1, learning rates 1e-2) every order error is a hundred times the tolerance."""
    default, large = update_check.CASES
    assert largest_gap(soft_update_before_the_actor_step, default) < update_check.ATOL
    for solution in (soft_update_before_the_actor_step, actor_step_before_the_critic_step, no_minimum, no_smoothing):
        assert largest_gap(solution, large) > 100 * update_check.ATOL, solution.__name__
    assert largest_gap(right, large) < update_check.ATOL / 100


def test_the_check_leaves_td3_and_the_global_generator_whole():
    torch.manual_seed(5)
    before = torch.get_rng_state()
    check_td3_update(delegates_the_target)
    check_td3_update(right)
    assert TD3.target_q.__qualname__ == "TD3.target_q" and TD3.update.__qualname__ == "TD3.update"
    assert sys.getprofile() is None  # the hook that watched the learner's function is gone
    assert torch.equal(torch.get_rng_state(), before)


def test_inside_the_check_the_global_generator_gives_the_agents_noise():
    """What lets a right update draw with torch.randn_like: the global generator starts where the agent's
    is, and the agent's goes on from wherever the noise was drawn."""
    agent = TD3(obs_dim=3, action_low=[-1.0], action_high=[1.0])
    twin = TD3.from_state_dict(agent.state_dict())  # the same generator state
    expected = [torch.randn(5, generator=twin.generator) for _ in range(2)]
    drew = []
    with update_check.one_noise_source(agent, drew):
        first = torch.randn(5)  # the global generator, as torch.randn_like draws
    with update_check.one_noise_source(agent, drew):
        second = torch.randn(5, generator=agent.generator)  # the next iteration, from the agent's
    with update_check.one_noise_source(agent, drew):
        pass  # no noise
    assert torch.equal(first, expected[0]) and torch.equal(second, expected[1])
    assert drew == [True, True, False]


def test_a_broken_answer_key_is_reported_as_the_checks_own_failure(monkeypatch):
    monkeypatch.setattr(update_check, "answer_key", soft_update_before_the_actor_step)
    verdict = check_td3_update(right)
    assert verdict.startswith("This check cannot judge your function on this machine") and "answer key" in verdict
