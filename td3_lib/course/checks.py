"""The lessons' exercise checks: each takes the learner's function and returns a verdict.

A lesson calls its check in one line (``check_td_target(td_target)``); the check runs the learner's
function on cases it builds, compares with the right answer computed here, and returns a sentence that
starts with "Right" or with "Not yet" and says what differs. Every check is tested against a right
solution and several wrong ones (tests/test_checks.py). The solutions themselves stay in the lessons,
in collapsed blocks.
"""

from __future__ import annotations

import sys

import torch

from ..agent import TD3, soft_update
from ..buffer import Batch
from ..config import TD3Config

# ------------------------------------------------------------------ lesson 00
import math  # noqa: E402  (each lesson's section imports what it needs, so sections stay apart)

import numpy as np  # noqa: E402
import torch  # noqa: E402

from ..envs import make_env  # noqa: E402
from ..networks import Actor  # noqa: E402

RETURN_SLIPS = {
    "no discount": lambda r, g: sum(r),
    "the first reward discounted too": lambda r, g: sum(g ** (k + 1) * x for k, x in enumerate(r)),
    "the discount on the wrong end": lambda r, g: sum(g ** k * x for k, x in enumerate(reversed(r))),
}
RETURN_HINTS = {
    "no discount": "you added the rewards up without the discount: a reward k steps ahead counts discount**k times.",
    "the first reward discounted too": "the first reward counts in full (discount**0 = 1); yours is discounted once.",
    "the discount on the wrong end": "the discount shrinks the *later* rewards; yours shrinks the early ones.",
}


def learners_call(fn, *args):
    """``fn(*args)``, or the "Not yet" sentence for a stub or an error."""
    try:
        return fn(*args), None
    except NotImplementedError:
        return None, f"Not yet: {fn.__name__} is still the stub: write its body."
    except Exception as e:  # the learner's code: any error becomes the verdict
        return None, f"Not yet: {fn.__name__} raised {type(e).__name__}: {e}"


def check_discounted_return(fn) -> str:
    """Whether ``fn(rewards, discount)`` is r_0 + discount r_1 + discount^2 r_2 + ..., in one sentence."""
    rng = np.random.default_rng(0)
    cases = [*[(list(rng.normal(size=n).round(2)), g) for n, g in ((5, 0.9), (12, 0.7), (1, 0.3))],
             ([0.0, 0.0, 10.0], 0.9), ([1.0, 1.0, 1.0, 1.0], 0.5), ([-1.0] * 200, 0.99)]
    for rewards, discount in cases:
        got, problem = learners_call(fn, list(rewards), discount)
        if problem:
            return problem
        want = sum(discount ** k * r for k, r in enumerate(rewards))
        try:
            got = float(got)
        except (TypeError, ValueError):
            return f"Not yet: return one number; yours returned {got!r}."
        if not math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9):
            slip = next((s for s, f in RETURN_SLIPS.items() if math.isclose(got, f(rewards, discount), rel_tol=1e-6)), None)
            return ("Not yet: " + RETURN_HINTS[slip] if slip else
                    f"Not yet: for rewards {rewards[:5]}{' ...' if len(rewards) > 5 else ''} and discount {discount} "
                    f"the discounted return is {want:.4f}; yours is {got:.4f}.")
    return "Right: each reward counts discount**k times, k the steps from now until it comes."


def check_scale_action(fn) -> str:
    """Whether ``fn(u, low, high)`` maps u in [-1, 1] onto each dimension's own bounds, as td3_lib's Actor does."""
    g = torch.Generator().manual_seed(3)
    for _ in range(5):
        low = -torch.rand(4, generator=g) * 5  # four dimensions, each with its own bounds
        high = low + 0.1 + torch.rand(4, generator=g) * 5
        u = torch.rand(16, 4, generator=g) * 2 - 1  # what a tanh could output
        actor = Actor(1, low, high)
        want = actor.action_center + actor.action_half_range * u
        got, problem = learners_call(fn, u, low, high)
        if problem:
            return problem
        if got is None:
            return "Not yet: scale_action returns None."
        if not torch.allclose(torch.as_tensor(got, dtype=torch.float32), want, atol=1e-5):
            return (f"Not yet: for low={low.numpy().round(2)}, high={high.numpy().round(2)} your actions differ "
                    "from td3_lib's Actor (is each dimension centred and scaled by its own bounds?).")
    return "Right: each dimension reaches exactly its own bounds, low at u = -1 and high at u = 1."


