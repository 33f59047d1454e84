"""The update's pieces, one function per lesson: the critic's regression target and the target networks.

The agent's update is composed of exactly these functions (lesson 4's in three
parts: the noise's clip, the noise and the smoothed action), so what a notebook
checks by hand is what the agent runs.
"""

from __future__ import annotations

import torch
from torch import Tensor


def half_range(low, high):
    """h = (high - low) / 2 per action dimension (numpy arrays or tensors).

    The actor's output scale, the exploration noise and the target-smoothing
    noise are all measured in units of h, so every dimension means the same
    thing whatever its bounds.
    """
    return (high - low) / 2


def bellman_target(reward: Tensor, not_done: Tensor, next_q: Tensor, discount: float) -> Tensor:
    """Lesson 1: y = r + discount * not_done * Q'(s', a').

    ``not_done`` is 1 - terminated. A time-limit truncation is not a terminal
    state, so it keeps not_done = 1 and still bootstraps from Q'.
    """
    return reward + discount * not_done * next_q


def clipped_double_q(q1: Tensor, q2: Tensor) -> Tensor:
    """Lesson 3: min(Q1'(s', a'), Q2'(s', a')), elementwise.

    Taking the smaller of two independently trained estimates counters the
    overestimation that maximising a noisy critic builds up.
    """
    return torch.minimum(q1, q2)


def target_noise(shape, low, high, policy_noise: float, noise_clip: float, generator: torch.Generator | None = None,
                 dtype=torch.float32, device=None) -> Tensor:
    """Lesson 4: eps = clip(N(0, sigma^2), -c, c), the noise that smooths the target action.

    sigma = policy_noise * h and c = noise_clip * h, with h = (high - low) / 2
    each action dimension's half-range, so the noise means the same thing on
    every dimension whatever its bounds. Drawn on ``device``, else where ``low`` is.
    """
    if device is None and torch.is_tensor(low):
        device = low.device  # the noise where the bounds are
    low = torch.as_tensor(low, dtype=dtype, device=device)
    h = half_range(low, torch.as_tensor(high, dtype=dtype, device=device))
    z = torch.randn(shape, generator=generator, dtype=dtype, device=device)
    return clip_noise(z, policy_noise * h, noise_clip * h)


def clip_noise(z: Tensor, sigma, c) -> Tensor:
    """Lesson 4: eps = clip(sigma * z, -c, c) for a standard normal draw z.

    ``sigma`` and ``c`` are numbers or tensors that broadcast against ``z``
    (per action dimension, or per member of a batch of agents).
    """
    return (z * sigma).clamp(-c, c)


def smooth_target_action(next_action: Tensor, low, high, policy_noise: float, noise_clip: float,
                         generator: torch.Generator | None = None) -> Tensor:
    """Lesson 4: a' = clip(pi'(s') + eps, low, high), eps = clip(N(0, sigma^2), -c, c) (``target_noise``).

    The target action is the target actor's, moved by clipped noise and kept
    within the action bounds.
    """
    low = torch.as_tensor(low, dtype=next_action.dtype, device=next_action.device)
    high = torch.as_tensor(high, dtype=next_action.dtype, device=next_action.device)
    eps = target_noise(next_action.shape, low, high, policy_noise, noise_clip, generator, next_action.dtype,
                       next_action.device)
    return (next_action + eps).clamp(low, high)


def soft_update(source, target, tau: float) -> None:
    """Lessons 1 and 5: theta' <- tau * theta + (1 - tau) * theta', for every parameter at once.

    The target networks trail the trained ones slowly (lesson 1); TD3 moves
    them only on its delayed steps, right after the actor's (lesson 5).

    ``source`` and ``target`` are modules, or tuples of modules in matching
    order; one fused foreach lerp covers all their tensors, instead of a
    Python loop per parameter.
    """
    def params(m):
        modules = m if isinstance(m, (tuple, list)) else (m,)
        return [p for module in modules for p in module.parameters()]

    with torch.no_grad():
        torch._foreach_lerp_(params(target), params(source), tau)
