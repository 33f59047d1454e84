"""Lesson 00's exercise checks: ``check_discounted_return``, ``check_scale_action``, ``check_play_random_episode``."""

from __future__ import annotations

import math

import numpy as np
import torch

from ...envs import make_env
from ...networks import Actor
from .calls import learners_call


RETURN_SLIPS = {
    "no discount": lambda r, g: sum(r),
    "the first reward discounted too": lambda r, g: sum(g ** (k + 1) * x for k, x in enumerate(r)),
    "the discount on the wrong end": lambda r, g: sum(g ** k * x for k, x in enumerate(reversed(r))),
}
RETURN_HINTS = {
    "no discount": "you added the rewards up without the discount: a reward k steps ahead counts discount**k times.",
    "the first reward discounted too": "the first reward counts in full (discount**0 = 1); yours is discounted once.",
    "the discount on the wrong end": "the discount shrinks the *later* rewards; yours shrinks the early ones.",
}


def check_discounted_return(fn) -> str:
    """Whether ``fn(rewards, discount)`` is r_0 + discount r_1 + discount^2 r_2 + ..., in one sentence."""
    rng = np.random.default_rng(0)
    cases = [*[(list(rng.normal(size=n).round(2)), g) for n, g in ((5, 0.9), (12, 0.7), (1, 0.3))],
             ([0.0, 0.0, 10.0], 0.9), ([1.0, 1.0, 1.0, 1.0], 0.5), ([-1.0] * 200, 0.99)]
    for rewards, discount in cases:
        got, problem = learners_call(fn, list(rewards), discount)
        if problem:
            return problem
        want = sum(discount ** k * r for k, r in enumerate(rewards))
        try:
            got = float(got)
        except (TypeError, ValueError):
            return f"Not yet: return one number; yours returned {got!r}."
        if not math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9):
            slip = next((s for s, f in RETURN_SLIPS.items() if math.isclose(got, f(rewards, discount), rel_tol=1e-6)), None)
            return ("Not yet: " + RETURN_HINTS[slip] if slip else
                    f"Not yet: for rewards {rewards[:5]}{' ...' if len(rewards) > 5 else ''} and discount {discount} "
                    f"the discounted return is {want:.4f}; yours is {got:.4f}.")
    return "Right: each reward counts discount**k times, k the steps from now until it comes."


def check_scale_action(fn) -> str:
    """Whether ``fn(u, low, high)`` maps u in [-1, 1] onto each dimension's own bounds, as td3_lib's Actor does."""
    g = torch.Generator().manual_seed(3)
    for _ in range(5):
        low = -torch.rand(4, generator=g) * 5  # four dimensions, each with its own bounds
        high = low + 0.1 + torch.rand(4, generator=g) * 5
        u = torch.rand(16, 4, generator=g) * 2 - 1  # what a tanh could output
        actor = Actor(1, low, high)
        want = actor.action_center + actor.action_half_range * u
        got, problem = learners_call(fn, u, low, high)
        if problem:
            return problem
        if got is None:
            return "Not yet: scale_action returns None."
        if not torch.allclose(torch.as_tensor(got, dtype=torch.float32), want, atol=1e-5):
            return (f"Not yet: for low={low.numpy().round(2)}, high={high.numpy().round(2)} your actions differ "
                    "from td3_lib's Actor (is each dimension centred and scaled by its own bounds?).")
    return "Right: each dimension reaches exactly its own bounds, low at u = -1 and high at u = 1."


def random_episode(env_id: str, seed: int) -> tuple:
    """The loop done right: (return, steps, terminated, truncated) of one random episode."""
    env = make_env(env_id, seed=seed)
    env.reset(seed=seed)
    total, steps, terminated, truncated = 0.0, 0, False, False
    while not (terminated or truncated):
        _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        total, steps = total + reward, steps + 1
    env.close()
    return total, steps, terminated, truncated


def check_play_random_episode(fn) -> str:
    """Whether ``fn(env_id, seed)`` plays one random episode to its end, as ``random_episode`` does."""
    for env_id, seed in (("Pendulum-v1", 3), ("LunarLanderContinuous-v3", 3), ("LunarLanderContinuous-v3", 11)):
        want = random_episode(env_id, seed)
        got, problem = learners_call(fn, env_id, seed)
        if problem:
            return problem
        if got is None or len(got) != 4:
            return "Not yet: return four things: (total, steps, terminated, truncated)."
        if got[1] != want[1]:
            return f"Not yet: on {env_id} (seed {seed}) your episode lasted {got[1]} steps, it should last {want[1]}."
        if abs(got[0] - want[0]) > 1e-6:
            return f"Not yet: on {env_id} (seed {seed}) your return is {got[0]:.3f}, it should be {want[0]:.3f}."
        if (bool(got[2]), bool(got[3])) != (want[2], want[3]):
            return f"Not yet: on {env_id} the flags should be terminated={want[2]}, truncated={want[3]}."
    return "Right: your loop stops at termination and at truncation, and adds up every reward."
