"""Lessons 02 to 05: measuring what the critic believes against what the policy earns, and its shape."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..agent import TD3
from ..envs import make_env
# returns_to_go and critic_values live with the episode loop (the engine's clips use them too); the
# lessons import them from here
from ..rollout import Episode, critic_values, evaluation_episodes, returns_to_go  # noqa: F401
from ..targets import smooth_target_action


@dataclass
class ValueBias:
    """The critic's estimate against the true discounted return, on the same states."""

    estimate: float  # mean Q(s, pi(s)) over the states
    true_value: float  # mean discounted return collected from those states on
    n_states: int

    @property
    def bias(self) -> float:
        """estimate - true value: positive means overestimation."""
        return self.estimate - self.true_value


def value_bias(agent: TD3, env_or_id, episodes: int = 5, seed: int = 0, horizon: int | None = None,
               critic: str = "q1") -> ValueBias:
    """Measure the critic's bias: a small, cheaper version of the paper's Figure 1.

    Roll the noise-free policy out for ``episodes`` episodes (reset seeds
    ``seed``, ``seed + 1``, ...); on the first ``horizon`` states of each
    (default: half the episode, so the return still sees many steps ahead)
    compare Q(s, pi(s)) with the discounted return of that one rollout from s,
    cut at the episode's end. The paper's method differs (Section 4.1, Figure 1):
    it averages the estimate over 10,000 states and compares it with the average
    discounted return over 1,000 episodes of the current policy, started from
    states sampled from the replay buffer. ``critic`` is "q1" or "min" (min of the twins).
    """
    env = make_env(env_or_id) if isinstance(env_or_id, str) else env_or_id
    try:
        episodes_seen = evaluation_episodes(agent, env, episodes, seed, keep_states=True)
    finally:
        if isinstance(env_or_id, str):
            env.close()
    return bias_on_episodes(agent, episodes_seen, horizon, critic)


