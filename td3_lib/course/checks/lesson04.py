"""Lesson 04's exercise checks: ``check_smoothed_target_action``."""

from __future__ import annotations

import torch

from ...targets import half_range, smooth_target_action


BOUNDS_04 = (torch.tensor([-2.0, -1.0, 0.0]), torch.tensor([2.0, 1.0, 10.0]))
"""Three action dimensions with different bounds: half-ranges 2, 1 and 5."""


def verdict_of_call(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` and None, or None and a "Not yet" saying why it gave no tensor."""
    try:
        out = fn(*args, **kwargs)
    except Exception as error:  # noqa: BLE001  (the learner's code may raise anything)
        return None, f"Not yet: {fn.__name__} raised {type(error).__name__}" + (f": {error}" if str(error) else ".")
    if not torch.is_tensor(out):
        what = "None" if out is None or out is Ellipsis else f"a {type(out).__name__}"
        return None, f"Not yet: {fn.__name__} returns {what}, not a tensor of actions."
    if out.shape != args[0].shape:
        return None, f"Not yet: it returns shape {tuple(out.shape)}; the actions in have shape {tuple(args[0].shape)}."
    return out, None


def check_smoothed_target_action(fn) -> str:
    """Lesson 04: ``fn(next_action, low, high, policy_noise, noise_clip, generator=None)``, the smoothed
    target action with per-dimension bounds, against ``td3_lib.smooth_target_action``: the same actions
    from the same seeded generator, or (noise drawn another way) the same distribution, dimension by
    dimension: the clip's width, the noise's spread, the bounds, and draws that follow the generator."""
    low, high = BOUNDS_04
    spread = low + (high - low) * torch.rand(1_000, 3, generator=torch.Generator().manual_seed(5))
    next_action = torch.cat([torch.tensor([[1.9, 0.0, 5.0], [-2.0, 0.9, 0.2], [0.0, -0.5, 9.9]]), spread])
    out, problem = verdict_of_call(fn, next_action.clone(), low, high, 0.2, 0.5, generator=torch.Generator().manual_seed(0))
    if problem:
        return problem
    if torch.allclose(out, smooth_target_action(next_action, low, high, 0.2, 0.5, torch.Generator().manual_seed(0))):
        return "Right: the same actions as td3_lib.smooth_target_action from the same generator."
    for case in (noise_problem, bounds_problem, generator_problem):
        problem = case(fn)
        if problem:
            return problem
    return ("Right: your noise is drawn in another order than td3_lib's, so the actions differ, but on every "
            "dimension it has the right spread and clip and the actions stay within their bounds.")


def noise_problem(fn, n: int = 20_000) -> str | None:
    """From the middle of each range (no bound near): does each dimension's noise have its clip and spread?"""
    low, high = BOUNDS_04
    h = half_range(low, high)
    middle = ((low + high) / 2).repeat(n, 1)
    for policy_noise, noise_clip in ((0.2, 0.5), (0.3, 0.4)):
        out, problem = verdict_of_call(fn, middle.clone(), low, high, policy_noise, noise_clip,
                                       generator=torch.Generator().manual_seed(1))
        if problem:
            return problem
        noise, c = out - middle, noise_clip * h
        expected = smooth_target_action(middle, low, high, policy_noise, noise_clip,
                                        torch.Generator().manual_seed(2)) - middle
        for j in range(len(h)):
            widest, spread, wanted = noise[:, j].abs().max().item(), noise[:, j].std().item(), expected[:, j].std().item()
            where = f"with policy_noise={policy_noise}, noise_clip={noise_clip}, dimension {j} (bounds " \
                    f"[{low[j]:g}, {high[j]:g}], h = {h[j]:g})"
            if not 0.999 * c[j] <= widest <= c[j] * (1 + 1e-5):
                return (f"Not yet: {where}: the noise reaches {widest:.3f}; drawn with std policy_noise·h and "
                        f"clipped to ±noise_clip·h, it reaches exactly {c[j]:.3f}.")
            if abs(spread / wanted - 1) > 0.05 or abs(noise[:, j].mean().item()) > 0.05 * wanted:
                return (f"Not yet: {where}: the noise has mean {noise[:, j].mean().item():+.3f} and std {spread:.3f}; "
                        f"it should have mean 0 and std {wanted:.3f} (N(0, (policy_noise·h)²), then clipped).")
    return None


def bounds_problem(fn, n: int = 2_000) -> str | None:
    """From each bound: do the actions stay within [low, high], dimension by dimension?"""
    low, high = BOUNDS_04
    for name, edge in (("high", high), ("low", low)):
        out, problem = verdict_of_call(fn, edge.repeat(n, 1), low, high, 0.2, 0.5, generator=torch.Generator().manual_seed(3))
        if problem:
            return problem
        outside = (out < low) | (out > high)
        if outside.any():
            j = int(outside.any(0).nonzero()[0])
            return (f"Not yet: from actions at their {name} bound, dimension {j} reaches "
                    f"[{out[:, j].min().item():.3f}, {out[:, j].max().item():.3f}], outside its bounds "
                    f"[{low[j]:g}, {high[j]:g}]: after adding the noise, clip each dimension to its own bounds.")
    return None


def generator_problem(fn) -> str | None:
    """Do two calls with generators seeded alike give the same actions (the noise drawn with ``generator``)?"""
    low, high = BOUNDS_04
    twice = [verdict_of_call(fn, torch.zeros(8, 3) + low + 0.5, low, high, 0.2, 0.5,
                             generator=torch.Generator().manual_seed(4))[0] for _ in range(2)]
    if any(t is None for t in twice) or not torch.equal(*twice):
        return "Not yet: two calls with generators seeded alike gave different actions: draw the noise with generator=generator."
    return None
