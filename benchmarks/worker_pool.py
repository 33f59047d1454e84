"""K worker processes, each doing what one ordinary run's process does: the "K processes" contender of
batched_speed.py.

Each worker is started once (``spawn``: a fresh interpreter that imports torch, then waits) and then
does what it is told through its pipe: build one agent and its full replay buffer, run n updates of
it with t torch threads, or train one run with ``train``. The pool is ready when every worker has
started, so no worker is still starting while anything is timed; starting them is not timed. What a
contender is timed for is the work it was sent, from the first message out to the last answer in.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
import traceback

import torch
from tqdm import tqdm

from batched_blocks import UpdateSpec, sequential_block, warm_up
from td3_lib import TD3Config
from training_clock import timed_run
from update_blocks import random_transitions


def build(state: dict, spec: UpdateSpec, seed: int) -> None:
    """This worker's agent (seed ``seed``) and full buffer, for ``updates``."""
    state["block"] = None  # the previous agent and buffer go first
    state["block"] = sequential_block(spec, [seed], "cpu", random_transitions(spec.buffer, spec.obs_dim,
                                                                              spec.action_dim))


def updates(state: dict, n: int, threads: int) -> tuple[float, float]:
    """n updates with ``threads`` torch threads; when they started and ended (``time.monotonic``)."""
    torch.set_num_threads(threads)
    started = time.monotonic()
    state["block"](n)
    return started, time.monotonic()


def train_one(state: dict, env_id: str, config: dict, seed: int, threads: int) -> dict:
    """One training run (``training_clock.timed_run``); its marks, and when it started and ended."""
    torch.set_num_threads(threads)
    started = time.monotonic()
    marks = timed_run(env_id, TD3Config.from_dict(config), "cpu", seed=seed)
    return {"started": started, "ended": time.monotonic(), "marks": marks}


def start(state: dict, env_ids: tuple[str, ...]) -> None:
    """Answered once the worker has started and warmed up (``batched_blocks.warm_up``). tqdm's bars (``train``
    makes one, hidden) lock with a thread lock here, not the semaphore tqdm would make: a worker that ends at
    once (``serve``) would leave that semaphore for the parent to clean up, with a warning."""
    tqdm.set_lock(threading.RLock())
    warm_up(env_ids)


COMMANDS = {"start": start, "build": build, "updates": updates, "train": train_one}


def serve(conn) -> None:
    """A worker's loop: run each command received, answer ("ok", result) or ("error", traceback)."""
    state: dict = {}
    while True:
        command, args = conn.recv()
        if command == "stop":  # at once: a worker keeps nothing, and tearing down torch takes seconds
            conn.close()
            os._exit(0)
        try:
            conn.send(("ok", COMMANDS[command](state, *args)))
        except Exception:
            conn.send(("error", traceback.format_exc()))


class WorkerPool:
    """``size`` worker processes, started and warmed up for ``env_ids``; ``ask(k, command, args)`` has the
    first k of them each run ``command``."""

    def __init__(self, size: int, env_ids: tuple[str, ...] = ()):
        context = multiprocessing.get_context("spawn")
        self.pipes, self.processes = [], []
        for _ in range(size):
            parent, child = context.Pipe()
            process = context.Process(target=serve, args=(child,), daemon=True)
            process.start()
            child.close()
            self.pipes.append(parent)
            self.processes.append(process)
        self.ask(size, "start", [(tuple(env_ids),)] * size)  # every worker ready before anything is timed

    def ask(self, k: int, command: str, args: list[tuple]) -> list:
        """Send worker i ``(command, args[i])`` for i < k, all before any answer is awaited; their results."""
        if k > len(self.pipes):
            raise ValueError(f"A pool of {len(self.pipes)} workers cannot run {k} processes.")
        for pipe, arg in zip(self.pipes[:k], args):
            pipe.send((command, arg))
        answers = [pipe.recv() for pipe in self.pipes[:k]]
        failed = [result for status, result in answers if status == "error"]
        if failed:
            raise RuntimeError(f"A worker process failed at {command!r}:\n{failed[0]}")
        return [result for _, result in answers]

    def close(self) -> None:
        """Tell every worker to stop, then wait for each (ending any that does not stop in time)."""
        for pipe in self.pipes:
            try:
                pipe.send(("stop", ()))
            except (BrokenPipeError, OSError):
                pass
        for process in self.processes:
            process.join(timeout=30)
            if process.is_alive():
                process.terminate()

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
