"""The lessons' tasks, the agents of their variants and their probes, registered by name so that
a sweep (``td3_lib.sweep``) and the experiments under ``experiments/`` can run them.

Tasks (gymnasium environments, registered as ids)
    ``NarrowPeak-v0``  ``NarrowPeak``, lesson 04: a reward with a real, narrow peak
    ``LotteryBand-v0`` ``LotteryBand``, lesson 04: a narrow band of actions that pays zero-mean noise, the
                       critic's narrow peaks there are errors
    ``TwoKnobs-v0``    ``TwoKnobs``, lesson 08: a one-step task whose two actions have different bounds

Variants (``td3_lib.sweep.register``)
    ``fixed policy``, ``fixed Hopper-v5 policy``  lesson 05: ``FixedPolicyTD3``, TD3 whose actor is the
                       shipped trained one of Pendulum-v1 (of Hopper-v5) and never moves
    ``delay probe, targets every 1``, ``... every 2``  lesson 05: ``ProbedTD3`` (``course/delay.py``), TD3
                       whose target networks move every 1 (2) critic updates whatever ``policy_freq`` is,
                       measuring the critic just after and just before each probed actor step;
                       ``..., warm start``: the same after 5,000 updates on d = 1's schedule
    lesson 08's pitfalls by their names (``Q1 loss twice``, ...): registered with ``PITFALLS``
                       (``course/pitfalls.py``), which importing this module imports

Probes (``td3_lib.sweep.register_probe``; ``train(probes=...)``)
    ``critic``         ``course.analysis.critic_probe``: value estimate against the true return, roughness, peak height
    ``narrow peak``    ``NarrowPeakProbe``: the position chosen at NarrowPeak's first step, the perturbed return
    ``lottery band``   ``LotteryBandProbe``: the target's error at LotteryBand's second step, its spread over
                       states, the position chosen and the policy's true return
    ``Pendulum-v1 value``, ``Pendulum-v1 true value``  lesson 05's Figure 3: the critic's value of 32 fixed
                       Pendulum states at each evaluation, the actor's true value there every 1,000 steps
    ``Hopper-v5 value``, ``Hopper-v5 true value``      the same on 32 Hopper-v5 start states, true value every 10,000
    ``delay``          ``course.delay.delay_probe``: the means of a ``ProbedTD3``'s measurements since the
                       previous evaluation (registered with the delay variants, which record it themselves)

Adding a task: write its environment (a ``gymnasium.Env``) and register its id below, register its
variants (``Variant``: switches, agent class, environment factory, probes) and probes, then name
them in an experiment's ``Sweep`` under ``experiments/``.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch

from ..agent import TD3
from ..envs import opened_env
from ..pretrained import load_pretrained
from ..rollout import evaluation_episodes
from ..targets import clipped_double_q, smooth_target_action, target_noise
from ..sweep.variants import VARIANTS, Variant, register, register_probe
from .analysis import critic_probe, critic_values, returns_to_go


# ------------------------------------------------------------------ lesson 04: the narrow peak
class NarrowPeak(gym.Env):
    """Two steps, one action in [-1, 1] each.

    Step 1 chooses a position x = a (no reward). Step 2 is paid for its action a:
    r = (1 - 0.4 p) * bump(a, 0.5) + 0.8 p * bump(a, 0.03), with p = (1 - x) / 2
    and bump(a, w) = exp(-a^2 / (2 w^2)). At x = +1 the reward is one broad hill
    of height 1; towards x = -1 the hill sinks to 0.6 and a narrow peak of width
    0.03 grows on top of it, to a total of 1.4 at a = 0. Acting exactly, x = -1
    and a = 0 pay the most (1.4); an action off by a few hundredths loses the peak.
    """

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)  # (step, position x)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self, render_mode=None):
        self.render_mode = render_mode  # nothing to draw; gymnasium.make passes it

    @staticmethod
    def reward(x, a):
        """The second step's reward at position ``x`` for the action ``a`` (floats, numpy arrays or tensors)."""
        p = (1.0 - x) / 2.0
        return (1.0 - 0.4 * p) * bump(a, 0.5) + 0.8 * p * bump(a, 0.03)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.position = None
        return np.zeros(2, np.float32), {}

    def step(self, action):
        a = float(np.clip(np.asarray(action, dtype=np.float64).reshape(-1)[0], -1.0, 1.0))
        if self.position is None:
            self.position = a
            return np.array([1.0, a], np.float32), 0.0, False, False, {}
        return np.array([1.0, self.position], np.float32), float(self.reward(self.position, a)), True, False, {}


