"""The training loop of the paper's Algorithm 1: explore, store, update, evaluate, checkpoint."""

from __future__ import annotations

import copy
import dataclasses
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import gymnasium as gym
import numpy as np
import torch

from .agent import TD3, resolve_device
from .config import TD3Config, preset
from .envs import check_spaces, env_id_of, make_env
from .progress import progress_bar
from .rollout import Episode, evaluation_episodes
from .run import (BEST_NAME, CHECKPOINT_NAME, RunState, best_evaluation, config_for_resume, episode_seed,
                  load_run)


class TrainingDiverged(RuntimeError):
    """A loss or parameter became NaN or infinite."""


@dataclass
class TrainResult:
    """What ``train`` returns: the finished run (``RunState``) under the same names, without its
    replay buffer and random-number streams: the agent, one history row per evaluation, the steps
    taken (``step``), the training time and where the run was saved."""

    agent: TD3
    history: list[dict]
    env_id: str
    seed: int
    config: TD3Config
    step: int = 0
    wall_s: float = 0.0
    checkpoint_path: Path | None = None

    @classmethod
    def of(cls, run: RunState) -> "TrainResult":
        """The result of a finished run: each field read from the run's attribute of that name."""
        return cls(**{f.name: getattr(run, f.name) for f in dataclasses.fields(cls)})

    @property
    def steps(self) -> int:
        """``step`` under its earlier name."""
        return self.step

    @property
    def final_return(self) -> float:
        """Mean return of the last evaluation."""
        return self.history[-1]["eval_mean"] if self.history else float("nan")


Probe = Callable[[TD3, list[Episode]], dict]
"""A measurement recorded at each evaluation: (agent, the evaluation's episodes, their states kept) -> {column: number}.
A probe with an ``every`` attribute is recorded only at the evaluations whose step is a multiple of it."""


def train(env_or_id, config: TD3Config | None = None, *, seed: int = 0, device="auto",
          checkpoint_dir=None, progress: bool = True, resume: bool = False,
          save_buffer: bool = False, callback: Callable[[int, TD3], None] | None = None,
          eval_env: gym.Env | None = None, agent: type[TD3] = TD3,
          probes: Sequence[Probe] = ()) -> TrainResult:
    """Train TD3 on an environment (an id or a gymnasium env) and return the agent and its history.

    Random actions for ``start_timesteps``, then pi(s) plus Gaussian noise of
    ``expl_noise`` times each dimension's half-range; one update per step after
    that; a noise-free evaluation every ``eval_freq`` steps on a separate
    environment: ``eval_env``, or by default a copy of the training
    environment with the same wrappers (a fresh one for an id). The budget is
    ``config.total_steps``. With ``checkpoint_dir`` the run is checkpointed at
    the first episode end after each evaluation (the checkpoint then holds no
    half episode), the history is written as CSV beside it, the actor of the
    best evaluation so far is kept as ``best_actor.pt`` (actor only), and
    ``resume=True`` continues from there: with the saved config, or with
    ``config`` when it differs from the saved one in ``total_steps`` alone (a
    raised budget). ``agent`` is the class trained: ``TD3``, or a subclass that
    changes a step of the update (the pitfalls, the lessons' variants); it is
    built once, with ``agent(obs_dim, low, high, config, device)``, and on
    resume loaded from the checkpoint. ``probes`` are measurements recorded in
    each history row beside the return (the course's critic probes, for
    example). ``callback(step, agent)`` runs after each evaluation.
    """
    env, env_id = open_env(env_or_id)
    opened = [env] if isinstance(env_or_id, str) else []
    try:
        if eval_env is None:
            eval_env = make_env(env_id) if isinstance(env_or_id, str) else copy_env(env, env_id)
            opened.append(eval_env)
        run = prepare_run(env, env_id, config, seed, resolve_device(device), checkpoint_dir, resume, agent)
        run.start_saving(save_buffer)
        run_loop(run, env, eval_env, probes=probes, progress=progress, callback=callback)
    finally:
        for e in opened:
            e.close()
    return TrainResult.of(run)


