"""The lessons' exercise checks: each takes the learner's function and returns a verdict.

A lesson calls its check in one line (``check_td_target(td_target)``); the check runs the learner's
function on cases it builds, compares with the right answer computed here, and returns a sentence that
starts with "Right" or with "Not yet" and says what differs. Every check is tested against a right
solution and several wrong ones (tests/test_checks.py). The solutions themselves stay in the lessons,
in collapsed blocks.
"""

from __future__ import annotations

# ------------------------------------------------------------------ lesson 00

# ------------------------------------------------------------------ lesson 01

# ------------------------------------------------------------------ lesson 02

# ------------------------------------------------------------------ lesson 03

# ------------------------------------------------------------------ lesson 04

# ------------------------------------------------------------------ lesson 05

# ------------------------------------------------------------------ lesson 06

# ------------------------------------------------------------------ lesson 07

# ------------------------------------------------------------------ lesson 08
from .pitfall_checks import check_collect, check_critic_loss  # noqa: E402,F401  (their machinery lives there)
