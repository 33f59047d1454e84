"""Sweeps: environments x variants x seeds, each run a Ray task; restartable; the paper's Table 2.

A sweep is a grid of ordinary ``train`` runs. Each run uses its environment's
``preset``, the switches of its variant (``VARIANTS``, the one table that maps
a variant's name to config switches) and the sweep's overrides, and lives in
its own run directory::

    OUT/sweep.json                  the sweep's settings; a restart with other settings is refused
    OUT/ENV/VARIANT/seedS/          checkpoint.pt, history.csv, best_actor.pt (as train writes them)
                         done.json  written when train returned at the full budget: the run is finished
                         error.txt  the traceback, when train raised
                         lock       held (flock) by the worker training the run; it holds host and pid
    OUT/summary.csv                 env, variant, n_seeds, mean, std, ci_low, ci_high
    OUT/summary.md                  the same as a markdown table in the shape of the paper's Table 2
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

import contextlib
import csv
import dataclasses
import json
import logging
import os
import socket
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

try:  # Unix; on Windows runs are not locked and report no memory peak
    import fcntl
    import resource
except ImportError:
    fcntl = resource = None

from .checkpoint import atomic_write_text
from .config import TD3Config, preset
from .run import CHECKPOINT_NAME, HISTORY_NAME, read_history
from .plots import seed_band

SWEEP_FORMAT = "td3_lib.sweep/1"
SPEC_NAME = "sweep.json"
DONE_NAME = "done.json"
ERROR_NAME = "error.txt"
LOCK_NAME = "lock"
SUMMARY_NAME = "summary.csv"
TABLE_NAME = "summary.md"
SUMMARY_FIELDS = ("env", "variant", "n_seeds", "mean", "std", "ci_low", "ci_high")
LAST_K = 3
"""Final score of a run: the mean of its last LAST_K evaluations (the paper: the last 10 of 200)."""
MAX_RETRIES = 3
"""Times Ray reruns a run whose worker died; each retry resumes from the run's checkpoint."""
SWITCHES = ("clipped_double_q", "target_policy_smoothing", "delayed_policy_updates")

# The paper's Table 2: TD3; "our DDPG" (AHE: TD3's architecture, hyperparameters
# and exploration, all three tricks off); AHE plus one trick; TD3 minus one
# trick. CDQ: clipped double Q-learning, TPS: target policy smoothing,
# DP: delayed policy updates. The paper's other "DDPG" row (the original
# architecture) is not reproduced.
VARIANTS: dict[str, dict[str, bool]] = {
    "TD3": dict(clipped_double_q=True, target_policy_smoothing=True, delayed_policy_updates=True),
    "DDPG": dict(clipped_double_q=False, target_policy_smoothing=False, delayed_policy_updates=False),
    "DDPG+DP": dict(clipped_double_q=False, target_policy_smoothing=False, delayed_policy_updates=True),
    "DDPG+TPS": dict(clipped_double_q=False, target_policy_smoothing=True, delayed_policy_updates=False),
    "DDPG+CDQ": dict(clipped_double_q=True, target_policy_smoothing=False, delayed_policy_updates=False),
    "TD3-DP": dict(clipped_double_q=True, target_policy_smoothing=True, delayed_policy_updates=False),
    "TD3-TPS": dict(clipped_double_q=True, target_policy_smoothing=False, delayed_policy_updates=True),
    "TD3-CDQ": dict(clipped_double_q=False, target_policy_smoothing=True, delayed_policy_updates=True),
}
"""Variant name -> the three TD3Config switches. The one place that defines a variant."""


# ---------------------------------------------------------------- the grid and its configs

def check_variant(variant: str) -> None:
    if variant not in VARIANTS:
        raise ValueError(f"Unknown variant {variant!r}; allowed: {', '.join(VARIANTS)}.")


def check_overrides(overrides: dict) -> None:
    """Overrides name TD3Config fields; the switches belong to the variant, the budget to ``steps``."""
    known = [f.name for f in dataclasses.fields(TD3Config)]
    allowed = [k for k in known if k not in SWITCHES and k != "total_steps"]
    for name in overrides:
        if name not in known:
            raise ValueError(f"Unknown TD3Config field {name!r}; allowed: {', '.join(allowed)}.")
        if name in SWITCHES:
            raise ValueError(f"{name} is set by the variant, not by an override: choose variants "
                             f"from {', '.join(VARIANTS)}.")
        if name == "total_steps":
            raise ValueError("total_steps is the sweep's budget: set it with steps= (--steps), "
                             "not as an override.")