def bump(a, width: float):
    """exp(-a^2 / (2 width^2)), for a float, a numpy array or a torch tensor."""
    z = -0.5 * (a / width) ** 2
    return torch.exp(z) if isinstance(z, torch.Tensor) else np.exp(z)


NARROW_PEAK_SETTINGS = dict(hidden_sizes=(64, 64), actor_lr=1e-3, critic_lr=1e-3, start_timesteps=1_000,
                            buffer_size=20_000, eval_freq=500, eval_episodes=1)
"""The TD3Config fields lesson 04's NarrowPeak runs set (on the defaults), their budget aside (15,000 steps)."""


class NarrowPeakProbe:
    """Probe: ``position``, the position x the actor chooses at the first step, and ``perturbed_return``,
    the mean return of ``episodes`` episodes whose every action carries Gaussian noise of std ``noise``
    (drawn from a generator seeded 12,345 at each call, so the same actor always scores the same)."""

    def __init__(self, episodes: int = 100, noise: float = 0.1):
        self.episodes, self.noise = episodes, noise

    def __call__(self, agent: TD3, episodes=()) -> dict:
        env, rng = NarrowPeak(), np.random.default_rng(12_345)
        returns = []
        for _ in range(self.episodes):
            obs, _ = env.reset()
            obs, _, _, _, _ = env.step(agent.act(obs, noise=self.noise, rng=rng))
            returns.append(env.step(agent.act(obs, noise=self.noise, rng=rng))[1])
        return {"position": float(agent.act(np.zeros(2, np.float32))[0]),
                "perturbed_return": float(np.mean(returns))}


# ------------------------------------------------------------------ lesson 04: the lottery band
class LotteryBand(gym.Env):
    """Two steps, one action in [-1, 1] each: a narrow band of actions that pays noise, not value.

    Step 1 chooses a position x = a (no reward); the next observation is (1, x, c), with a dial
    c ~ U[-1, 1] drawn each episode that changes nothing (it gives the critic states on which to
    be wrong in different ways). Step 2 is paid for its action a, with p = (1 - x) / 2:

        r = (1 - 0.5 p) * bump(a, 0.5) + p * xi * [|a| < 0.05],   xi ~ N(0, 8^2) at each step

    The band |a| < 0.05 pays zero on average, so E[r | x, a] = (1 - 0.5 p) bump(a, 0.5): the best
    second action is a = 0 at every x, the true value is V*(x) = 0.75 + 0.25 x, and the best policy
    (x = +1, a = 0) earns 1.0. Towards x = -1 the band's lucky draws are large: a critic fitted to
    them grows narrow peaks that are errors, the peaks the paper's Section 5.3 is about.
    """

    observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)  # (step, position x, dial c)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    band, noise_std = 0.05, 8.0

    def __init__(self, render_mode=None):
        self.render_mode = render_mode  # nothing to draw; gymnasium.make passes it

    @staticmethod
    def expected_reward(x, a):
        """E[r | x, a] at the second step (the band's noise has mean zero): floats or numpy arrays."""
        p = (1.0 - np.asarray(x, dtype=np.float64)) / 2.0
        return (1.0 - 0.5 * p) * bump(np.asarray(a, dtype=np.float64), 0.5)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.state = np.zeros(3, np.float32)
        return self.state.copy(), {}

    def step(self, action):
        a = float(np.clip(np.asarray(action, dtype=np.float64).reshape(-1)[0], -1.0, 1.0))
        if self.state[0] == 0.0:
            self.state = np.array([1.0, a, self.np_random.uniform(-1.0, 1.0)], np.float32)
            return self.state.copy(), 0.0, False, False, {}
        x = float(self.state[1])
        r = float(self.expected_reward(x, a))
        if abs(a) < self.band:
            r += (1.0 - x) / 2.0 * float(self.np_random.normal(0.0, self.noise_std))
        return self.state.copy(), r, True, False, {}


LOTTERY_BAND_SETTINGS = dict(hidden_sizes=(64, 64), actor_lr=1e-3, critic_lr=1e-3, start_timesteps=1_000,
                             buffer_size=20_000, eval_freq=250, eval_episodes=1)
"""The TD3Config fields lesson 04's LotteryBand runs set (on the defaults), their budget aside (4,000 steps)."""


