"""Trained agents shipped with the package, with the evaluation history of their training."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..agent import TD3
from ..checkpoint import check_env_id


def package_dir(package: str = __package__) -> Path:
    """The folder of a td3_lib package's data files (this one's by default), installed or not."""
    return Path(str(resources.files(package)))


def available() -> list[str]:
    """Environment ids that have a shipped agent."""
    return sorted(p.stem for p in package_dir().glob("*.pt"))


def pretrained_path(env_id: str) -> Path:
    path = package_dir() / f"{env_id}.pt"
    if not path.is_file():
        have = ", ".join(available()) or "none yet"
        raise ValueError(f"No pretrained agent for {env_id!r}; available: {have}.")
    return path


def load_pretrained(env_id: str, device="cpu") -> TD3:
    """The shipped agent for ``env_id`` (actor only: it acts, it does not train)."""
    return TD3.load(pretrained_path(env_id), device=device, env_id=env_id)


def reference_history(env_id: str) -> list[dict]:
    """The evaluation history of the shipped agent's training run."""
    from ..run import read_history

    path = package_dir() / f"{env_id}.csv"
    if not path.is_file():
        raise ValueError(f"No reference curve for {env_id!r}; available: {', '.join(available()) or 'none yet'}.")
    return read_history(path)


def export_pretrained(run_dir, env_id: str, dest=None, best: bool = False) -> Path:
    """Ship a training run: its actor (only what acting needs) and its evaluation history.

    ``best=True`` ships the actor of the run's best evaluation (``best_actor.pt``)
    instead of the last one.
    """
    from ..run import BEST_NAME, CHECKPOINT_NAME, HISTORY_NAME, load_agent
    from ..checkpoint import atomic_torch_save, atomic_write_text

    run_dir, dest = Path(run_dir), Path(dest) if dest is not None else package_dir()
    agent = load_agent(run_dir / (BEST_NAME if best else CHECKPOINT_NAME))
    check_env_id(agent.env_id, env_id, run_dir)
    atomic_torch_save(agent.state_dict(actor_only=True, env_id=env_id), dest / f"{env_id}.pt")
    atomic_write_text((run_dir / HISTORY_NAME).read_text(), dest / f"{env_id}.csv")
    return dest / f"{env_id}.pt"