def open_env(env_or_id) -> tuple[gym.Env, str]:
    """The training environment and its id: made from an id, or the learner's own env, checked."""
    if isinstance(env_or_id, str):
        return make_env(env_or_id), env_or_id
    if isinstance(env_or_id, gym.Env):
        env_id = env_id_of(env_or_id)
        check_spaces(env_or_id, env_id)
        return env_or_id, env_id
    raise TypeError(f"train() needs an environment id or a gymnasium.Env, not {env_or_id!r}.")


def copy_env(env: gym.Env, env_id: str) -> gym.Env:
    """A separate evaluation environment with the same wrappers as ``env``.

    A deep copy where the environment allows one; else a new one made from its
    spec (which records the wrappers gymnasium knows how to rebuild).
    """
    try:
        return copy.deepcopy(env)
    except Exception:  # e.g. Box2D and PyBullet worlds cannot be copied
        pass
    if env.spec is not None:
        try:
            return gym.make(env.spec)
        except Exception:
            pass
    raise ValueError(f"Cannot make a separate evaluation environment for {env_id}: it can be neither "
                     "copied nor rebuilt from a registered spec; pass one as train(..., eval_env=...).")


def prepare_run(env, env_id: str, config: TD3Config | None, seed: int, device, checkpoint_dir,
                resume: bool, agent: type[TD3] = TD3) -> RunState:
    """A new run, or the one saved in ``checkpoint_dir`` when resuming (its config, seed and state)."""
    ckpt_path = Path(checkpoint_dir) / CHECKPOINT_NAME if checkpoint_dir is not None else None
    saved = None
    if resume:
        if ckpt_path is None:
            raise ValueError("resume=True needs a checkpoint_dir to resume from.")
        if ckpt_path.exists():
            saved = load_run(ckpt_path, env_id)
            config = config_for_resume(TD3Config.from_dict(saved["agent"]["config"]), config, ckpt_path,
                                       int(saved["step"]))
            seed = int(saved["seed"])
        else:
            warnings.warn(f"No checkpoint in {ckpt_path.parent} yet: starting a new run.", stacklevel=3)
    elif ckpt_path is not None and ckpt_path.exists():
        raise FileExistsError(f"{ckpt_path.parent} already holds a run: resume it (resume=True, --resume) "
                              "or choose another directory.")
    low, high = env.action_space.low, env.action_space.high
    run = RunState(env_id, config or preset(env_id), seed, device, env.observation_space.shape[0], low, high,
                   agent)
    run.checkpoint_path = ckpt_path
    if saved is not None:
        run.load_state_dict(saved, str(ckpt_path))
    return run


def explore(run: RunState, obs, action_space, mu: np.ndarray | None = None) -> np.ndarray:
    """The behaviour policy: uniform in the bounds for ``start_timesteps`` steps, then
    pi(s) + N(0, (expl_noise * h)^2) per dimension (h its half-range), clipped to the bounds.
    ``mu``: the actor's pi(s) when it is already computed (a batch computes all its members' at once)."""
    if run.step < run.config.start_timesteps:
        return run.exploration_rng.uniform(action_space.low, action_space.high).astype(np.float32)
    if mu is None:
        return run.agent.act(obs, noise=run.config.expl_noise, rng=run.exploration_rng)
    return run.agent.explore(mu, run.config.expl_noise, run.exploration_rng)


def update_due(run: RunState) -> bool:
    """Whether the step just taken is followed by an update: after ``start_timesteps``, once the buffer
    holds a batch. The authors' code has no batch check, and needs none with its start_timesteps
    (25,000 > 256); it matters only when start_timesteps < batch_size."""
    return run.step > run.config.start_timesteps and len(run.buffer) >= run.config.batch_size


def evaluation_due(run: RunState) -> bool:
    """Whether the step just taken is followed by an evaluation: every ``eval_freq`` steps, and at the end."""
    return run.step % run.config.eval_freq == 0 or run.step == run.config.total_steps


