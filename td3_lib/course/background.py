"""A training run in a process of its own, so that a lesson goes on while it trains.

Lesson 06 starts its Hopper-v5 run first (``train_in_background``) and reads it at the end: the run is
the command line's ``python -m td3_lib train ... --save-buffer --resume``, with one torch thread, in a
new session (interrupting a notebook cell does not stop it). It writes its checkpoints, history and log
to its run directory, and its process id to ``training.pid`` there. Starting the same run again while it
trains (a cell run twice, or a restarted kernel) attaches to that process instead of starting a second
one; a run that was stopped goes on from its last checkpoint.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from ..run import HISTORY_NAME, read_history

PID_NAME, LOG_NAME = "training.pid", "training.log"


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (and, where /proc tells, runs td3_lib), not a finished one."""
    proc = Path(f"/proc/{pid}")
    if proc.exists():
        status = (proc / "stat").read_text().rsplit(")", 1)[-1].split()
        return status[0] != "Z" and b"td3_lib" in (proc / "cmdline").read_bytes()
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError, OSError):
        return False
    return sys.platform != "linux"  # on Linux a live process has its /proc entry


class BackgroundRun:
    """A run training in another process: ``running``, ``status()``, and ``wait()`` for its history;
    ``command``, the command it runs (None when attached to a process started earlier)."""

    def __init__(self, run_dir: Path, steps: int, pid: int, process: subprocess.Popen | None = None,
                 command: str | None = None):
        self.run_dir, self.steps, self.pid, self.process, self.command = Path(run_dir), steps, pid, process, command

    @property
    def running(self) -> bool:
        return self.process.poll() is None if self.process is not None else alive(self.pid)

    def history(self) -> list[dict]:
        path = self.run_dir / HISTORY_NAME
        return read_history(path) if path.exists() else []

    def log_tail(self, lines: int = 8) -> str:
        path = self.run_dir / LOG_NAME
        return "\n".join(path.read_text().splitlines()[-lines:]) if path.exists() else ""

    def status(self) -> str:
        """Where the run stands: its last evaluation, its speed over the last five, the time left."""
        rows = self.history()
        if not rows:
            return f"{'training' if self.running else 'stopped'}: no evaluation yet (see {self.run_dir / LOG_NAME})"
        last, first = rows[-1], rows[max(0, len(rows) - 6)]
        text = f"step {last['step']:,} of {self.steps:,}: last evaluation {last['eval_mean']:.1f}"
        if last["wall_s"] > first["wall_s"]:
            speed = (last["step"] - first["step"]) / (last["wall_s"] - first["wall_s"])
            text += f", {speed:.0f} steps/s lately"
            if self.running and last["step"] < self.steps:
                text += f", about {(self.steps - last['step']) / speed / 60:.0f} min to go"
        return text if self.running else ("finished, " if last["step"] >= self.steps else "stopped, ") + text

    def wait(self, every: float = 120.0) -> list[dict]:
        """Block until the run ends, printing its status every ``every`` seconds; its history. A run that
        stopped before its budget raises, with the end of its log."""
        while self.running:
            print(self.status(), flush=True)
            time.sleep(every)
        rows = self.history()
        if not rows or rows[-1]["step"] < self.steps:
            raise RuntimeError(f"The run in {self.run_dir} stopped before {self.steps:,} steps; start it again to "
                               f"go on from its last checkpoint. The end of its log:\n{self.log_tail()}")
        return rows


def training_command(env_id: str, run_dir, steps: int, overrides: dict | None = None) -> list[str]:
    """The command line of the run: ``python -m td3_lib train`` resuming what ``run_dir`` holds."""
    command = ["python", "-m", "td3_lib", "train", "--env", env_id, "--steps", str(steps), "--save-buffer",
               "--out", str(run_dir), "--resume", "--quiet", "--no-video"]
    for name, value in (overrides or {}).items():
        command.append(f"--set={name}={','.join(map(str, value)) if isinstance(value, tuple) else value}")
    return command


def train_in_background(env_id: str, run_dir, steps: int, overrides: dict | None = None,
                        threads: int = 1) -> BackgroundRun:
    """Start ``training_command`` for ``env_id`` (the preset, ``steps`` in all, ``overrides`` as ``--set
    FIELD=VALUE``) with ``threads`` torch threads; or attach to the process already training ``run_dir``."""
    run_dir = Path(run_dir)
    pid_file = run_dir / PID_NAME
    if pid_file.exists() and alive(pid := int(pid_file.read_text())):
        return BackgroundRun(run_dir, steps, pid)
    run_dir.mkdir(parents=True, exist_ok=True)
    command = training_command(env_id, run_dir, steps, overrides)
    environment = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    with open(run_dir / LOG_NAME, "a") as log:
        process = subprocess.Popen([sys.executable, *command[1:]], stdout=log, stderr=subprocess.STDOUT,
                                   env=environment, start_new_session=True)
    pid_file.write_text(str(process.pid))
    return BackgroundRun(run_dir, steps, process.pid, process, " ".join(command))
