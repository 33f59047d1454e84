"""What the update benchmarks (update_speed.py, gpu_check.py) share: the random transitions every
contender's replay buffer is filled with, a full td3_lib buffer, the update's passes under
torch.compile, and the timing of a block of updates."""

from __future__ import annotations

import time

import numpy as np
import torch

from td3_lib import TD3, ReplayBuffer

FIELDS = ("obs", "action", "reward", "next_obs", "not_done")


def random_transitions(n: int, obs_dim: int, action_dim: int, seed: int = 0) -> dict[str, np.ndarray]:
    """``n`` random transitions (actions in [-1, 1], about 1 in 100 terminal), the same for a given seed."""
    rng = np.random.default_rng(seed)
    return {
        "obs": rng.standard_normal((n, obs_dim), dtype=np.float32),
        "action": rng.uniform(-1, 1, (n, action_dim)).astype(np.float32),
        "reward": rng.standard_normal((n, 1), dtype=np.float32),
        "next_obs": rng.standard_normal((n, obs_dim), dtype=np.float32),
        "not_done": (rng.random((n, 1)) > 0.01).astype(np.float32),
    }


def full_buffer(data: dict, device="cpu") -> ReplayBuffer:
    """A td3_lib ReplayBuffer holding exactly ``data`` (full)."""
    n, obs_dim, action_dim = data["obs"].shape[0], data["obs"].shape[1], data["action"].shape[1]
    buffer = ReplayBuffer(obs_dim, action_dim, n, device)
    for name in FIELDS:
        getattr(buffer, name)[:] = torch.from_numpy(data[name]).to(device)
    buffer.size = n
    return buffer


def compile_passes(agent: TD3, backend: str = "inductor") -> None:
    """Wrap this agent's three network passes (target Q, critic loss, actor loss) in torch.compile.

    The wrapping is done here, on the instance, so the agent carries no benchmark hooks. The
    smoothing noise draws from the agent's own generator, where torch.compile breaks the graph and
    runs that draw eagerly; backward calls and the fused Adam steps stay eager too."""
    for name in ("target_q", "critic_loss", "actor_loss"):
        setattr(agent, name, torch.compile(getattr(agent, name), backend=backend, dynamic=False))


def timed(block, k: int) -> float:
    """Updates per second of one block of k updates."""
    start = time.perf_counter()
    block(k)
    return k / (time.perf_counter() - start)
