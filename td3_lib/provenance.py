"""What made a run: the code's git commit, the package versions and the machine.

A sweep's worker records it in each run directory when it starts (or resumes) the run, as
``provenance.json``: a list of segments, one per change of code, versions or machine::

    [{"from_step": 0, "commit": "de0274f...", "versions": {"torch": "2.13.0+cpu", ...},
      "machine": {"cpu": "Intel(R) Xeon(R) Processor", "vector_extensions": "avx avx2 avx512f ...",
                  "cpu_capability": "AVX512", "torch_threads": 1}}]

so a result collected later, by newer code, still names the code that trained each run. A commit
made from a tree with uncommitted changes is recorded as ``SHA-dirty``.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from .checkpoint import atomic_write_text

PROVENANCE_NAME = "provenance.json"
PACKAGES = ("torch", "gymnasium", "numpy")
"""The packages every run records; MuJoCo's tasks add mujoco."""
NOT_RECORDED = {"commit": None, "versions": None, "machine": None,
                "note": "not recorded: made by code that did not record provenance"}


def git(folder: Path, *args: str) -> str:
    """A git command's output, run in ``folder``."""
    done = subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise OSError(done.stderr.strip() or f"git {args[0]} failed")
    return done.stdout


def commit_of(folder: Path) -> str:
    """The git commit of the checkout ``folder`` is in, ``SHA-dirty`` when its working tree has changes
    (tracked or untracked, not ignored); where ``folder``'s ``__init__.py`` is not a tracked file of a
    git checkout (an installed package, a copy), ``unknown: ...``."""
    try:
        git(folder, "ls-files", "--error-unmatch", "__init__.py")  # this very package is tracked here
        sha = git(folder, "rev-parse", "HEAD").strip()
        dirty = git(folder, "status", "--porcelain", "--", ":/").strip()
    except (OSError, subprocess.SubprocessError):
        return f"unknown: {folder} is not a tracked folder of a git checkout"
    return f"{sha}-dirty" if dirty else sha


@functools.lru_cache(maxsize=1)
def code_commit() -> str:
    """The commit of the td3_lib this process runs (``commit_of`` its folder), taken once per
    process, as the code is loaded once."""
    return commit_of(Path(__file__).resolve().parent)


def versions(mujoco: bool = False) -> dict:
    """The versions of Python and of the packages a run depends on (``mujoco`` for MuJoCo's tasks); None
    for one that is not installed."""
    names = PACKAGES + (("mujoco",) if mujoco else ())
    return {**dict.fromkeys(names), **installed_versions(*names), "python": platform.python_version()}


def installed_versions(*packages: str) -> dict:
    """The installed version of each of ``packages`` that is installed (the others left out)."""
    found = {}
    for name in packages:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


VECTOR_FLAGS = ("avx", "fma", "amx")
"""The /proc/cpuinfo flags ``vector_extensions`` keeps (by prefix)."""
ISA_OVERRIDES = ("MKL_ENABLE_INSTRUCTIONS", "ATEN_CPU_CAPABILITY")
"""Variables that make MKL or torch use fewer instruction sets than the CPU has."""


def cpuinfo(field: str) -> str | None:
    """The value of ``field`` in Linux's /proc/cpuinfo (its first CPU), None where there is none."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            name, _, value = line.partition(":")
            if name.strip() == field:
                return value.strip()
    except OSError:
        pass
    return None


def cpu_model() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo; elsewhere what ``platform`` knows)."""
    return cpuinfo("model name") or platform.processor() or platform.machine()


def vector_extensions() -> str:
    """The CPU's vector instruction sets (AVX, AVX2, FMA, AVX-512's parts, AMX) as Linux's /proc/cpuinfo
    names them, sorted and space-separated; "" where it lists none.

    Recorded because they decide the arithmetic: MKL and torch pick their kernels by them, and kernels
    that sum in another order round differently. On one AVX-512 machine, torch 2.13 limited to AVX2
    (``MKL_ENABLE_INSTRUCTIONS=AVX2 ATEN_CPU_CAPABILITY=avx2``) trains a Hopper-v5 run that leaves the
    unlimited one at its first evaluation after updates start (docs/results.md).
    """
    return " ".join(sorted(f for f in (cpuinfo("flags") or "").split() if f.startswith(VECTOR_FLAGS)))


def machine(device: str = "cpu") -> dict:
    """The CPU model, its vector instruction sets, the kernels torch dispatches to (``cpu_capability``)
    and the torch threads of this process; any variable that limits the instruction sets; the GPU's name
    for a run on CUDA."""
    import torch

    found = {"cpu": cpu_model(), "vector_extensions": vector_extensions(),
             "cpu_capability": torch.backends.cpu.get_cpu_capability(), "torch_threads": torch.get_num_threads()}
    found.update({name: os.environ[name] for name in ISA_OVERRIDES if name in os.environ})
    if str(device).startswith("cuda") and torch.cuda.is_available():
        found["gpu"] = torch.cuda.get_device_name()
    return found


def current(env_id: str | None = None, device: str = "cpu") -> dict:
    """This process's provenance: ``commit``, ``versions`` (with mujoco for a MuJoCo task), ``machine``."""
    return {"commit": code_commit(), "versions": versions(is_mujoco_task(env_id)), "machine": machine(device)}


def is_mujoco_task(env_id: str | None) -> bool:
    import gymnasium as gym

    from .envs import is_mujoco

    return env_id is not None and env_id in gym.registry and is_mujoco(env_id)


def read(run_dir) -> list[dict] | None:
    """A run directory's recorded provenance (its segments), or None where nothing was recorded."""
    path = Path(run_dir) / PROVENANCE_NAME
    return json.loads(path.read_text()) if path.is_file() else None


def record(run_dir, from_step: int, found: dict) -> None:
    """Add ``found`` (``current()``) as the segment from ``from_step`` on, unless the last segment
    already says the same (a run retried or resumed by the same code on the same machine)."""
    segments = read(run_dir) or []
    if segments and {k: v for k, v in segments[-1].items() if k != "from_step"} == found:
        return
    segments.append({"from_step": int(from_step), **found})
    atomic_write_text(json.dumps(segments, indent=1) + "\n", Path(run_dir) / PROVENANCE_NAME)


def earlier(sweep_dir) -> list[dict]:
    """What made a sweep's runs where the code that made them recorded nothing in the run: the sweep
    directory's ``provenance.json``, else ``ROOT/NAME.provenance.json`` beside a sweep directory
    ``ROOT/NAME-i`` (written by hand for runs such code started: one record, or a list); else ``NOT_RECORDED``."""
    sweep_dir = Path(sweep_dir)
    for candidate in (sweep_dir / PROVENANCE_NAME,
                      sweep_dir.parent / f"{re.sub(r'-[0-9]+$', '', sweep_dir.name)}.provenance.json"):
        if candidate.is_file():
            found = json.loads(candidate.read_text())
            return found if isinstance(found, list) else [found]
    return [dict(NOT_RECORDED)]


def write(run_dir, segments: list[dict]) -> None:
    """Write a run's provenance as given (a restored run's, taken from the result it came from)."""
    atomic_write_text(json.dumps(segments, indent=1) + "\n", Path(run_dir) / PROVENANCE_NAME)


if __name__ == "__main__":  # python -m td3_lib.provenance: this checkout's provenance, as runs record it
    json.dump(current(sys.argv[1] if len(sys.argv) > 1 else None), sys.stdout, indent=1)
    print()
