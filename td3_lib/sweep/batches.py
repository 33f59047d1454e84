"""Batched sweeps: the runs of a sweep that fit one process trained as batches (``td3_lib.train_batched``).

With ``sweep(..., batched=True)`` the grid's runs are grouped by what a batch's members must share: the
environment, the variant's environment factory, the network shapes, the batch size and how the update
runs (``td3_lib.batched.SHARED_FIELDS``); runs of a variant whose agent is a subclass of ``TD3`` (one that
changes the update) stay single runs. Each group is cut into batches, one process each: on the CPU as
many batches as the cluster has cores (so every core trains), on a GPU one batch per group. Each batch is
one Ray task, ``train_batch``, which locks, records and finishes each member's run directory as
``train_run`` does a single run's, so that the sweep directory holds the same files either way.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import traceback
from pathlib import Path

import torch

from .. import provenance
from ..batched import SHARED_FIELDS
from ..checkpoint import atomic_write_text
from ..config import TD3Config
from .grid import DONE_NAME, ERROR_NAME, SPEC_NAME, SweepRun
from .tasks import (MAX_RETRIES, checkpoint_step, import_ray, max_rss_mb, ray_outcome, registration, run_here, run_lock,
                    train_run)
from .variants import TD3, get_variant, qualified_name
from ..batched_training import train_batched


def batchable(run: SweepRun) -> bool:
    """Whether a run can be a member of a batch: its variant trains plain ``TD3``."""
    return get_variant(run.variant).agent is TD3


def group_key(run: SweepRun, spec: dict) -> tuple:
    """What the members of one batch share: environment, environment factory and ``SHARED_FIELDS``."""
    config = spec["configs"][f"{run.env_id}/{run.variant}"]
    variant = get_variant(run.variant)
    return (run.env_id, qualified_name(variant.env), tuple(qualified_name(p) for p in variant.probes),
            *(json.dumps(config[name]) for name in SHARED_FIELDS))


def batches(todo: list[SweepRun], spec: dict, slots: int) -> tuple[list[list[SweepRun]], list[SweepRun]]:
    """``todo`` as batches (each group of runs that can share a process, cut into at most ``slots`` batches
    of near-equal size, in submission order) and the runs that train alone."""
    groups: dict[tuple, list[SweepRun]] = {}
    alone = []
    for run in todo:
        if batchable(run):
            groups.setdefault(group_key(run, spec), []).append(run)
        else:
            alone.append(run)
    cut = []
    for runs in groups.values():
        n = max(1, min(slots, len(runs)))
        cut += [runs[i::n] for i in range(n)]
    return cut, alone


def train_batch(runs: list[SweepRun], spec: dict, out_dir: str, device: str, probes=(), registration=None) -> dict:
    """A batch of sweep runs, as one Ray task: each member's directory locked, its provenance recorded and
    its ``done.json`` (or ``error.txt``) written as ``train_run`` does for one run; the members train as one
    ``train_batched`` call, with one torch thread, each resumed from its own checkpoint. A member that
    diverges stops alone. Returns each run's outcome, by its position in ``runs``."""
    torch.set_num_threads(1)
    if not (Path(out_dir) / SPEC_NAME).exists():
        raise FileNotFoundError(f"{out_dir} is not visible on {socket.gethostname()}: on a cluster the "
                                "sweep directory must be on a filesystem every machine shares.")
    dirs = [run.path(out_dir) for run in runs]
    with contextlib.ExitStack() as locks:
        for run_dir in dirs:
            locks.enter_context(run_lock(run_dir))
        outcomes = {i: {"status": "finished", **json.loads((d / DONE_NAME).read_text())}
                    for i, d in enumerate(dirs) if (d / DONE_NAME).exists()}
        todo = [i for i in range(len(runs)) if i not in outcomes]
        if todo:
            outcomes.update(train_members([runs[i] for i in todo], [dirs[i] for i in todo], spec, device, probes,
                                          registration, todo))
    return outcomes


