"""How a check calls the learner's function: a stub or an error becomes the verdict, never an exception;
and whether the learner's function reached td3_lib's own steps instead of writing them."""

from __future__ import annotations

import sys
import warnings

from ...agent import TD3

OWN_CRITIC_STEPS = frozenset({TD3.target_q.__code__, TD3.critic_loss.__code__, TD3.critic_step.__code__,
                              TD3.update.__code__})
"""td3_lib's own target, critic loss and critic step, seen by their code objects however they are reached."""


def learners_call(fn, *args):
    """``fn(*args)``, or the "Not yet" sentence for a stub or an error."""
    try:
        return fn(*args), None
    except NotImplementedError:
        return None, f"Not yet: {fn.__name__} is still the stub: write its body."
    except Exception as e:  # the learner's code: any error becomes the verdict
        return None, f"Not yet: {fn.__name__} raised {type(e).__name__}: {e}"


class CallLog:
    """A ``sys.setprofile`` hook that counts the calls into functions whose code is in ``codes``."""

    def __init__(self, codes):
        self.codes, self.count = codes, 0

    def __call__(self, frame, event, arg) -> None:
        if event == "call" and frame.f_code in self.codes:
            self.count += 1


def watched_call(fn, codes, *args):
    """``learners_call(fn, *args)`` and whether it reached a function whose code is in ``codes`` (one of
    td3_lib's own steps, however reached). torch's warnings are silenced: a check names the slip itself."""
    log, previous = CallLog(codes), sys.getprofile()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sys.setprofile(log)
        try:
            got, problem = learners_call(fn, *args)
        finally:
            sys.setprofile(previous)
    return got, problem, log.count > 0
