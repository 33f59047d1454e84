"""Running a sweep's runs on Ray: the session, where each run goes, the worker task, and run locks."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import torch

try:  # Unix; on Windows runs are not locked and report no memory peak
    import fcntl
    import resource
except ImportError:
    fcntl = resource = None

from .. import provenance
from ..checkpoint import CheckpointError, atomic_write_text
from ..config import TD3Config
from ..run import CHECKPOINT_NAME, saved_step
from .grid import DONE_NAME, ERROR_NAME, SPEC_NAME, SweepRun, run_config
from .variants import Variant, get_variant

LOCK_NAME = "lock"
MAX_RETRIES = 3
"""Times Ray reruns a run whose worker died; each retry resumes from the run's checkpoint."""


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
        return saved_step(run_dir)
    except CheckpointError:  # unreadable: train says why when it resumes
        return 0


def max_rss_mb() -> float | None:
    """This process's peak resident memory so far, in MB (Linux reports it in kB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1) if resource else None


def train_run(env_id: str, variant: Variant, seed: int, config: dict, out_dir: str, device: str,
              probes=(), registration=None) -> dict:
    """One sweep run, as a Ray task: train it (or resume it) to its budget with one torch thread,
    as ``variant`` says (its agent class, environment and probes), recording ``probes`` too (as
    ``train``) at each evaluation. ``registration``: the environment's gymnasium registration in
    the driver, for an id the worker does not know (a task registered by the driver's code).

    Records the run's provenance (``td3_lib.provenance``) before it trains (for a run started by code
    that recorded none, what the sweep's earlier record says, from step 0). Writes ``done.json``
    when ``train`` returns; when it raises, the traceback goes to ``error.txt`` and the outcome
    says failed (the task itself succeeds).
    """
    start_worker(out_dir)
    run_dir = SweepRun(env_id, variant.name, seed).path(out_dir)
    with run_lock(run_dir):
        finished = finished_outcome(run_dir)
        if finished is not None:
            return finished
        try:
            resumed_from = record_provenance(run_dir, out_dir, env_id, device)
            result = train_variant(env_id, variant, seed, TD3Config.from_dict(config), run_dir, device, probes,
                                   registration)
        except Exception as e:
            atomic_write_text(traceback.format_exc(), run_dir / ERROR_NAME)
            return failed_outcome(e)
        return write_done(run_dir, result, resumed_from)


# ---------------------------------------------------------------- what every worker does (train_run, train_batch)

def start_worker(out_dir: str) -> None:
    """A worker's start: one torch thread; a sweep directory this machine does not see refused in one line."""
    torch.set_num_threads(1)
    if not (Path(out_dir) / SPEC_NAME).exists():
        raise FileNotFoundError(f"{out_dir} is not visible on {socket.gethostname()}: on a cluster the "
                                "sweep directory must be on a filesystem every machine shares.")


def finished_outcome(run_dir: Path) -> dict | None:
    """The outcome of a run that an earlier try of its task finished (its ``done.json``); None for one not finished."""
    done = run_dir / DONE_NAME
    return {"status": "finished", **json.loads(done.read_text())} if done.exists() else None


def record_provenance(run_dir: Path, out_dir: str, env_id: str, device: str) -> int:
    """Record the run's provenance before it trains (for a run started by code that recorded none, what the
    sweep's earlier record says, from step 0); the step it resumes from (0 for a run started afresh)."""
    resumed_from = checkpoint_step(run_dir)
    if resumed_from and provenance.read(run_dir) is None:  # trained so far by code that recorded nothing
        provenance.write(run_dir, [{"from_step": 0, **made} for made in provenance.earlier(out_dir)])
    provenance.record(run_dir, resumed_from, provenance.current(env_id, device))
    return resumed_from


def install_registration(env_id: str, registration) -> None:
    """Register ``env_id`` in this worker as the driver did (``registration``), where the worker does not know it."""
    if registration is not None and env_id not in gym.registry:
        gym.registry[env_id] = registration


def failed_outcome(error: Exception) -> dict:
    """The outcome of a run that ``error`` ended."""
    return {"status": "failed", "error": f"{type(error).__name__}: {error}"}


def write_done(run_dir: Path, result, resumed_from: int, **extra) -> dict:
    """Write a run's ``done.json`` (what ``train`` returned, the step it resumed from, where it trained and its
    memory peak, then ``extra``) and remove an earlier try's ``error.txt``; the run's outcome."""
    done = {"steps": result.step, "final_eval": result.final_return, "wall_s": round(result.wall_s, 2),
            "resumed_from": resumed_from, "host": socket.gethostname(), "pid": os.getpid(),
            "max_rss_mb": max_rss_mb(), **extra}
    atomic_write_text(json.dumps(done) + "\n", run_dir / DONE_NAME)
    (run_dir / ERROR_NAME).unlink(missing_ok=True)
    return {"status": "finished", **done}


def train_variant(env_id: str, variant: Variant, seed: int, config: TD3Config, run_dir: Path, device: str,
                  probes=(), registration=None):
    """``train`` one run of ``variant`` in ``run_dir``, resumed from its checkpoint when it has one."""
    from ..training import train

    install_registration(env_id, registration)
    env = variant.environment(env_id)
    try:
        return train(env, config, seed=seed, device=device, checkpoint_dir=run_dir, progress=False,
                     resume=(run_dir / CHECKPOINT_NAME).exists(), save_buffer=True, agent=variant.agent,
                     probes=(*probes, *variant.probes))
    finally:
        if not isinstance(env, str):
            env.close()


def registration(env_id: str):
    """The gymnasium registration of ``env_id`` that a worker needs: None for gymnasium's own ids and
    the ones td3_lib makes itself (PyBullet's), the driver's spec for any other (a course task)."""
    spec = gym.registry.get(env_id)
    entry = spec.entry_point if spec is not None else None
    if spec is None or "Bullet" in env_id or (isinstance(entry, str) and entry.startswith("gymnasium.")):
        return None
    return spec


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


def token_hint() -> str:
    """What to check when joining a cluster fails. Since Ray 2.59, `ray start --head` turns token
    authentication on wherever a token exists (~/.ray/auth_token, which any local sweep writes), while a
    driver that joins by address sends its token only when RAY_AUTH_MODE=token: Ray will not send a
    machine's token to an address it was merely given."""
    if os.environ.get("RAY_AUTH_MODE", "").lower() == "token":
        return "check that this machine's Ray token (RAY_AUTH_TOKEN, or ~/.ray/auth_token) is the head's"
    return ("if the cluster uses token authentication (`ray start --head` turns it on since Ray 2.59), "
            "set RAY_AUTH_MODE=token here, with the head's ~/.ray/auth_token, or use --address auto on the head")


class LocalRayDidNotStart(ConnectionError):
    """A local Ray that did not come up (on a machine too busy for its helper processes to start in
    time); ``sweep`` then trains the runs in its own process, one after another."""


def start_local_ray(num_cpus: int | None = None, attempts: int = 2) -> None:
    """Start Ray on this machine (all its cores unless ``num_cpus``), quietly, without the dashboard.

    On a heavily loaded machine Ray's raylet can give up waiting for its own
    helper processes; the start is then tried once more before giving up.
    """
    ray = import_ray()
    for attempt in range(1, attempts + 1):
        try:
            # Ray's own start-up complaints (log paths of a failed start) stay out of the output:
            # a failed start is reported below in one line.
            ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=False,
                     logging_level=logging.CRITICAL)
            logging.getLogger("ray").setLevel(logging.ERROR)
            return
        except Exception as e:  # Ray raises a bare Exception when its node does not come up
            ray.shutdown()
            if attempt == attempts:
                raise LocalRayDidNotStart(f"Ray did not start on this machine ({str(e).splitlines()[0]}); "
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
                                  f"{str(e).splitlines()[0]}; {token_hint()}.") from None
    try:
        yield time.perf_counter() - started
    finally:
        ray.shutdown()