def train_members(runs, dirs, spec, device, probes, registration, positions) -> dict:
    """Train the unfinished members of a batch and write each one's ending; outcomes by position."""
    resumed = [checkpoint_step(d) for d in dirs]
    for run, run_dir, step in zip(runs, dirs, resumed):
        provenance.record(run_dir, step, provenance.current(run.env_id, device))
    variant = get_variant(runs[0].variant)
    if registration is not None:
        import gymnasium as gym
        gym.registry.setdefault(runs[0].env_id, registration)
    try:
        results = train_batched(runs[0].env_id, [TD3Config.from_dict(spec["configs"][f"{r.env_id}/{r.variant}"])
                                                 for r in runs], [r.seed for r in runs], run_dirs=dirs, device=device,
                                progress=False, resume=True, save_buffer=True,
                                probes=(*probes, *variant.probes), make=variant.environment if variant.env else None,
                                stop_on_divergence=False)
    except Exception as e:
        for run_dir in dirs:
            atomic_write_text(traceback.format_exc(), run_dir / ERROR_NAME)
        return {i: {"status": "failed", "error": f"{type(e).__name__}: {e}"} for i in positions}
    return {i: ending(result, run_dir, step, len(runs)) for i, result, run_dir, step in zip(positions, results, dirs, resumed)}


def ending(result, run_dir: Path, resumed_from: int, members: int) -> dict:
    """Write a member's ``done.json`` (or, for one that diverged, its ``error.txt``); its outcome."""
    if isinstance(result, Exception):
        atomic_write_text(f"{type(result).__name__}: {result}\n", run_dir / ERROR_NAME)
        return {"status": "failed", "error": f"{type(result).__name__}: {result}"}
    done = {"steps": result.step, "final_eval": result.final_return, "wall_s": round(result.wall_s, 2),
            "resumed_from": resumed_from, "host": socket.gethostname(), "pid": os.getpid(),
            "max_rss_mb": max_rss_mb(), "batch_members": members}
    atomic_write_text(json.dumps(done) + "\n", run_dir / DONE_NAME)
    (run_dir / ERROR_NAME).unlink(missing_ok=True)
    return {"status": "finished", **done}


def run_with_batches_on_ray(todo: list[SweepRun], spec: dict, out_dir: Path, where, bar, probes=()) -> dict:
    """Submit the batches and the runs that train alone as Ray tasks; follow them with the progress bar (a
    run counts when it finishes, a batch's runs when the batch does); their outcomes by run."""
    ray = import_ray()
    slots = 1 if where.device == "cuda" else max(1, int(ray.cluster_resources().get("CPU", 1) // where.num_cpus))
    cut, alone = batches(todo, spec, slots)
    out_path = str(Path(out_dir).resolve())
    batch_task = ray.remote(train_batch).options(num_cpus=where.num_cpus, num_gpus=1.0 if where.num_gpus else 0,
                                                 max_retries=MAX_RETRIES, retry_exceptions=False)
    single_task = ray.remote(train_run).options(num_cpus=where.num_cpus, num_gpus=where.num_gpus,
                                                max_retries=MAX_RETRIES, retry_exceptions=False)
    pending = {batch_task.remote(runs, spec, out_path, where.device, tuple(probes), registration(runs[0].env_id)): runs
               for runs in cut}
    pending.update({single_task.remote(r.env_id, get_variant(r.variant), r.seed, spec["configs"][f"{r.env_id}/{r.variant}"],
                                       out_path, where.device, tuple(probes), registration(r.env_id)): r for r in alone})
    outcomes: dict[SweepRun, dict] = {}
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=1.0)
        for ref in ready:
            runs = pending.pop(ref)
            if isinstance(runs, SweepRun):
                outcomes[runs] = ray_outcome(ref, runs, out_dir)
                bar.update(1)
                continue
            outcome = ray_outcome(ref, runs[0], out_dir)  # by position; a lost task's failure for all
            outcomes.update({run: outcome[i] if "status" not in outcome else outcome for i, run in enumerate(runs)})
            bar.update(len(runs))
    return outcomes


def run_batches_here(todo: list[SweepRun], spec: dict, out_dir: Path, device: str, bar, probes=()) -> dict:
    """The batches (one of each group) and the runs that train alone, in this process one after another."""
    threads, out_path, outcomes = torch.get_num_threads(), str(Path(out_dir).resolve()), {}
    cut, alone = batches(todo, spec, 1)
    try:
        for runs in cut:
            done = train_batch(runs, spec, out_path, device, tuple(probes))
            outcomes.update({run: done[i] for i, run in enumerate(runs)})
            bar.update(len(runs))
        outcomes.update(run_here(alone, spec, out_dir, device, bar, probes))
    finally:
        torch.set_num_threads(threads)
    return outcomes
