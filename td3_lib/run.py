"""The run directory: what a training run saves, how it is read back, and the rules of resuming.

A run directory holds ``checkpoint.pt`` (the whole run: agent, optimizers,
random-number states, counters, history and optionally the replay buffer),
``history.csv`` (one row per evaluation) and ``best_actor.pt`` (the actor of
the best evaluation so far). Every file is written atomically.

A checkpoint's keys are the names of what they hold in ``RunState`` (``step``,
``exploration_rng``, ``minibatch_generator``, ...). Checkpoints of the first
format (``td3_lib.run/1``) named three of them otherwise (``OLD_KEYS``), and those
before format 3 lack the critic losses logged since the last evaluation (``ADDED``);
they are read as the current format, so every earlier run still resumes.
"""

from __future__ import annotations

import shutil
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from .agent import TD3
from .buffer import ReplayBuffer
from .checkpoint import (CheckpointError, atomic_torch_save, atomic_write_text, check_env_id,
                         restore_generator, safe_load)
from .config import TD3Config, preset
from .envs import env_file_name
from .tables import csv_text, read_rows

RUN_FORMAT = "td3_lib.run/3"
OLD_KEYS = {"td3_lib.run/1": {"t": "step", "rng": "exploration_rng", "sample_generator": "minibatch_generator"},
            "td3_lib.run/2": {}}
"""Earlier formats, each with its keys that were renamed: a checkpoint of one is read as RUN_FORMAT."""
ADDED = {"critic_losses": torch.zeros(0)}
"""Keys added since the first format, with the value an earlier checkpoint is read with (format 3: the
critic losses logged since the last evaluation; an earlier run resumed with none, so the first row after
its resume averages only the losses logged after it)."""
RUN_KEYS = ("env_id", "seed", "agent", "step", "episode", "history", "wall_s", "last_return", "critic_losses",
            "exploration_rng", "minibatch_generator", "buffer")
"""What a run checkpoint holds besides its format (``RunState.state_dict``'s keys): one without any of them
is refused, naming what it lacks."""
CHECKPOINT_NAME = "checkpoint.pt"
HISTORY_NAME = "history.csv"
BEST_NAME = "best_actor.pt"
BASE_FIELDS = ("step", "episodes", "eval_mean", "eval_std", "train_return", "critic_loss")
"""The columns every history row has; each probe passed to ``train`` adds its own, and ``wall_s`` comes last."""


def history_fields(history: list[dict]) -> list[str]:
    """The CSV columns of a history: the base ones, each probe's in the order they first appear, wall_s."""
    fields = list(BASE_FIELDS)
    for row in history:
        fields += [k for k in row if k not in fields and k != "wall_s"]
    return fields + ["wall_s"]


def history_csv(history: list[dict]) -> str:
    """The history as CSV text, one row per evaluation."""
    return csv_text(history, history_fields(history))


def read_history(path) -> list[dict]:
    """Read a history CSV back into rows of numbers (``step`` and ``episodes`` as ints)."""
    rows = read_rows(path)
    for row in rows:
        row.update({k: int(row[k]) for k in ("step", "episodes") if k in row})
    return rows


def best_evaluation(history: list[dict]) -> dict:
    """The history row with the highest mean return (the first of equals): the one ``best_actor.pt`` holds."""
    return max(history, key=lambda h: h["eval_mean"])


