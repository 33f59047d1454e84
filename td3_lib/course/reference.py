"""A flat TD3, in the shape of the authors' ``TD3.py`` (sfujim/TD3): read it beside ``td3_lib.agent``.

``td3_lib.TD3`` is built for speed: both critics in one batched pass, one fused target update,
fused Adam, optional CUDA graphs. This file computes the same update the plain way, one method per
step of the paper's Algorithm 1:

    (1) select_action    pi(s); the exploration noise is added by the training loop
    (3) target_action    a~ = clip(pi'(s') + clip(eps, -c h, c h), low, high), eps ~ N(0, (sigma h)^2)
    (4) target_q         y = r + discount * not_done * min(Q1'(s', a~), Q2'(s', a~))
    (5) critic_update    one Adam step on MSE(Q1(s, a), y) + MSE(Q2(s, a), y)
    (7) actor_update     one Adam step on -mean Q1(s, pi(s))
    (8) target_update    theta' <- tau * theta + (1 - tau) * theta', parameter by parameter
    (2)-(8) train        one iteration on a minibatch; (6) the actor and targets every policy_freq-th

Two things differ from the authors' file, both on purpose: the bounds are per action dimension
(h = (high - low) / 2 is a vector, where the authors scale every dimension by one ``max_action``),
and the three switches of ``TD3Config`` (``clipped_double_q``, ``target_policy_smoothing``,
``delayed_policy_updates``) are honoured, so every ablation of the course has its plain form too.
The smoothing noise is drawn as the authors draw it, with ``torch.randn_like`` from torch's global
generator.

The steps read only what ``td3_lib.TD3`` also has (``config``, ``low``, ``high``, the four networks,
the two optimisers; ``critic(s, a)`` gives Q1 and Q2, ``critic.q1(s, a)`` Q1 alone), and call each
other through the class (``ReferenceTD3.target_action(self, ...)``), so ``td3_update(agent, batch,
it)`` runs them on a ``td3_lib.TD3`` as well: it is lesson 06's answer key.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn

from ..config import TD3Config


class Actor(nn.Module):
    """pi(s) = m + h * tanh(l3(relu(l2(relu(l1(s)))))), m and h the bounds' centre and half-range."""

    def __init__(self, obs_dim: int, low: torch.Tensor, high: torch.Tensor, hidden=(256, 256)):
        super().__init__()
        self.l1 = nn.Linear(obs_dim, hidden[0])
        self.l2 = nn.Linear(hidden[0], hidden[1])
        self.l3 = nn.Linear(hidden[1], low.numel())
        self.register_buffer("centre", (high + low) / 2)
        self.register_buffer("half_range", (high - low) / 2)

    def forward(self, obs):
        a = F.relu(self.l1(obs))
        a = F.relu(self.l2(a))
        return self.centre + self.half_range * torch.tanh(self.l3(a))


class Critic(nn.Module):
    """Q1 (l1-l3) and Q2 (l4-l6): two separate networks on the concatenated (s, a)."""

    def __init__(self, obs_dim: int, action_dim: int, hidden=(256, 256)):
        super().__init__()
        self.l1 = nn.Linear(obs_dim + action_dim, hidden[0])
        self.l2 = nn.Linear(hidden[0], hidden[1])
        self.l3 = nn.Linear(hidden[1], 1)
        self.l4 = nn.Linear(obs_dim + action_dim, hidden[0])
        self.l5 = nn.Linear(hidden[0], hidden[1])
        self.l6 = nn.Linear(hidden[1], 1)

    def forward(self, obs, action):
        sa = torch.cat([obs, action], 1)
        q1 = self.l3(F.relu(self.l2(F.relu(self.l1(sa)))))
        q2 = self.l6(F.relu(self.l5(F.relu(self.l4(sa)))))
        return q1, q2

    def q1(self, obs, action):
        sa = torch.cat([obs, action], 1)
        return self.l3(F.relu(self.l2(F.relu(self.l1(sa)))))