def variant_config(env_id: str, variant: str, overrides: dict | None = None,
                   steps: int | None = None) -> TD3Config:
    """The config of one sweep run: ``preset(env_id)``, then ``overrides``, the budget ``steps``
    and the variant's switches (``VARIANTS[variant]``)."""
    check_variant(variant)
    overrides = dict(overrides or {})
    check_overrides(overrides)
    if steps is not None:
        overrides["total_steps"] = steps
    return dataclasses.replace(preset(env_id), **overrides, **VARIANTS[variant])


def parse_value(name: str, text: str):
    """A ``--set`` value as the type of the TD3Config field ``name`` (tuples as ``64,64``)."""
    default = {f.name: f.default for f in dataclasses.fields(TD3Config)}[name]
    kind = {bool: "true or false", tuple: "a list of integers, e.g. 64,64",
            int: "an integer", float: "a number"}[type(default)]
    try:
        if isinstance(default, bool):
            return {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}[
                text.lower()]
        if isinstance(default, tuple):
            return tuple(int(x) for x in text.split(","))
        if isinstance(default, int):
            value = float(text)  # 25000, 25_000 and 2.5e4 alike
            if value != int(value):
                raise ValueError
            return int(value)
        return float(text)
    except (ValueError, KeyError, OverflowError):
        raise ValueError(f"--set {name}={text}: {text!r} is not {kind}.") from None


def parse_overrides(texts) -> dict:
    """``["hidden_sizes=64,64", "actor_lr=1e-3"]`` -> ``{"hidden_sizes": (64, 64), "actor_lr": 0.001}``."""
    overrides = {}
    for text in texts:
        name, sep, value = text.partition("=")
        if not sep or not name:
            raise ValueError(f"--set {text!r} must be FIELD=VALUE, e.g. hidden_sizes=64,64.")
        check_overrides({name.strip(): None})
        overrides[name.strip()] = parse_value(name.strip(), value.strip())
    return overrides


def parse_seeds(text: str) -> list[int]:
    """``"0,1,2"`` or ``"0-4"`` (both ends included) -> a list of seeds >= 0."""
    seeds = []
    for part in text.split(","):
        lo, dash, hi = part.strip().partition("-")
        try:
            seeds += list(range(int(lo), int(hi) + 1)) if dash else [int(lo)]
        except ValueError:
            raise ValueError(f"Seeds {text!r}: use integers >= 0 such as 0,1,2 or 0-4.") from None
    return seeds


@dataclass(frozen=True)
class SweepRun:
    """One cell of the grid: an environment, a variant and a seed."""

    env_id: str
    variant: str
    seed: int

    def path(self, out_dir) -> Path:
        return Path(out_dir) / self.env_id / self.variant / f"seed{self.seed}"


def sweep_spec(envs, variants, seeds, overrides: dict | None = None, steps: int | None = None) -> dict:
    """The sweep's settings as saved in ``sweep.json``, checked: the resolved config of every
    environment x variant included, so a restart with other presets is refused too."""
    envs = [envs] if isinstance(envs, str) else list(envs)
    variants = variants.split(",") if isinstance(variants, str) else list(variants)
    seeds = [seeds] if isinstance(seeds, int) else list(seeds)
    for name, values in (("environment", envs), ("variant", variants), ("seed", seeds)):
        if not values:
            raise ValueError(f"A sweep needs at least one {name}.")
        if len(set(values)) != len(values):
            raise ValueError(f"The {name}s {values} repeat one; give each once.")
    if any(not isinstance(s, int) or isinstance(s, bool) or s < 0 for s in seeds):
        raise ValueError(f"Seeds {seeds}: each must be an integer >= 0.")
    if steps is not None and (not isinstance(steps, int) or steps < 1):
        raise ValueError(f"steps={steps!r}: it must be a positive integer.")
    configs = {f"{e}/{v}": variant_config(e, v, overrides, steps).to_dict() for e in envs for v in variants}
    spec = {"format": SWEEP_FORMAT, "envs": envs, "variants": variants, "seeds": seeds,
            "steps": steps, "overrides": dict(overrides or {}), "configs": configs}
    return json.loads(json.dumps(spec))  # tuples as lists: as it reads back from sweep.json