@dataclass(frozen=True)
class Placement:
    """Where each run trains, and the share of a machine Ray reserves for it."""

    device: str
    """The device each run trains on: "cpu" or "cuda"."""
    num_cpus: float
    """CPU cores Ray reserves for each run."""
    num_gpus: float
    """The share of a GPU Ray reserves for each run (0 on the CPU)."""


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


def worker_path(out_dir) -> str:
    """The sweep directory as the workers are given it: absolute (they do not share the driver's working directory)."""
    return str(Path(out_dir).resolve())


def run_arguments(run: SweepRun, spec: dict, out_path: str, device: str, probes=()) -> tuple:
    """``train_run``'s arguments for ``run``, but for ``registration``."""
    return (run.env_id, get_variant(run.variant), run.seed, run_config(spec, run.env_id, run.variant), out_path,
            device, tuple(probes))


def ray_task(function, where: Placement, num_gpus: float | None = None):
    """``function`` as a Ray task that reserves ``where``'s cores and GPU share (``num_gpus`` of a GPU where given),
    rerun by Ray from the run's checkpoint up to ``MAX_RETRIES`` times when its worker dies."""
    return import_ray().remote(function).options(num_cpus=where.num_cpus,
                                                 num_gpus=where.num_gpus if num_gpus is None else num_gpus,
                                                 max_retries=MAX_RETRIES, retry_exceptions=False)


