"""Lesson 05: the critic's error at the moment the actor steps, with the actor's delay, the target
networks' delay and the target networks' rate as separate switches (the paper's Section 5.2).

The paper's argument: a policy step made on a value estimate with a high error does harm, so the actor
(and, in Algorithm 1, the target networks with it) should step only every d critic updates, after the
critic has reduced its error. Pendulum-v1 is deterministic, so the true Q of the *current* actor is
exact: from 64 fixed states (drawn as Pendulum's reset draws them, seed 0) a vectorised copy of
Pendulum's dynamics rolls the noise-free actor out for ``HORIZON`` = 300 steps (at discount 0.98 the
tail after that is below 0.25% of the value).

``ProbedTD3`` is TD3 whose actor steps every ``config.policy_freq`` critic updates and whose target
networks move every ``target_freq`` updates (a class attribute; TD3 moves both every d), each time by
``config.tau``. "Targets every 2" with tau fixed halves both how often the targets move and how far
they move per critic update; with tau doubled (0.01) it moves them every 2 updates at d = 1's rate
(to first order: one step of 2 tau closes 1 - (1 - 2 tau) of the gap, two of tau 1 - (1 - tau)^2).

A warm start (``warm_updates`` > 0, a class attribute) trains with d = 1's schedule (the actor and the
targets every update, tau ``WARM_TAU``) for the first ``warm_updates`` critic updates, and with the
run's own schedule after them. Every warm run of a seed is therefore d = 1's run of that seed, bit for
bit, up to the switch: the schedules are compared from one settled critic, without the start-up.

Every ``PROBE_EVERY`` critic updates, right after an actor step, the agent computes the truth of the new
actor and measures the critic ("after", k = 0); then again at the next actor step, just before it
(k = the critic updates since, d after the warm-up): the moment Section 5.2 is about. On the fixed
states, at a = pi(s), with Q^pi the exact value and y = r + discount * min(Q1', Q2')(s', pi'(s')) the
noise-free target of the target networks:

- ``q_error``: mean |Q1(s, a) - Q^pi(s, a)|, the critic's error against the truth;
- ``q_bias``: mean Q1(s, a) - Q^pi(s, a) (positive: overestimation);
- ``td_error``: mean |Q1(s, a) - y|, the error against the critic's own target (the "TD-error");
- ``grad_agree``: the share of states where dQ1/da has the sign of the true dQ^pi/da (central
  difference +-``DELTA``), i.e. whether the actor's next step goes the right way;
- ``true_value``: mean Q^pi(s, pi(s)), the exact quality of the actor probed.

The experiment (``experiments/delay.py``): Pendulum-v1's preset, ``STEPS`` = 12,000 steps (1,000 random,
then 11,000 critic updates), an evaluation every 1,000 steps, seeds 0-4, the ``SCHEDULES`` (label:
policy_freq, target_freq, tau):

- ``d=1``: 1, 1, 0.005 (DDPG's schedule, with TD3's other two tricks);
- ``d=2``: 2, 2, 0.005 (TD3's runs, bit for bit);
- ``actor/2``: 2, 1, 0.005 (only the actor's step delayed);
- ``targets/2``: 1, 2, 0.005 (only the target updates delayed: half as often, and half as far per
  critic update);
- ``targets/2 at tau 0.01``: 1, 2, 0.01 (the control: the targets every 2 updates at d = 1's rate).

Each runs from a cold start (a random critic and actor); the last four also from a warm one, labelled
``warm ...``: d = 1's schedule for the first ``WARM_UPDATES`` = 5,000 updates (to step ``SWITCH`` =
6,000), their own after. ``d=1`` is its own warm run.

Named before the runs were made:

- The primary measure is ``q_error_before``, the mean |Q1 - Q^pi| over the 64 fixed states just before
  the actor's step, averaged per run over ``WARM_WINDOW``: the evaluations at steps 8,000 to 12,000
  (updates 6,001 to 11,000, from 1,000 updates after the switch to the end). The primary comparison is
  warm d=2 against d=1: the paper's Section 5.2 predicts a smaller error with d = 2.
- Secondary: the same measure for warm actor/2, targets/2 and targets/2 at tau 0.01 against d=1;
  ``td_error_before`` (|Q1 - y|) and ``true_value`` in the same window; every measure in ``START_UP``,
  the start-up window of the cold runs (the evaluations at steps 2,000 to 6,000: updates 1 to 5,000,
  the warm-up's stretch).
- A difference separates by the course's rule (``td3_lib.stats.difference``: the bootstrap interval of
  the difference of means excludes 0 and the exact permutation p is below 0.05). A warm run and d=1
  share their first 5,000 updates, so each is also counted seed by seed ("lower on 4 of 5 seeds"); with
  5 pairs a sign-flip test cannot go below p = 0.0625, so it decides nothing alone.
- The prediction, from the earlier cold runs (over steps 2,000 to 10,000, |Q1 - y| 0.45 with targets/2
  against 1.02 with actor/2): the smaller error against the target follows the targets' rate, so
  targets/2 at tau 0.01 matches d=1 on both errors.

The probe ``delay`` (``delay_probe``) reports at each evaluation the means of the measurements the
agent collected since the previous one, and clears them: ``q_error_before``, ``q_error_after``,
``q_bias_before``, ``td_error_before``, ``grad_agree_before`` and ``true_value`` (no columns at an
evaluation before the first probe). The measurement draws no random numbers and changes no weight:
with ``target_freq`` equal to ``policy_freq`` and no warm start the run is TD3's, bit for bit. The
measurements live in the agent, not in its checkpoint: a resumed run loses those since its last evaluation.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import torch

from ..agent import TD3
from ..config import TD3Config
from ..targets import bellman_target, clipped_double_q, soft_update
from ..sweep.variants import VARIANTS, Variant, register, register_probe

PROBE_EVERY = 100  # critic updates between probes (a multiple of every delay used)
WARM_TAU = 0.005  # the warm-up's tau: Pendulum-v1's preset, d = 1's
WARM_UPDATES = 5_000  # critic updates of the warm-up: to step 6,000 after Pendulum's 1,000 random steps
SCHEDULES = (("d=1", 1, 1, 0.005), ("d=2", 2, 2, 0.005), ("actor/2", 2, 1, 0.005), ("targets/2", 1, 2, 0.005),
             ("targets/2 at tau 0.01", 1, 2, 0.01))
"""The experiment's schedules: (label, policy_freq, target_freq, tau)."""
STEPS, SEEDS, SWITCH = 12_000, (0, 1, 2, 3, 4), 6_000
WARM_WINDOW, START_UP = (8_000, 12_000), (2_000, 6_000)
"""The evaluation steps (first, last) of the warm window (the primary measure's) and of the cold start-up window."""
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
    every ``target_freq`` by ``config.tau``, after a warm-up of ``warm_updates`` critic updates on d = 1's
    schedule; it measures the critic right after every ``PROBE_EVERY``-th update's actor step (k = 0)
    and at the next actor step, just before it (k > 0), into ``measurements`` (dicts: ``it``, ``k``
    and ``MEASURES``)."""

    target_freq = 2
    warm_updates = 0

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

    def schedule(self) -> tuple[int, int, float]:
        """(policy_freq, target_freq, tau) of the update ``total_it``: d = 1's during the warm-up, then the run's."""
        if self.total_it <= self.warm_updates:
            return 1, 1, WARM_TAU
        return self.config.policy_freq, self.target_freq, self.config.tau

    def update(self, batch):
        """Algorithm 1's iteration on this schedule: a critic step; the actor's step every ``policy_freq``
        (measured just before it, k > 0); the targets every ``target_freq``; then the probe right after
        every ``PROBE_EVERY``-th actor step: k = 0."""
        self.check_can_train()
        self.total_it += 1
        policy_freq, target_freq, tau = self.schedule()
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.config.bf16):
            critic_loss, current_q1 = self.critic_step(batch)
            metrics = {"critic_loss": critic_loss.detach(), "q1": current_q1.detach().mean()}
            if self.total_it % policy_freq == 0:
                if self.truth is not None:
                    self.record(self.total_it - self.truth.it)
                    self.truth = None
                metrics["actor_loss"] = self.policy_step(batch).detach()
        if self.total_it % target_freq == 0:
            soft_update((self.critic, self.actor), (self.critic_target, self.actor_target), tau)
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


class WarmProbedTD3TargetsEvery1(ProbedTD3TargetsEvery1):
    """``ProbedTD3TargetsEvery1`` after ``WARM_UPDATES`` critic updates on d = 1's schedule."""

    warm_updates = WARM_UPDATES


