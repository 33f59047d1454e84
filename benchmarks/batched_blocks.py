"""What the batched benchmarks (batched_speed.py, gpu_batched.py) share: the network sizes measured,
the members' agents, and blocks of updates: K members in one ``BatchedTD3`` update, or K ``TD3`` agents
updated one after another.

Every block samples its minibatches from full replay buffers of the same random transitions
(``update_blocks.random_transitions``), one buffer per member, each member with its own generator, as
training does; ``block(n)`` runs n updates of every member (K * n member-updates) and returns when the
device is done.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from td3_lib import TD3, TD3Config, make_env
from td3_lib.batched import BatchedTD3
from td3_lib.buffer import StackedReplayBuffers
from update_blocks import full_buffer


@dataclass(frozen=True)
class UpdateSpec:
    """The sizes of one measured update: the environment's spaces, the networks, the batch, the buffer."""

    obs_dim: int
    action_dim: int
    hidden: tuple[int, ...]
    batch: int
    buffer: int
    """Transitions in each member's (full) replay buffer."""

    @property
    def name(self) -> str:
        return "-".join(map(str, self.hidden))

    def config(self, **fields) -> TD3Config:
        return TD3Config(hidden_sizes=tuple(self.hidden), batch_size=self.batch, **fields)


def member_agents(obs_dim: int, action_dim: int, configs: Sequence[TD3Config], device, seeds=None) -> list[TD3]:
    """One ``TD3`` per config, member k's weights and generator drawn after ``torch.manual_seed(seeds[k])``
    (default k), as ``train`` builds a run's agent; actions in [-1, 1]."""
    seeds = range(len(configs)) if seeds is None else seeds
    agents = []
    for seed, cfg in zip(seeds, configs):
        torch.manual_seed(seed)
        agents.append(TD3(obs_dim, -np.ones(action_dim), np.ones(action_dim), cfg, device=device))
    return agents


def warm_up(env_ids: Sequence[str] = ()) -> None:
    """What a process does once before anything is timed: the lazy imports of its first agent (Adam's) and
    of each environment (MuJoCo's), so that no contender pays for them in its first round."""
    TD3(3, [-1.0], [1.0], TD3Config(hidden_sizes=(4, 4), batch_size=2))
    for env_id in env_ids:
        make_env(env_id).close()


def sync(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def batched_block(spec: UpdateSpec, k: int, device, data: dict, **config):
    """n batched updates of K members (``config``: TD3Config fields, e.g. cuda_graph=True)."""
    batched = BatchedTD3(member_agents(spec.obs_dim, spec.action_dim, [spec.config(**config)] * k, device))
    replay = StackedReplayBuffers([full_buffer(data, device) for _ in range(k)])
    generators = [torch.Generator(device).manual_seed(seed) for seed in range(k)]
    members = np.arange(k)

    def block(n: int) -> None:
        for _ in range(n):
            batched.update(replay.sample(spec.batch, generators, members))
        sync(device)
    return block


def sequential_block(spec: UpdateSpec, seeds: Sequence[int], device, data: dict, **config):
    """n updates of each of K ``TD3`` agents (one per seed), the agents in turn: K runs in one loop."""
    agents = member_agents(spec.obs_dim, spec.action_dim, [spec.config(**config)] * len(seeds), device, seeds)
    buffers = [full_buffer(data, device) for _ in seeds]
    generators = [torch.Generator(device).manual_seed(seed) for seed in seeds]

    def block(n: int) -> None:
        for _ in range(n):
            for agent, buffer, generator in zip(agents, buffers, generators):
                agent.update(buffer.sample(spec.batch, generator=generator))
        sync(device)
    return block


def even_block(seconds_per_update: float, block_seconds: float) -> int:
    """The even number of updates (at least 2) that takes about ``block_seconds``: even, so that every
    block holds the same share of the delayed actor steps."""
    return max(2, int(block_seconds / max(seconds_per_update, 1e-9)) // 2 * 2)