def spec_difference(saved: dict, spec: dict) -> str | None:
    """The first difference between two sweep specs, in words; None if they are the same."""
    for key in ("envs", "variants", "seeds", "steps", "overrides"):
        if saved.get(key) != spec[key]:
            return f"{key} is {saved.get(key)!r} there, {spec[key]!r} now"
    for name, config in spec["configs"].items():
        old = saved.get("configs", {}).get(name, {})
        for key, value in config.items():
            if old.get(key) != value:
                return f"the {name} config has {key}={old.get(key)!r} there, {value!r} now"
    return None


def open_sweep_dir(out_dir, spec: dict) -> None:
    """Write ``sweep.json`` into a new or empty ``out_dir``, or check that it holds this same sweep."""
    out_dir = Path(out_dir)
    spec_path = out_dir / SPEC_NAME
    if spec_path.exists():
        saved = json.loads(spec_path.read_text())
        if saved.get("format") != SWEEP_FORMAT:
            raise ValueError(f"{spec_path} is not a td3_lib sweep file.")
        diff = spec_difference(saved, spec)
        if diff:
            raise ValueError(f"{out_dir} holds another sweep ({diff}): start it again with the same "
                             "settings, or choose another --out.")
        return
    if out_dir.exists() and any(out_dir.iterdir()):
        raise ValueError(f"{out_dir} is not empty and holds no {SPEC_NAME}: choose a new or empty "
                         "directory for a sweep.")
    atomic_write_text(json.dumps(spec, indent=1) + "\n", spec_path)


# ---------------------------------------------------------------- one run, inside a Ray worker

