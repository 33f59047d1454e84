"""How a check calls the learner's function: a stub or an error becomes the verdict, never an exception."""

from __future__ import annotations


def learners_call(fn, *args):
    """``fn(*args)``, or the "Not yet" sentence for a stub or an error."""
    try:
        return fn(*args), None
    except NotImplementedError:
        return None, f"Not yet: {fn.__name__} is still the stub: write its body."
    except Exception as e:  # the learner's code: any error becomes the verdict
        return None, f"Not yet: {fn.__name__} raised {type(e).__name__}: {e}"
