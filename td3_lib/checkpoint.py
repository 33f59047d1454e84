"""Writing files so a killed run never leaves a half-written one, and reading
checkpoints without ever running code from them (and saying in one line why one
does not load)."""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
import zipfile
from pathlib import Path

import torch

from .envs import id_without_module


after_temp_written = None
"""Fault injection for tests: a function called with ``path`` once its temporary file is complete
and before it replaces ``path`` (a test's process can end itself there, at an exact moment)."""


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: corrupt, foreign, unsafe or mismatched."""


def atomic_write(path, write) -> None:
    """Call ``write(file)`` on a temporary file beside ``path``, then rename it into place.

    The rename is atomic, so at every moment ``path`` is either the old complete
    file or the new complete one, even if the process is killed mid-write.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        if after_temp_written is not None:
            after_temp_written(path)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600 files; give the usual mode
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_torch_save(obj, path) -> None:
    atomic_write(path, lambda f: torch.save(obj, f))


def atomic_write_text(text: str, path) -> None:
    atomic_write(path, lambda f: f.write(text.encode()))


def safe_load(path, mmap: bool = False) -> dict:
    """``torch.load(path, weights_only=True)`` onto the CPU, with one clear error for each way it can fail.

    weights_only=True unpickles tensors and plain values only, so a file
    carrying arbitrary Python objects is refused before anything in it runs.
    Everything arrives on the CPU, wherever it was saved: the loader then
    moves what belongs on the training device (weights, optimizer moments,
    the replay buffer), while random-number-generator states stay CPU byte
    tensors, the only form ``torch.Generator.set_state`` accepts, on CUDA too. ``mmap=True``
    maps the file instead of reading it (a look at a few fields of a large checkpoint).

    Before it is loaded, every member of the file's zip archive is checked against the CRC-32 the
    archive records for it (``check_archive``), so a file damaged inside, with its layout intact, is
    refused rather than loaded with wrong numbers. The check reads the whole file once: for a
    checkpoint holding a replay buffer of a million steps (hundreds of MB), about a second.
    ``mmap=True`` skips it, so that a look stays cheap; the full load that follows checks it.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No checkpoint file at {path}.")
    if not mmap:
        check_archive(path)
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    except pickle.UnpicklingError as e:
        if "GLOBAL" in str(e).upper():  # a reference to a Python callable or class
            raise CheckpointError(
                f"{path} holds arbitrary Python objects, which could run code on load; refused "
                "(only tensors and plain values are accepted).") from None
        raise CheckpointError(f"{path} is not a readable checkpoint (truncated or corrupt).") from None
    except Exception:
        raise CheckpointError(f"{path} is not a readable checkpoint (truncated or corrupt).") from None
    return obj



def check_archive(path: Path) -> None:
    """Refuse a checkpoint whose zip archive (``torch.save``'s format) holds a member that fails its
    CRC-32 check. A file that is not a zip archive is left to ``torch.load`` (which refuses it, or reads
    torch's legacy format)."""
    if not zipfile.is_zipfile(path):
        return
    try:
        with zipfile.ZipFile(path) as archive:
            damaged = archive.testzip()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        raise CheckpointError(f"{path} is not a readable checkpoint (truncated or corrupt).") from None
    if damaged is not None:
        raise CheckpointError(f"{path} is damaged: its member {damaged} fails its CRC check (the file "
                              "changed after it was written); refused.")

PHILOX_STATE_BYTES = 16
"""A CUDA generator's state: its seed and its offset, 8 bytes each."""
MT19937_STATE_BYTES = 5_056
"""A CPU generator's state: the Mersenne Twister's 624 words, its position, its seed and the
normal sampler's cache, as torch lays them out."""


def restore_generator(generator: torch.Generator, saved: torch.Tensor) -> None:
    """Put ``generator`` back in the state a checkpoint saved, or, when that state comes from the
    other kind of device, seed it from that state's bytes.

    A CPU generator (a Mersenne Twister) and a CUDA one (Philox) cannot take each other's states.
    A checkpoint saved on the GPU and resumed on the CPU, or the other way, therefore goes on with
    a new random stream: the same file gives the same run on that kind of device, but not the one
    the run would have had where it was saved. On the same kind of device it resumes exactly.
    """
    saved = saved.cpu()
    theirs_from_cuda = generator.device.type == "cpu" and saved.numel() == PHILOX_STATE_BYTES
    theirs_from_cpu = generator.device.type == "cuda" and saved.numel() == MT19937_STATE_BYTES
    if theirs_from_cuda or theirs_from_cpu:
        digest = hashlib.sha256(saved.numpy().tobytes()).digest()
        generator.manual_seed(int.from_bytes(digest[:8], "little") >> 1)
    else:
        generator.set_state(saved)  # a state of any other size is refused by torch (RuntimeError)


def check_env_id(saved: str | None, wanted: str | None, source) -> None:
    """Refuse a checkpoint trained on another environment (either id unknown: nothing to check).
    ``"module:ID"`` and ``"ID"`` are the same environment: one id is registered once in a process."""
    if wanted is not None and saved is not None and id_without_module(saved) != id_without_module(wanted):
        raise CheckpointError(f"{source} was trained on {saved}, not {wanted}.")


def load_optimizer_state(optimizer: torch.optim.Optimizer, state: dict) -> None:
    """Load a saved optimizer state, keeping how this optimizer runs (fused, capturable):
    a checkpoint written without CUDA graphs loads into an agent that uses them, and back."""
    flags = [{k: group[k] for k in ("fused", "capturable") if k in group} for group in optimizer.param_groups]
    optimizer.load_state_dict(state)
    for group, kept in zip(optimizer.param_groups, flags):
        group.update(kept)


def load_error(error: Exception) -> str:
    """Why a checkpoint did not load, in one line: a missing key by its name, and torch's
    ``load_state_dict`` error by its heading and first detail (a size mismatch, missing or unexpected
    keys), which say what does not match."""
    if isinstance(error, KeyError):
        return f"it has no {error.args[0]!r}"
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    return f"{lines[0]} {lines[1]}" if len(lines) > 1 and lines[0].endswith(":") else lines[0]
