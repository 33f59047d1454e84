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
import traceback
from pathlib import Path

from ..batched import SHARED_FIELDS
from ..checkpoint import atomic_write_text
from ..config import TD3Config
from .grid import ERROR_NAME, SweepRun, run_config
from .tasks import (failed_outcome, finished_outcome, follow, import_ray, install_registration, ray_task,
                    record_provenance, registration, run_here, run_lock, start_worker, submit_runs, thread_count_kept,
                    worker_path, write_done)
from .variants import TD3, get_variant, qualified_name
from ..batched_training import train_batched


def batchable(run: SweepRun) -> bool:
    """Whether a run can be a member of a batch: its variant trains plain ``TD3``."""
    return get_variant(run.variant).agent is TD3


def group_key(run: SweepRun, spec: dict) -> tuple:
    """What the members of one batch share: environment, environment factory and ``SHARED_FIELDS``."""
    config = run_config(spec, run.env_id, run.variant)
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
    start_worker(out_dir)
    dirs = [run.path(out_dir) for run in runs]
    with contextlib.ExitStack() as locks:
        for run_dir in dirs:
            locks.enter_context(run_lock(run_dir))
        finished = {i: finished_outcome(d) for i, d in enumerate(dirs)}
        outcomes = {i: outcome for i, outcome in finished.items() if outcome is not None}
        todo = [i for i in range(len(runs)) if i not in outcomes]
        if todo:
            outcomes.update(train_members([runs[i] for i in todo], [dirs[i] for i in todo], spec, out_dir, device,
                                          probes, registration, todo))
    return outcomes


def train_members(runs, dirs, spec, out_dir, device, probes, registration, positions) -> dict:
    """Train the unfinished members of a batch, each one's provenance recorded first as ``train_run`` records a
    run's, and write each one's ending; outcomes by position."""
    variant = get_variant(runs[0].variant)
    try:
        resumed = [record_provenance(d, out_dir, run.env_id, device) for run, d in zip(runs, dirs)]
        install_registration(runs[0].env_id, registration)
        results = train_batched(runs[0].env_id, [TD3Config.from_dict(run_config(spec, r.env_id, r.variant))
                                                 for r in runs], [r.seed for r in runs], run_dirs=dirs, device=device,
                                progress=False, resume=True, save_buffer=True,
                                probes=(*probes, *variant.probes), make=variant.environment if variant.env else None,
                                stop_on_divergence=False)
    except Exception as e:
        for run_dir in dirs:
            atomic_write_text(traceback.format_exc(), run_dir / ERROR_NAME)
        return {i: failed_outcome(e) for i in positions}
    return {i: ending(result, run_dir, step, len(runs)) for i, result, run_dir, step in zip(positions, results, dirs, resumed)}


def ending(result, run_dir: Path, resumed_from: int, members: int) -> dict:
    """Write a member's ``done.json`` (``write_done``'s, with the batch's size) or, for one that diverged, its
    ``error.txt``; its outcome."""
    if isinstance(result, Exception):
        outcome = failed_outcome(result)
        atomic_write_text(outcome["error"] + "\n", run_dir / ERROR_NAME)
        return outcome
    return write_done(run_dir, result, resumed_from, batch_members=members)


def run_with_batches_on_ray(todo: list[SweepRun], spec: dict, out_dir: Path, where, bar, probes=()) -> dict:
    """Submit the batches and the runs that train alone as Ray tasks; follow them with the progress bar (a
    run counts when it finishes, a batch's runs when the batch does); their outcomes by run."""
    cpus = import_ray().cluster_resources().get("CPU", 1)
    slots = 1 if where.device == "cuda" else max(1, int(cpus // where.num_cpus))
    cut, alone = batches(todo, spec, slots)
    out_path = worker_path(out_dir)
    batch_task = ray_task(train_batch, where, num_gpus=1.0 if where.num_gpus else 0)
    pending = {batch_task.remote(runs, spec, out_path, where.device, tuple(probes), registration(runs[0].env_id)): runs
               for runs in cut}
    pending.update(submit_runs(alone, spec, out_path, where, probes))
    return follow(pending, out_dir, bar)


def run_batches_here(todo: list[SweepRun], spec: dict, out_dir: Path, device: str, bar, probes=()) -> dict:
    """The batches (one of each group) and the runs that train alone, in this process one after another; the
    process's torch thread count is restored."""
    out_path, outcomes = worker_path(out_dir), {}
    cut, alone = batches(todo, spec, 1)
    with thread_count_kept():
        for runs in cut:
            done = train_batch(runs, spec, out_path, device, tuple(probes))
            outcomes.update({run: done[i] for i, run in enumerate(runs)})
            bar.update(len(runs))
    outcomes.update(run_here(alone, spec, out_dir, device, bar, probes))
    return outcomes
