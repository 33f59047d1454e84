"""Lesson 06's exercise checks (``td3_lib.course.checks``) say "Right" to a right solution and "Not yet" to
each wrong one (a plausible slip), and the lesson calls its checks and defines none."""

from __future__ import annotations

import re

from checks_helpers import assert_calls_its_checks, assert_verdicts, defined, notebook_cells
from td3_lib import TD3, train
from td3_lib.config import TD3Config, preset
from td3_lib.course.checks import check_count_updates, check_td3_update
from td3_lib.course.checks.lesson06 import updates_made
from td3_lib.course.reference import td3_update


COUNT = "def count_updates(cfg):\n    {}"
COUNT_RIGHT = "critic = max(0, cfg.total_steps - max(cfg.start_timesteps, cfg.batch_size - 1))\n    return {}"
COUNT_SLIPS = {
    "the stub": ("return None", "returns None"),
    "the stub that raises": ("raise NotImplementedError", "still the stub"),
    "one number": (COUNT_RIGHT.format("critic"), "return a pair"),
    "batch size ignored": ("critic = cfg.total_steps - cfg.start_timesteps\n    return critic, critic // cfg.policy_freq",
                           "batch_size=256"),
    "the actor at every update": (COUNT_RIGHT.format("critic, critic"), "you give"),
    "the actor rounded up": (COUNT_RIGHT.format("critic, -(-critic // cfg.policy_freq)"), "you give"),
    "every step an update": ("return cfg.total_steps, cfg.total_steps // cfg.policy_freq", "you give"),
    "one update too few": ("critic = cfg.total_steps - max(cfg.start_timesteps, cfg.batch_size)\n"
                           "    return critic, critic // cfg.policy_freq", "you give"),
    "negative before the first update": ("critic = cfg.total_steps - max(cfg.start_timesteps, cfg.batch_size - 1)\n"
                                         "    return critic, critic // cfg.policy_freq", "total_steps=200"),
}


def test_06_count_updates():
    assert_verdicts(check_count_updates, "count_updates", [
        COUNT.format(COUNT_RIGHT.format("critic, critic // cfg.policy_freq")),
        """
        def count_updates(cfg):
            first = max(cfg.start_timesteps + 1, cfg.batch_size)   # the first step that updates
            critic = max(0, cfg.total_steps - first + 1)
            return critic, critic // cfg.policy_freq
        """,
    ], {slip: COUNT.format(body) for slip, (body, _) in COUNT_SLIPS.items()},
        {slip: says for slip, (_, says) in COUNT_SLIPS.items()})


def test_06_the_loops_count_is_the_one_the_lesson_quotes():
    """The right answer's count of Hopper-v5's 1M-step run, and the rule it counts, against td3_lib.train's
    own loop on a tiny run (its critic losses: one per update)."""
    assert updates_made(preset("Hopper-v5")) == (975_000, 487_500)
    assert check_count_updates(lambda cfg: updates_made(cfg)).startswith("Right: Hopper-v5's 1M-step run makes "
                                                                        "975,000 critic and 487,500 actor updates.")
    cfg = TD3Config(hidden_sizes=(8, 8), total_steps=300, start_timesteps=50, batch_size=100, policy_freq=3,
                    eval_freq=300, eval_episodes=1)
    counted = {"critic": 0, "actor": 0}

    class Counting(TD3):
        def critic_step(self, batch):
            counted["critic"] += 1
            return super().critic_step(batch)

        def actor_step(self, batch):
            counted["actor"] += 1
            return super().actor_step(batch)

    train("Pendulum-v1", cfg, agent=Counting, device="cpu", progress=False)
    assert updates_made(cfg) == (counted["critic"], counted["actor"]) == (201, 67)


def test_06_the_whole_update_is_checked_from_checks():
    assert check_td3_update(td3_update).startswith("Right")
    assert check_td3_update(lambda agent, batch, it: None).startswith("Not yet")


def test_06_the_lessons_solutions_are_right():
    """The solutions the lesson shows in its collapsed blocks pass the checks it calls."""
    blocks = notebook_cells("06", "markdown")
    solutions = [re.search(r"```python\n(.*?)```", b, re.S).group(1) for b in blocks if "<summary>Solution" in b]
    assert len(solutions) == 2
    assert check_td3_update(defined(solutions[0], "td3_update")).startswith("Right")
    assert check_count_updates(defined(solutions[1], "count_updates")).startswith("Right")


def test_06_the_lesson_calls_its_checks_and_defines_none():
    assert_calls_its_checks("06", {"td3_update": "raise NotImplementedError", "count_updates": "return None"})
