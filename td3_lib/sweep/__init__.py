"""Sweeps: environments x variants x seeds, each run a Ray task; restartable; the paper's Table 2.

A sweep is a grid of ordinary ``train`` runs. Each run uses its environment's
``preset``, its variant (a registered name, ``variants.py``: the config switches,
the agent class, the environment and probes; ``VARIANTS`` is the paper's Table 2)
and the sweep's overrides, and lives in its own run directory::

    OUT/sweep.json                  the sweep's settings; a restart with other settings is refused
    OUT/ENV/VARIANT/seedS/          checkpoint.pt, history.csv, best_actor.pt (as train writes them)
                         done.json  written when train returned at the full budget: the run is finished
                         provenance.json  the commit, versions and machine that trained it (td3_lib.provenance)
                         error.txt  the traceback, when train raised
                         lock       held (flock) by the worker training the run; it holds host and pid
    OUT/summary.csv                 env, variant, n_seeds, mean, std, ci_low, ci_high
    OUT/summary.md                  the same as a markdown table in the shape of the paper's Table 2, then each
                                    variant minus TD3 (interval, p, whether it separates)
    OUT/curves-ENV.png              learning curves per variant, mean and band over seeds

A run is finished when its ``done.json`` exists; nothing ever writes into a
finished run again. (A run killed after ``train`` returned but before its
``done.json`` was written is resumed at its budget: ``train`` returns at once,
and the marker is written.) Every other run is (re)started by the next sweep with the
same ``OUT``: from its checkpoint when it has one (the replay buffer is kept
in checkpoints, so a resumed run equals an uninterrupted one), else from
scratch. A run whose worker died (killed, out of memory, a node lost) is
retried by Ray from its checkpoint, up to ``MAX_RETRIES`` times.

Ray is an optional extra (``pip install td3_lib[sweep]``): it is imported only
when a sweep starts, so ``import td3_lib`` works without it. By default a
sweep starts a local Ray on this machine: one CPU and one torch thread per
run, as many runs at once as there are cores. ``address`` joins a running Ray
cluster instead; every machine then needs td3_lib installed and ``OUT`` at
the same path (a shared filesystem). Runs on a GPU ask for ``gpus_per_run``
of one, so that several share it.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..progress import progress_bar
# The scores a sweep reports are td3_lib.stats's, importable from here too.
from ..stats import (LAST_K, bootstrap_ci, bootstrap_difference_ci, final_score, mean_and_std,
                     permutation_p_value, score_row)
from .grid import (DONE_NAME, ERROR_NAME, SPEC_NAME, SweepRun, check_overrides, check_sweep_dir, grid,
                   open_sweep_dir, parse_overrides, parse_seeds, run_config, spec_difference, submission_order,
                   sweep_spec, variant_config)
from .variants import (PROBES, REGISTRY, SWITCHES, VARIANTS, Variant, get_probe, get_variant, register,
                       register_probe)
from .summary import RunRecord, SweepResult, load_sweep, read_summary, summarize
from .tasks import (LOCK_NAME, LocalRayDidNotStart, check_device, check_reachable, max_rss_mb, placement,
                    ray_session, run_here, run_on_ray, start_local_ray)
from .batches import run_batches_here, run_with_batches_on_ray

__all__ = ["sweep", "VARIANTS", "SWITCHES", "Variant", "REGISTRY", "PROBES", "register", "register_probe",
           "get_variant", "get_probe", "variant_config", "run_config", "parse_overrides", "parse_seeds", "sweep_spec",
           "spec_difference", "open_sweep_dir", "check_overrides", "grid", "submission_order", "SweepRun",
           "summarize", "load_sweep", "read_summary", "final_score", "mean_and_std", "score_row", "bootstrap_ci",
           "bootstrap_difference_ci", "permutation_p_value", "RunRecord",
           "SweepResult", "LAST_K", "DONE_NAME", "ERROR_NAME", "SPEC_NAME", "LOCK_NAME", "start_local_ray",
           "LocalRayDidNotStart",
           "max_rss_mb"]


def sweep(envs, variants=("TD3",), seeds=(0,), *, out_dir, steps: int | None = None,
          overrides: dict | None = None, address: str | None = None, device: str = "auto",
          gpus_per_run: float = 0.25, last_k: int = LAST_K, progress: bool = True,
          probes=(), settings: str = "course", only=None, batched: bool = False) -> SweepResult:
    """Train every environment x variant x seed as a Ray task and summarize them (see the module doc).

    ``variants`` are registered names (``get_variant``: the paper's ``VARIANTS`` and any registered
    since); ``overrides`` map TD3Config fields to values for every run (on top of each environment's
    ``preset(env_id, settings)``: ``"course"`` or ``"paper"``); ``steps`` replaces the preset budget.
    Finished runs in ``out_dir`` are skipped, unfinished ones resumed; a run that raises is
    reported in the result's ``failed`` while the others go on. ``only`` (SweepRun cells of the
    grid) trains just those. ``address``: None starts a local Ray (should it not come up, the runs
    train in this process, one after another); HOST:PORT or auto joins a cluster. ``probes``
    (probes or registered names) are recorded in every run's history (as ``train``'s; module-level
    functions, so that Ray can send them to its workers), beside each variant's own. ``batched=True``
    trains the runs that fit one process as batches, one process each (``td3_lib.sweep.batches``:
    one batch per core on the CPU, one per GPU), and the others alone; the sweep directory holds the
    same files either way. Writes summary.csv, summary.md and curves-ENV.png.
    """
    from ..envs import make_env

    started = time.perf_counter()
    probes = tuple(get_probe(p) for p in probes)
    spec = sweep_spec(envs, variants, seeds, overrides, steps, settings, probes)
    check_device(device, gpus_per_run)
    if address is not None:
        check_reachable(address)  # each refusal before sweep.json is written, so a retry may change anything
    for env_id in spec["envs"]:
        make_env(env_id).close()  # an unknown or unusable environment, named before anything starts
    out_dir = Path(out_dir)
    check_sweep_dir(out_dir, spec)
    runs = grid(spec)
    wanted = runs if only is None else [r for r in runs if r in set(only)]
    todo = submission_order([r for r in wanted if not (r.path(out_dir) / DONE_NAME).exists()], spec)
    bar_settings = dict(total=len(wanted), initial=len(wanted) - len(todo), unit="run", desc="sweep",
                        disable=not progress, dynamic_ncols=True)
    ray_start_s = train_runs(todo, spec, out_dir, address=address, device=device, gpus_per_run=gpus_per_run,
                             batched=batched, probes=probes, bar_settings=bar_settings)
    result = summarize(out_dir, last_k)
    result.wall_s, result.ray_start_s = time.perf_counter() - started, ray_start_s
    return result


def train_runs(todo, spec: dict, out_dir: Path, *, address, device: str, gpus_per_run: float, batched: bool,
               probes, bar_settings: dict) -> float:
    """Train the runs ``todo`` on Ray (``sweep``'s arguments say how); Ray's start-up time in seconds.
    ``sweep.json`` is written once Ray is up and has placed the runs: a Ray that cannot be joined, or
    that refuses the device (``device="cuda"`` on a cluster without a GPU), leaves nothing behind, and
    a retry may change any setting. Where a local Ray does not start, the runs train here instead."""
    if not todo:
        open_sweep_dir(out_dir, spec)
        return 0.0
    try:
        with ray_session(address) as ray_start_s:
            where = placement(device, gpus_per_run)
            open_sweep_dir(out_dir, spec)
            with progress_bar(**bar_settings) as bar:
                (run_with_batches_on_ray if batched else run_on_ray)(todo, spec, out_dir, where, bar, probes)
        return ray_start_s
    except LocalRayDidNotStart as e:  # raised before any run started: train them here instead
        print(f"{e}\nTraining the {len(todo)} runs in this process, one after another, instead.")
        open_sweep_dir(out_dir, spec)
        with progress_bar(**bar_settings) as bar:
            (run_batches_here if batched else run_here)(todo, spec, out_dir, device, bar, probes)
        return 0.0
