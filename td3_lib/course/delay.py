"""Lesson 05: the critic's error at the moment the actor steps, with the actor's delay and the target
networks' delay as two separate switches (the paper's Section 5.2).

The paper's argument: a policy step made on a value estimate with a high error does harm, so the actor
(and, in Algorithm 1, the target networks with it) should step only every d critic updates, after the
critic has reduced its error. Pendulum-v1 is deterministic, so the true Q of the *current* actor is
exact: from 64 fixed states (drawn as Pendulum's reset draws them, seed 0) a vectorised copy of
Pendulum's dynamics rolls the noise-free actor out for ``HORIZON`` = 300 steps (at discount 0.98 the
tail after that is below 0.25% of the value).

``ProbedTD3`` is TD3 whose actor steps every ``config.policy_freq`` critic updates and whose target
networks move every ``target_freq`` updates (a class attribute; TD3 moves both every d). Every
``PROBE_EVERY`` critic updates, right after an actor step, it computes the truth of the new actor and
measures the critic ("after", k = 0); then again ``policy_freq`` critic updates later, just before
the next actor step ("before", k = d): the moment Section 5.2 is about. On the fixed states, at
a = pi(s), with Q^pi the exact value and y = r + discount * min(Q1', Q2')(s', pi'(s')) the
noise-free target of the target networks:

- ``q_error``: mean |Q1(s, a) - Q^pi(s, a)|, the critic's error against the truth;
- ``q_bias``: mean Q1(s, a) - Q^pi(s, a) (positive: overestimation);
- ``td_error``: mean |Q1(s, a) - y|, the error against the critic's own target (the "TD-error");
- ``grad_agree``: the share of states where dQ1/da has the sign of the true dQ^pi/da (central
  difference +-``DELTA``), i.e. whether the actor's next step goes the right way;
- ``true_value``: mean Q^pi(s, pi(s)), the exact quality of the actor probed.

``experiments/delay.py`` runs four variants (policy_freq, target_freq), 5 seeds each on Pendulum-v1's
preset: d=1 (1, 1), d=2 (2, 2: TD3's runs, bit for bit), actor/2 (2, 1: only the actor's step
delayed) and targets/2 (1, 2: only the target networks' update delayed).

The probe ``delay`` (``delay_probe``) reports at each evaluation the means of the measurements the
agent collected since the previous one, and clears them: ``q_error_before``, ``q_error_after``,
``q_bias_before``, ``td_error_before``, ``grad_agree_before`` and ``true_value`` (no columns at an
evaluation before the first probe). The measurement draws no random numbers and changes no weight:
with ``target_freq`` equal to ``policy_freq`` the run is TD3's, bit for bit. The measurements live in
the agent, not in its checkpoint: a resumed run loses those since its last evaluation.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import torch

from ..agent import TD3
from ..config import TD3Config
from ..targets import bellman_target, clipped_double_q
from ..sweep.variants import VARIANTS, Variant, register, register_probe

PROBE_EVERY = 100  # critic updates between probes (a multiple of every delay used)
HORIZON = 300
N_STATES = 64
DELTA = 0.05  # finite-difference step of the action (torque units; Pendulum's bounds are +-2)
MAX_TORQUE = 2.0
MEASURES = ("q_error", "q_bias", "td_error", "grad_agree", "true_value")
COLUMNS = ("q_error_before", "q_error_after", "q_bias_before", "td_error_before", "grad_agree_before", "true_value")


# ------------------------------------------------------------------ Pendulum, vectorised
def fixed_states(n: int = N_STATES, seed: int = 0) -> np.ndarray:
    """``n`` states (angle, angular velocity) drawn as Pendulum-v1's reset draws them."""
    rng = np.random.default_rng(seed)
    return np.stack([rng.uniform(-np.pi, np.pi, n), rng.uniform(-1.0, 1.0, n)], axis=1)


def observation(states: np.ndarray) -> np.ndarray:
    """Pendulum's observation (cos theta, sin theta, angular velocity) of each state."""
    return np.stack([np.cos(states[:, 0]), np.sin(states[:, 0]), states[:, 1]], axis=1).astype(np.float32)