def submit_runs(runs: list[SweepRun], spec: dict, out_path: str, where: Placement, probes=()) -> dict:
    """Each of ``runs`` submitted as a Ray task of ``train_run``; the pending tasks, each with its run (as a list)."""
    task = ray_task(train_run, where)
    return {task.remote(*run_arguments(r, spec, out_path, where.device, probes), registration(r.env_id)): [r]
            for r in runs}


def ray_outcome(ref, run: SweepRun, out_dir) -> dict:
    """A finished task's outcome; a task Ray gave up on (worker lost after every retry) is failed,
    its error kept in the run's error.txt."""
    ray = import_ray()
    try:
        return ray.get(ref)
    except ray.exceptions.RayError as e:
        atomic_write_text(f"{e}\n", run.path(out_dir) / ERROR_NAME)
        return {"status": "failed", "error": str(e).strip().splitlines()[-1]}


def task_outcomes(ref, runs: list[SweepRun], out_dir) -> dict:
    """The outcomes of a finished task's runs, by run: a ``train_run``'s one, a ``train_batch``'s by position;
    a task Ray gave up on fails every one of its runs (its error kept in the first one's error.txt)."""
    outcome = ray_outcome(ref, runs[0], out_dir)
    return {run: outcome if "status" in outcome else outcome[i] for i, run in enumerate(runs)}


def follow(pending: dict, out_dir, bar) -> dict:
    """Wait for the ``pending`` Ray tasks (each with its list of runs), following them with the progress bar (a
    task's runs count when it ends; the postfix counts runs finished, failed and running); outcomes by run."""
    ray = import_ray()
    outcomes: dict[SweepRun, dict] = {}
    finished_before = bar.n
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=1.0)
        counted = len(outcomes)
        for ref in ready:
            outcomes.update(task_outcomes(ref, pending.pop(ref), out_dir))
        failed = sum(o["status"] == "failed" for o in outcomes.values())
        running = sum(is_running(r.path(out_dir)) for runs in pending.values() for r in runs)
        bar.set_postfix({"finished": finished_before + len(outcomes) - failed, "failed": failed, "running": running},
                        refresh=False)
        bar.update(len(outcomes) - counted)
    return outcomes


def run_on_ray(todo: list[SweepRun], spec: dict, out_dir: Path, where: Placement, bar, probes=()) -> dict:
    """Submit every run as a Ray task; follow them with the progress bar; their outcomes by run."""
    return follow(submit_runs(todo, spec, worker_path(out_dir), where, probes), out_dir, bar)


@contextlib.contextmanager
def thread_count_kept():
    """This process's torch thread count, restored on leaving (the workers, run here, set it to one)."""
    threads = torch.get_num_threads()
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def run_here(todo: list[SweepRun], spec: dict, out_dir: Path, device: str, bar, probes=()) -> dict:
    """Every run in this process, one after another, with the task Ray would run (``train_run``):
    the same run directories, checkpoints and results. The process's torch thread count is restored."""
    out_path, outcomes = worker_path(out_dir), {}
    with thread_count_kept():
        for run in todo:
            outcomes[run] = train_run(*run_arguments(run, spec, out_path, device, probes))
            bar.update(1)
    return outcomes
