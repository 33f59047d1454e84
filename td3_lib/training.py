"""The training loop of the paper's Algorithm 1, with evaluation, checkpoints and resume."""

from __future__ import annotations

import csv
import io
import shutil
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import gymnasium as gym
import numpy as np
import torch
from tqdm.auto import tqdm

from .agent import TD3, resolve_device
from .buffer import ReplayBuffer
from .checkpoint import CheckpointError, atomic_torch_save, atomic_write_text, safe_load
from .config import TD3Config, preset
from .envs import check_spaces, env_id_of, make_env

RUN_FORMAT = "td3_lib.run/1"
CHECKPOINT_NAME = "checkpoint.pt"
HISTORY_NAME = "history.csv"
BEST_NAME = "best_actor.pt"
HISTORY_FIELDS = ("step", "episodes", "eval_mean", "eval_std", "train_return", "critic_loss", "wall_s")


class TrainingDiverged(RuntimeError):
    """A loss or parameter became NaN or infinite."""


@dataclass
class TrainResult:
    """What ``train`` returns: the agent and one history row per evaluation."""

    agent: TD3
    history: list[dict]
    env_id: str
    checkpoint_path: Path | None = None
    steps: int = 0
    wall_s: float = 0.0

    @property
    def final_return(self) -> float:
        """Mean return of the last evaluation."""
        return self.history[-1]["eval_mean"] if self.history else float("nan")


def evaluate(agent: TD3, env_or_id, episodes: int = 10, seed: int | None = None) -> np.ndarray:
    """Returns of ``episodes`` noise-free episodes; episode i is reset with ``seed + i``."""
    if episodes < 1:
        raise ValueError(f"episodes={episodes!r} is invalid: it must be an integer >= 1.")
    env = make_env(env_or_id) if isinstance(env_or_id, str) else env_or_id
    returns = np.zeros(episodes)
    try:
        for i in range(episodes):
            obs, _ = env.reset(seed=None if seed is None else seed + i)
            done = False
            while not done:
                obs, reward, terminated, truncated, _ = env.step(agent.act(obs))
                returns[i] += reward
                done = terminated or truncated
    finally:
        if isinstance(env_or_id, str):
            env.close()
    return returns


def episode_seed(seed: int, episode: int) -> int:
    """The reset seed of training episode ``episode``: a resumed run replays the same episodes."""
    return int(np.random.SeedSequence([seed, episode]).generate_state(1)[0])


