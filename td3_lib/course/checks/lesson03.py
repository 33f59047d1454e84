"""The check of lesson 03's exercise: the twin-critic loss of clipped double Q, against TD3's own.

The learner writes ``twin_critic_loss(agent, batch, discount)``: the target action from the target
actor, the smaller of the two target critics' values there, the Bellman target with ``not_done``, and
the sum of both critics' mean squared errors to that one target. ``check_twin_critic_loss`` runs it on
small agents whose target networks stand apart from the networks they copy (so a target read from the
wrong networks shows) and keep ``requires_grad`` (so a target built with gradients shows), on
minibatches in which some transitions ended. It compares the loss, and its gradients for the critics,
with ``TD3.target_q`` and ``TD3.critic_loss`` of DDPG + clipped double Q (no smoothing, so the
target is deterministic). A loss equal to one of the plausible slips' gets that slip's hint.

While the learner's function runs, a profile hook watches for TD3's own steps (``target_q``,
``critic_loss``, ``critic_step``, ``update``), however they are reached, so the check cannot be
passed by calling them. The pure functions ``clipped_double_q`` and ``bellman_target`` stay allowed.
``td3_lib.course.checks`` re-exports it; lesson 03 imports it from there.
"""

from __future__ import annotations

import warnings
from typing import Callable

import torch
import torch.nn.functional as F

from ...agent import TD3
from ...buffer import Batch
from ...config import TD3Config
from .calls import OWN_CRITIC_STEPS, watched_call

CDQ = TD3Config(hidden_sizes=(32, 32), target_policy_smoothing=False, delayed_policy_updates=False, discount=0.8)
"""The agent of the check: DDPG + clipped double Q, small networks, a discount far enough from 1 to show."""
SLIPS = {
    "the larger": "your target takes the larger of the two target critics; clipped double Q takes the smaller.",
    "the mean": "your target averages the two target critics; clipped double Q takes the smaller of the two.",
    "Q1' alone": "your target reads Q1' alone, which is DDPG's target: take the minimum of Q1' and Q2'.",
    "Q2' alone": "your target reads Q2' alone: take the minimum of Q1' and Q2'.",
    "the critics": "your target asks agent.critic about the next state; ask the slow copies, agent.critic_target.",
    "the actor": "your target action comes from agent.actor; take it from agent.actor_target.",
    "own targets": ("each critic regresses onto its own target critic's value; both regress onto one target, "
                    "built from the minimum of Q1' and Q2'."),
    "Q1 only": "only Q1 is in your loss: add Q2's squared error to the same target, so both critics learn.",
    "Q2 only": "only Q2 is in your loss: add Q1's squared error to the same target, so both critics learn.",
    "Q1 twice": "your loss counts Q1's error twice and leaves Q2 out: take Q2's error from current_q2.",
    "averaged": "your loss is half of TD3's: add the two critics' losses, do not average them.",
    "summed": "each critic's loss is a mean of squared errors over the minibatch, not a sum.",
    "not_done": "your target looks past transitions that ended: multiply the next value by batch.not_done.",
    "discount": "your target leaves out the discount: y = r + discount * not_done * min(Q1', Q2').",
    "shapes": ("compare the shapes of the critics' outputs and of y: an (N, 1) against an (N,) broadcasts "
               "to an (N, N) table of errors."),
}


def loss_case(seed: int) -> tuple[TD3, Batch]:
    """A DDPG + clipped double Q agent with unequal action bounds whose target networks differ from its
    networks and keep requires_grad (as a plain copy.deepcopy leaves them), and 64 transitions of which
    about a quarter ended (not_done 0)."""
    torch.manual_seed(seed)
    agent = TD3(3, [-2.0, 0.0], [2.0, 1.0], CDQ)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in (*agent.critic_target.parameters(), *agent.actor_target.parameters()):
            p.add_(0.2 * torch.randn(p.shape, generator=g)).requires_grad_(True)
    batch = Batch(torch.randn(64, 3, generator=g), torch.rand(64, 2, generator=g) * 2 - 1,
                  torch.randn(64, 1, generator=g), torch.randn(64, 3, generator=g),
                  (torch.rand(64, 1, generator=g) > 0.25).float())
    return agent, batch


