"""Lesson 04's exercise checks (``td3_lib.course.checks``) say "Right" to a right solution and "Not yet" to
each wrong one (a plausible slip)."""

from __future__ import annotations

import textwrap

import pytest
import torch

from td3_lib.course.checks import check_smoothed_target_action


SMOOTHED_RIGHT = {
    "as the lesson's solution": """
        h = (high - low) / 2
        noise = torch.randn(next_action.shape, generator=generator) * (policy_noise * h)
        c = noise_clip * h
        noise = torch.maximum(torch.minimum(noise, c), -c)
        return torch.maximum(torch.minimum(next_action + noise, high), low)""",
    "the noise drawn another way (a normal per dimension)": """
        h = (high - low) / 2
        noise = torch.stack([torch.normal(0.0, float(policy_noise * h[j]), next_action.shape[:1], generator=generator)
                             for j in range(next_action.shape[1])], dim=1)
        noise = noise.clamp(-noise_clip * h, noise_clip * h)
        return (next_action + noise).clamp(low, high)""",
}
SMOOTHED_WRONG = {
    "the stub": "return None",
    "the stub that raises": "raise NotImplementedError",
    "scalar bounds high[0] and low[0]": """
        h = (high[0] - low[0]) / 2
        noise = (torch.randn(next_action.shape, generator=generator) * policy_noise * h).clamp(-noise_clip * h, noise_clip * h)
        return (next_action + noise).clamp(low[0].item(), high[0].item())""",
    "noise not scaled by h": """
        h = (high - low) / 2
        noise = torch.randn(next_action.shape, generator=generator) * policy_noise
        return (next_action + noise.clamp(-noise_clip * h, noise_clip * h)).clamp(low, high)""",
    "clip the action before adding the noise": """
        h = (high - low) / 2
        noise = (torch.randn(next_action.shape, generator=generator) * policy_noise * h).clamp(-noise_clip * h, noise_clip * h)
        return next_action.clamp(low, high) + noise""",
    "no final clamp": """
        h = (high - low) / 2
        noise = (torch.randn(next_action.shape, generator=generator) * policy_noise * h).clamp(-noise_clip * h, noise_clip * h)
        return next_action + noise""",
    "the noise clipped to noise_clip, not noise_clip * h": """
        h = (high - low) / 2
        noise = (torch.randn(next_action.shape, generator=generator) * policy_noise * h).clamp(-noise_clip, noise_clip)
        return (next_action + noise).clamp(low, high)""",
    "the noise clipped to policy_noise * h": """
        h = (high - low) / 2
        noise = (torch.randn(next_action.shape, generator=generator) * policy_noise * h).clamp(-policy_noise * h, policy_noise * h)
        return (next_action + noise).clamp(low, high)""",
    "the noise clipped on one side only": """
        h = (high - low) / 2
        noise = (torch.randn(next_action.shape, generator=generator) * policy_noise * h).clamp(max=noise_clip * h)
        return (next_action + noise).clamp(low, high)""",
    "uniform noise of the same width": """
        h = (high - low) / 2
        noise = (torch.rand(next_action.shape, generator=generator) * 2 - 1) * noise_clip * h
        return (next_action + noise).clamp(low, high)""",
    "the generator ignored": """
        h = (high - low) / 2
        noise = (torch.randn(next_action.shape) * policy_noise * h).clamp(-noise_clip * h, noise_clip * h)
        return (next_action + noise).clamp(low, high)""",
    "a batch of one action returned": """
        return next_action[:1]""",
}


def smoothed_target_action_from(body: str):
    scope = {"torch": torch}
    source = "def smoothed_target_action(next_action, low, high, policy_noise, noise_clip, generator=None):\n"
    exec(source + textwrap.indent(textwrap.dedent(body).strip("\n"), "    "), scope)
    return scope["smoothed_target_action"]


@pytest.mark.parametrize("body", SMOOTHED_RIGHT.values(), ids=SMOOTHED_RIGHT.keys())
def test_04_the_smoothed_target_action_right_is_right(body):
    assert check_smoothed_target_action(smoothed_target_action_from(body)).startswith("Right")


@pytest.mark.parametrize("body", SMOOTHED_WRONG.values(), ids=SMOOTHED_WRONG.keys())
def test_04_each_slip_in_the_smoothed_target_action_is_not_yet(body):
    verdict = check_smoothed_target_action(smoothed_target_action_from(body))
    assert verdict.startswith("Not yet"), verdict