@contextlib.contextmanager
def run_lock(run_dir: Path):
    """Hold the run's lock file while training it: a second worker (a retry while a lost one
    still runs) waits; the lock goes with the process, however it ends."""
    run_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(run_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.write(fd, f"{socket.gethostname()} {os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)  # releases the lock


def is_running(run_dir: Path) -> bool:
    """Whether a worker holds the run's lock now."""
    if fcntl is None:
        return False
    try:
        fd = os.open(run_dir / LOCK_NAME, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def checkpoint_step(run_dir: Path) -> int:
    """The step a run's checkpoint holds, 0 without one (memory-mapped: the buffer is not read)."""
    try:
        state = torch.load(run_dir / CHECKPOINT_NAME, map_location="cpu", weights_only=True, mmap=True)
        return int(state["t"])
    except Exception:  # none, or unreadable: train says which when it resumes
        return 0


def max_rss_mb() -> float | None:
    """This process's peak resident memory so far, in MB (Linux reports it in kB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1) if resource else None


def train_run(env_id: str, variant: str, seed: int, config: dict, out_dir: str, device: str) -> dict:
    """One sweep run, as a Ray task: train it (or resume it) to its budget with one torch thread.

    Writes ``done.json`` when ``train`` returns; when it raises, the traceback
    goes to ``error.txt`` and the outcome says failed (the task itself succeeds).
    """
    from .training import train

    torch.set_num_threads(1)
    if not (Path(out_dir) / SPEC_NAME).exists():
        raise FileNotFoundError(f"{out_dir} is not visible on {socket.gethostname()}: on a cluster the "
                                "sweep directory must be on a filesystem every machine shares.")
    run_dir = SweepRun(env_id, variant, seed).path(out_dir)
    with run_lock(run_dir):
        if (run_dir / DONE_NAME).exists():  # finished by an earlier try of this task
            return {"status": "finished", **json.loads((run_dir / DONE_NAME).read_text())}
        try:
            resumed_from = checkpoint_step(run_dir)
            result = train(env_id, TD3Config.from_dict(config), seed=seed, device=device,
                           checkpoint_dir=run_dir, progress=False,
                           resume=(run_dir / CHECKPOINT_NAME).exists(), save_buffer=True)
        except Exception as e:
            atomic_write_text(traceback.format_exc(), run_dir / ERROR_NAME)
            return {"status": "failed", "error": f"{type(e).__name__}: {e}"}
        done = {"steps": result.steps, "final_eval": result.final_return, "wall_s": round(result.wall_s, 2),
                "resumed_from": resumed_from, "host": socket.gethostname(), "pid": os.getpid(),
                "max_rss_mb": max_rss_mb()}
        atomic_write_text(json.dumps(done) + "\n", run_dir / DONE_NAME)
        (run_dir / ERROR_NAME).unlink(missing_ok=True)
    return {"status": "finished", **done}


# ---------------------------------------------------------------- Ray: connect, place, run

def import_ray():
    try:
        import ray
    except ImportError:
        raise ImportError("Sweeps run on Ray, which is not installed: pip install 'td3_lib[sweep]' "
                          "(or pip install 'ray[default]').") from None
    return ray


def check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Refuse, in one line, a Ray address nothing answers at (Ray itself would retry for minutes)."""
    if address in ("auto", "local"):
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"Ray address {address!r} must be HOST:PORT (e.g. 10.0.0.1:6379), "
                         "ray://HOST:10001 or auto.")
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as e:
        raise ConnectionError(f"Cannot reach a Ray cluster at {address}: {e.strerror or e}; start one "
                              "there with `ray start --head`, or check the address.") from None


def start_local_ray(num_cpus: int | None = None, attempts: int = 2) -> None:
    """Start Ray on this machine (all its cores unless ``num_cpus``), quietly, without the dashboard.

    On a heavily loaded machine Ray's raylet can give up waiting for its own
    helper processes; the start is then tried once more before giving up.
    """
    ray = import_ray()
    for attempt in range(1, attempts + 1):
        try:
            ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=False,
                     logging_level=logging.ERROR)
            return
        except Exception as e:  # Ray raises a bare Exception when its node does not come up
            ray.shutdown()
            if attempt == attempts:
                raise ConnectionError(f"Ray did not start on this machine ({str(e).splitlines()[0]}); "
                                      "if the machine is busy, try again when it is not.") from None


@contextlib.contextmanager
def ray_session(address: str | None):
    """Ray for the sweep; yields its start-up time in seconds. A Ray already initialized in this
    process (a notebook's, a test's) is used as it is; one started here is shut down after."""
    if address is not None:
        check_reachable(address)
    ray = import_ray()
    if ray.is_initialized():
        yield 0.0
        return
    started = time.perf_counter()
    if address is None:
        start_local_ray()
    else:
        try:
            ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
        except ConnectionError as e:
            raise ConnectionError(f"Cannot join a Ray cluster at {address}: "
                                  f"{str(e).splitlines()[0]}") from None
    try:
        yield time.perf_counter() - started
    finally:
        ray.shutdown()


@dataclass(frozen=True)
class Placement:
    """Where each run trains, and the share of a machine Ray reserves for it."""

    device: str
    num_cpus: float
    num_gpus: float


def check_device(device: str, gpus_per_run: float) -> None:
    if device not in ("auto", "cpu", "cuda"):
        raise ValueError(f"device={device!r}: a sweep runs on 'auto', 'cpu' or 'cuda'.")
    if not 0 < gpus_per_run <= 1:
        raise ValueError(f"gpus_per_run={gpus_per_run!r}: it must be in (0, 1], e.g. 0.25 for four "
                         "runs on one GPU.")


def placement(device: str, gpus_per_run: float, cpus_per_run: float = 1.0) -> Placement:
    """``auto``: a GPU share per run if the cluster has GPUs, else the CPU."""
    check_device(device, gpus_per_run)
    n_gpus = import_ray().cluster_resources().get("GPU", 0)
    if device == "cuda" and n_gpus == 0:
        raise ValueError("device='cuda' asked for, but the Ray cluster has no GPU: use 'cpu' or 'auto'.")
    if device == "cpu" or n_gpus == 0:
        return Placement("cpu", cpus_per_run, 0.0)
    return Placement("cuda", cpus_per_run, gpus_per_run)


def ray_outcome(ref, run: SweepRun, out_dir) -> dict:
    """A finished task's outcome; a task Ray gave up on (worker lost after every retry) is failed,
    its error kept in the run's error.txt."""
    ray = import_ray()
    try:
        return ray.get(ref)
    except ray.exceptions.RayError as e:
        atomic_write_text(f"{e}\n", run.path(out_dir) / ERROR_NAME)
        return {"status": "failed", "error": str(e).strip().splitlines()[-1]}


def run_on_ray(todo: list[SweepRun], spec: dict, out_dir: Path, where: Placement, bar) -> dict:
    """Submit every run as a Ray task; follow them with the progress bar; their outcomes by run."""
    ray = import_ray()
    task = ray.remote(train_run).options(num_cpus=where.num_cpus, num_gpus=where.num_gpus,
                                         max_retries=MAX_RETRIES, retry_exceptions=False)
    out_path = str(Path(out_dir).resolve())  # workers do not share the driver's working directory
    pending = {task.remote(r.env_id, r.variant, r.seed, spec["configs"][f"{r.env_id}/{r.variant}"],
                           out_path, where.device): r for r in todo}
    outcomes: dict[SweepRun, dict] = {}
    finished_before = bar.n
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=1.0)
        for ref in ready:
            run = pending.pop(ref)
            outcomes[run] = ray_outcome(ref, run, out_dir)
        failed = sum(o["status"] == "failed" for o in outcomes.values())
        bar.set_postfix({"finished": finished_before + len(outcomes) - failed, "failed": failed,
                         "running": sum(is_running(r.path(out_dir)) for r in pending.values())},
                        refresh=False)
        bar.update(len(ready))
    return outcomes