def slip_losses(agent: TD3, b: Batch, discount: float) -> dict[str, float]:
    """The loss on ``b``, done right and with each slip of SLIPS."""
    mse = F.mse_loss
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's warning for the broadcast, the slip "shapes" names

        def y(critic=agent.critic_target, actor=agent.actor_target, pick=torch.minimum, not_done=b.not_done, d=discount):
            return b.reward + d * not_done * pick(*critic(b.next_obs, actor(b.next_obs)))

        q1, q2 = agent.critic(b.obs, b.action)
        target, first, second = y(), y(pick=lambda x, _: x), y(pick=lambda _, x: x)
        right = mse(q1, target) + mse(q2, target)
        losses = {"right": right, "the larger": mse(q1, y(pick=torch.maximum)) + mse(q2, y(pick=torch.maximum)),
                  "the mean": mse(q1, y(pick=lambda x, z: (x + z) / 2)) + mse(q2, y(pick=lambda x, z: (x + z) / 2)),
                  "Q1' alone": mse(q1, first) + mse(q2, first), "Q2' alone": mse(q1, second) + mse(q2, second),
                  "the critics": mse(q1, y(critic=agent.critic)) + mse(q2, y(critic=agent.critic)),
                  "the actor": mse(q1, y(actor=agent.actor)) + mse(q2, y(actor=agent.actor)),
                  "own targets": mse(q1, first) + mse(q2, second), "Q1 only": mse(q1, target),
                  "Q2 only": mse(q2, target), "Q1 twice": 2 * mse(q1, target), "averaged": right / 2,
                  "summed": ((q1 - target) ** 2).sum() + ((q2 - target) ** 2).sum(),
                  "not_done": mse(q1, y(not_done=1.0)) + mse(q2, y(not_done=1.0)),
                  "discount": mse(q1, y(d=1.0)) + mse(q2, y(d=1.0)),
                  "shapes": mse(q1, target.squeeze(-1)) + mse(q2, target.squeeze(-1))}
    return {name: float(value) for name, value in losses.items()}



def snapshot(agent: TD3) -> list[torch.Tensor]:
    return [p.detach().clone() for m in (agent.critic, agent.critic_target, agent.actor, agent.actor_target)
            for p in m.parameters()]


def gradients_problem(got: torch.Tensor, agent: TD3, batch: Batch) -> str | None:
    """Whether gradients of the learner's loss reach the target networks, or differ from TD3's for the
    critics; None when neither."""
    targets = [*agent.critic_target.parameters(), *agent.actor_target.parameters()]
    critic = list(agent.critic.parameters())
    grads = torch.autograd.grad(got.reshape(()), critic + targets, allow_unused=True)
    if any(g is not None and bool(g.any()) for g in grads[len(critic):]):
        return ("Not yet: gradients reach the target networks: y is a fixed number to regress onto, so build "
                "it under torch.no_grad() (or detach it).")
    want, _ = agent.critic_loss(batch.obs, batch.action, agent.target_q(batch))
    want_grads = torch.autograd.grad(want, critic)
    if not all(g is not None and torch.allclose(g, w, rtol=1e-4, atol=1e-7) for g, w in zip(grads, want_grads)):
        return "Not yet: your loss has TD3's value, but not its gradients for the critics."
    return None


def case_problem(fn: Callable, seed: int) -> str | None:
    """What is wrong with ``fn`` on one case, in one "Not yet" sentence; None when it is TD3's loss."""
    agent, batch = loss_case(seed)
    losses, before = slip_losses(agent, batch, CDQ.discount), snapshot(agent)
    got, problem, called_own = watched_call(fn, OWN_CRITIC_STEPS, agent, batch, CDQ.discount)
    if problem or called_own:
        return problem or f"Not yet: {fn.__name__} calls TD3's own target or loss; write the lines yourself."
    if not all(torch.equal(a, b) for a, b in zip(before, snapshot(agent))):
        return "Not yet: your function changed the networks: return the loss only; the optimiser's step comes after."
    if not torch.is_tensor(got) or got.numel() != 1 or not got.requires_grad:
        what = "None" if got is None or got is Ellipsis else f"{type(got).__name__} {got!r}"[:80]
        return (f"Not yet: return the loss as a tensor holding one number, with its graph, so that backward() "
                f"can reach the critics; yours returned {what}.")
    value = float(got.detach())
    slip = next((s for s, v in losses.items() if abs(value - v) <= 1e-5 * max(1.0, abs(v))), None)
    if slip not in (None, "right"):
        return "Not yet: " + SLIPS[slip]
    if slip is None:
        return (f"Not yet: your loss is {value:.4f}; TD3's on this minibatch is {losses['right']:.4f}. "
                "Check each step: a' = pi'(s'), min(Q1', Q2'), y, then MSE(Q1, y) + MSE(Q2, y).")
    return gradients_problem(got, agent, batch)


def check_twin_critic_loss(fn: Callable) -> str:
    """Lesson 03: whether ``fn(agent, batch, discount)`` is clipped double Q's critic loss, as td3_lib's
    ``TD3.target_q`` and ``TD3.critic_loss`` compute it (two cases), in one sentence that starts
    "Right" or "Not yet" and names what to look at."""
    for seed in (0, 1):
        problem = case_problem(fn, seed)
        if problem:
            return problem
    return ("Right: one target from the smaller of the two target critics, and both critics regress onto it; "
            "no gradient reaches the target networks.")
