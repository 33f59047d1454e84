"""Test configuration: quick mode for the notebooks, quiet headless plotting."""

import os

# Every notebook shrinks its step budgets under TD3_QUICK=1, so `pytest --nbval`
# runs in minutes on a CPU. The notebook kernels inherit this environment.
os.environ.setdefault("TD3_QUICK", "1")