def wall_clock(seconds: float) -> str:
    """``48 s``, ``81 min``, ``2.2 h``: seconds under 2 minutes, minutes under 2 hours, then hours."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def episode_seed(seed: int, episode: int) -> int:
    """The reset seed of training episode ``episode``: a resumed run replays the same episodes."""
    return int(np.random.SeedSequence([seed, episode]).generate_state(1)[0])


def buffer_capacity(config: TD3Config) -> int:
    """Slots in the replay buffer: ``buffer_size``, or fewer when the run is shorter than that."""
    return min(config.buffer_size, config.total_steps)


class RunState:
    """The state of one training run, which a checkpoint saves and a resume restores.

    ``checkpoint_path`` (None: the run is not saved) and ``save_buffer`` say where and how it is
    saved; they are not part of the saved state (a restored run's ``save_buffer`` says whether its
    checkpoint held the buffer, so a run saved with it goes on saving it)."""

    def __init__(self, env_id: str, config: TD3Config, seed: int, device: torch.device,
                 obs_dim: int, low, high, agent: type[TD3] = TD3):
        self.env_id, self.config, self.seed, self.device = env_id, config, seed, device
        torch.manual_seed(seed)
        self.agent = agent(obs_dim, low, high, config, device)
        self.buffer = ReplayBuffer(obs_dim, len(low), buffer_capacity(config), device)
        # The run's two streams of randomness (the target-smoothing noise has the agent's own):
        self.exploration_rng = np.random.default_rng(seed)  # random actions and exploration noise
        self.minibatch_generator = torch.Generator(device).manual_seed(seed)  # minibatch indices
        self.step = 0  # environment steps taken (t in the paper's Algorithm 1)
        self.episode = 0
        self.history: list[dict] = []
        self.wall_s = 0.0
        self.last_return = float("nan")
        self.critic_losses = torch.zeros(0)  # logged since the last evaluation, whose mean the next row records
        self.checkpoint_path: Path | None = None
        self.save_buffer = False

    def state_dict(self, with_buffer: bool) -> dict:
        """What a checkpoint holds, each under the name of the attribute it is the state of."""
        return {
            "format": RUN_FORMAT, "env_id": self.env_id, "seed": self.seed,
            "agent": self.agent.state_dict(env_id=self.env_id),
            "step": self.step, "episode": self.episode, "history": self.history, "wall_s": self.wall_s,
            "last_return": self.last_return, "critic_losses": self.critic_losses,
            "exploration_rng": self.exploration_rng.bit_generator.state,
            "minibatch_generator": self.minibatch_generator.get_state(),
            "buffer": self.buffer.state_dict() if with_buffer else None,
        }

    def load_state_dict(self, state: dict, source: str) -> None:
        """Restore a saved run into this one; the agent keeps this run's config (a raised ``total_steps``)."""
        self.agent.load_state(state["agent"], source=source)
        self.step, self.episode = int(state["step"]), int(state["episode"])
        self.history, self.wall_s = list(state["history"]), float(state["wall_s"])
        self.last_return = float(state["last_return"])
        self.critic_losses = state["critic_losses"]
        self.exploration_rng.bit_generator.state = state["exploration_rng"]
        restore_generator(self.minibatch_generator, state["minibatch_generator"])
        self.save_buffer = state["buffer"] is not None  # a run saved with its buffer keeps saving it
        if self.save_buffer:
            self.buffer.load_state_dict(state["buffer"])
        else:
            warnings.warn(f"{source} holds no replay buffer: training goes on with an empty one, "
                          "so the resumed run will not match an uninterrupted one "
                          "(pass save_buffer=True / --save-buffer to keep it).", stacklevel=4)

    def start_saving(self, save_buffer: bool) -> None:
        """Before training: keep the buffer in checkpoints when asked, or when the checkpoint this run resumed
        from held it, and check that the checkpoints can be written (``preflight``)."""
        self.save_buffer = save_buffer or self.save_buffer
        if self.checkpoint_path is not None:
            preflight(self.checkpoint_path.parent, self.agent, self.buffer.nbytes() if self.save_buffer else 0)

    def save(self) -> None:
        """Write the history CSV, then the checkpoint beside it, each atomically: a process killed
        between the two leaves the previous checkpoint and a CSV at least as recent, never a
        checkpoint without its CSV (the checkpoint holds the history too, so resuming loses nothing)."""
        atomic_write_text(history_csv(self.history), self.checkpoint_path.parent / HISTORY_NAME)
        atomic_torch_save(self.state_dict(self.save_buffer), self.checkpoint_path)


def as_current_format(state) -> dict | None:
    """A run checkpoint's contents in RUN_FORMAT (an earlier format's keys renamed), or None when
    ``state`` is not a run checkpoint."""
    if not isinstance(state, dict) or state.get("format") not in (RUN_FORMAT, *OLD_KEYS):
        return None
    renamed = OLD_KEYS.get(state["format"], {})
    return {**ADDED, **{renamed.get(key, key): value for key, value in state.items()}, "format": RUN_FORMAT}


def read_run(path, mmap: bool = False) -> dict:
    """A run checkpoint's contents in RUN_FORMAT, refused if the file is not one. ``mmap=True``:
    mapped, not read (a look at its counters or config; the buffer is not read)."""
    state = as_current_format(safe_load(path, mmap=mmap))
    if state is None:
        raise CheckpointError(f"{path} is not a td3_lib training checkpoint.")
    return complete_run(state, path)


def complete_run(state: dict, path) -> dict:
    """A run checkpoint's contents (in RUN_FORMAT), refused when any of ``RUN_KEYS`` is missing."""
    missing = [key for key in RUN_KEYS if key not in state]
    if missing:
        raise CheckpointError(f"{path} is not a complete td3_lib training checkpoint: it has no "
                              f"{', '.join(missing)}.")
    return state


def load_run(path: Path, env_id: str) -> dict:
    """A run checkpoint's contents, refused if it is not one or was trained on another env."""
    state = read_run(path)
    check_env_id(state["env_id"], env_id, path)
    return state