def bias_on_episodes(agent: TD3, episodes: list[Episode], horizon: int | None = None,
                     critic: str = "q1") -> ValueBias:
    """``value_bias`` on episodes already rolled out with ``keep_states=True``."""
    estimates, truths = [], []
    for episode in episodes:
        n = horizon or max(1, len(episode) // 2)
        truths.append(returns_to_go(episode.rewards, agent.config.discount)[:n])
        q1, q2 = critic_values(agent, episode.states[:n])
        estimates.append(q1 if critic == "q1" else np.minimum(q1, q2))
    est, true = np.concatenate(estimates), np.concatenate(truths)
    return ValueBias(float(est.mean()), float(true.mean()), int(est.size))


def roughness(agent: TD3, states, points: int = 51) -> float:
    """How bumpy the critic is along the action (lesson 04): the mean |second difference| of Q1.

    For each state s and each action dimension j, Q1(s, a) is evaluated on
    ``points`` equally spaced values of a_j across its bounds, the other
    dimensions held at pi(s)_j. The result is the mean of
    |Q(a+δ) - 2Q(a) + Q(a-δ)| / δ² over states, dimensions and grid points,
    with δ measured in half-ranges (so a dimension's bounds are [-1, 1]): 0 for a
    critic linear in the action, larger with every wiggle. For a ReLU critic,
    piecewise linear in a, it is the total change of slope per unit of action.
    """
    s = torch.as_tensor(np.asarray(states, dtype=np.float32), device=agent.device)
    low, high = agent.action_low, agent.action_high
    grid = torch.linspace(0.0, 1.0, points, device=agent.device)
    values = []
    with torch.no_grad():
        mu = agent.actor(s)                                            # (n, dims)
        for j in range(mu.shape[1]):
            a = mu.unsqueeze(1).repeat(1, points, 1)                   # (n, points, dims)
            a[:, :, j] = float(low[j]) + grid * float(high[j] - low[j])
            q1, _ = agent.critic(s.unsqueeze(1).expand(-1, points, -1).reshape(-1, s.shape[1]),
                                 a.reshape(-1, a.shape[-1]))
            values.append(q1.reshape(len(s), points))
    delta = 2.0 / (points - 1)
    q = torch.stack(values, dim=1)                                     # (n, dims, points)
    second = (q[..., 2:] - 2 * q[..., 1:-1] + q[..., :-2]).abs() / delta ** 2
    return float(second.mean())


def peak_height(agent: TD3, states, samples: int = 32, seed: int = 0) -> float:
    """How far the critic's value at the actor's action stands above its value nearby (lesson 04).

    mean over s of  Q1(s, pi(s)) - mean_k Q1(s, a_k),  a_k = clip(pi(s) + clip(eps_k, -c, c), low, high),
    eps_k ~ N(0, sigma^2): the noise of target policy smoothing (``smooth_target_action`` with the
    agent's ``policy_noise`` and ``noise_clip``), ``samples`` draws per state from a generator
    seeded with ``seed``, so the same critic always gets the same number. A critic linear in the
    action scores about 0; one with a narrow peak at pi(s), which the actor climbs and the
    target then bootstraps from, scores high. Smoothing the target action is meant to shrink it.
    """
    s = torch.as_tensor(np.asarray(states, dtype=np.float32), device=agent.device)
    cfg = agent.config
    generator = torch.Generator(agent.device).manual_seed(seed)
    with torch.no_grad():
        mu = agent.actor(s)
        at_mu = agent.critic.q1(s, mu).squeeze(-1)                                   # (n,)
        nearby = smooth_target_action(mu.repeat(samples, 1), agent.low, agent.high, cfg.policy_noise,
                                      cfg.noise_clip, generator=generator)           # (samples * n, dims)
        around = agent.critic.q1(s.repeat(samples, 1), nearby).reshape(samples, len(s))
    return float((at_mu - around.mean(dim=0)).mean())


def critic_probe(agent: TD3, episodes: list[Episode], max_states: int = 64) -> dict:
    """What the history records about the critic at each evaluation, from the evaluation's episodes:

    - ``q_estimate``, ``q_true``: ``bias_on_episodes`` (lessons 02 and 03);
    - ``q_start``: mean Q1(s_0, pi(s_0)) over the episodes' first states, which are the same
      at every evaluation (fixed reset seeds): how much it changes between evaluations is
      the jitter of the value estimate (lesson 05);
    - ``q_roughness``: ``roughness`` on up to ``max_states`` of the episodes' states (lesson 04);
    - ``q_peak``: ``peak_height`` on the same states (lesson 04).
    """
    bias = bias_on_episodes(agent, episodes)
    start, _ = critic_values(agent, [e.states[0] for e in episodes])
    states = np.concatenate([np.asarray(e.states, dtype=np.float32) for e in episodes])
    picked = states[np.linspace(0, len(states) - 1, min(max_states, len(states))).astype(int)]
    return {"q_estimate": bias.estimate, "q_true": bias.true_value, "q_start": float(start.mean()),
            "q_roughness": roughness(agent, picked), "q_peak": peak_height(agent, picked)}


class ValueTrace:
    """A ``train`` callback (lesson 05): the critic's value estimate on fixed states, at every evaluation.

    ``train(..., callback=trace)`` calls it after each evaluation; it appends the
    step to ``steps`` and the mean over ``states`` of Q1(s, pi(s)) to ``values``.
    With the same states at every call, the trace shows how the estimate of the same
    thing moves as the critic (and the actor) learn; evaluate often (a small
    ``eval_freq``) to see how much it scatters.
    """

    def __init__(self, states):
        self.states = np.asarray(states, dtype=np.float32)
        self.steps: list[int] = []
        self.values: list[float] = []

    def __call__(self, step: int, agent: TD3) -> None:
        q1, _ = critic_values(agent, self.states)
        self.steps.append(int(step))
        self.values.append(float(q1.mean()))


def residual_spread(values, window: int = 11) -> float:
    """How much a trace scatters around its own trend (lesson 05), not how far the trend moves.

    The residuals r_t = v_t - mean(v_{t-k}, ..., v_{t+k}), around the centred moving
    average of ``window`` = 2k + 1 points, for every t with a full window; the result
    is their std (ddof 0). A trend linear or quadratic across the window leaves the
    same residual at every t, so it scores 0 however fast it rises or falls; white
    noise of std sigma scores about sigma * sqrt(1 - 1/window). Nan when fewer than
    two full windows fit.
    """
    if window < 3 or window % 2 == 0:
        raise ValueError(f"window={window!r} is invalid: it must be an odd integer >= 3.")
    v = np.asarray(values, dtype=float)
    if v.size < window + 1:
        return float("nan")
    trend = np.convolve(v, np.ones(window) / window, mode="valid")  # centred on v[k:-k]
    k = window // 2
    return float(np.std(v[k:v.size - k] - trend))
