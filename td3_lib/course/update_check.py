"""The check of lesson 06's exercise: the learner's whole TD3 update against ``TD3.update``.

The learner writes ``td3_update(agent, batch, it)``, steps (3) to (8) of the
paper's Algorithm 1. ``check_td3_update`` runs it and ``TD3.update`` side by
side on two identical agents and the same minibatches, and compares them at
every point where the update changes something: after the critic's optimiser
step, after the actor's, and at the end of the iteration (after the soft
updates). At each point it compares the four networks' values, and which of
them changed since the previous point: a step done in the wrong order moves
the wrong network at the wrong time, however small the move.

While the learner's function runs, a profile hook watches for the agent's own
update steps (``update``, ``target_q``, ``critic_loss``, ``critic_step``,
``actor_loss``, ``policy_step``, ``update_targets``, ``actor_step``): a call into one of them, on the agent, through
the class (``TD3.target_q(agent, batch)``) or through a reference saved earlier
(``tq = TD3.target_q``), is seen by its code object, and the check fails, so it
cannot be passed by delegating to them. Nothing in ``TD3`` is patched. The pure functions of
lessons 1 to 5 (``bellman_target``, ``clipped_double_q``,
``smooth_target_action``, ``soft_update``) stay allowed.

The smoothing noise may be drawn either way a right update draws it: from ``agent.generator``
(``torch.randn(shape, generator=agent.generator)``, as ``TD3.update`` does) or from torch's global
generator (``torch.randn_like``, as the authors' code does). While the learner's function runs, the
global generator starts where ``agent.generator`` is, so both give the noise ``TD3.update`` draws;
the one it drew from is carried on to the next iteration. A function that draws no noise at all is
told so. The global generator is left as the check found it.

Before judging the learner's function the check runs lesson 06's answer key
(``td3_lib.course.reference.td3_update``, the flat reference TD3's steps) through the same
comparison: should the key itself fail on a machine (another torch computing the update
differently), the check says so instead of blaming the learner.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from ..agent import TD3
from ..buffer import Batch
from ..config import TD3Config
from .reference import td3_update as answer_key

STEP_METHODS = {"update": "(2)-(8)", "target_q": "(3)-(4)", "critic_loss": "(5)", "critic_step": "(5)",
                "actor_loss": "(7)", "policy_step": "(7)", "update_targets": "(8)", "actor_step": "(7)-(8)"}
"""TD3's update steps, which the learner's function must not call, and the steps each one does."""
STEP_CODES = {getattr(TD3, name).__code__: name for name in STEP_METHODS}
"""The steps' code objects: a call to one is seen however the function was reached."""
NETWORKS = ("critic", "critic_target", "actor", "actor_target")
RTOL, ATOL = 1.3e-6, 1e-5
"""torch's float32 tolerances: what two correct updates written differently stay within."""
NO_NOISE = (" Your function drew no target-smoothing noise: step (3) draws it once per iteration, from "
            "agent.generator or with torch.randn_like.")


@dataclass
class Case:
    """One setting the learner's update is checked in."""

    label: str
    """The setting in words, as a failed check names it."""
    config: TD3Config
    """The config both updates run with."""
    low: np.ndarray
    """The action bounds' lower end, per dimension."""
    high: np.ndarray
    """The action bounds' upper end, per dimension."""


CASES = (
    Case("the default config and bounds [-1, 1]", TD3Config(hidden_sizes=(64, 64)), -np.ones(4), np.ones(4)),
    Case("policy_freq=3, tau=0.1, discount=0.9, learning rates 1e-2 and uneven bounds",
         TD3Config(hidden_sizes=(64, 64), policy_freq=3, tau=0.1, discount=0.9, actor_lr=1e-2, critic_lr=1e-2),
         np.array([-1.0, -2.0, 0.0, -0.5]), np.array([1.0, 2.0, 3.0, 0.5])),
)


