"""What many test files share: a small config, an agent and a batch built from seeds, a broken env, and a
way to interrupt a training run at a step (``stop_at``), and the experiment scripts as modules."""

import importlib.util
import sys
from pathlib import Path

import gymnasium as gym
import pytest
import torch

from td3_lib import Batch, TD3, TD3Config
from td3_lib.run import RunState

# One torch thread per test process: the tests' networks are small, and a second thread only spins
# against whatever else the machine runs (measured: several times slower on a busy 2-core machine).
torch.set_num_threads(1)

SMALL = TD3Config(hidden_sizes=(32, 32), batch_size=16)
"""A network small enough for exact tests of the update."""
RUN = TD3Config(hidden_sizes=(32, 32), start_timesteps=300, total_steps=600, eval_freq=200,
                eval_episodes=1, batch_size=64)
"""A training run of seconds on Pendulum-v1: 300 random steps, 300 updates, an evaluation every 200 steps."""
LOW, HIGH = [-2.0, 0.0], [2.0, 1.0]  # asymmetric bounds: half-ranges 2 and 0.5


@pytest.fixture
def small_config() -> TD3Config:
    return SMALL


@pytest.fixture
def run_config() -> TD3Config:
    return RUN


def new_agent(config: TD3Config = SMALL, seed: int = 0, low=LOW, high=HIGH) -> TD3:
    """A TD3 agent with 3 observations and the given bounds, its weights drawn after manual_seed(seed)."""
    torch.manual_seed(seed)
    return TD3(3, low, high, config)


def new_batch(n: int = 16, seed: int = 1, low=LOW, high=HIGH) -> Batch:
    """A batch of ``n`` transitions drawn from ``seed``; actions inside the bounds; about 1 in 10 terminal."""
    g = torch.Generator().manual_seed(seed)
    low, high = torch.tensor(low), torch.tensor(high)
    return Batch(torch.randn(n, 3, generator=g), low + torch.rand(n, len(low), generator=g) * (high - low),
                 torch.randn(n, 1, generator=g), torch.randn(n, 3, generator=g),
                 (torch.rand(n, 1, generator=g) > 0.1).float())


@pytest.fixture
def make_agent():
    return new_agent


@pytest.fixture
def make_batch():
    return new_batch


class NaNRewardAt(gym.Wrapper):
    """Returns a NaN reward at step ``at`` (counted from the wrapper's creation), as a broken env might."""

    def __init__(self, env, at: int):
        super().__init__(env)
        self.step_count, self.at = 0, at

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.step_count += 1
        return obs, (float("nan") if self.step_count == self.at else reward), terminated, truncated, info


@pytest.fixture
def nan_reward_at():
    return NaNRewardAt


class Interrupt(Exception):
    """Raised by ``stop_at``'s callback: a training run stopped as a killed one would be."""


def stop_at(step: int):
    """A ``train`` callback that raises ``Interrupt`` at the first evaluation at or after ``step``:
    the run keeps its last checkpoint, as a process killed there would."""
    def callback(t, agent):
        if t >= step:
            raise Interrupt
    return callback


ROW = {"step": 800, "episodes": 4, "eval_mean": -900.0, "eval_std": 0.0, "train_return": -900.0, "critic_loss": 1.0,
       "wall_s": 1.0}
"""A history row of a Pendulum-v1 run at step 800."""


def saved_run(run_dir: Path, config: TD3Config, step: int | None = None, seed: int = 0, history=(),
              save_buffer: bool = False) -> Path:
    """The checkpoint of a Pendulum-v1 run saved without training, at ``step`` (default: its whole budget) with
    ``history`` as given; its path."""
    run = RunState("Pendulum-v1", config, seed, torch.device("cpu"), 3, [-2.0], [2.0])
    run.step, run.history = config.total_steps if step is None else step, list(history)
    run.checkpoint_path, run.save_buffer = Path(run_dir) / "checkpoint.pt", save_buffer
    run.save()
    return run.checkpoint_path


EXPERIMENT_SCRIPTS = Path(__file__).resolve().parent.parent / "experiments"


def script_module(path: Path, name: str, registered: bool = False):
    """The script at ``path`` as a module called ``name``, loaded from its file (scripts are not a package).
    ``registered`` puts it in sys.modules first, for a script whose dataclasses look their module up there;
    left out, its functions pickle by value, as a Ray worker that cannot import it needs."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    if registered:
        sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def experiment_script(name: str):
    """experiments/NAME.py as a module (it imports only td3_lib)."""
    return script_module(EXPERIMENT_SCRIPTS / f"{name}.py", f"experiment_{name}")