def random_episode(env_id: str, seed: int) -> tuple:
    """The loop done right: (return, steps, terminated, truncated) of one random episode."""
    env = make_env(env_id, seed=seed)
    env.reset(seed=seed)
    total, steps, terminated, truncated = 0.0, 0, False, False
    while not (terminated or truncated):
        _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        total, steps = total + reward, steps + 1
    env.close()
    return total, steps, terminated, truncated


def check_play_random_episode(fn) -> str:
    """Whether ``fn(env_id, seed)`` plays one random episode to its end, as ``random_episode`` does."""
    for env_id, seed in (("Pendulum-v1", 3), ("LunarLanderContinuous-v3", 3), ("LunarLanderContinuous-v3", 11)):
        want = random_episode(env_id, seed)
        got, problem = learners_call(fn, env_id, seed)
        if problem:
            return problem
        if got is None or len(got) != 4:
            return "Not yet: return four things: (total, steps, terminated, truncated)."
        if got[1] != want[1]:
            return f"Not yet: on {env_id} (seed {seed}) your episode lasted {got[1]} steps, it should last {want[1]}."
        if abs(got[0] - want[0]) > 1e-6:
            return f"Not yet: on {env_id} (seed {seed}) your return is {got[0]:.3f}, it should be {want[0]:.3f}."
        if (bool(got[2]), bool(got[3])) != (want[2], want[3]):
            return f"Not yet: on {env_id} the flags should be terminated={want[2]}, truncated={want[3]}."
    return "Right: your loop stops at termination and at truncation, and adds up every reward."


# ------------------------------------------------------------------ lesson 01
import sys  # noqa: E402
from typing import NamedTuple  # noqa: E402

import torch.nn.functional as F  # noqa: E402

from ..agent import TD3  # noqa: E402
from ..buffer import Batch  # noqa: E402
from ..config import TD3Config  # noqa: E402

DDPG = TD3Config(hidden_sizes=(32, 32), clipped_double_q=False, target_policy_smoothing=False,
                 delayed_policy_updates=False, discount=0.8)
"""The agent of lesson 01's check: DDPG, small networks, a discount far enough from 1 to be seen."""
OWN_STEPS = {TD3.target_q.__code__, TD3.critic_loss.__code__, TD3.critic_step.__code__, TD3.update.__code__}
"""td3_lib's own critic step, seen by its code objects however it is reached."""
CRITIC_SLIPS = {
    "truncated ends": "truncated transitions stop your target: only terminated ends the sum, a time limit does not.",
    "never ends": "your target looks past terminated transitions: multiply Q' by not_done = 1 - terminated.",
    "no discount": "your target leaves out the discount: y = r + discount * not_done * Q'(s', a').",
    "the critic": "your target asks agent.critic; ask the slow copy, agent.critic_target.",
    "the actor": "your target action comes from agent.actor; take it from agent.actor_target.",
    "minus": "your target subtracts the next value: y = r + discount * not_done * Q'(s', a').",
    "negated": "your loss is the squared error with a minus sign: the critic goes *down* (Q - y)**2.",
}


class Transitions(NamedTuple):
    """A minibatch as the environment reported it: one row per transition; both flags 1.0 or 0.0."""

    obs: torch.Tensor
    action: torch.Tensor
    reward: torch.Tensor
    next_obs: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor


