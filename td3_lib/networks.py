"""The actor and the twin critic."""

from __future__ import annotations

import math

import numpy as np

import torch
from torch import Tensor, nn

from .targets import half_range


def check_action_bounds(low, high, owner: str = "The agent") -> None:
    """Refuse, in one sentence, bounds the actor cannot map to: finite, same shape, low < high everywhere."""
    low, high = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
    if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
        raise ValueError(f"{owner} has infinite action bounds (low={low}, high={high}): "
                         "TD3's actor needs finite bounds.")
    if low.shape != high.shape or not np.all(low < high):
        raise ValueError(f"{owner} has action bounds low={low} high={high}, which are invalid: they need "
                         "the same shape and low < high in every dimension.")


def _mlp(sizes: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class Actor(nn.Module):
    """pi(s) = m + h * tanh(f(s)), per action dimension.

    m = (high + low) / 2 and h = (high - low) / 2 are vectors, so each
    dimension reaches exactly its own bounds, symmetric or not (scaling every
    dimension by high[0] is wrong as soon as the bounds differ).
    """

    def __init__(self, obs_dim: int, action_low, action_high, hidden_sizes=(256, 256)):
        super().__init__()
        low = torch.as_tensor(action_low, dtype=torch.float32).flatten()
        high = torch.as_tensor(action_high, dtype=torch.float32).flatten()
        self.net = _mlp([obs_dim, *hidden_sizes, low.numel()])
        self.register_buffer("action_center", (high + low) / 2)
        self.register_buffer("action_half_range", half_range(low, high))

    def forward(self, obs: Tensor) -> Tensor:
        return self.action_center + self.action_half_range * torch.tanh(self.net(obs))


class TwinCritic(nn.Module):
    """Q1 and Q2 in one batched pass.

    The two networks' weights are stacked along a leading axis of size 2, so
    every layer is one batched matrix product for both critics instead of
    two modules called in turn. Each network is initialised as nn.Linear
    would be, independently.
    """

    def __init__(self, obs_dim: int, action_dim: int, hidden_sizes=(256, 256)):
        super().__init__()
        sizes = [obs_dim + action_dim, *hidden_sizes, 1]
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
            bound = 1.0 / math.sqrt(fan_in)  # nn.Linear's default init
            self.weights.append(nn.Parameter(torch.empty(2, fan_in, fan_out).uniform_(-bound, bound)))
            self.biases.append(nn.Parameter(torch.empty(2, 1, fan_out).uniform_(-bound, bound)))

    def forward(self, obs: Tensor, action: Tensor) -> tuple[Tensor, Tensor]:
        """(Q1(s, a), Q2(s, a)), each of shape (batch, 1)."""
        q = stacked_forward(torch.cat([obs, action], dim=-1), self.weights, self.biases)
        return q[0], q[1]

    def q1(self, obs: Tensor, action: Tensor, frozen: bool = False) -> Tensor:
        """Q1(s, a) alone, for the actor loss -mean Q1(s, pi(s)), through the same layers.

        ``frozen=True`` uses detached weights: gradients then flow to the
        action (and so to the actor) but none is computed for the critic.
        """
        weights = [w[:1].detach() if frozen else w[:1] for w in self.weights]
        biases = [b[:1].detach() if frozen else b[:1] for b in self.biases]
        return stacked_forward(torch.cat([obs, action], dim=-1), weights, biases)[0]


def stacked_forward(x: Tensor, weights, biases) -> Tensor:
    """The critics' layer stack, for every critic at once: (n_critics, batch, 1).

    The first layer broadcasts the shared input over the critics; each later
    layer is one batched matrix product, ReLU between layers.
    """
    h = torch.matmul(x, weights[0]) + biases[0]
    for w, b in zip(weights[1:], biases[1:]):
        h = torch.baddbmm(b, torch.relu(h), w)
    return h
