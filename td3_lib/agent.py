"""The TD3 agent: acting, the update of the paper's Algorithm 1, saving and loading."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import torch
import torch.nn.functional as F

from .buffer import Batch
from .checkpoint import (CheckpointError, atomic_torch_save, check_env_id, load_error, load_optimizer_state,
                         restore_generator, safe_load)
from .config import TD3Config
from .cuda_graph import check_graph_device, graphed_steps
from .networks import Actor, TwinCritic, check_action_bounds
from .targets import bellman_target, clipped_double_q, half_range, smooth_target_action, soft_update

CHECKPOINT_FORMAT = "td3_lib.agent/1"


def resolve_device(device="auto") -> torch.device:
    """'auto' is the GPU when there is one, else the CPU; a GPU asked for must exist."""
    if isinstance(device, torch.device):
        device = str(device)
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"Unknown device {device!r}: use 'auto', 'cpu', 'cuda' or 'cuda:N'.") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device={device!r} asked for, but this machine has no CUDA GPU: "
                             "use 'cpu' or 'auto'.")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"device={device!r} does not exist: this machine has "
                             f"{torch.cuda.device_count()} GPU(s).")
    elif dev.type != "cpu":
        raise ValueError(f"Unsupported device {device!r}: use 'auto', 'cpu', 'cuda' or 'cuda:N'.")
    return dev


def _adam(params, lr: float, capturable: bool = False) -> torch.optim.Adam:
    """Adam with its fused kernel: one call updates every tensor (CPU and CUDA).

    The fused kernel computes the same update as the per-tensor loop, in a
    fraction of the time on small networks, where the loop's overhead dominates.
    ``capturable=True`` lets a CUDA graph capture its step (cuda_graph.py).
    """
    params = list(params)
    try:
        return torch.optim.Adam(params, lr=lr, fused=True, capturable=capturable)
    except RuntimeError:  # torch < 2.4 has no fused Adam for CPU tensors
        return torch.optim.Adam(params, lr=lr, capturable=capturable)


class TD3:
    """Twin Delayed DDPG (Fujimoto, van Hoof and Meger, 2018)."""

    env_id: str | None = None
    """The environment it was trained on, as a loaded checkpoint says (a subclass may name its own)."""

    def __init__(self, obs_dim: int, action_low, action_high, config: TD3Config | None = None,
                 device="cpu"):
        self.config = config = config or TD3Config()
        self.device = resolve_device(device)
        check_graph_device(config.cuda_graph, self.device)
        self.obs_dim = int(obs_dim)
        self.action_low = np.asarray(action_low, dtype=np.float32).reshape(-1)
        self.action_high = np.asarray(action_high, dtype=np.float32).reshape(-1)
        check_action_bounds(self.action_low, self.action_high)
        self.action_dim = self.action_low.size
        self.half_range = half_range(self.action_low, self.action_high)
        self.low = torch.as_tensor(self.action_low, device=self.device)
        self.high = torch.as_tensor(self.action_high, device=self.device)

        self.actor = Actor(obs_dim, self.action_low, self.action_high, config.hidden_sizes).to(self.device)
        self.actor_target = copy.deepcopy(self.actor)
        self.actor_optimizer = _adam(self.actor.parameters(), config.actor_lr, config.cuda_graph)
        self.critic = TwinCritic(obs_dim, self.action_dim, config.hidden_sizes).to(self.device)
        self.critic_target = copy.deepcopy(self.critic)
        self.critic_optimizer = _adam(self.critic.parameters(), config.critic_lr, config.cuda_graph)
        for p in (*self.actor_target.parameters(), *self.critic_target.parameters()):
            p.requires_grad_(False)
        # The target-smoothing noise has its own generator, seeded from the global
        # one, so the same torch.manual_seed gives the same run.
        self.generator = torch.Generator(self.device)
        self.generator.manual_seed(int(torch.randint(0, 2**62, (1,)).item()))
        self.total_it = 0
        self.can_train = True
        self.use_cuda_graphs()

    def use_cuda_graphs(self) -> None:
        """With ``config.cuda_graph``: the critic and actor steps below run as CUDA graphs of
        themselves (cuda_graph.py), captured anew after a load; ``update`` is the same either way."""
        if self.config.cuda_graph:
            self.critic_step, self.actor_step = graphed_steps(self)

    # ------------------------------------------------------------------ acting
    def act(self, obs, noise: float = 0.0, rng: np.random.Generator | None = None) -> np.ndarray:
        """pi(s) + N(0, (noise * half_range)^2), clipped to the bounds; numpy in, numpy out.

        ``obs`` may be one observation or a batch of them (one per row).
        """
        obs = np.asarray(obs, dtype=np.float32)
        single = obs.ndim == 1
        with torch.no_grad():
            x = torch.as_tensor(obs, device=self.device)
            action = self.actor(x[None] if single else x).cpu().numpy()
        action = self.explore(action, noise, rng)
        return action[0] if single else action

    def explore(self, action: np.ndarray, noise: float = 0.0, rng: np.random.Generator | None = None) -> np.ndarray:
        """``action`` (the actor's pi(s), numpy) plus N(0, (noise * half_range)^2) per dimension, clipped to the
        bounds: the exploration ``act`` adds (a batch of runs adds it to each run's own pi(s) the same way)."""
        if noise > 0:
            rng = rng if rng is not None else np.random.default_rng()
            action = action + rng.normal(0.0, 1.0, size=action.shape) * (noise * self.half_range)
        return np.clip(action, self.action_low, self.action_high).astype(np.float32)

    # ---------------------------------------------------------------- learning
    def update(self, batch: Batch) -> dict[str, torch.Tensor]:
        """One iteration of Algorithm 1: a critic step, and every d-th time an actor and target step.

        Returns detached tensors; nothing here waits for the device.
        """
        self.check_can_train()
        cfg = self.config
        self.total_it += 1
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=cfg.bf16):
            critic_loss, current_q1 = self.critic_step(batch)
            metrics = {"critic_loss": critic_loss.detach(), "q1": current_q1.detach().mean()}
            if not cfg.delayed_policy_updates or self.total_it % cfg.policy_freq == 0:
                metrics["actor_loss"] = self.actor_step(batch).detach()
        return metrics

    def check_can_train(self) -> None:
        """Refuse to update an agent loaded from an actor-only checkpoint (it has no critic to train)."""
        if not self.can_train:
            raise RuntimeError("This agent was loaded from an actor-only checkpoint: it can act, not train.")

    def target_q(self, batch: Batch) -> torch.Tensor:
        """y = r + discount * not_done * min(Q1', Q2')(s', a'), a' = pi'(s') plus clipped noise.

        Without clipped double Q, Q1' alone; without target policy smoothing, a' = pi'(s').
        """
        cfg = self.config
        with torch.no_grad():
            next_action = self.actor_target(batch.next_obs)
            if cfg.target_policy_smoothing:
                next_action = smooth_target_action(next_action, self.low, self.high, cfg.policy_noise,
                                                   cfg.noise_clip, generator=self.generator)
            target_q1, target_q2 = self.critic_target(batch.next_obs, next_action)
            next_q = clipped_double_q(target_q1, target_q2) if cfg.clipped_double_q else target_q1
            return bellman_target(batch.reward, batch.not_done, next_q.float(), cfg.discount)

    def critic_loss(self, obs, action, target_q):
        """MSE of Q1 and Q2 to the target (Q1 alone without clipped double Q); also returns Q1."""
        current_q1, current_q2 = self.critic(obs, action)
        critic_loss = F.mse_loss(current_q1.float(), target_q)
        if self.config.clipped_double_q:  # without it only Q1 is used, so only Q1 is trained
            critic_loss = critic_loss + F.mse_loss(current_q2.float(), target_q)
        return critic_loss, current_q1

    def critic_step(self, batch: Batch):
        """One gradient step of both critics towards the target y; returns (loss, Q1)."""
        critic_loss, current_q1 = self.critic_loss(batch.obs, batch.action, self.target_q(batch))
        self.critic_optimizer.zero_grad(set_to_none=True)
        critic_loss.backward()
        self.critic_optimizer.step()
        return critic_loss, current_q1

    def actor_loss(self, obs):
        """-mean Q1(s, pi(s)). frozen=True: the gradient reaches the actor through the
        action, and none is computed for the critic's weights."""
        return -self.critic.q1(obs, self.actor(obs), frozen=True).float().mean()

    def actor_step(self, batch: Batch):
        """The delayed step: one gradient step of the actor (7), then both soft target updates (8)."""
        actor_loss = self.policy_step(batch)
        self.update_targets()
        return actor_loss

    def policy_step(self, batch: Batch):
        """(7): one gradient step of the actor along dQ1/da; returns its loss."""
        actor_loss = self.actor_loss(batch.obs)
        self.actor_optimizer.zero_grad(set_to_none=True)
        actor_loss.backward()
        self.actor_optimizer.step()
        return actor_loss

    def update_targets(self) -> None:
        """(8): theta' <- tau theta + (1 - tau) theta' for both target networks, in one fused lerp."""
        soft_update((self.critic, self.actor), (self.critic_target, self.actor_target), self.config.tau)

    # ---------------------------------------------------------- saving/loading
    def state_dict(self, actor_only: bool = False, env_id: str | None = None) -> dict:
        """Everything needed to rebuild the agent, as tensors and plain values."""
        state = {
            "format": CHECKPOINT_FORMAT,
            "env_id": env_id,
            "config": self.config.to_dict(),
            "obs_dim": self.obs_dim,
            "action_low": self.action_low.tolist(),
            "action_high": self.action_high.tolist(),
            "actor_only": actor_only,
            "actor": self.actor.state_dict(),
        }
        if not actor_only:
            state.update(actor_target=self.actor_target.state_dict(),
                         critic=self.critic.state_dict(),
                         critic_target=self.critic_target.state_dict(),
                         actor_optimizer=self.actor_optimizer.state_dict(),
                         critic_optimizer=self.critic_optimizer.state_dict(),
                         generator=self.generator.get_state(),
                         total_it=self.total_it)
        return state

    def save(self, path, env_id: str | None = None, actor_only: bool = False) -> None:
        """Write a checkpoint atomically: a crash mid-save leaves any previous file intact."""
        atomic_torch_save(self.state_dict(actor_only=actor_only, env_id=env_id), path)

    def load_state(self, state: dict, source="checkpoint") -> None:
        """Load what ``state_dict`` saved (weights, optimizers, counters) into this agent."""
        try:
            self.actor.load_state_dict(state["actor"])
            if state["actor_only"]:
                self.actor_target.load_state_dict(state["actor"])
                self.can_train = False
            else:
                self.actor_target.load_state_dict(state["actor_target"])
                self.critic.load_state_dict(state["critic"])
                self.critic_target.load_state_dict(state["critic_target"])
                load_optimizer_state(self.actor_optimizer, state["actor_optimizer"])
                load_optimizer_state(self.critic_optimizer, state["critic_optimizer"])
                restore_generator(self.generator, state["generator"])
                self.total_it = int(state["total_it"])
        except (KeyError, TypeError, RuntimeError, ValueError) as e:
            raise CheckpointError(f"{source} does not match the network it describes: {load_error(e)}") from None
        self.env_id = state.get("env_id")
        self.use_cuda_graphs()  # graphs captured before hold the optimizers' replaced state tensors

    @classmethod
    def from_state_dict(cls, state: dict, device="cpu", source="checkpoint") -> "TD3":
        """A new agent of this class, built from ``state_dict``'s shapes and config, then loaded."""
        if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
            raise CheckpointError(f"{source} is not a td3_lib agent checkpoint.")
        try:
            config = TD3Config.from_dict(state["config"])
            if config.cuda_graph and resolve_device(device).type != "cuda":
                # the graphs are how a GPU runs the update, not what it computes
                config = dataclasses.replace(config, cuda_graph=False)
            agent = cls(state["obs_dim"], state["action_low"], state["action_high"], config, device)
        except (KeyError, TypeError, RuntimeError, ValueError) as e:
            raise CheckpointError(f"{source} does not match the network it describes: {load_error(e)}") from None
        agent.load_state(state, source)
        return agent

    @classmethod
    def load(cls, path, device="cpu", env_id: str | None = None) -> "TD3":
        """Read a checkpoint written by ``save`` (weights_only: no code in it can run).

        With ``env_id``, a checkpoint trained on another environment is refused.
        """
        agent = cls.from_state_dict(safe_load(path), device=device, source=str(path))
        check_env_id(agent.env_id, env_id, path)
        return agent
