"""Training K runs in one process: K environments stepped in lockstep, one batched update, K ordinary runs.

``train_batched`` trains one run per seed (and config), each a *member* of one ``BatchedTD3``: every
iteration steps each unfinished member's environment once, stores its transition, and updates all the
members that are learning in one batched update. Everything else is each member's own, as ``train`` keeps
it for a single run (``RunState``): its seed, its exploration and minibatch random streams, its episodes
(reset with the run's episode seeds, ending on their own), its evaluations, probes, best actor and
checkpoints, written to its own run directory in the single run's format. So a member's directory is an
ordinary run's: ``collect``, ``evaluate``, ``play`` and ``train --resume`` read it as such, and a batched
run killed at any moment resumes each member from its own last checkpoint.

Member k computes what a single run with its seed and config computes: the same initial weights, the same
transitions, minibatches and noise, and an update equal to ``TD3.update`` (tests/test_batched.py). On the
CPU the two agree to the last bit; where a device's batched kernels round differently from its
single-matrix ones, the runs agree to float tolerance at first and then drift apart, as two runs on two
machines do (docs/batched.md).
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .agent import resolve_device
from .batched import BatchedTD3
from .buffer import StackedReplayBuffers
from .config import TD3Config
from .envs import make_env
from .progress import progress_bar
from .training import Probe, Runner, TrainingDiverged, TrainResult, explore, prepare_run, update_due


@dataclasses.dataclass
class Member(Runner):
    """One run of a batch as the loop steps it: a ``Runner``, and what stopped it if it diverged."""

    error: TrainingDiverged | None = None
    """What stopped the run, when it diverged (its last good checkpoint stays)."""

    @property
    def finished(self) -> bool:
        return self.error is not None or self.run.step >= self.run.config.total_steps


def train_batched(env_id: str, configs: Sequence[TD3Config] | TD3Config, seeds: Sequence[int], *, run_dirs=None,
                  device="auto", progress: bool = True, resume: bool = False, save_buffer: bool = False,
                  probes: Sequence[Probe] = (), callback: Callable | None = None,
                  make: Callable[[str], object] | None = None,
                  stop_on_divergence: bool = True) -> list[TrainResult | TrainingDiverged]:
    """Train one TD3 run per seed on ``env_id``, all in one process and one batched update (module doc).

    ``configs``: one ``TD3Config`` for every run, or one per seed; they may differ in anything but the
    network shapes, the batch size and ``bf16``/``cuda_graph`` (``batched.SHARED_FIELDS``): the tricks,
    noise scales, learning rates, delays and budgets. ``run_dirs`` (one per seed, or None for runs that are
    not saved) take each run's checkpoint, history and best actor, as ``train``'s ``checkpoint_dir``;
    ``resume=True`` resumes each from its own. ``make(env_id)`` builds each environment (default
    ``make_env``). ``callback(k, step, agent)`` runs after each evaluation of member k. Returns each run's
    ``TrainResult``, in the order of ``seeds``. A run whose critic loss or weights become non-finite raises
    ``TrainingDiverged``, as ``train`` does; with ``stop_on_divergence=False`` it stops alone (its last good
    checkpoint kept), the others train on, and its place in the list holds the error.
    """
    members = open_members(env_id, configs, seeds, run_dirs, resolve_device(device), resume, make or make_env)
    try:
        for member in members:
            member.run.start_saving(save_buffer)
        batched = BatchedTD3([m.run.agent for m in members])
        replay = StackedReplayBuffers([m.run.buffer for m in members])
        run_members(members, batched, replay, probes, progress, callback, stop_on_divergence)
    finally:
        for member in members:
            member.env.close()
            member.eval_env.close()
    return [TrainResult.of(m.run) if m.error is None else m.error for m in members]


def open_members(env_id: str, configs, seeds: Sequence[int], run_dirs, device, resume: bool, make) -> list[Member]:
    """Each seed's run (new, or resumed from its directory) with its training and evaluation environments."""
    seeds = list(seeds)
    configs = [configs] * len(seeds) if isinstance(configs, TD3Config) else list(configs)
    run_dirs = [None] * len(seeds) if run_dirs is None else list(run_dirs)
    if not seeds or len(configs) != len(seeds) or len(run_dirs) != len(seeds):
        raise ValueError(f"A batch of {len(seeds)} seeds needs as many configs and run directories, or one config "
                         f"for all (got {len(configs)} configs and {len(run_dirs)} run directories).")
    named = [Path(d).resolve() for d in run_dirs if d is not None]
    if len(set(named)) != len(named):
        raise ValueError(f"Run directories {[str(d) for d in run_dirs]} repeat one: give each run its own.")
    members = []
    try:
        for config, seed, run_dir in zip(configs, seeds, run_dirs):
            env, eval_env = make(env_id), make(env_id)
            members.append(Member(None, env, eval_env))
            members[-1].run = prepare_run(env, env_id, config, seed, device, run_dir, resume)
    except BaseException:
        for member in members:
            member.env.close()
            member.eval_env.close()
        raise
    return members


def run_members(members: list[Member], batched: BatchedTD3, replay: StackedReplayBuffers, probes, progress: bool,
                callback, stop_on_divergence: bool = True) -> None:
    """Algorithm 1 for every member, in lockstep, from each one's step to its budget (``run_loop``'s steps)."""
    callbacks = [None if callback is None else functools.partial(callback, k) for k in range(len(members))]
    for k, member in enumerate(members):
        member.sync = functools.partial(batched.write_member, k, member.run.agent)  # copied out of the batch
        member.start()
    total = sum(m.run.config.total_steps for m in members)
    with progress_bar(total=total, initial=sum(m.run.step for m in members), disable=not progress, unit="step",
                      desc=f"{members[0].run.env_id} x{len(members)}", dynamic_ncols=True) as bar:
        while not all(m.finished for m in members):
            stepping = [k for k, m in enumerate(members) if not m.finished]
            step_environments(members, stepping, batched, replay)
            learn(members, stepping, batched, replay)
            for k in stepping:
                try:
                    members[k].after_step(probes, callbacks[k])
                except TrainingDiverged as error:
                    if stop_on_divergence:
                        raise
                    members[k].error = error
            bar.update(len(stepping))
    for member in members:
        if member.error is None:
            member.finish()


def step_environments(members: list[Member], stepping: list[int], batched: BatchedTD3,
                      replay: StackedReplayBuffers) -> None:
    """One environment step of each member in ``stepping``, its transition stored: random actions for its
    first ``start_timesteps``, then its actor's (one batched forward for all) plus its exploration noise."""
    acting = any(members[k].run.step >= members[k].run.config.start_timesteps for k in stepping)
    mu = batched.act(np.stack([m.obs for m in members])) if acting else None  # no actor in the random phase
    rows = []
    for k in stepping:
        member = members[k]
        rows.append(member.step(explore(member.run, member.obs, member.env.action_space,
                                        None if mu is None else mu[k])))
    replay.add(*(np.stack(column) for column in zip(*rows)), members=stepping)


def learn(members: list[Member], stepping: list[int], batched: BatchedTD3, replay: StackedReplayBuffers) -> None:
    """One batched update of the members whose step gives them one (``update_due``); each logs its critic loss."""
    active = np.zeros(len(members), dtype=bool)
    active[[k for k in stepping if update_due(members[k].run)]] = True
    if not active.any():
        return
    batch = replay.sample(batched.config.batch_size, [m.run.minibatch_generator for m in members], np.flatnonzero(active))
    losses = batched.update(batch, active)["critic_loss"]
    for k in np.flatnonzero(active):
        members[k].guard.add(losses[k], members[k].run.step)