def critic_case(seed: int):
    """A DDPG agent whose target networks differ from its networks and keep requires_grad (as a plain
    copy.deepcopy leaves them), a plain SGD optimiser (a weight moves in proportion to its gradient),
    stale gradients in the critic (as a previous step leaves them), and 64 transitions with both flags."""
    torch.manual_seed(seed)
    agent = TD3(3, [-2.0, 0.0], [2.0, 1.0], DDPG)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in (*agent.critic_target.parameters(), *agent.actor_target.parameters()):
            p.add_(0.2 * torch.randn(p.shape, generator=g)).requires_grad_(True)
    agent.critic_optimizer = torch.optim.SGD(agent.critic.parameters(), lr=0.1)
    for p in agent.critic.parameters():
        p.grad = torch.randn(p.shape, generator=g)
    flags = (torch.rand(64, 2, generator=g) < 0.3).float()
    batch = Transitions(torch.randn(64, 3, generator=g), torch.rand(64, 2, generator=g) * 2 - 1,
                        torch.randn(64, 1, generator=g), torch.randn(64, 3, generator=g), flags[:, :1], flags[:, 1:])
    return agent, batch


def slip_losses(agent: TD3, b: Transitions, discount: float) -> dict[str, float]:
    """The critic's loss on ``b`` before any step, done right and with each slip of CRITIC_SLIPS."""
    with torch.no_grad():
        q = agent.critic.q1(b.obs, b.action)

        def loss(critic=agent.critic_target, actor=agent.actor_target, not_done=1 - b.terminated, d=discount, sign=1):
            return float(F.mse_loss(q, b.reward + sign * d * not_done * critic.q1(b.next_obs, actor(b.next_obs))))

        right = loss()
        return {"right": right, "truncated ends": loss(not_done=1 - torch.maximum(b.terminated, b.truncated)),
                "never ends": loss(not_done=1.0), "no discount": loss(d=1.0), "the critic": loss(critic=agent.critic),
                "the actor": loss(actor=agent.actor), "minus": loss(sign=-1), "negated": -right}


def watched(fn, *args):
    """``fn(*args)``, its "Not yet" sentence if it failed, and whether it called td3_lib's own critic step."""
    calls, previous = [], sys.getprofile()
    sys.setprofile(lambda frame, event, arg: calls.append(1) if event == "call" and frame.f_code in OWN_STEPS else None)
    try:
        got, problem = learners_call(fn, *args)
    finally:
        sys.setprofile(previous)
    return got, problem, bool(calls)


def weights(*modules) -> list[torch.Tensor]:
    return [p.detach().clone() for m in modules for p in m.parameters()]


def same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return all(torch.allclose(x, y, rtol=1e-4, atol=1e-6) for x, y in zip(a, b))


def critic_verdict(fn, seed: int) -> str | None:
    """What is wrong with ``fn`` on one case, in one "Not yet" sentence; None when its step is td3_lib's."""
    agent, b = critic_case(seed)
    reference, _ = critic_case(seed)
    reference.critic_step(Batch(b.obs, b.action, b.reward, b.next_obs, 1 - b.terminated))  # td3_lib's own step
    losses, before = slip_losses(agent, b, DDPG.discount), weights(agent.critic)
    others = weights(agent.actor, agent.critic_target, agent.actor_target)
    got, problem, called_own = watched(fn, agent, b, DDPG.discount)
    if problem or called_own:
        return problem or f"Not yet: {fn.__name__} calls td3_lib's own critic step; write the steps yourself."
    if any(p.grad is not None for m in (agent.critic_target, agent.actor_target) for p in m.parameters()):
        return "Not yet: gradients reached the target networks: build the target under torch.no_grad()."
    if not same(others, weights(agent.actor, agent.critic_target, agent.actor_target)):
        return "Not yet: only agent.critic may move in this step; the actor and the target networks stay."
    try:
        loss = None if got is None else float(got.detach() if torch.is_tensor(got) else got)
    except (TypeError, ValueError, RuntimeError):
        return f"Not yet: return the loss, one number; yours returned {type(got).__name__}."
    slip = next((s for s, v in losses.items() if loss is not None and math.isclose(loss, v, rel_tol=1e-5)), None)
    if slip not in (None, "right"):
        return "Not yet: " + CRITIC_SLIPS[slip]
    if same(before, weights(agent.critic)):
        return "Not yet: the critic's weights did not move: call agent.critic_optimizer.step() after backward()."
    if slip is None:
        return (f"Not yet: your loss is {loss}, the critic's loss on this minibatch is {losses['right']:.4f}."
                if loss is not None else "Not yet: return the loss, so that training can log it.")
    if not same(weights(reference.critic), weights(agent.critic)):
        return ("Not yet: your loss is right, but the step is not td3_lib's: zero the old gradients "
                "(agent.critic_optimizer.zero_grad()), then backward(), then step().")
    return None


