"""Trained agents shipped with the package, with the evaluation history of their training
and the result of their held-out test."""

from __future__ import annotations

import json
import time
from importlib import resources
from pathlib import Path

import gymnasium as gym
import numpy as np

from ..agent import TD3
from ..checkpoint import check_env_id
from ..provenance import installed_versions
from ..run import HISTORY_NAME, best_evaluation, read_history, wall_clock
from ..video import record, to_gif

TEST_SEED = 10_000
"""Reset seed of the first held-out test episode (then 10001, ...). Training never resets with
these: its evaluations use the run's seed + 100, + 101, ..., its episodes seeds hashed from the run's seed."""
TEST_EPISODES = 100


def package_dir() -> Path:
    """The folder of the shipped agents (this package's data files), installed or not."""
    return Path(str(resources.files(__package__)))


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


def held_out_test(agent, env_id: str, episodes: int = TEST_EPISODES, seed: int = TEST_SEED) -> dict:
    """Test ``agent`` over ``episodes`` noise-free episodes reset with ``seed``, ``seed + 1``, ...:
    each episode's return and length, their summary, and the versions that produced them."""
    from ..envs import opened_env
    from ..rollout import evaluation_episodes

    with opened_env(env_id) as env:
        runs = evaluation_episodes(agent, env, episodes, seed)
    returns = np.array([e.total for e in runs])
    return {"env_id": env_id, "episodes": episodes, "first_seed": seed,
            "mean": round(float(returns.mean()), 1), "std": round(float(returns.std()), 1),
            "min": round(float(returns.min()), 1), "max": round(float(returns.max()), 1),
            "returns": [round(float(r), 2) for r in returns], "lengths": [len(e) for e in runs],
            "versions": installed_versions("td3_lib", "torch", "gymnasium", "mujoco", "box2d", "pybullet")}


def held_out_result_path(env_id: str, dest=None) -> Path:
    return (Path(dest) if dest is not None else package_dir()) / f"{env_id}.test.json"


def write_test_result(result: dict, dest=None) -> Path:
    """Store a held-out test's result beside the shipped agent (atomically)."""
    from ..checkpoint import atomic_write_text

    path = held_out_result_path(result["env_id"], dest)
    atomic_write_text(json.dumps(result, indent=1) + "\n", path)
    return path


def test_line(result: dict, seconds: float, path) -> str:
    """A held-out test's result in one line: mean +- std, the seeds, the extremes, the lengths, the time."""
    first, episodes = result["first_seed"], result["episodes"]
    return (f"{result['env_id']}: {result['mean']:.1f} +- {result['std']:.1f} over {episodes} episodes "
            f"(seeds {first}-{first + episodes - 1}; min {result['min']:.1f}, max {result['max']:.1f}, "
            f"lengths {min(result['lengths'])}-{max(result['lengths'])}; {seconds:.0f} s), stored in {path}")


def store_held_out_test(env_id: str, episodes: int = TEST_EPISODES) -> tuple[dict, str]:
    """Test the shipped agent for ``env_id``, store the result beside it, and say so in one line."""
    start = time.perf_counter()
    result = held_out_test(load_pretrained(env_id), env_id, episodes)
    path = write_test_result(result)
    return result, test_line(result, time.perf_counter() - start, path)


def record_clip(env_id: str, videos, clip_seed: int = TEST_SEED, fps: int = 15, seconds: float = 20.0,
                width: int = 240) -> Path:
    """One episode of the shipped agent as ``videos/ENV_ID.mp4``, and a short gif beside it (for the
    README: at most ``seconds`` long, ``fps`` frames per second, ``width`` pixels wide)."""
    videos = Path(videos)
    clips = record(load_pretrained(env_id), env_id, videos / f".{env_id}", episodes=1, seed=clip_seed)
    mp4 = videos / f"{env_id}.mp4"
    clips[0].replace(mp4)
    to_gif(mp4, mp4.with_suffix(".gif"), width=width, fps=fps, seconds=seconds)
    (videos / f".{env_id}").rmdir()
    return mp4


def readme_row(run_dir, env_id: str, result: dict, gif) -> str:
    """The README's row of a shipped agent: steps (wall clock) and best evaluation, the test, the bar, the gif."""
    history = read_history(Path(run_dir) / HISTORY_NAME)
    best, solved = best_evaluation(history), gym.spec(env_id).reward_threshold
    return (f"| {env_id} | {history[-1]['step']:,} ({wall_clock(history[-1]['wall_s'])}); best evaluation at "
            f"{best['step']:,} | {result['mean']:.1f} ± {result['std']:.1f} | "
            f"{'none registered' if solved is None else f'{solved:g}'} | ![{env_id}]({Path(gif).as_posix()}) |")


def shipped_test_result(env_id: str) -> dict:
    """The stored result of the shipped agent's held-out test (what the README's table quotes)."""
    pretrained_path(env_id)  # the one clear error for an unknown agent
    path = held_out_result_path(env_id)
    if not path.is_file():
        raise ValueError(f"The shipped agent for {env_id!r} has no stored test result; "
                         f"run python -m td3_lib.pretrained --test {env_id}.")
    return json.loads(path.read_text())
