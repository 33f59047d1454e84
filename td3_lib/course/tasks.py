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
    ``lottery band 2x2`` ``LotteryBandProbe``: the target's error at LotteryBand's second step on a fixed
                       grid of states, read at one action and averaged over the smoothing noise; the
                       position chosen and the policy's true return
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
from ..targets import clipped_double_q, target_noise
from ..sweep.variants import VARIANTS, Variant, register, register_probe
from .analysis import critic_probe, critic_values, returns_to_go
from .results import histories


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
    """Probe of the target at LotteryBand's second step, read two ways on states fixed in advance (lesson 04's 2 x 2).

    The states: positions x = -1, -0.5, 0, 0.5, 1, each with the 41 dials c = -1 .. 1 (205 states, the same
    for every agent and at every call, whatever position the actor chooses). At each state the target's next
    value min(Q1', Q2')(s2, a) is read two ways, whether or not the agent smooths in training:

    - ``point``: at one action, the target actor's a = pi'(s2), as TD3 - TPS's update reads it;
    - ``averaged``: averaged over 256 fixed draws of the smoothing noise (``target_noise`` with the agent's
      ``policy_noise`` and ``noise_clip``, from a generator seeded 0), a = clip(pi'(s2) + eps, low, high),
      the target TD3's update estimates with one draw at a time.

    Its error is that value minus the true one (E[r] at the same actions, averaged the same way). For each
    way: ``{way}_error_spread``, the std over the 41 dials of the error (the states of one position share
    one true value), averaged over the 5 positions, and ``{way}_bias``, the mean error over the 205 states.
    Beside them ``position``, the x the actor chooses, and ``true_return``, its noise-free policy's expected
    return, exactly (over the 41 dials at that x)."""

    positions = np.linspace(-1.0, 1.0, 5)
    dials = np.linspace(-1.0, 1.0, 41)

    def __init__(self, draws: int = 256):
        self.draws = draws

    def smoothing_draws(self, agent: TD3) -> torch.Tensor:
        """The fixed draws of the agent's own smoothing noise, the same at every call and every state."""
        cfg = agent.config
        return target_noise(self.draws, agent.low, agent.high, cfg.policy_noise, cfg.noise_clip,
                            torch.Generator().manual_seed(0))

    def grid(self) -> tuple[np.ndarray, torch.Tensor]:
        """The probe's positions, one per state, and its 205 second-step states (position by position)."""
        x = np.repeat(self.positions, len(self.dials))
        dials = np.tile(self.dials, len(self.positions))
        return x, torch.tensor(np.stack([np.ones_like(x), x, dials], 1), dtype=torch.float32)

    def errors(self, agent: TD3) -> dict[str, np.ndarray]:
        """The target's error at every state of the grid, read at one action and averaged over the noise."""
        x, s2 = self.grid()
        with torch.no_grad():
            a = agent.actor_target(s2)[:, 0]
            noisy = (a[:, None] + self.smoothing_draws(agent)[None, :]).clamp(agent.low, agent.high)
            averaged = next_value(agent, s2.repeat_interleave(self.draws, 0), noisy.reshape(-1, 1))
            point = next_value(agent, s2, a[:, None])
        truth = LotteryBand.expected_reward(x[:, None], noisy.numpy()).mean(1)
        return {"point": point.numpy() - LotteryBand.expected_reward(x, a.numpy()),
                "averaged": averaged.reshape(len(x), -1).mean(1).numpy() - truth}

    def __call__(self, agent: TD3, episodes=()) -> dict:
        row = {}
        for way, error in self.errors(agent).items():
            row[f"{way}_error_spread"] = float(error.reshape(len(self.positions), -1).std(1).mean())
            row[f"{way}_bias"] = float(error.mean())
        x = float(agent.act(np.zeros(3, np.float32))[0])
        at_x = torch.tensor(np.stack([np.ones(len(self.dials)), np.full(len(self.dials), x), self.dials], 1),
                            dtype=torch.float32)
        with torch.no_grad():
            actions = agent.actor(at_x)[:, 0].numpy()
        return {"position": x, "true_return": float(LotteryBand.expected_reward(x, actions).mean()), **row}


PROBE_WAYS = ("point", "averaged")
"""The two ways ``LotteryBandProbe`` reads the target: at one action, and averaged over the smoothing noise."""


def lottery_band_2x2(rows: list[dict], after: int = LOTTERY_BAND_SETTINGS["start_timesteps"]) -> dict:
    """The 2 x 2 of lesson 04 from the LotteryBand result's ``rows``, one number per seed: for each arm
    (``TD3``, ``TD3-TPS``) and each way of probing (``PROBE_WAYS``), the spread over the dials of the
    target's error (``{way}_error_spread``), averaged over the evaluations after the first ``after``
    (random) steps. Returns {(variant, way): array over seeds, in seed order}."""
    return {(variant, way): np.array([np.mean([row[f"{way}_error_spread"] for row in history if row["step"] > after])
                                      for history in histories(rows, variant)])
            for variant in ("TD3", "TD3-TPS") for way in PROBE_WAYS}


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
    """Probe: ``value``, the critic's value estimate of fixed states, the mean of Q1(s, pi(s)) over them."""

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
register_probe("lottery band 2x2", LotteryBandProbe())
_pendulum, _hopper = PendulumStates(), StartStates("Hopper-v5")
register_probe("Pendulum-v1 value", StatesValue(_pendulum))
register_probe("Pendulum-v1 true value", TrueValue(_pendulum, every=1_000))
register_probe("Hopper-v5 value", StatesValue(_hopper))
register_probe("Hopper-v5 true value", TrueValue(_hopper, every=10_000))

from . import delay, pitfalls  # noqa: E402,F401  (last: pitfalls.py imports TwoKnobs from here; each registers its own)