class LotteryBandProbe:
    """Probe of the target at the second step, on 41 states: the actor's position x, dials c = -1 .. 1.

    The target's next value is min(Q1', Q2')(s2, a') with a' = mu'(s2), averaged over 256 fixed
    draws of the agent's smoothing noise (``target_noise``) when it smooths; its error is that
    value minus the true one (E[r] at the same actions, averaged the same way). Recorded:
    ``target_bias`` (mean error), ``target_error_spread`` (its std over the 41 states, which all
    have the same true value), ``target_spread`` (std of the next value over a batch of 328 such
    states with one smoothing draw each, as in the agent's own update), ``position`` and
    ``true_return`` (the noise-free policy's expected return, exactly)."""

    dials = np.linspace(-1.0, 1.0, 41)

    def __init__(self, draws: int = 256):
        self.draws = draws

    def smoothing_draws(self, agent: TD3) -> torch.Tensor:
        """The fixed draws of the agent's own smoothing noise, the same at every call and every dial."""
        cfg = agent.config
        return target_noise(self.draws, agent.low, agent.high, cfg.policy_noise, cfg.noise_clip,
                            torch.Generator().manual_seed(0))

    def __call__(self, agent: TD3, episodes=()) -> dict:
        x = float(agent.act(np.zeros(3, np.float32))[0])
        s2 = self.states(x, len(self.dials), repeat=1)
        with torch.no_grad():
            a_target, a_actor = agent.actor_target(s2)[:, 0], agent.actor(s2)[:, 0].numpy()
            if agent.config.target_policy_smoothing:
                noisy = (a_target[:, None] + self.smoothing_draws(agent)[None, :]).clamp(agent.low, agent.high)
                q = next_value(agent, s2.repeat_interleave(self.draws, 0), noisy.reshape(-1, 1))
                q, truth = q.reshape(len(self.dials), -1).mean(1), LotteryBand.expected_reward(x, noisy.numpy()).mean(1)
            else:
                q, truth = next_value(agent, s2, a_target[:, None]), LotteryBand.expected_reward(x, a_target.numpy())
        error = q.numpy() - truth
        return {"position": x, "true_return": float(LotteryBand.expected_reward(x, a_actor).mean()),
                "target_bias": float(error.mean()), "target_error_spread": float(error.std()),
                "target_spread": self.target_spread(agent, x)}

    def states(self, x: float, n: int, repeat: int) -> torch.Tensor:
        """``n`` second-step states at position ``x``, the dials each ``repeat`` times."""
        dials = np.repeat(self.dials, repeat)
        return torch.tensor(np.stack([np.ones(n), np.full(n, x), dials], 1), dtype=torch.float32)

    def target_spread(self, agent: TD3, x: float, per_dial: int = 8) -> float:
        """Std of the next value over a batch of states at ``x`` that share one true value, with one
        smoothing draw per state (none without smoothing): noise in the critic's regression target."""
        s2 = self.states(x, len(self.dials) * per_dial, repeat=per_dial)
        with torch.no_grad():
            a = agent.actor_target(s2)
            if agent.config.target_policy_smoothing:
                a = smooth_target_action(a, agent.low, agent.high, agent.config.policy_noise, agent.config.noise_clip,
                                         torch.Generator().manual_seed(1))
            return float(next_value(agent, s2, a).std())


