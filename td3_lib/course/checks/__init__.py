"""The lessons' exercise checks, one module per lesson (``lesson01`` holds lesson 01's): each takes the
learner's function and returns a verdict.

A lesson calls its check in one line (``check_critic_update(critic_update)``); the check runs the learner's
function on cases it builds, compares with the right answer computed here, and returns a sentence that
starts with "Right" or with "Not yet" and says what differs. Every check is tested against a right
solution and several wrong ones (tests/test_checks_00.py to test_checks_08.py). The solutions themselves
stay in the lessons, in collapsed blocks.
"""

from .lesson00 import check_discounted_return, check_scale_action, check_play_random_episode
from .lesson01 import check_critic_update
from .lesson02 import check_bias_from_rollout
from .lesson03 import check_twin_critic_loss
from .lesson04 import check_smoothed_target_action
from .lesson05 import check_delayed_update
from .lesson06 import check_count_updates, check_td3_update
from .lesson07 import check_sign_flip_p
from .lesson08 import check_collect, check_critic_loss

__all__ = [
    "check_discounted_return", "check_scale_action", "check_play_random_episode",
    "check_critic_update",
    "check_bias_from_rollout",
    "check_twin_critic_loss",
    "check_smoothed_target_action",
    "check_delayed_update",
    "check_td3_update", "check_count_updates",
    "check_sign_flip_p",
    "check_collect", "check_critic_loss",
]