def saved_config(run_dir) -> TD3Config | None:
    """The config of the run saved in ``run_dir`` (None when it holds no checkpoint yet)."""
    path = Path(run_dir) / CHECKPOINT_NAME
    return TD3Config.from_dict(read_run(path, mmap=True)["agent"]["config"]) if path.exists() else None


def saved_step(run_dir) -> int:
    """The step of the run saved in ``run_dir``, 0 when it holds no checkpoint yet."""
    path = Path(run_dir) / CHECKPOINT_NAME
    return int(read_run(path, mmap=True)["step"]) if path.exists() else 0


def load_agent(path, device="cpu", need_env_id: bool = False) -> TD3:
    """The agent of an agent checkpoint (``TD3.save``, ``best_actor.pt``) or of a run's ``checkpoint.pt``.

    ``need_env_id=True`` refuses a checkpoint that does not say which environment it was trained on."""
    state = safe_load(path)
    run = as_current_format(state)
    agent = TD3.from_state_dict(complete_run(run, path)["agent"] if run else state, device=device, source=str(path))
    if need_env_id and agent.env_id is None:
        raise CheckpointError(f"{path} does not say which environment it was trained on.")
    return agent


def default_run_dir(env_id: str, seed: int) -> Path:
    """Where a run is saved when no directory is given: ``runs/ENV_ID-seedSEED``, the id as
    ``env_file_name`` writes it."""
    return Path("runs") / f"{env_file_name(env_id)}-seed{seed}"


def starting_config(env_id: str, settings: str, run_dir, resume: bool, overrides: dict) -> TD3Config:
    """The config a run starts (or resumes) with: with ``resume``, the saved run's config where
    ``run_dir`` holds one, else the preset ``settings`` for ``env_id``; then ``overrides`` (field: value)."""
    config = (saved_config(run_dir) if resume else None) or preset(env_id, settings)
    return replace(config, **overrides)


def run_summary(result, run_dir) -> str:
    """What a finished run made and where it is: the steps, the last and the best evaluation, the files."""
    run_dir, last, best = Path(run_dir), result.history[-1], best_evaluation(result.history)
    return (f"{result.step} steps in {result.wall_s:.0f} s; final evaluation {last['eval_mean']:.1f} "
            f"+- {last['eval_std']:.1f} over {result.agent.config.eval_episodes} episodes\n"
            f"checkpoint {result.checkpoint_path}, curve {run_dir / 'curve.png'}, history {run_dir / HISTORY_NAME}\n"
            f"best evaluation {best['eval_mean']:.1f} at step {best['step']}: its actor is {run_dir / BEST_NAME}")


RESUME_MAY_CHANGE = ("total_steps", "cuda_graph")
"""Config fields a resumed run may change: the budget, and how the same update is executed."""


def config_for_resume(saved: TD3Config, given: TD3Config | None, path: Path, step: int = 0) -> TD3Config:
    """The saved run's config; a given one may change only ``RESUME_MAY_CHANGE``, and its budget may not
    be below ``step``, the step the run was saved at."""
    if given is None:
        return saved
    a, b = saved.to_dict(), given.to_dict()
    diff = [k for k in a if k not in RESUME_MAY_CHANGE and a[k] != b[k]]
    if diff:
        k = diff[0]
        raise CheckpointError(f"{path} was trained with {k}={a[k]!r}, not {b[k]!r}; resume with the same "
                              f"config (only {' and '.join(RESUME_MAY_CHANGE)} may change).")
    if given.total_steps < step:
        raise CheckpointError(f"{path} is saved at step {step}: a budget of {given.total_steps} steps (total_steps, "
                              f"--steps) is below it; resume with at least {step}.")
    return given


def preflight(ckpt_dir: Path, agent: TD3, buffer_bytes: int) -> None:
    """Fail before training, not hours into it, if checkpoints cannot be written."""
    try:
        ckpt_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text("ok\n", ckpt_dir / ".write-test")
        (ckpt_dir / ".write-test").unlink()
    except OSError as e:
        raise OSError(f"Checkpoint directory {ckpt_dir} is not writable: {e.strerror or e}.") from None
    for name in (CHECKPOINT_NAME, HISTORY_NAME, BEST_NAME):  # left by a process killed mid-write
        for stale in ckpt_dir.glob(f".{name}.*.tmp"):
            stale.unlink(missing_ok=True)
    n_params = sum(p.numel() for m in (agent.actor, agent.critic) for p in m.parameters())
    need = 2 * (n_params * 4 * 6 + buffer_bytes)  # weights, targets, 2 Adam moments; temp + old file
    free = shutil.disk_usage(ckpt_dir).free
    if free < need:
        raise OSError(f"Not enough free disk space in {ckpt_dir} for checkpoints: "
                      f"{free / 1e6:.1f} MB free, about {need / 1e6:.1f} MB needed.")