def next_value(agent: TD3, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
    """The target critics' clipped double-Q value min(Q1', Q2')(s, a), one number per row."""
    return clipped_double_q(*agent.critic_target(obs, action))[:, 0]


# ------------------------------------------------------------------ lesson 08: two knobs
class TwoKnobs(gym.Env):
    """A one-step task where bounds differ: reward -(a0 - 0.5)^2 - (a1 - 3)^2,
    knob 0 in [-1, 1], knob 1 in [-4, 4]; the best action is (0.5, 3)."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Box(np.array([-1.0, -4.0], np.float32), np.array([1.0, 4.0], np.float32))

    def __init__(self, render_mode=None):
        self.render_mode = render_mode  # nothing to draw; gymnasium.make passes it

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        a = np.clip(action, self.action_space.low, self.action_space.high)
        return np.zeros(1, np.float32), float(-(a[0] - 0.5) ** 2 - (a[1] - 3.0) ** 2), True, False, {}


# ------------------------------------------------------------------ lesson 05: the paper's Figure 3
class FixedPolicyTD3(TD3):
    """TD3 whose actor is the shipped trained actor of ``env_id`` and never changes.

    The critics learn as in TD3, and the target networks still move every d-th
    update (the actor's target stays equal to the actor); the actor takes no step.
    """

    env_id = "Pendulum-v1"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        with torch.random.fork_rng():  # building the loaded agent draws random weights: not from the run's stream
            trained = load_pretrained(self.env_id)
        self.actor.load_state_dict(trained.actor.state_dict())
        self.actor_target.load_state_dict(trained.actor.state_dict())

    def policy_step(self, batch):
        """No actor step: the policy stays fixed (its loss is still reported); the targets still move."""
        with torch.no_grad():
            return self.actor_loss(batch.obs)


class FixedHopperPolicyTD3(FixedPolicyTD3):
    """``FixedPolicyTD3`` with the shipped trained Hopper-v5 actor."""

    env_id = "Hopper-v5"


class PendulumStates:
    """32 Pendulum states (angle, angular velocity) drawn as its reset draws them (seed 0); their true
    value by one noise-free rollout of 400 steps from each (the discount's tail after it is below 0.03%)."""

    horizon = 400

    def __init__(self, n: int = 32, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.states = np.stack([rng.uniform(-np.pi, np.pi, n), rng.uniform(-1.0, 1.0, n)], axis=1)

    def observations(self) -> np.ndarray:
        """Pendulum's observation (cos theta, sin theta, angular velocity) of each state."""
        s = self.states
        return np.stack([np.cos(s[:, 0]), np.sin(s[:, 0]), s[:, 1]], axis=1).astype(np.float32)

    def true_values(self, agent: TD3, discount: float) -> np.ndarray:
        """The discounted return of the noise-free actor from each state (no time limit)."""
        envs = [gym.make("Pendulum-v1").unwrapped for _ in self.states]
        for env, state in zip(envs, self.states):
            env.reset(seed=0)
            env.state = np.array(state, dtype=np.float64)
        obs, returns = self.observations(), np.zeros(len(self.states))
        for t in range(self.horizon):
            steps = [env.step(a) for env, a in zip(envs, agent.act(obs))]
            returns += discount ** t * np.array([s[1] for s in steps])
            obs = np.stack([s[0] for s in steps]).astype(np.float32)
        return returns


class StartStates:
    """The first states of ``n`` episodes of ``env_id`` reset with seeds 0, 1, ...; their true value by
    one noise-free episode of the actor from each of those resets (the environment's time limit)."""

    def __init__(self, env_id: str, n: int = 32):
        self.env_id, self.n = env_id, n

    def observations(self) -> np.ndarray:
        with opened_env(self.env_id) as env:
            return np.stack([env.reset(seed=i)[0] for i in range(self.n)]).astype(np.float32)

    def true_values(self, agent: TD3, discount: float) -> np.ndarray:
        with opened_env(self.env_id) as env:
            episodes = evaluation_episodes(agent, env, self.n, seed=0)
        return np.array([returns_to_go(e.rewards, discount)[0] for e in episodes])


class StatesValue:
    """Probe: ``value``, the critic's value estimate of fixed states, the mean of Q1(s, mu(s)) over them."""

    def __init__(self, states):
        self.states = states
        self.observations = None  # taken at the first call (a MuJoCo task's resets need its environment)

    def __call__(self, agent: TD3, episodes=()) -> dict:
        if self.observations is None:
            self.observations = self.states.observations()
        q1, _ = critic_values(agent, self.observations)
        return {"value": float(q1.mean())}


class TrueValue:
    """Probe: ``true_value``, the mean discounted return of the noise-free actor from the same fixed
    states, recorded every ``every`` steps (a multiple of the evaluation interval)."""

    def __init__(self, states, every: int):
        self.states, self.every = states, every

    def __call__(self, agent: TD3, episodes=()) -> dict:
        return {"true_value": float(self.states.true_values(agent, agent.config.discount).mean())}


# ------------------------------------------------------------------ registered
for _id, _task in (("NarrowPeak-v0", "NarrowPeak"), ("LotteryBand-v0", "LotteryBand"), ("TwoKnobs-v0", "TwoKnobs")):
    if _id not in gym.registry:
        gym.register(_id, entry_point=f"{__name__}:{_task}")

register(Variant("fixed policy", VARIANTS["TD3"], agent=FixedPolicyTD3))
register(Variant("fixed Hopper-v5 policy", VARIANTS["TD3"], agent=FixedHopperPolicyTD3))

register_probe("critic", critic_probe)
register_probe("narrow peak", NarrowPeakProbe())
register_probe("lottery band", LotteryBandProbe())
_pendulum, _hopper = PendulumStates(), StartStates("Hopper-v5")
register_probe("Pendulum-v1 value", StatesValue(_pendulum))
register_probe("Pendulum-v1 true value", TrueValue(_pendulum, every=1_000))
register_probe("Hopper-v5 value", StatesValue(_hopper))
register_probe("Hopper-v5 true value", TrueValue(_hopper, every=10_000))

from . import delay, pitfalls  # noqa: E402,F401  (last: pitfalls.py imports TwoKnobs from here; each registers its own)