class StepCallLog:
    """A ``sys.setprofile`` hook that logs every call into one of TD3's step functions."""

    def __init__(self, calls: list):
        self.calls = calls

    def __call__(self, frame, event, arg) -> None:
        if event == "call" and frame.f_code in STEP_CODES:
            self.calls.append(STEP_CODES[frame.f_code])


@contextlib.contextmanager
def one_noise_source(agent: TD3, drew: list):
    """Inside, torch's global generator starts where ``agent.generator`` is: noise drawn either way is
    the same. After, ``agent.generator`` stands where the source that was drawn from left off, and
    ``drew`` gets whether any noise was drawn."""
    start = agent.generator.get_state()
    torch.set_rng_state(start)
    try:
        yield
    finally:
        shared = torch.get_rng_state()
        if torch.equal(agent.generator.get_state(), start) and not torch.equal(shared, start):
            agent.generator.set_state(shared)
        drew.append(not torch.equal(agent.generator.get_state(), start))


@contextlib.contextmanager
def steps_watched(calls: list):
    """Inside, every call into one of TD3's update steps, however it is reached, is logged in ``calls``."""
    previous = sys.getprofile()
    sys.setprofile(StepCallLog(calls))
    try:
        yield
    finally:
        sys.setprofile(previous)


def snapshot(agent: TD3) -> dict[str, list[torch.Tensor]]:
    return {name: [p.detach().clone() for p in getattr(agent, name).parameters()] for name in NETWORKS}


class StepLog:
    """The optimiser steps an agent takes, in order, each with the four networks right after it."""

    def __init__(self, agent: TD3):
        self.agent = agent
        self.points: list[tuple[str, dict]] = []
        self.handles = [optimizer.register_step_post_hook(self.recorder(kind))
                        for kind, optimizer in (("critic", agent.critic_optimizer),
                                                ("actor", agent.actor_optimizer))]

    def recorder(self, kind: str) -> Callable:
        def record(optimizer, args, kwargs):
            self.points.append((f"the {kind}'s optimiser step", snapshot(self.agent)))
        return record

    def iteration(self, start: dict) -> list[tuple[str, dict]]:
        """The points of the iteration just run: its start, each optimiser step, its end."""
        points = [("the start of the iteration", start), *self.points,
                  ("the end of the iteration", snapshot(self.agent))]
        self.points = []
        return points

    def close(self) -> None:
        for handle in self.handles:
            handle.remove()


def random_batch(g: torch.Generator, low, high, n: int = 256, obs_dim: int = 24) -> Batch:
    low, high = torch.as_tensor(low, dtype=torch.float32), torch.as_tensor(high, dtype=torch.float32)
    return Batch(obs=torch.randn(n, obs_dim, generator=g),
                 action=low + (high - low) * torch.rand(n, len(low), generator=g),
                 reward=torch.randn(n, 1, generator=g), next_obs=torch.randn(n, obs_dim, generator=g),
                 not_done=(torch.rand(n, 1, generator=g) > 0.05).float())


def changed(before: dict, after: dict) -> set[str]:
    return {name for name in NETWORKS if not all(torch.equal(a, b) for a, b in zip(before[name], after[name]))}


def differs(mine: dict, yours: dict, name: str) -> float | None:
    """The largest difference in network ``name`` if it is beyond tolerance, else None."""
    pairs = list(zip(mine[name], yours[name]))
    if all(torch.allclose(a, b, rtol=RTOL, atol=ATOL) for a, b in pairs):
        return None
    return max(float((a - b).abs().max()) for a, b in pairs)


def compare_iteration(mine: list, yours: list, where: str) -> str | None:
    """Why the learner's iteration differs from TD3.update's, or None when it matches."""
    kinds = [label for label, _ in mine[1:-1]], [label for label, _ in yours[1:-1]]
    if kinds[0] != kinds[1]:
        return (f"{where}, TD3.update takes {len(kinds[0])} optimiser step(s): {', '.join(kinds[0]) or 'none'}; "
                f"your function took {len(kinds[1])}: {', '.join(kinds[1]) or 'none'}.")
    for i in range(1, len(mine)):
        (label, ref), (_, got) = mine[i], yours[i]
        expected, moved = changed(mine[i - 1][1], ref), changed(yours[i - 1][1], got)
        if expected != moved:
            return (f"{where}, from {mine[i - 1][0]} to {label}, TD3.update changes "
                    f"{', '.join(sorted(expected)) or 'no network'}; yours changed "
                    f"{', '.join(sorted(moved)) or 'no network'}.")
        for name in NETWORKS:
            gap = differs(ref, got, name)
            if gap is not None:
                return f"{where}, at {label}, your {name} differs from TD3.update's (by up to {gap:.2g})."
    return None


