"""Experience replay, held as preallocated tensors on the training device."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor


class Batch(NamedTuple):
    """A minibatch of transitions, every field of shape (batch, dim)."""

    obs: Tensor
    action: Tensor
    reward: Tensor
    next_obs: Tensor
    not_done: Tensor  # 1 - terminated: a truncated episode still bootstraps


FIELDS = Batch._fields
"""A transition's tensors, in ``Batch``'s order: obs, action, reward, next_obs, not_done."""


class ReplayBuffer:
    """A ring buffer of (s, a, r, s', not_done) transitions.

    The storage lives on ``device`` from the start, so sampling is an index
    into tensors already there: no host-to-device copy per update.
    """

    def __init__(self, obs_dim: int, action_dim: int, capacity: int, device="cpu"):
        if capacity < 1:
            raise ValueError(f"ReplayBuffer capacity={capacity!r} is invalid: it must be an integer >= 1.")
        self.capacity = int(capacity)
        self.device = torch.device(device)
        kw = dict(dtype=torch.float32, device=self.device)
        self.obs = torch.zeros(self.capacity, obs_dim, **kw)
        self.action = torch.zeros(self.capacity, action_dim, **kw)
        self.reward = torch.zeros(self.capacity, 1, **kw)
        self.next_obs = torch.zeros(self.capacity, obs_dim, **kw)
        self.not_done = torch.zeros(self.capacity, 1, **kw)
        self.ptr = 0
        self.size = 0

    def __len__(self) -> int:
        return self.size

    def add(self, obs, action, reward, next_obs, terminated) -> None:
        """Store one transition; the oldest is overwritten once full.

        Pass ``terminated``, not ``terminated or truncated``: only a true
        terminal state stops bootstrapping.
        """
        i = self.ptr
        self.obs[i] = torch.as_tensor(np.asarray(obs, dtype=np.float32))
        self.action[i] = torch.as_tensor(np.asarray(action, dtype=np.float32))
        self.reward[i] = float(reward)
        self.next_obs[i] = torch.as_tensor(np.asarray(next_obs, dtype=np.float32))
        self.not_done[i] = 0.0 if terminated else 1.0
        self.advance()

    def advance(self) -> None:
        """Move the write position on by one transition (wrapping round once full) and count it."""
        self.ptr = (self.ptr + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, batch_size: int, generator: torch.Generator | None = None) -> Batch:
        """``batch_size`` transitions drawn uniformly, with replacement."""
        if self.size == 0:
            raise ValueError("Cannot sample from an empty ReplayBuffer: add transitions first.")
        idx = torch.randint(0, self.size, (batch_size,), device=self.device, generator=generator)
        return Batch(self.obs[idx], self.action[idx], self.reward[idx], self.next_obs[idx],
                     self.not_done[idx])

    def nbytes(self) -> int:
        """Bytes the stored transitions take when full (what a checkpoint with the buffer adds)."""
        return sum(getattr(self, name).nbytes for name in FIELDS)

    def state_dict(self) -> dict:
        """The stored transitions (only the filled part) and the write position."""
        n = self.size
        # copy=True: a slice of a CPU tensor is a view, and torch.save would write its
        # whole storage (the full capacity), not just the filled part.
        part = {name: getattr(self, name)[:n].to("cpu", copy=True) for name in FIELDS}
        return {**part, "ptr": self.ptr, "capacity": self.capacity}

    def load_state_dict(self, state: dict) -> None:
        """Restore saved transitions; a larger buffer (a run whose budget was raised) takes them too."""
        n = state["obs"].shape[0]
        if n > self.capacity or state["obs"].shape[1] != self.obs.shape[1] \
                or state["action"].shape[1] != self.action.shape[1]:
            raise ValueError(
                f"Saved replay buffer ({n} transitions, obs {state['obs'].shape[1]}, "
                f"action {state['action'].shape[1]}) does not match this one (capacity {self.capacity}, "
                f"obs {self.obs.shape[1]}, action {self.action.shape[1]}).")
        for name in FIELDS:
            getattr(self, name)[:n] = state[name].to(self.device)
        # Same capacity: the write position goes on where it was. A larger one: the
        # saved transitions fill its start and new ones go after them.
        self.size = n
        self.ptr = int(state["ptr"]) if state["capacity"] == self.capacity else n % self.capacity


class StackedReplayBuffers:
    """The replay buffers of K runs trained together, in one tensor per field with a leading member
    dimension: member k's ``ReplayBuffer`` keeps its own write position and size, its tensors become views
    of row k (so it saves and loads as before), and ``add`` and ``sample`` serve every member at once.

    Member k samples its indices from its own generator exactly as ``ReplayBuffer.sample`` does, so a member
    draws the minibatches its run would draw alone.
    """

    def __init__(self, buffers: list[ReplayBuffer]):
        self.buffers = buffers
        self.device = buffers[0].device
        capacity = max(b.capacity for b in buffers)
        self.storage = {name: torch.zeros(len(buffers), capacity, getattr(buffers[0], name).shape[1],
                                          device=self.device) for name in FIELDS}
        for k, buffer in enumerate(buffers):
            for name in FIELDS:  # a resumed run's transitions move into the stack; the buffer keeps a view
                self.storage[name][k, :buffer.capacity] = getattr(buffer, name)
                setattr(buffer, name, self.storage[name][k, :buffer.capacity])
        self.members = torch.arange(len(buffers), device=self.device)

    def add(self, obs, action, reward, next_obs, terminated, members) -> None:
        """Store one transition for each member in ``members`` (indices into the stack; each field has one row
        per member listed), as ``ReplayBuffer.add`` would: ``terminated``, not ``terminated or truncated``.
        The rows go to the device in one copy."""
        values = (obs, action, np.asarray(reward)[:, None], next_obs, 1.0 - np.asarray(terminated, dtype=np.float32)[:, None])
        rows = torch.as_tensor(np.concatenate([np.asarray(v, dtype=np.float32) for v in values], axis=1), device=self.device)
        at = (torch.as_tensor(np.asarray(members), device=self.device),
              torch.as_tensor([self.buffers[k].ptr for k in members], device=self.device))
        for name, part in zip(FIELDS, rows.split([self.storage[name].shape[-1] for name in FIELDS], dim=1)):
            self.storage[name][at] = part
        for k in members:
            self.buffers[k].advance()

    def sample(self, batch_size: int, generators: list[torch.Generator], members) -> Batch:
        """``batch_size`` transitions per member, (K, batch_size, dim) each: member k's drawn as its own
        ``ReplayBuffer.sample`` draws them from ``generators[k]``, for the members in ``members``; the others
        get index 0 and draw nothing."""
        chosen = set(int(k) for k in members)
        idx = torch.stack([torch.randint(0, b.size, (batch_size,), device=self.device, generator=g) if k in chosen
                           else torch.zeros(batch_size, dtype=torch.long, device=self.device)
                           for k, (b, g) in enumerate(zip(self.buffers, generators))])
        rows = self.members[:, None]
        return Batch(*(self.storage[name][rows, idx] for name in FIELDS))