def pendulum_step(states: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pendulum-v1's step (g = 10, m = l = 1, dt = 0.05) for a batch of states and torques ``u``:
    r = -(angle_normalize(theta)^2 + 0.1 thetadot^2 + 0.001 u^2), then
    thetadot' = clip(thetadot + (3 g / (2 l) sin(theta) + 3 u / (m l^2)) dt, -8, 8), theta' = theta + thetadot' dt.
    Returns (next states, rewards)."""
    th, thdot = states[:, 0], states[:, 1]
    u = np.clip(u, -MAX_TORQUE, MAX_TORQUE)
    norm = ((th + np.pi) % (2 * np.pi)) - np.pi
    reward = -(norm ** 2 + 0.1 * thdot ** 2 + 0.001 * u ** 2)
    thdot = np.clip(thdot + (3 * 10.0 / 2 * np.sin(th) + 3.0 * u) * 0.05, -8.0, 8.0)
    return np.stack([th + thdot * 0.05, thdot], axis=1), reward


@torch.no_grad()
def true_q(actor, states: np.ndarray, first_action: np.ndarray, discount: float,
           horizon: int = HORIZON) -> np.ndarray:
    """Q^pi(s, a) = sum_t discount^t r_t: take ``first_action`` in each state, then follow the
    noise-free ``actor`` (a CPU network) for ``horizon`` - 1 more steps."""
    states, reward = pendulum_step(states, first_action)
    ret = reward.astype(np.float64)
    for t in range(1, horizon):
        u = actor(torch.as_tensor(observation(states))).numpy()[:, 0]
        states, reward = pendulum_step(states, u)
        ret += discount ** t * reward
    return ret


@dataclasses.dataclass
class ActorTruth:
    """The exact values of one actor on the fixed states at a = pi(s): Q^pi, dQ^pi/da, and the
    reward and next observation of that action (for the target y); ``it``: the update it was taken at."""

    it: int
    action: torch.Tensor
    q: np.ndarray
    grad: np.ndarray
    reward: np.ndarray
    next_obs: torch.Tensor


def actor_truth(actor, states: np.ndarray, discount: float, it: int) -> ActorTruth:
    """The truth of ``actor`` (a CPU network): Q^pi at pi(s) and at pi(s) +- DELTA (clipped)."""
    with torch.no_grad():
        action = actor(torch.as_tensor(observation(states)))
    a = action.numpy()[:, 0]
    lo, hi = np.clip(a - DELTA, -MAX_TORQUE, MAX_TORQUE), np.clip(a + DELTA, -MAX_TORQUE, MAX_TORQUE)
    q, q_lo, q_hi = np.split(true_q(actor, np.concatenate([states] * 3), np.concatenate([a, lo, hi]), discount), 3)
    next_states, reward = pendulum_step(states, a)
    return ActorTruth(it, action, q, (q_hi - q_lo) / (hi - lo), reward, torch.as_tensor(observation(next_states)))


def critic_measures(q1: np.ndarray, grad: np.ndarray, y: np.ndarray, truth: ActorTruth) -> dict:
    """The critic's Q1 and dQ1/da at a = pi(s), and its target y, against the truth of the actor."""
    error = q1 - truth.q
    return {"q_error": float(np.abs(error).mean()), "q_bias": float(error.mean()),
            "td_error": float(np.abs(q1 - y).mean()),
            "grad_agree": float(np.mean(np.sign(grad) == np.sign(truth.grad))),
            "true_value": float(truth.q.mean())}


# ------------------------------------------------------------------ the agent
class ProbedTD3(TD3):
    """TD3 whose actor steps every ``config.policy_freq`` critic updates and whose target networks move
    every ``target_freq``; it measures the critic right after every ``PROBE_EVERY``-th update's actor
    step (k = 0) and ``policy_freq`` updates later, just before the next actor step (k = d), into
    ``measurements`` (dicts: ``it``, ``k`` and ``MEASURES``)."""

    target_freq = 2

    def __init__(self, obs_dim: int, action_low, action_high, config: TD3Config | None = None, device="cpu"):
        if config is not None and config.cuda_graph:
            raise ValueError("cuda_graph=True: the delay probe measures the critic between its steps, which a "
                             "CUDA graph replays without a pause; train it with cuda_graph=False.")
        super().__init__(obs_dim, action_low, action_high, config, device)
        for name, freq in (("policy_freq", self.config.policy_freq), ("target_freq", self.target_freq)):
            if PROBE_EVERY % freq:
                raise ValueError(f"{name}={freq}: the delay probe needs a divisor of {PROBE_EVERY}.")
        if not self.config.delayed_policy_updates:
            raise ValueError("delayed_policy_updates=False: the delay probe sets the delays by policy_freq.")
        self.states = fixed_states()
        self.obs = torch.as_tensor(observation(self.states), device=self.device)
        self.measurements: list[dict] = []
        self.truth: ActorTruth | None = None

    def actor_step(self, batch):
        """The actor's step alone (the targets move on their own clock, in ``update``), measured just
        before it: k = d critic updates after the last probed actor step."""
        if self.truth is not None:
            self.record(self.total_it - self.truth.it)
            self.truth = None
        return self.policy_step(batch)

    def update(self, batch):
        """TD3's update (a critic step, and every d-th time the actor's), then the targets every
        ``target_freq`` updates, then the probe right after every ``PROBE_EVERY``-th actor step: k = 0."""
        metrics = super().update(batch)
        if self.total_it % self.target_freq == 0:
            self.update_targets()
        if "actor_loss" in metrics and self.total_it % PROBE_EVERY == 0:
            self.truth = actor_truth(cpu_copy(self.actor), self.states, self.config.discount, self.total_it)
            self.record(0)
        return metrics

    def target_y(self) -> np.ndarray:
        """y = r + discount * min(Q1', Q2')(s', pi'(s')) at a = pi(s) on the fixed states, noise-free."""
        next_obs = self.truth.next_obs.to(self.device)
        with torch.no_grad():
            next_q = clipped_double_q(*self.critic_target(next_obs, self.actor_target(next_obs)))
        return bellman_target(self.truth.reward, 1.0, next_q.cpu().numpy()[:, 0], self.config.discount)

    def record(self, k: int) -> None:
        """The critic now against the truth of the actor probed k critic updates ago (unchanged since)."""
        action = self.truth.action.detach().clone().to(self.device).requires_grad_(True)
        with torch.autocast(self.device.type, enabled=False):  # float32 always, bf16 training or not
            q1 = self.critic.q1(self.obs, action)
            (grad,) = torch.autograd.grad(q1.sum(), action)
            y = self.target_y()
        measures = critic_measures(q1.detach().cpu().numpy()[:, 0], grad.cpu().numpy()[:, 0], y, self.truth)
        self.measurements.append({"it": self.truth.it, "k": k, **measures})


def cpu_copy(actor):
    """The actor itself on the CPU, else a CPU copy of it (the rollouts run on numpy states)."""
    return actor if next(actor.parameters()).device.type == "cpu" else copy.deepcopy(actor).cpu()


class ProbedTD3TargetsEvery1(ProbedTD3):
    """``ProbedTD3`` whose target networks move at every critic update."""

    target_freq = 1


class ProbedTD3TargetsEvery2(ProbedTD3):
    """``ProbedTD3`` whose target networks move every second critic update (TD3's with d = 2)."""

    target_freq = 2


# ------------------------------------------------------------------ the probe
def window_means(measurements: list[dict], policy_freq: int) -> dict:
    """The means of ``measurements`` as the probe's columns: "before" over k = policy_freq, "after"
    and ``true_value`` over k = 0; a column without measurements is left out."""
    before = [m for m in measurements if m["k"] == policy_freq]
    after = [m for m in measurements if m["k"] == 0]
    columns = {}
    for name, chosen, measure in (("q_error_before", before, "q_error"), ("q_error_after", after, "q_error"),
                                  ("q_bias_before", before, "q_bias"), ("td_error_before", before, "td_error"),
                                  ("grad_agree_before", before, "grad_agree"), ("true_value", after, "true_value")):
        if chosen:
            columns[name] = float(np.mean([m[measure] for m in chosen]))
    return columns


def delay_probe(agent: ProbedTD3, episodes=()) -> dict:
    """Probe: the means of the agent's measurements since the previous evaluation (``window_means``);
    clears them."""
    columns = window_means(agent.measurements, agent.config.policy_freq)
    agent.measurements.clear()
    return columns


# ------------------------------------------------------------------ registered
register_probe("delay", delay_probe)
register(Variant("delay probe, targets every 1", VARIANTS["TD3"], agent=ProbedTD3TargetsEvery1, probes=(delay_probe,)))
register(Variant("delay probe, targets every 2", VARIANTS["TD3"], agent=ProbedTD3TargetsEvery2, probes=(delay_probe,)))