def check_critic_update(fn) -> str:
    """Whether ``fn(agent, batch, discount)`` takes DDPG's critic step, as td3_lib's own pieces take it on the
    same minibatch (two cases), in one sentence: "Right: ..." or "Not yet: ..." naming what to look at."""
    for seed in (0, 1):
        problem = critic_verdict(fn, seed)
        if problem:
            return problem
    return "Right: the target from the target networks, ended by terminated alone, and one step down the critic's loss."


# ------------------------------------------------------------------ lesson 02
import dataclasses  # noqa: E402  (each lesson's section holds its own imports)

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

FALLS_AT = 37
"""The step at which the second episode of ``check_bias_from_rollout`` ends, ``terminated``, like a hopper
that falls; the first is Pendulum's own, cut by its time limit (``truncated``) at step 200."""


class SteppedAfterEnd(RuntimeError):
    """An episode was stepped before its reset or after its end."""


class EndGuard(gym.Wrapper):
    """Refuses a step before the first reset or after the episode ended (``terminated`` or ``truncated``);
    with ``falls_at``, ends the episode at that step, ``terminated``."""

    def __init__(self, env, falls_at: int | None = None):
        super().__init__(env)
        self.falls_at, self.t, self.ended = falls_at, 0, None

    def reset(self, **kwargs):
        self.t, self.ended = 0, False
        return self.env.reset(**kwargs)

    def step(self, action):
        if self.ended is None:
            raise SteppedAfterEnd("it stepped the environment before resetting it: start with env.reset(seed=seed)")
        if self.ended:
            raise SteppedAfterEnd(f"it stepped on after the episode ended at step {self.t}: stop when "
                                  "terminated or truncated")
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.t += 1
        terminated = terminated or self.t == self.falls_at
        self.ended = terminated or truncated
        return obs, reward, terminated, truncated, info


def bias_exercise_agent(seed: int = 0):
    """A DDPG agent on Pendulum-v1, 200 updates into training, so that its critic and its target differ."""
    from ..agent import TD3
    from ..buffer import ReplayBuffer
    from ..config import preset
    from ..envs import make_env

    config = dataclasses.replace(preset("Pendulum-v1"), clipped_double_q=False, target_policy_smoothing=False,
                                 delayed_policy_updates=False)
    env, rng = make_env("Pendulum-v1"), np.random.default_rng(seed)
    torch.manual_seed(seed)
    agent, buffer = TD3(3, env.action_space.low, env.action_space.high, config), ReplayBuffer(3, 1, 400)
    obs, _ = env.reset(seed=seed)
    for _ in range(400):
        action = rng.uniform(-2.0, 2.0, size=1).astype(np.float32)
        next_obs, reward, terminated, truncated, _ = env.step(action)
        buffer.add(obs, action, reward, next_obs, terminated)
        obs = env.reset()[0] if terminated or truncated else next_obs
    generator = torch.Generator().manual_seed(seed)
    for _ in range(200):
        agent.update(buffer.sample(64, generator=generator))
    return agent


def as_values(x) -> np.ndarray:
    """A learner's array, list or tensor as a flat float array."""
    return np.asarray(x.detach().cpu() if isinstance(x, torch.Tensor) else x, dtype=float).reshape(-1)


