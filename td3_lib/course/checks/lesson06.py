"""Lesson 06's checks: the whole TD3 update (``check_td3_update``, whose machinery lives in
``course/update_check.py``) and the number of critic and actor updates a run makes (``check_count_updates``,
against ``updates_made``, which counts them step by step as ``train``'s loop makes them)."""

from __future__ import annotations

from ...config import TD3Config, preset
from ..update_check import check_td3_update
from .calls import learners_call

__all__ = ["check_td3_update", "check_count_updates", "updates_made"]



def updates_made(cfg) -> tuple[int, int]:
    """(critic updates, actor updates) of a whole run, counted step by step as ``train``'s loop makes them:
    one update per step t once t > start_timesteps and the buffer holds batch_size transitions."""
    critic = actor = 0
    for t in range(1, cfg.total_steps + 1):
        if t > cfg.start_timesteps and t >= cfg.batch_size:
            critic += 1
            actor += critic % cfg.policy_freq == 0
    return critic, actor


def check_count_updates(fn) -> str:
    """Whether ``fn(cfg)`` gives a run's (critic updates, actor updates), on presets and on edge cases."""
    cases = [preset("Hopper-v5"), preset("Pendulum-v1"),
             TD3Config(total_steps=5_000, start_timesteps=0, policy_freq=3),
             TD3Config(total_steps=1_000, start_timesteps=100, batch_size=256, policy_freq=3),
             TD3Config(total_steps=200, start_timesteps=100, batch_size=256)]
    for cfg in cases:
        answer, problem = learners_call(fn, cfg)
        if problem:
            return problem
        if not isinstance(answer, (tuple, list)) or len(answer) != 2:
            return f"Not yet: count_updates returns {answer!r}: return a pair, (critic_updates, actor_updates)."
        expected = updates_made(cfg)
        if tuple(answer) != expected:
            return (f"Not yet: for total_steps={cfg.total_steps:,}, start_timesteps={cfg.start_timesteps:,}, "
                    f"batch_size={cfg.batch_size}, policy_freq={cfg.policy_freq} you give {tuple(answer)}; "
                    f"the loop makes {expected}.")
    return "Right: Hopper-v5's 1M-step run makes {:,} critic and {:,} actor updates.".format(*updates_made(cases[0]))