# ---------------------------------------------------------------- the sweep

@dataclass
class RunRecord:
    """One run of a sweep as its directory holds it: status finished, failed, running,
    unfinished (a checkpoint, not at the budget) or new."""

    env_id: str
    variant: str
    seed: int
    path: Path
    status: str
    history: list[dict] = field(default_factory=list)
    done: dict | None = None
    error: str | None = None


@dataclass
class SweepResult:
    """A sweep's runs and its summary (one row per environment x variant)."""

    out_dir: Path
    spec: dict
    runs: list[RunRecord]
    summary: list[dict]
    last_k: int = LAST_K
    wall_s: float = 0.0
    ray_start_s: float = 0.0

    @property
    def finished(self) -> list[RunRecord]:
        return [r for r in self.runs if r.status == "finished"]

    @property
    def failed(self) -> list[RunRecord]:
        return [r for r in self.runs if r.status == "failed"]

    def report(self) -> str:
        """What a person reads at the end: counts, files, and each failure with its traceback file."""
        lines = [f"sweep {self.out_dir}: {len(self.finished)} of {len(self.runs)} runs finished, "
                 f"{len(self.failed)} failed; {self.wall_s:.0f} s (Ray start-up {self.ray_start_s:.1f} s)",
                 f"summary {self.out_dir / SUMMARY_NAME}, table {self.out_dir / TABLE_NAME}, "
                 "curves " + ", ".join(str(self.out_dir / f"curves-{e}.png") for e in self.spec["envs"])]
        lines += [f"FAILED {r.path}: {r.error} (traceback in {r.path / ERROR_NAME})" for r in self.failed]
        return "\n".join(lines)