class ReferenceTD3:
    """TD3 the plain way: plain ``nn.Linear`` networks, ``torch.optim.Adam``, a loop per parameter."""

    def __init__(self, obs_dim: int, action_low, action_high, config: TD3Config | None = None, device="cpu"):
        self.config = config = config or TD3Config()
        if len(config.hidden_sizes) != 2:
            raise ValueError(f"hidden_sizes={config.hidden_sizes}: the reference TD3 has two hidden layers, "
                             "as the authors' code.")
        self.low = torch.as_tensor(action_low, dtype=torch.float32, device=device).flatten()
        self.high = torch.as_tensor(action_high, dtype=torch.float32, device=device).flatten()
        self.actor = Actor(obs_dim, self.low, self.high, config.hidden_sizes).to(device)
        self.actor_target = copy.deepcopy(self.actor)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=config.actor_lr)
        self.critic = Critic(obs_dim, self.low.numel(), config.hidden_sizes).to(device)
        self.critic_target = copy.deepcopy(self.critic)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=config.critic_lr)
        self.total_it = 0

    @classmethod
    def from_agent(cls, agent) -> "ReferenceTD3":
        """A reference TD3 with a ``td3_lib.TD3``'s config, bounds, weights and iteration count
        (its optimisers fresh: use it on an agent that has not trained yet to follow it exactly)."""
        ref = cls(agent.obs_dim, agent.action_low, agent.action_high, agent.config, agent.device)
        for mine, theirs in ((ref.actor, agent.actor), (ref.actor_target, agent.actor_target)):
            linears = [m for m in theirs.net if isinstance(m, nn.Linear)]
            mine.load_state_dict({**mine.state_dict(), **{f"l{i + 1}.{k}": v for i, layer in enumerate(linears)
                                                          for k, v in layer.state_dict().items()}})
        for mine, theirs in ((ref.critic, agent.critic), (ref.critic_target, agent.critic_target)):
            with torch.no_grad():  # layer k of critic i: weights[k][i] is (in, out), nn.Linear keeps (out, in)
                for k, (w, b) in enumerate(zip(theirs.weights, theirs.biases)):
                    for i in range(2):
                        getattr(mine, f"l{3 * i + k + 1}").weight.copy_(w[i].T)
                        getattr(mine, f"l{3 * i + k + 1}").bias.copy_(b[i, 0])
        ref.total_it = agent.total_it
        return ref

    def select_action(self, obs) -> torch.Tensor:
        """(1) The noise-free action pi(s)."""
        with torch.no_grad():
            return self.actor(torch.as_tensor(obs, dtype=torch.float32).reshape(1, -1)).flatten()

    def target_action(self, next_obs):
        """(3) Target policy smoothing: clipped noise on the target actor's action, inside the bounds."""
        cfg = self.config
        next_action = self.actor_target(next_obs)
        if not cfg.target_policy_smoothing:
            return next_action
        h = (self.high - self.low) / 2  # each dimension's half-range: sigma and c are fractions of it
        sigma, c = cfg.policy_noise * h, cfg.noise_clip * h
        noise = (torch.randn_like(next_action) * sigma).clamp(-c, c)
        return (next_action + noise).clamp(self.low, self.high)

    def target_q(self, batch):
        """(4) The critics' target y: the smaller target critic (Q1' alone without clipped double Q)."""
        with torch.no_grad():
            next_action = ReferenceTD3.target_action(self, batch.next_obs)
            target_q1, target_q2 = self.critic_target(batch.next_obs, next_action)
            next_q = torch.min(target_q1, target_q2) if self.config.clipped_double_q else target_q1
            return batch.reward + batch.not_done * self.config.discount * next_q

    def critic_update(self, batch, target_q) -> None:
        """(5) One gradient step on both critics towards y (Q1 alone without clipped double Q)."""
        current_q1, current_q2 = self.critic(batch.obs, batch.action)
        critic_loss = F.mse_loss(current_q1, target_q)
        if self.config.clipped_double_q:
            critic_loss = critic_loss + F.mse_loss(current_q2, target_q)
        self.critic_optimizer.zero_grad()
        critic_loss.backward()
        self.critic_optimizer.step()

    def actor_update(self, batch) -> None:
        """(7) One gradient step of the actor up Q1: the deterministic policy gradient, by autograd."""
        actor_loss = -self.critic.q1(batch.obs, self.actor(batch.obs)).mean()
        self.actor_optimizer.zero_grad()
        actor_loss.backward()
        self.actor_optimizer.step()

    def target_update(self) -> None:
        """(8) Both target networks a step tau towards the learned ones."""
        tau = self.config.tau
        with torch.no_grad():
            for net, target in ((self.critic, self.critic_target), (self.actor, self.actor_target)):
                for param, target_param in zip(net.parameters(), target.parameters()):
                    target_param.copy_(tau * param + (1 - tau) * target_param)

    def train(self, batch) -> None:
        """(2)-(8) One iteration on a minibatch (``td3_lib.Batch``: obs, action, reward, next_obs, not_done)."""
        self.total_it += 1
        td3_update(self, batch, self.total_it)


def td3_update(agent, batch, it: int) -> None:
    """Steps (3)-(8) of iteration ``it`` (counted from 1) on ``agent``: a ``ReferenceTD3`` or a
    ``td3_lib.TD3`` (lesson 06's exercise, answered: its check accepts this)."""
    ReferenceTD3.critic_update(agent, batch, ReferenceTD3.target_q(agent, batch))
    if not agent.config.delayed_policy_updates or it % agent.config.policy_freq == 0:  # (6)
        ReferenceTD3.actor_update(agent, batch)
        ReferenceTD3.target_update(agent)