def return_slip(got, rewards, discount: float) -> str:
    """What returns that are not the discounted returns-to-go look like."""
    from .analysis import returns_to_go

    slips = {"the plain sum of the rewards from s_t on: weigh the reward k steps ahead by discount ** k":
             returns_to_go(rewards, 1.0),
             "accumulated forwards, from the first step: the return from s_t holds the rewards from t on, so "
             "run the loop from the last step back to the first": returns_to_go(rewards[::-1], discount)[::-1],
             "missing the last reward: the return from the last state is its own reward, as nothing follows":
             np.append(returns_to_go(rewards[:-1], discount), 0.0),
             "one step late: G_t starts with r_t, the reward for the action taken in s_t":
             np.append(returns_to_go(rewards, discount)[1:], 0.0)}
    return next((f"your returns are {name}." for name, wrong in slips.items() if np.allclose(got, wrong)),
                "your returns are not the discounted returns-to-go of the noise-free policy's episode "
                "(agent.act(obs), from env.reset(seed=seed)).")


def estimate_slip(got, agent, states) -> str:
    """What estimates that are not Q1(s, mu(s)) look like."""
    s = torch.as_tensor(np.asarray(states, dtype=np.float32), device=agent.device)
    with torch.no_grad():
        slips = {"the target critic's: measure the critic the actor climbs, agent.critic.q1":
                 (agent.critic_target.q1(s, agent.actor_target(s)), agent.critic_target.q1(s, agent.actor(s))),
                 "Q2's: the estimate is Q1(s, mu(s))": (agent.critic(s, agent.actor(s))[1],),
                 "one state late: pair each state with its own estimate": (agent.critic.q1(s[1:], agent.actor(s[1:])),)}
    for name, values in slips.items():
        if any(np.allclose(got[:len(v)], as_values(v), rtol=1e-4, atol=1e-4) for v in values):
            return f"your estimates are {name}."
    return "your estimates are not Q1(s, mu(s)) at the noise-free action mu(s) = agent.actor(s)."


def check_bias_from_rollout(fn) -> str:
    """Lesson 02: ``fn(agent, env, seed)`` runs the noise-free policy for one episode from ``env.reset(seed=
    seed)`` and returns (estimates, returns), one of each per state the agent acted in: Q1(s_t, mu(s_t)) and
    the discounted return from s_t to the episode's end. Tried on an episode cut by the time limit and on
    one that ends ``terminated`` (at step ``FALLS_AT``)."""
    from ..envs import make_env
    from ..rollout import rollout
    from .analysis import critic_values, returns_to_go

    agent = bias_exercise_agent()
    for seed, falls_at, how in ((10_000, None, "cut by the time limit"), (10_001, FALLS_AT, "ended by a fall")):
        with EndGuard(make_env("Pendulum-v1"), falls_at) as env:
            episode = rollout(env, agent.act, seed=seed, keep_states=True)
        n, true, (q1, _) = len(episode), returns_to_go(episode.rewards, agent.config.discount), critic_values(agent, episode.states)
        name = f"{getattr(fn, '__name__', 'your function')}(agent, env, seed={seed})"
        try:
            with EndGuard(make_env("Pendulum-v1"), falls_at) as env:
                result = fn(agent, env, seed)
            if result is None:
                return f"Not yet: {name} returned None; return the pair (estimates, returns)."
            estimates, returns = (as_values(x) for x in result)
        except NotImplementedError:
            return f"Not yet: {name} raised NotImplementedError: write its body."
        except SteppedAfterEnd as error:
            return f"Not yet: on the episode from reset seed {seed} ({how} at step {n}), {error}."
        except Exception as error:  # a slip or a wrong return: a verdict, never a raise
            return f"Not yet: {name} raised {type(error).__name__}: {error}"
        if len(estimates) != n or len(returns) != n:
            return (f"Not yet: from reset seed {seed} the agent acts in {n} states ({how} at step {n}); you give "
                    f"{len(estimates)} estimates and {len(returns)} returns: one of each per state.")
        if not np.allclose(returns, true, rtol=1e-4, atol=1e-4):
            return f"Not yet: from reset seed {seed}, " + return_slip(returns, np.array(episode.rewards), agent.config.discount)
        if not np.allclose(estimates, q1, rtol=1e-4, atol=1e-4):
            return f"Not yet: from reset seed {seed}, " + estimate_slip(estimates, agent, episode.states)
    return ("Right: on an episode cut by the time limit and on one that ends in a fall, your estimates are "
            "Q1(s, mu(s)) and your returns the discounted returns from each state to the episode's end.")


