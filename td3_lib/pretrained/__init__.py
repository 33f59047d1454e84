"""Trained agents shipped with the package, with the evaluation history of their training."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..agent import TD3, check_env_id
from ..checkpoint import safe_load


def _dir() -> Path:
    return Path(str(resources.files(__package__)))


def available() -> list[str]:
    """Environment ids that have a shipped agent."""
    return sorted(p.stem for p in _dir().glob("*.pt"))


def pretrained_path(env_id: str) -> Path:
    path = _dir() / f"{env_id}.pt"
    if not path.is_file():
        have = ", ".join(available()) or "none yet"
        raise ValueError(f"No pretrained agent for {env_id!r}; available: {have}.")
    return path


def load_pretrained(env_id: str, device="cpu") -> TD3:
    """The shipped agent for ``env_id`` (actor only: it acts, it does not train)."""
    path = pretrained_path(env_id)
    agent = TD3.from_state_dict(safe_load(path, device=device), device=device, source=str(path))
    check_env_id(agent, env_id, path)
    return agent


def reference_history(env_id: str) -> list[dict]:
    """The evaluation history of the shipped agent's training run."""
    from ..training import read_history

    path = _dir() / f"{env_id}.csv"
    if not path.is_file():
        raise ValueError(f"No reference curve for {env_id!r}; available: {', '.join(available()) or 'none yet'}.")
    return read_history(path)