class WarmProbedTD3TargetsEvery2(ProbedTD3TargetsEvery2):
    """``ProbedTD3TargetsEvery2`` after ``WARM_UPDATES`` critic updates on d = 1's schedule."""

    warm_updates = WARM_UPDATES


# ------------------------------------------------------------------ the probe
def window_means(measurements: list[dict]) -> dict:
    """The means of ``measurements`` as the probe's columns: "before" over k > 0 (just before an actor
    step), "after" and ``true_value`` over k = 0; a column without measurements is left out."""
    before = [m for m in measurements if m["k"] > 0]
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
    columns = window_means(agent.measurements)
    agent.measurements.clear()
    return columns


# ------------------------------------------------------------------ reading the result
def variant_name(target_freq: int, start: str = "") -> str:
    """The registered variant of ``target_freq`` for a cold start ("") or a warm one ("warm ")."""
    return f"delay probe, targets every {target_freq}" + (", warm start" if start else "")


def window_mean(history: list[dict], column: str, window: tuple[int, int]) -> float:
    """A run's mean of ``column`` over its evaluations at steps ``window`` = (first, last), both included."""
    values = [row[column] for row in history if window[0] <= row["step"] <= window[1]]
    if not values:
        raise ValueError(f"No evaluation between steps {window[0]:,} and {window[1]:,} holds {column!r}.")
    return float(np.mean(values))


# ------------------------------------------------------------------ registered
register_probe("delay", delay_probe)
register(Variant("delay probe, targets every 1", VARIANTS["TD3"], agent=ProbedTD3TargetsEvery1, probes=(delay_probe,)))
register(Variant("delay probe, targets every 2", VARIANTS["TD3"], agent=ProbedTD3TargetsEvery2, probes=(delay_probe,)))
register(Variant("delay probe, targets every 1, warm start", VARIANTS["TD3"], agent=WarmProbedTD3TargetsEvery1,
                 probes=(delay_probe,)))
register(Variant("delay probe, targets every 2, warm start", VARIANTS["TD3"], agent=WarmProbedTD3TargetsEvery2,
                 probes=(delay_probe,)))