# ------------------------------------------------------------------ lesson 03

# ------------------------------------------------------------------ lesson 04
import torch  # noqa: E402  (each lesson's section imports what it needs)

from ..targets import half_range, smooth_target_action  # noqa: E402

BOUNDS_04 = (torch.tensor([-2.0, -1.0, 0.0]), torch.tensor([2.0, 1.0, 10.0]))
"""Three action dimensions with different bounds: half-ranges 2, 1 and 5."""


def verdict_of_call(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` and None, or None and a "Not yet" saying why it gave no tensor."""
    try:
        out = fn(*args, **kwargs)
    except Exception as error:  # noqa: BLE001  (the learner's code may raise anything)
        return None, f"Not yet: {fn.__name__} raised {type(error).__name__}" + (f": {error}" if str(error) else ".")
    if not torch.is_tensor(out):
        what = "None" if out is None or out is Ellipsis else f"a {type(out).__name__}"
        return None, f"Not yet: {fn.__name__} returns {what}, not a tensor of actions."
    if out.shape != args[0].shape:
        return None, f"Not yet: it returns shape {tuple(out.shape)}; the actions in have shape {tuple(args[0].shape)}."
    return out, None


def check_smoothed_target_action(fn) -> str:
    """Lesson 04: ``fn(next_action, low, high, policy_noise, noise_clip, generator=None)``, the smoothed
    target action with per-dimension bounds, against ``td3_lib.smooth_target_action``: the same actions
    from the same seeded generator, or (noise drawn another way) the same distribution, dimension by
    dimension: the clip's width, the noise's spread, the bounds, and draws that follow the generator."""
    low, high = BOUNDS_04
    spread = low + (high - low) * torch.rand(1_000, 3, generator=torch.Generator().manual_seed(5))
    next_action = torch.cat([torch.tensor([[1.9, 0.0, 5.0], [-2.0, 0.9, 0.2], [0.0, -0.5, 9.9]]), spread])
    out, problem = verdict_of_call(fn, next_action.clone(), low, high, 0.2, 0.5, generator=torch.Generator().manual_seed(0))
    if problem:
        return problem
    if torch.allclose(out, smooth_target_action(next_action, low, high, 0.2, 0.5, torch.Generator().manual_seed(0))):
        return "Right: the same actions as td3_lib.smooth_target_action from the same generator."
    for case in (noise_problem, bounds_problem, generator_problem):
        problem = case(fn)
        if problem:
            return problem
    return ("Right: your noise is drawn in another order than td3_lib's, so the actions differ, but on every "
            "dimension it has the right spread and clip and the actions stay within their bounds.")


def noise_problem(fn, n: int = 20_000) -> str | None:
    """From the middle of each range (no bound near): does each dimension's noise have its clip and spread?"""
    low, high = BOUNDS_04
    h = half_range(low, high)
    middle = ((low + high) / 2).repeat(n, 1)
    for policy_noise, noise_clip in ((0.2, 0.5), (0.3, 0.4)):
        out, problem = verdict_of_call(fn, middle.clone(), low, high, policy_noise, noise_clip,
                                       generator=torch.Generator().manual_seed(1))
        if problem:
            return problem
        noise, c = out - middle, noise_clip * h
        expected = smooth_target_action(middle, low, high, policy_noise, noise_clip,
                                        torch.Generator().manual_seed(2)) - middle
        for j in range(len(h)):
            widest, spread, wanted = noise[:, j].abs().max().item(), noise[:, j].std().item(), expected[:, j].std().item()
            where = f"with policy_noise={policy_noise}, noise_clip={noise_clip}, dimension {j} (bounds " \
                    f"[{low[j]:g}, {high[j]:g}], h = {h[j]:g})"
            if not 0.999 * c[j] <= widest <= c[j] * (1 + 1e-5):
                return (f"Not yet: {where}: the noise reaches {widest:.3f}; drawn with std policy_noise·h and "
                        f"clipped to ±noise_clip·h, it reaches exactly {c[j]:.3f}.")
            if abs(spread / wanted - 1) > 0.05 or abs(noise[:, j].mean().item()) > 0.05 * wanted:
                return (f"Not yet: {where}: the noise has mean {noise[:, j].mean().item():+.3f} and std {spread:.3f}; "
                        f"it should have mean 0 and std {wanted:.3f} (N(0, (policy_noise·h)²), then clipped).")
    return None


def bounds_problem(fn, n: int = 2_000) -> str | None:
    """From each bound: do the actions stay within [low, high], dimension by dimension?"""
    low, high = BOUNDS_04
    for name, edge in (("high", high), ("low", low)):
        out, problem = verdict_of_call(fn, edge.repeat(n, 1), low, high, 0.2, 0.5, generator=torch.Generator().manual_seed(3))
        if problem:
            return problem
        outside = (out < low) | (out > high)
        if outside.any():
            j = int(outside.any(0).nonzero()[0])
            return (f"Not yet: from actions at their {name} bound, dimension {j} reaches "
                    f"[{out[:, j].min().item():.3f}, {out[:, j].max().item():.3f}], outside its bounds "
                    f"[{low[j]:g}, {high[j]:g}]: after adding the noise, clip each dimension to its own bounds.")
    return None


def generator_problem(fn) -> str | None:
    """Do two calls with generators seeded alike give the same actions (the noise drawn with ``generator``)?"""
    low, high = BOUNDS_04
    twice = [verdict_of_call(fn, torch.zeros(8, 3) + low + 0.5, low, high, 0.2, 0.5,
                             generator=torch.Generator().manual_seed(4))[0] for _ in range(2)]
    if any(t is None for t in twice) or not torch.equal(*twice):
        return "Not yet: two calls with generators seeded alike gave different actions: draw the noise with generator=generator."
    return None


# ------------------------------------------------------------------ lesson 05
DELAYED_CASES = ((2, 0.1), (3, 0.3))
"""(d, tau) of the runs the delayed update is checked on: 6 updates each; tau far from 0.5, so that tau and
1 - tau differ."""
OWN_SOFT_UPDATE = (soft_update.__code__, TD3.update_targets.__code__, TD3.actor_step.__code__)
"""td3_lib's own soft update, seen by its code objects: the exercise is to write the blend."""


def delayed_case(d: int, tau: float) -> tuple:
    """Two agents equal in every weight and generator (the learner's and TD3 with policy_freq = d and this
    tau), and a minibatch; the learner's has tau 0.005 in its config, so its blend must use the tau it is given."""
    agents = []
    for config in (TD3Config(hidden_sizes=(16, 16)), TD3Config(hidden_sizes=(16, 16), policy_freq=d, tau=tau)):
        torch.manual_seed(0)
        agent = TD3(3, [-2.0], [2.0], config)
        noise = torch.Generator().manual_seed(1)
        with torch.no_grad():  # targets a little apart from the learned networks, as after some training
            for p in (*agent.actor_target.parameters(), *agent.critic_target.parameters()):
                p.add_(0.1 * torch.randn(p.shape, generator=noise))
        agents.append(agent)
    g = torch.Generator().manual_seed(0)
    batch = Batch(torch.randn(32, 3, generator=g), torch.rand(32, 1, generator=g) * 4 - 2,
                  torch.randn(32, 1, generator=g), torch.randn(32, 3, generator=g), torch.ones(32, 1))
    return agents[0], agents[1], batch


def parameters(agent: TD3) -> dict:
    """Copies of the four networks' parameters, by network name."""
    return {name: [p.detach().clone() for p in getattr(agent, name).parameters()]
            for name in ("actor", "critic", "actor_target", "critic_target")}


def same(a: list, b: list) -> bool:
    return all(torch.allclose(x, y, rtol=1e-5, atol=1e-6) for x, y in zip(a, b))


def watched(fn, *args) -> tuple:
    """``fn(*args)``, and whether it called td3_lib's own soft update."""
    calls, previous = [], sys.getprofile()
    sys.setprofile(lambda frame, event, arg: calls.append(1) if event == "call" and frame.f_code in OWN_SOFT_UPDATE
                   else None)
    try:
        return fn(*args), bool(calls)
    finally:
        sys.setprofile(previous)


def target_verdict(name: str, got: list, old: list, learned: list, before: list, tau: float, it: int,
                   d: int) -> str | None:
    """What is wrong with the target ``name`` after update ``it``, in one sentence; None when it is right."""
    if it % d and not same(got, old):
        return (f"the {name} moved at update {it}, which is not a multiple of d = {d}: the targets move "
                "only when it % d == 0.")
    if it % d:
        return None
    blend = [torch.lerp(o, p, tau) for o, p in zip(old, learned)]
    if same(got, blend):
        return None
    if same(got, old):
        return (f"the {name} did not move at update {it} (a multiple of d = {d}): blend it too, in place "
                "(p_target.data.copy_(...), or mul_ and add_).")
    if same(got, [torch.lerp(o, p, tau) for o, p in zip(old, before)]):
        return f"the {name} blended towards the network before its step: step the actor first, then blend."
    if same(got, [torch.lerp(o, p, 1 - tau) for o, p in zip(old, learned)]):
        return f"the {name} moved by 1 - tau, not tau: tau and 1 - tau are swapped."
    if same(got, learned):
        return f"the {name} is a copy of the learned network: blend, theta' <- tau * theta + (1 - tau) * theta'."
    return f"the {name} at update {it} is not tau * theta + (1 - tau) * theta' of the network after its step."


def delayed_verdict(fn, d: int, tau: float) -> str | None:
    """Six updates of the learner's ``fn`` after each critic step, beside TD3's own update with
    policy_freq = d: the first thing that differs, in one sentence; None when nothing does."""
    mine, td3, batch = delayed_case(d, tau)
    for it in range(1, 7):
        mine.critic_step(batch)
        mine.total_it = it
        old = parameters(mine)
        stepped = "actor_loss" in td3.update(batch)
        try:
            _, delegated = watched(fn, mine, batch, it, d, tau)
        except Exception as e:  # a learner's slip, reported in one line (the stub's NotImplementedError too)
            return f"delayed_update raised {type(e).__name__}: {e}".rstrip(": ")
        if delegated:
            return "it calls td3_lib's own soft update: write the blend of each parameter yourself."
        now = parameters(mine)
        if stepped and all(same(now[name], old[name]) for name in now):
            return f"nothing moved at update {it}, a multiple of d = {d}: step the actor, then blend both targets."
        if same(now["actor"], old["actor"]) == stepped:
            return (f"at update {it} with d = {d} the actor {'did not step' if stepped else 'stepped'}: the actor "
                    "steps (agent.policy_step) only when it % d == 0.")
        if stepped and not same(now["actor"], parameters(td3)["actor"]):
            return "the actor's step differs from agent.policy_step(batch): take exactly one."
        for name, learned in (("critic_target", "critic"), ("actor_target", "actor")):
            wrong = target_verdict(name, now[name], old[name], now[learned], old[learned], tau, it, d)
            if wrong:
                return wrong
    return None


def check_delayed_update(fn) -> str:
    """Lesson 05: ``delayed_update(agent, batch, it, d, tau)``, the delayed branch of TD3's update ``it``
    (1, 2, 3, ...): when ``it % d == 0``, one actor step (``agent.policy_step(batch)``), then both target
    networks blended towards the learned ones, theta' <- tau * theta + (1 - tau) * theta', per parameter.
    Checked over 6 updates for each (d, tau) of ``DELAYED_CASES`` against ``TD3.update`` with policy_freq = d."""
    for d, tau in DELAYED_CASES:
        wrong = delayed_verdict(fn, d, tau)
        if wrong:
            return f"Not yet: {wrong}"
    return ("Right: the actor steps and both targets blend by tau at updates 2, 4, 6 with d = 2 and 3, 6 with "
            "d = 3, exactly as TD3.update moves them.")


# ------------------------------------------------------------------ lesson 06

# ------------------------------------------------------------------ lesson 07

# ------------------------------------------------------------------ lesson 08
from .pitfall_checks import check_collect, check_critic_loss  # noqa: E402,F401  (their machinery lives there)