def run_loop(run: RunState, env, eval_env, *, probes: Sequence[Probe] = (), progress: bool = False,
             callback=None) -> None:
    """Algorithm 1 from step ``run.step`` to ``total_steps``: act, store, update, evaluate, checkpoint."""
    cfg, runner = run.config, Runner(run, env, eval_env)
    runner.start()
    with progress_bar(total=cfg.total_steps, initial=run.step, disable=not progress, unit="step",
                      desc=run.env_id, dynamic_ncols=True) as bar:
        while run.step < cfg.total_steps:
            action = explore(run, runner.obs, env.action_space)
            run.buffer.add(*runner.step(action))
            if update_due(run):
                metrics = run.agent.update(run.buffer.sample(cfg.batch_size, generator=run.minibatch_generator))
                runner.guard.add(metrics["critic_loss"], run.step)
            runner.after_step(probes, callback)
            show_progress(bar, run)
    runner.finish()


@dataclass
class Runner:
    """One run as Algorithm 1's loop steps it: its ``RunState``, its environments and the episode in
    progress. ``run_loop`` steps one; ``train_batched`` steps several in lockstep, each its own ``Runner``."""

    run: RunState
    env: object
    eval_env: object
    guard: DivergenceGuard | None = None
    obs: np.ndarray | None = None
    ep_return: float = 0.0
    terminated: bool = False
    truncated: bool = False
    checkpoint_due: bool = False
    """An evaluation was recorded since the last checkpoint: the next episode end writes one."""
    started: float = 0.0
    """``time.perf_counter()`` at the run's start, less the wall time of its earlier segments (a resumed run)."""
    sync: Callable[[], None] | None = None
    """Brings ``run.agent`` up to date before it is evaluated or saved (a batch copies its member out)."""

    def start(self) -> None:
        """The clock, the divergence guard and the first episode's reset (with the run's episode seed)."""
        run = self.run
        self.started = time.perf_counter() - run.wall_s
        self.guard = DivergenceGuard(run.config.eval_freq + 1, run)  # at most eval_freq updates between checks
        self.obs, _ = self.env.reset(seed=episode_seed(run.seed, run.episode))

    def step(self, action) -> tuple:
        """One environment step; returns its transition (s, a, r, s', terminated) to store: terminated, not
        truncated, since a time limit is no terminal state (see ``bellman_target``)."""
        next_obs, reward, terminated, truncated, _ = self.env.step(action)
        transition = (self.obs, action, reward, next_obs, terminated)
        self.obs, self.ep_return = next_obs, self.ep_return + float(reward)
        self.terminated, self.truncated = terminated, truncated
        self.run.step += 1
        return transition

    def after_step(self, probes: Sequence[Probe] = (), callback=None) -> None:
        """An evaluation when one is due, then at an episode's end the reset and any checkpoint due (so a
        checkpoint holds no half episode)."""
        run = self.run
        if evaluation_due(run):
            self.synced()
            record_evaluation(run, self.eval_env, self.guard, self.started, probes)
            keep_best_actor(run)
            if callback is not None:
                callback(run.step, run.agent)
            self.checkpoint_due = run.checkpoint_path is not None
        if self.terminated or self.truncated:
            run.episode, run.last_return, self.ep_return = run.episode + 1, self.ep_return, 0.0
            self.obs, _ = self.env.reset(seed=episode_seed(run.seed, run.episode))
            if self.checkpoint_due:
                self.synced()
                save_checkpoint(run, self.started, self.guard)
                self.checkpoint_due = False

    def finish(self) -> None:
        """At the budget: a last checkpoint where the last one written is not current, and the wall time."""
        run = self.run
        if run.checkpoint_path is not None and (self.checkpoint_due or not run.checkpoint_path.exists()):
            self.synced()
            save_checkpoint(run, self.started, self.guard)
        run.wall_s = time.perf_counter() - self.started

    def synced(self) -> None:
        if self.sync is not None:
            self.sync()


