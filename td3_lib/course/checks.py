"""The lessons' exercise checks: each takes the learner's function and returns a verdict.

A lesson calls its check in one line (``check_td_target(td_target)``); the check runs the learner's
function on cases it builds, compares with the right answer computed here, and returns a sentence that
starts with "Right" or with "Not yet" and says what differs. Every check is tested against a right
solution and several wrong ones (tests/test_checks.py). The solutions themselves stay in the lessons,
in collapsed blocks.
"""

from __future__ import annotations

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

# ------------------------------------------------------------------ lesson 06
from ..config import preset  # noqa: E402
from .update_check import check_td3_update  # noqa: E402,F401  (the whole update's check lives there)


def updates_made(cfg) -> tuple[int, int]:
    """(critic updates, actor updates) of a whole run, counted step by step as ``train``'s loop makes them:
    one update per step t once t > start_timesteps and the buffer holds batch_size transitions."""
    critic = actor = 0
    for t in range(1, cfg.total_steps + 1):
        if t > cfg.start_timesteps and t >= cfg.batch_size:
            critic += 1
            actor += critic % cfg.policy_freq == 0
    return critic, actor


def check_count_updates(fn) -> str:
    """Whether ``fn(cfg)`` gives a run's (critic updates, actor updates), on presets and on edge cases."""
    cases = [preset("Hopper-v5"), preset("Pendulum-v1"),
             TD3Config(total_steps=5_000, start_timesteps=0, policy_freq=3),
             TD3Config(total_steps=1_000, start_timesteps=100, batch_size=256, policy_freq=3),
             TD3Config(total_steps=200, start_timesteps=100, batch_size=256)]
    for cfg in cases:
        answer, problem = learners_call(fn, cfg)
        if problem:
            return problem
        if not isinstance(answer, (tuple, list)) or len(answer) != 2:
            return f"Not yet: count_updates returns {answer!r}: return a pair, (critic_updates, actor_updates)."
        expected = updates_made(cfg)
        if tuple(answer) != expected:
            return (f"Not yet: for total_steps={cfg.total_steps:,}, start_timesteps={cfg.start_timesteps:,}, "
                    f"batch_size={cfg.batch_size}, policy_freq={cfg.policy_freq} you give {tuple(answer)}; "
                    f"the loop makes {expected}.")
    return "Right: Hopper-v5's 1M-step run makes {:,} critic and {:,} actor updates.".format(*updates_made(cases[0]))


# ------------------------------------------------------------------ lesson 07

# ------------------------------------------------------------------ lesson 08
from .pitfall_checks import check_collect, check_critic_loss  # noqa: E402,F401  (their machinery lives there)