def sweep(envs, variants=("TD3",), seeds=(0,), *, out_dir, steps: int | None = None,
          overrides: dict | None = None, address: str | None = None, device: str = "auto",
          gpus_per_run: float = 0.25, last_k: int = LAST_K, progress: bool = True) -> SweepResult:
    """Train every environment x variant x seed as a Ray task and summarize them (see the module doc).

    ``variants`` are names in ``VARIANTS``; ``overrides`` map TD3Config fields to values for
    every run (on top of each environment's preset); ``steps`` replaces the preset budget.
    Finished runs in ``out_dir`` are skipped, unfinished ones resumed; a run that raises is
    reported in the result's ``failed`` while the others go on. ``address``: None starts a local
    Ray; HOST:PORT or auto joins a cluster. Writes summary.csv, summary.md and curves-ENV.png.
    """
    from .envs import make_env

    started = time.perf_counter()
    spec = sweep_spec(envs, variants, seeds, overrides, steps)
    check_device(device, gpus_per_run)
    for env_id in spec["envs"]:
        make_env(env_id).close()  # an unknown or unusable environment, named before anything starts
    out_dir = Path(out_dir)
    open_sweep_dir(out_dir, spec)
    runs = grid(spec)
    todo = submission_order([r for r in runs if not (r.path(out_dir) / DONE_NAME).exists()], spec)
    ray_start_s = 0.0
    if todo:
        with ray_session(address) as ray_start_s:
            where = placement(device, gpus_per_run)
            with tqdm(total=len(runs), initial=len(runs) - len(todo), unit="run", desc="sweep",
                      disable=not progress, dynamic_ncols=True) as bar:
                run_on_ray(todo, spec, out_dir, where, bar)
    result = summarize(out_dir, last_k)
    result.wall_s, result.ray_start_s = time.perf_counter() - started, ray_start_s
    return result


def submission_order(runs: list[SweepRun], spec: dict) -> list[SweepRun]:
    """Seed by seed: every variant's first seed, then every variant's second, ... (variants in the
    order given). Runs start in this order, so a sweep stopped part-way leaves every variant with
    as many seeds as the time allowed, and the variants named first get the extra one."""
    variants = spec["variants"]
    return sorted(runs, key=lambda r: (spec["seeds"].index(r.seed), variants.index(r.variant),
                                       spec["envs"].index(r.env_id)))


def grid(spec: dict) -> list[SweepRun]:
    return [SweepRun(e, v, s) for e in spec["envs"] for v in spec["variants"] for s in spec["seeds"]]


# ---------------------------------------------------------------- results

def run_record(run: SweepRun, out_dir: Path) -> RunRecord:
    """What a run's directory says about it."""
    path = run.path(out_dir)
    history = read_history(path / HISTORY_NAME) if (path / HISTORY_NAME).exists() else []
    done = json.loads((path / DONE_NAME).read_text()) if (path / DONE_NAME).exists() else None
    error = None
    if done is not None:
        status = "finished"
    elif is_running(path):
        status = "running"
    elif (path / ERROR_NAME).exists():
        status = "failed"
        lines = (path / ERROR_NAME).read_text().strip().splitlines()
        error = lines[-1] if lines else "unknown error"
    else:
        status = "unfinished" if (path / CHECKPOINT_NAME).exists() else "new"
    return RunRecord(run.env_id, run.variant, run.seed, path, status, history, done, error)


def load_sweep(out_dir, last_k: int = LAST_K) -> SweepResult:
    """A sweep directory read back: its settings, every run's status and history, the summary."""
    out_dir = Path(out_dir)
    spec_path = out_dir / SPEC_NAME
    if not spec_path.exists():
        raise FileNotFoundError(f"{out_dir} holds no sweep ({SPEC_NAME} is missing).")
    spec = json.loads(spec_path.read_text())
    runs = [run_record(r, out_dir) for r in grid(spec)]
    return SweepResult(out_dir, spec, runs, summary_rows(spec, runs, last_k), last_k)


def final_score(history: list[dict], last_k: int = LAST_K) -> float:
    """A run's final score: the mean evaluation return of its last ``last_k`` evaluations."""
    if last_k < 1:
        raise ValueError(f"last_k={last_k!r}: it must be an integer >= 1.")
    return float(np.mean([h["eval_mean"] for h in history[-last_k:]]))