class DivergenceGuard:
    """Stops a run whose critic loss became non-finite: the losses since the last check are kept on
    the device, so a divergence is found at each evaluation without a host sync per step, and is
    named to the step. Its check also gives the mean loss since the last evaluation."""

    def __init__(self, size: int, run: RunState):
        self.losses = torch.zeros(size, device=run.device)
        self.run = run
        self.n = len(run.critic_losses)  # a resumed run's losses logged before its checkpoint come first
        self.losses[:self.n] = run.critic_losses.to(run.device)
        self.first_step = run.step - self.n + 1  # the step of the first loss logged since the last check

    def add(self, loss: torch.Tensor, step: int) -> None:
        if self.n == 0:
            self.first_step = step
        self.losses[self.n] = loss
        self.n += 1
        if self.n == self.losses.numel():
            self.check()

    def check(self) -> float:
        """The mean of the logged losses (nan if none); raises if any is non-finite."""
        logged = self.losses[:self.n]
        if self.n and not bool(torch.isfinite(logged).all()):
            bad = int(torch.nonzero(~torch.isfinite(logged))[0])
            raise TrainingDiverged(f"Training diverged: the critic loss became non-finite at step "
                                   f"{self.first_step + bad}; {kept_checkpoint(self.run.checkpoint_path)}.")
        mean = float(logged.mean()) if self.n else float("nan")
        self.n = 0
        return mean

    def pending(self) -> torch.Tensor:
        """The losses logged since the last check, on the CPU, for a checkpoint to keep."""
        return self.losses[:self.n].cpu()


def kept_checkpoint(ckpt_path) -> str:
    if ckpt_path is not None and Path(ckpt_path).exists():
        return f"the last good checkpoint is {ckpt_path}"
    return "no checkpoint was written"


def check_finite_weights(run: RunState) -> None:
    """Raise before a non-finite network is evaluated, kept as best or saved."""
    for name, module in (("actor", run.agent.actor), ("critic", run.agent.critic)):
        if not bool(torch.stack([torch.isfinite(p).all() for p in module.parameters()]).all()):
            raise TrainingDiverged(f"Training diverged: the {name}'s weights became non-finite "
                                   f"by step {run.step}; {kept_checkpoint(run.checkpoint_path)}.")


def record_evaluation(run: RunState, eval_env, guard: DivergenceGuard, started: float,
                      probes: Sequence[Probe] = ()) -> None:
    """Check for divergence, evaluate without noise, append a history row (with each probe's columns)."""
    critic_loss = guard.check()
    check_finite_weights(run)
    episodes = evaluation_episodes(run.agent, eval_env, run.config.eval_episodes, seed=run.seed + 100,
                                   keep_states=bool(probes))
    returns = np.array([e.total for e in episodes])
    row = {"step": run.step, "episodes": run.episode, "eval_mean": float(returns.mean()),
           "eval_std": float(returns.std()), "train_return": run.last_return, "critic_loss": critic_loss}
    for probe in probes:
        if run.step % getattr(probe, "every", 1) == 0:
            row.update(probe(run.agent, episodes))
    row["wall_s"] = round(time.perf_counter() - started, 3)
    run.history.append(row)


def keep_best_actor(run: RunState) -> None:
    """Save the actor as ``best_actor.pt`` when the evaluation just recorded is the best so far.

    TD3's evaluation return swings from one evaluation to the next, so the last actor is not
    always the best one (RL Zoo keeps a best model too)."""
    if run.checkpoint_path is not None and best_evaluation(run.history) is run.history[-1]:
        run.agent.save(run.checkpoint_path.parent / BEST_NAME, env_id=run.env_id, actor_only=True)


def save_checkpoint(run: RunState, started: float, guard: DivergenceGuard) -> None:
    check_finite_weights(run)
    run.wall_s = time.perf_counter() - started
    run.critic_losses = guard.pending()
    run.save()


def show_progress(bar, run: RunState) -> None:
    if bar.disable:
        return
    if run.step % 100 == 0 or run.step == run.config.total_steps:
        bar.set_postfix(episode_return=f"{run.last_return:.1f}",
                        eval=f"{run.history[-1]['eval_mean']:.1f}" if run.history else "-", refresh=False)
    bar.update(1)