def history_csv(history: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=HISTORY_FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(history)
    return out.getvalue()


def read_history(path) -> list[dict]:
    """Read a history CSV back into rows of numbers."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return [{k: (int(float(v)) if k in ("step", "episodes") else float(v)) for k, v in r.items()}
            for r in rows]


def _preflight(ckpt_dir: Path, agent: TD3, buffer_bytes: int) -> None:
    """Fail before training, not hours into it, if checkpoints cannot be written."""
    try:
        ckpt_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text("ok\n", ckpt_dir / ".write-test")
        (ckpt_dir / ".write-test").unlink()
    except OSError as e:
        raise OSError(f"Checkpoint directory {ckpt_dir} is not writable: {e.strerror or e}.") from None
    n_params = sum(p.numel() for m in (agent.actor, agent.critic) for p in m.parameters())
    need = 2 * (n_params * 4 * 6 + buffer_bytes)  # weights, targets, 2 Adam moments; temp + old file
    free = shutil.disk_usage(ckpt_dir).free
    if free < need:
        raise OSError(f"Not enough free disk space in {ckpt_dir} for checkpoints: "
                      f"{free / 1e6:.1f} MB free, about {need / 1e6:.1f} MB needed.")


def _config_for_resume(saved: TD3Config, given: TD3Config | None, path: Path) -> TD3Config:
    """The saved run's config; a given one may only raise total_steps."""
    if given is None:
        return saved
    a, b = saved.to_dict(), given.to_dict()
    diff = [k for k in a if k != "total_steps" and a[k] != b[k]]
    if diff:
        k = diff[0]
        raise CheckpointError(f"{path} was trained with {k}={a[k]!r}, not {b[k]!r}; "
                              "resume with the same config (only total_steps may change).")
    return given


class _Run:
    """The state of one training run, which a checkpoint saves and a resume restores."""

    def __init__(self, env_id: str, config: TD3Config, seed: int, device: torch.device,
                 obs_dim: int, low, high):
        self.env_id, self.config, self.seed, self.device = env_id, config, seed, device
        torch.manual_seed(seed)
        self.agent = TD3(obs_dim, low, high, config, device)
        self.buffer = ReplayBuffer(obs_dim, len(low), min(config.buffer_size, config.total_steps), device)
        self.rng = np.random.default_rng(seed)  # exploration noise and random actions
        self.sample_generator = torch.Generator(device).manual_seed(seed)  # minibatch indices
        self.t = 0
        self.episode = 0
        self.history: list[dict] = []
        self.wall_s = 0.0
        self.last_return = float("nan")

    def state_dict(self, with_buffer: bool) -> dict:
        return {
            "format": RUN_FORMAT, "env_id": self.env_id, "seed": self.seed,
            "agent": self.agent.state_dict(env_id=self.env_id),
            "t": self.t, "episode": self.episode, "history": self.history, "wall_s": self.wall_s,
            "last_return": self.last_return,
            "rng": self.rng.bit_generator.state,
            "sample_generator": self.sample_generator.get_state(),
            "buffer": self.buffer.state_dict() if with_buffer else None,
        }

    def load_state_dict(self, state: dict, source: str) -> None:
        self.agent = TD3.from_state_dict(state["agent"], self.device, source=source)
        self.t, self.episode = int(state["t"]), int(state["episode"])
        self.history, self.wall_s = list(state["history"]), float(state["wall_s"])
        self.last_return = float(state["last_return"])
        self.rng.bit_generator.state = state["rng"]
        self.sample_generator.set_state(state["sample_generator"].cpu())
        if state["buffer"] is not None:
            self.buffer.load_state_dict(state["buffer"])
        else:
            warnings.warn(f"{source} holds no replay buffer: training goes on with an empty one, "
                          "so the resumed run will not match an uninterrupted one "
                          "(pass save_buffer=True / --save-buffer to keep it).", stacklevel=3)


def load_agent(path, device="cpu") -> TD3:
    """The agent of an agent checkpoint (``TD3.save``, ``best_actor.pt``) or of a run's ``checkpoint.pt``."""
    state = safe_load(path, device=device)
    if isinstance(state, dict) and state.get("format") == RUN_FORMAT:
        state = state["agent"]
    return TD3.from_state_dict(state, device=device, source=str(path))


def best_evaluation(history: list[dict]) -> dict:
    """The history row with the highest mean return (the first of equals): the one ``best_actor.pt`` holds."""
    return max(history, key=lambda h: h["eval_mean"])


def _load_run(path: Path, env_id: str, device) -> dict:
    state = safe_load(path, device=device)
    if not isinstance(state, dict) or state.get("format") != RUN_FORMAT:
        raise CheckpointError(f"{path} is not a td3_lib training checkpoint.")
    if state["env_id"] != env_id:
        raise CheckpointError(f"{path} was trained on {state['env_id']}, not {env_id}.")
    return state


def train(env_or_id, config: TD3Config | None = None, *, seed: int = 0, device="auto",
          checkpoint_dir=None, progress: bool = True, resume: bool = False,
          save_buffer: bool = False, callback: Callable[[int, TD3], None] | None = None) -> TrainResult:
    """Train TD3 on an environment (an id or a gymnasium env) and return the agent and its history.

    Random actions for ``start_timesteps``, then mu(s) plus Gaussian noise of
    ``expl_noise`` times each dimension's half-range; one update per step after
    that; a noise-free evaluation every ``eval_freq`` steps on a separate
    environment. With ``checkpoint_dir`` the run is checkpointed at the first
    episode end after each evaluation (the checkpoint then holds no half
    episode), the history is written as CSV beside it, the actor of the best
    evaluation so far is kept as ``best_actor.pt`` (actor only), and
    ``resume=True`` continues from there to the same total budget.
    ``callback(step, agent)`` runs after each evaluation.
    """
    if isinstance(env_or_id, str):
        env_id = env_or_id
        env = make_env(env_id)
    elif isinstance(env_or_id, gym.Env):
        env, env_id = env_or_id, env_id_of(env_or_id)
        check_spaces(env, env_id)
        if env.spec is None:
            raise ValueError(f"{env_id} has no registered spec: train() needs one (or an id) "
                             "to make a separate evaluation environment.")
    else:
        raise TypeError(f"train() needs an environment id or a gymnasium.Env, not {env_or_id!r}.")
    eval_env = make_env(env_id)
    dev = resolve_device(device)
    ckpt_dir = Path(checkpoint_dir) if checkpoint_dir is not None else None
    ckpt_path = ckpt_dir / CHECKPOINT_NAME if ckpt_dir is not None else None

    saved = None
    if resume:
        if ckpt_path is None:
            raise ValueError("resume=True needs a checkpoint_dir to resume from.")
        if ckpt_path.exists():
            saved = _load_run(ckpt_path, env_id, dev)
            config = _config_for_resume(TD3Config.from_dict(saved["agent"]["config"]), config, ckpt_path)
            seed = int(saved["seed"])
        else:
            warnings.warn(f"No checkpoint in {ckpt_dir} yet: starting a new run.", stacklevel=2)
    elif ckpt_path is not None and ckpt_path.exists():
        raise FileExistsError(f"{ckpt_dir} already holds a run: resume it (resume=True, --resume) "
                              "or choose another directory.")
    config = config or preset(env_id)

    obs_dim = env.observation_space.shape[0]
    low, high = env.action_space.low, env.action_space.high
    run = _Run(env_id, config, seed, dev, obs_dim, low, high)
    if saved is not None:
        run.load_state_dict(saved, str(ckpt_path))
    if ckpt_dir is not None:
        buffer_bytes = run.buffer.obs.element_size() * run.buffer.capacity * (2 * obs_dim + len(low) + 2)
        _preflight(ckpt_dir, run.agent, buffer_bytes if save_buffer else 0)
    try:
        _loop(run, env, eval_env, ckpt_path, save_buffer, progress, callback)
    finally:
        eval_env.close()
        if isinstance(env_or_id, str):
            env.close()
    return TrainResult(run.agent, run.history, env_id, ckpt_path, run.t, run.wall_s)


def _loop(run: _Run, env, eval_env, ckpt_path, save_buffer, progress, callback) -> None:
    cfg, agent, buffer, rng = run.config, run.agent, run.buffer, run.rng
    half_range = (env.action_space.high - env.action_space.low) / 2
    # One slot per update since the last check, so a divergence is found
    # without a host sync per step, and named to the step.
    losses = torch.zeros(cfg.eval_freq + 1000, device=run.device)
    n_losses, loss_start = 0, run.t
    started = time.perf_counter() - run.wall_s
    checkpoint_due = False

    def check_finite() -> float:
        nonlocal n_losses, loss_start
        logged = losses[:n_losses]
        if n_losses and not bool(torch.isfinite(logged).all()):
            bad = int(torch.nonzero(~torch.isfinite(logged))[0])
            kept = f"the last good checkpoint is {ckpt_path}" if ckpt_path and ckpt_path.exists() \
                else "no checkpoint was written"
            raise TrainingDiverged(f"Training diverged: the critic loss became non-finite at step "
                                   f"{loss_start + bad + 1}; {kept}.")
        mean = float(logged.mean()) if n_losses else float("nan")
        n_losses, loss_start = 0, run.t
        return mean

    def save() -> None:
        check_finite_params()
        atomic_torch_save(run.state_dict(save_buffer), ckpt_path)
        atomic_write_text(history_csv(run.history), ckpt_path.parent / HISTORY_NAME)

    def check_finite_params() -> None:
        for name, module in (("actor", agent.actor), ("critic", agent.critic)):
            if not all(bool(torch.isfinite(p).all()) for p in module.parameters()):
                raise TrainingDiverged(f"Training diverged: the {name}'s weights became non-finite "
                                       f"by step {run.t}; the last good checkpoint is kept.")

    def keep_if_best(eval_mean: float) -> None:
        # TD3's evaluation return oscillates from one evaluation to the next, so
        # the last actor is not always the best one (RL Zoo keeps a best model too).
        if ckpt_path is not None and (not run.history or eval_mean > best_evaluation(run.history)["eval_mean"]):
            agent.save(ckpt_path.parent / BEST_NAME, env_id=run.env_id, actor_only=True)

    def evaluate_now() -> None:
        returns = evaluate(agent, eval_env, cfg.eval_episodes, seed=run.seed + 100)
        keep_if_best(float(returns.mean()))
        run.history.append({"step": run.t, "episodes": run.episode,
                            "eval_mean": float(returns.mean()), "eval_std": float(returns.std()),
                            "train_return": run.last_return, "critic_loss": check_finite(),
                            "wall_s": round(time.perf_counter() - started, 3)})
        if callback is not None:
            callback(run.t, agent)

    bar = tqdm(total=cfg.total_steps, initial=run.t, disable=not progress, unit="step",
               desc=run.env_id, dynamic_ncols=True)
    obs, _ = env.reset(seed=episode_seed(run.seed, run.episode))
    ep_return = 0.0
    while run.t < cfg.total_steps:
        if run.t < cfg.start_timesteps:
            action = rng.uniform(env.action_space.low, env.action_space.high).astype(np.float32)
        else:
            action = agent.act(obs)
            action = np.clip(action + rng.normal(0.0, 1.0, action.shape) * (cfg.expl_noise * half_range),
                             env.action_space.low, env.action_space.high).astype(np.float32)
        next_obs, reward, terminated, truncated, _ = env.step(action)
        buffer.add(obs, action, reward, next_obs, terminated)
        obs, ep_return = next_obs, ep_return + float(reward)
        run.t += 1

        if run.t > cfg.start_timesteps and len(buffer) >= cfg.batch_size:
            metrics = agent.update(buffer.sample(cfg.batch_size, generator=run.sample_generator))
            losses[n_losses] = metrics["critic_loss"]
            n_losses += 1
            if n_losses == losses.numel():
                check_finite()

        if run.t % cfg.eval_freq == 0 or run.t == cfg.total_steps:
            evaluate_now()
            checkpoint_due = ckpt_path is not None
            bar.set_postfix(episode_return=f"{run.last_return:.1f}",
                            eval=f"{run.history[-1]['eval_mean']:.1f}", refresh=False)
        if terminated or truncated:
            run.episode += 1
            run.last_return = ep_return
            obs, _ = env.reset(seed=episode_seed(run.seed, run.episode))
            ep_return = 0.0
            bar.set_postfix(episode_return=f"{run.last_return:.1f}",
                            eval=f"{run.history[-1]['eval_mean']:.1f}" if run.history else "-",
                            refresh=False)
            if checkpoint_due:
                run.wall_s = time.perf_counter() - started
                save()
                checkpoint_due = False
        bar.update(1)
    run.wall_s = time.perf_counter() - started
    if ckpt_path is not None and (checkpoint_due or not ckpt_path.exists()):
        save()
    bar.close()