def run_case(fn: Callable, case: Case, iterations: int) -> str | None:
    """Run ``fn`` and TD3.update side by side in one case; why they differ, or None."""
    torch.manual_seed(0)
    lib_agent = TD3(obs_dim=24, action_low=case.low, action_high=case.high, config=case.config)
    your_agent = TD3.from_state_dict(lib_agent.state_dict())  # same weights, same noise generator state
    logs, g = (StepLog(lib_agent), StepLog(your_agent)), torch.Generator().manual_seed(1)
    try:
        for it in range(1, iterations + 1):
            batch, starts = random_batch(g, case.low, case.high), (snapshot(lib_agent), snapshot(your_agent))
            lib_agent.update(batch)
            drew: list[bool] = []
            problem = run_learner(fn, your_agent, batch, it, case.label, drew)
            if problem:
                return problem
            kind = "an actor iteration" if it % case.config.policy_freq == 0 else "a critic-only iteration"
            problem = compare_iteration(logs[0].iteration(starts[0]), logs[1].iteration(starts[1]),
                                        f"With {case.label}, in iteration {it} ({kind})")
            if problem:
                return problem + ("" if drew[0] else NO_NOISE)
    finally:
        for log in logs:
            log.close()
    return None


def run_learner(fn: Callable, agent: TD3, batch: Batch, it: int, label: str, drew: list) -> str | None:
    """Call the learner's function with TD3's own steps watched and one noise source; what went
    wrong, or None."""
    calls: list[str] = []
    try:
        with steps_watched(calls), one_noise_source(agent, drew):
            fn(agent, batch, it)
    except NotImplementedError:
        return "td3_update still raises NotImplementedError; write its body and run both cells again."
    except Exception as error:
        if not calls:
            return graph_left(agent, label, it) or f"with {label}, td3_update raised {type(error).__name__}: {error}"
    if calls:
        return (f"your function called TD3.{calls[0]}, which this check does not allow: write step "
                f"{STEP_METHODS[calls[0]]} yourself.")
    return graph_left(agent, label, it)


def graph_left(agent: TD3, label: str, it: int) -> str | None:
    """Why a target network's weights carry an autograd graph after the learner's iteration (a soft
    update computed outside ``torch.no_grad()``), or None."""
    for name in ("critic_target", "actor_target"):
        if any(p.grad_fn is not None for p in getattr(agent, name).parameters()):
            return (f"with {label}, after iteration {it}, your {name}'s weights carry an autograd graph: "
                    "step (8) must move the targets under torch.no_grad().")
    return None


def check_td3_update(fn: Callable, iterations: int = 6) -> str:
    """Whether ``fn(agent, batch, it)`` does what ``TD3.update`` does: a verdict, "Right: ..." or "Not yet: ..."."""
    global_state = torch.get_rng_state()
    try:
        for case in CASES:
            broken = run_case(answer_key, case, iterations)
            if broken:
                return (f"This check cannot judge your function on this machine: with torch {torch.__version__} "
                        f"its own answer key (td3_lib.course.reference.td3_update) fails it. {broken} "
                        "Please report it.")
            problem = run_case(fn, case, iterations)
            if problem:
                return f"Not yet: {problem}"
    finally:
        torch.set_rng_state(global_state)
    return (f"Right: critic, critic_target, actor and actor_target match TD3.update after each optimiser "
            f"step and at the end of each of {iterations} iterations, with {CASES[0].label} and with "
            f"{CASES[1].label}.")