def bootstrap_ci(scores, confidence: float = 0.95, n_resamples: int = 10_000,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean over seeds (seeds resampled with replacement)."""
    scores = np.asarray(scores, dtype=float)
    if scores.size == 0:
        return float("nan"), float("nan")
    idx = np.random.default_rng(seed).integers(0, scores.size, size=(n_resamples, scores.size))
    means = scores[idx].mean(axis=1)
    alpha = (1 - confidence) / 2
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))


def score_row(env_id: str, variant: str, scores: list[float]) -> dict:
    """One summary row: final scores over seeds -> mean, std (over seeds, ddof 1) and 95% bootstrap CI."""
    n = len(scores)
    mean = float(np.mean(scores)) if n else float("nan")
    std = float(np.std(scores, ddof=1)) if n > 1 else (0.0 if n else float("nan"))
    ci_low, ci_high = bootstrap_ci(scores)
    return {"env": env_id, "variant": variant, "n_seeds": n, "mean": mean, "std": std,
            "ci_low": ci_low, "ci_high": ci_high}


def summary_rows(spec: dict, runs: list[RunRecord], last_k: int = LAST_K) -> list[dict]:
    """One row per environment x variant over its finished runs."""
    return [score_row(e, v, [final_score(r.history, last_k) for r in runs
                             if r.env_id == e and r.variant == v and r.status == "finished"])
            for e in spec["envs"] for v in spec["variants"]]


def write_summary_csv(rows: list[dict], path: Path) -> None:
    lines = [",".join(SUMMARY_FIELDS)]
    lines += [",".join(str(row[k]) for k in SUMMARY_FIELDS) for row in rows]
    atomic_write_text("\n".join(lines) + "\n", path)


def read_summary(path) -> list[dict]:
    """``summary.csv`` read back, numbers as numbers."""
    with open(path, newline="") as f:
        return [{k: (v if k in ("env", "variant") else int(v) if k == "n_seeds" else float(v))
                 for k, v in row.items()} for row in csv.DictReader(f)]


def table2_markdown(spec: dict, rows: list[dict], last_k: int = LAST_K) -> str:
    """The summary in the shape of the paper's Table 2: a row per variant, a column per
    environment, mean +- std over seeds, the best mean of each environment in bold."""
    envs, variants = spec["envs"], spec["variants"]
    cell = {(r["env"], r["variant"]): r for r in rows}
    best = {e: max((cell[e, v]["mean"] for v in variants if cell[e, v]["n_seeds"]), default=None)
            for e in envs}
    n_seeds = len(spec["seeds"])
    lines = [f"Final return: mean of the last {last_k} evaluations of each run; mean ± std over "
             f"{n_seeds} seeds (n shown where runs are missing); bold: the best on each environment. "
             "DDPG is the paper's AHE (TD3 with all three tricks off); TD3-X is TD3 without X.", "",
             "| Method | " + " | ".join(envs) + " |", "| --- |" + " --- |" * len(envs)]
    for v in variants:
        cells = [format_cell(cell[e, v], best[e], n_seeds) for e in envs]
        lines.append(f"| {v} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def format_cell(row: dict, best: float | None, n_seeds: int) -> str:
    if not row["n_seeds"]:
        return "—"
    text = f"{row['mean']:.1f} ± {row['std']:.1f}"
    text = f"**{text}**" if row["mean"] == best else text
    return text if row["n_seeds"] == n_seeds else f"{text} (n={row['n_seeds']})"


def plot_curves(result: SweepResult, env_id: str, path: Path) -> None:
    """One figure for one environment: per variant, the mean evaluation return over seeds and a
    band of +-1 std over seeds, at the evaluation steps every finished seed has. Drawn on a bare
    ``Figure``, never through pyplot, so a notebook's backend and figures are left as they were."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.5))
    ax = fig.subplots()
    for variant in result.spec["variants"]:
        runs = [r for r in result.finished if r.env_id == env_id and r.variant == variant]
        if runs:
            seed_band(ax, [r.history for r in runs], "eval_mean", label=variant)
    ax.set(xlabel="environment steps", ylabel="evaluation return (episode return)",
           title=f"{env_id}: mean over seeds, band ±1 std over seeds")
    if ax.lines:
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def summarize(out_dir, last_k: int = LAST_K) -> SweepResult:
    """Read a sweep directory and write its results: summary.csv (one row per environment x
    variant, final score = mean of the last ``last_k`` evaluations, a 95% bootstrap interval
    over seeds), summary.md (the paper's Table 2 shape) and curves-ENV.png per environment."""
    result = load_sweep(out_dir, last_k)
    write_summary_csv(result.summary, result.out_dir / SUMMARY_NAME)
    atomic_write_text(table2_markdown(result.spec, result.summary, last_k), result.out_dir / TABLE_NAME)
    for env_id in result.spec["envs"]:
        plot_curves(result, env_id, result.out_dir / f"curves-{env_id}.png")
    return result
