"""K independent TD3 agents updated as one: every weight, Adam moment and target with a leading member dimension.

A ``BatchedTD3`` is built from K ``TD3`` agents (the *members*) and holds their networks stacked: the
actor's layer i as a weight of shape (K, out, in), the twin critic's as (K, 2, in, out). One ``update``
steps every member on its own minibatch with one batched matrix product per layer (``torch.baddbmm`` over
the member dimension, as ``TwinCritic`` already does over its two Q-networks), so K small updates cost
about the kernel launches of one. Member k computes what ``TD3.update`` computes on the same minibatch
and noise: the same pieces (``bellman_target``, ``clipped_double_q``, ``clip_noise``, and the blend of
``soft_update`` with each member's own tau), its own switches, noise scales, discount, tau, learning rates
and delay, its own smoothing-noise generator, and Adam with its own step counts. A member that does not
step its actor in an update (the delay, or not learning yet) leaves its actor, its actor's Adam state and
its targets exactly as they were.

The members stay ordinary ``TD3`` objects: ``write_member`` copies member k's state into one (for an
evaluation, a probe or a checkpoint, whose files are then those of a single run), and building a
``BatchedTD3`` from agents (a resumed run's, for example) reads theirs. The members share
``SHARED_FIELDS`` (the network shapes, the batch size and how the update runs); every other TD3Config
field may differ from member to member.
"""

from __future__ import annotations

import functools
from typing import Sequence

import numpy as np
import torch
from torch import Tensor
from torch.optim.adam import adam

from .agent import TD3
from .buffer import Batch
from .cuda_graph import GraphedStep, StaticBatch, check_graph_device
from .targets import bellman_target, clip_noise, clipped_double_q

SHARED_FIELDS = ("hidden_sizes", "batch_size", "bf16", "cuda_graph")
"""TD3Config fields every member of a batch has in common (the shapes of the stacked tensors, and how the
update runs); every other field may differ from member to member."""
BETAS, EPS = (0.9, 0.999), 1e-8
"""torch.optim.Adam's defaults, which ``TD3`` uses."""


def check_members(agents: Sequence[TD3]) -> None:
    """Refuse, in one sentence, agents that cannot be members of one batch."""
    if len(agents) == 0:
        raise ValueError("A batch needs at least one member agent.")
    first = agents[0]
    for k, agent in enumerate(agents):
        if type(agent) is not TD3:
            raise ValueError(f"Member {k} is a {type(agent).__name__}: a batch updates plain TD3 agents only "
                             "(a subclass that changes the update trains as a single run).")
        if not agent.can_train:
            raise ValueError(f"Member {k} was loaded from an actor-only checkpoint: it can act, not train.")
        same = {"observation size": (agent.obs_dim, first.obs_dim), "device": (agent.device, first.device),
                "action bounds": (agent.action_low.tolist() + agent.action_high.tolist(),
                                  first.action_low.tolist() + first.action_high.tolist())}
        same.update({name: (getattr(agent.config, name), getattr(first.config, name)) for name in SHARED_FIELDS})
        for name, (mine, theirs) in same.items():
            if mine != theirs:
                raise ValueError(f"Member {k} has {name} {mine!r}, member 0 {theirs!r}: the members of a batch "
                                 f"share {', '.join(SHARED_FIELDS)}, the environment's spaces and the device.")


def member_column(values, device, dtype=torch.float32) -> Tensor:
    """One value per member as a tensor of shape (K,)."""
    return torch.as_tensor(np.asarray(values), dtype=dtype, device=device)


def per_member(column: Tensor, like: Tensor) -> Tensor:
    """A (K,) column shaped to broadcast against ``like`` (K, ...)."""
    return column.view(-1, *([1] * (like.dim() - 1)))


class MemberAdam:
    """Adam over tensors with a leading member dimension, each member with its own learning rate and step count.

    It is torch's own Adam (``torch.optim.adam.adam``, fused where torch has the kernel, as ``TD3`` runs it)
    applied to each member's slices of the stacked tensors, so member k takes the step its own agent's
    optimizer would take. A step given a ``mask`` leaves the other members' weights, moments and step
    counts exactly as they were. Gradients are kept allocated (zeroed, never set to None), so that each
    member's slices are fixed views, made once.
    """

    def __init__(self, params: list[Tensor], lrs: Sequence[float], capturable: bool = False):
        self.params, self.lrs, self.capturable = params, [float(lr) for lr in lrs], capturable
        self.fused = fused_adam_runs(params[0].device)
        for p in params:
            p.grad = torch.zeros_like(p)
        self.exp_avg = [torch.zeros_like(p) for p in params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in params]
        on = params[0].device if self.fused or capturable else torch.device("cpu")
        self.steps = [[torch.zeros((), dtype=torch.float32, device=on) for _ in params] for _ in lrs]
        self.views = [[[t[k] for t in tensors] for tensors in (params, [p.grad for p in params], self.exp_avg,
                                                               self.exp_avg_sq)] for k in range(len(lrs))]

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad.zero_()

    @torch.no_grad()
    def step(self, mask: np.ndarray | None = None) -> None:
        """One Adam step of the members in ``mask`` (a (K,) bool array; None: every member)."""
        members = range(len(self.lrs)) if mask is None else np.flatnonzero(mask)
        for lr in sorted({self.lrs[k] for k in members}):  # torch's Adam takes one learning rate per call
            chosen = [k for k in members if self.lrs[k] == lr]
            params, grads, exp_avg, exp_avg_sq = ([t for k in chosen for t in self.views[k][i]] for i in range(4))
            adam(params, grads, exp_avg, exp_avg_sq, [], [t for k in chosen for t in self.steps[k]],
                                  foreach=None if self.fused else True, fused=self.fused or None,
                                  capturable=self.capturable, amsgrad=False, beta1=BETAS[0], beta2=BETAS[1], lr=lr,
                                  weight_decay=0.0, eps=EPS, maximize=False)

    @torch.no_grad()
    def read(self, k: int, optimizer: torch.optim.Optimizer, params: list[Tensor]) -> None:
        """Take member k's Adam state from ``optimizer`` (a member agent's, over ``params``, in this order)."""
        self.lrs[k] = float(optimizer.param_groups[0]["lr"])
        for step, m, v, p in zip(self.steps[k], self.views[k][2], self.views[k][3], params):
            state = optimizer.state.get(p, {})
            step.fill_(float(state["step"]) if state else 0.0)
            m.copy_(state["exp_avg"] if state else torch.zeros_like(m))
            v.copy_(state["exp_avg_sq"] if state else torch.zeros_like(v))

    def write(self, k: int, optimizer: torch.optim.Optimizer, params: list[Tensor]) -> None:
        """Give ``optimizer`` (a member agent's, over ``params``) member k's Adam state, as torch keeps it."""
        optimizer.state.clear()
        for step, m, v, p in zip(self.steps[k], self.views[k][2], self.views[k][3], params):
            if float(step) > 0:
                optimizer.state[p] = {"step": torch.tensor(float(step), dtype=torch.float32, device=step.device),
                                      "exp_avg": m.clone(), "exp_avg_sq": v.clone()}


def fused_adam_runs(device: torch.device) -> bool:
    """Whether torch has Adam's fused kernel for ``device`` (on the CPU since torch 2.4)."""
    try:
        torch.optim.Adam([torch.zeros(1, device=device, requires_grad=True)], fused=True)
        return True
    except RuntimeError:
        return False


def actor_params(agent: TD3, target: bool = False) -> list[Tensor]:
    """A member's actor (or actor target) tensors in the order the batch stacks them: each layer's weight
    (out, in), then its bias (out,)."""
    net = (agent.actor_target if target else agent.actor).net
    return [t for layer in net if isinstance(layer, torch.nn.Linear) for t in (layer.weight, layer.bias)]


def critic_params(agent: TD3, target: bool = False) -> list[Tensor]:
    """A member's twin critic (or its target) tensors in the order the batch stacks them: the weights
    (2, in, out) of every layer, then the biases (2, 1, out)."""
    critic = agent.critic_target if target else agent.critic
    return [*critic.weights, *critic.biases]


def actor_forward(params: list[Tensor], obs: Tensor, center: Tensor, half_range: Tensor,
                  one_by_one: bool = False) -> Tensor:
    """pi(s) = m + h * tanh(f(s)) for every member: obs (K, B, obs_dim) -> actions (K, B, A), one batched
    product per layer; ``one_by_one``: each member's own ``F.linear`` layers in turn, as its ``Actor`` runs
    them (a batched product rounds a layer of one output, Pendulum's last, otherwise than ``F.linear``)."""
    if one_by_one:
        return torch.stack([member_actor_forward(params, k, obs[k], center, half_range) for k in range(len(obs))])
    h = obs
    n_layers = len(params) // 2
    for i in range(n_layers):
        weight, bias = params[2 * i], params[2 * i + 1]
        h = torch.baddbmm(bias.unsqueeze(1), h, weight.transpose(1, 2))
        if i < n_layers - 1:
            h = torch.relu(h)
    return center + half_range * torch.tanh(h)


def member_actor_forward(params: list[Tensor], k: int, obs: Tensor, center: Tensor, half_range: Tensor) -> Tensor:
    """Member k's pi(s) computed as its own ``Actor`` computes it (``nn.Linear``'s ``F.linear``, layer by layer)."""
    h = obs
    n_layers = len(params) // 2
    for i in range(n_layers):
        h = torch.nn.functional.linear(h, params[2 * i][k], params[2 * i + 1][k])
        if i < n_layers - 1:
            h = torch.relu(h)
    return center + half_range * torch.tanh(h)


def critic_forward(params: list[Tensor], obs: Tensor, action: Tensor, critics: int = 2) -> Tensor:
    """Q1 and Q2 (the first ``critics`` of them) of every member: (K, critics, B, 1), one batched product per layer."""
    n_layers = len(params) // 2
    weights = [w[:, :critics] for w in params[:n_layers]]
    biases = [b[:, :critics] for b in params[n_layers:]]
    x = torch.cat([obs, action], dim=-1).unsqueeze(1)             # (K, 1, B, in): shared by the critics
    h = torch.matmul(x, weights[0]) + biases[0]                    # (K, critics, B, hidden)
    for w, b in zip(weights[1:], biases[1:]):
        h = torch.baddbmm(b.flatten(0, 1), torch.relu(h).flatten(0, 1), w.flatten(0, 1)).unflatten(0, w.shape[:2])
    return h


class BatchedTD3:
    """K TD3 agents (``members``) stacked into one, updated together (see the module doc)."""

    def __init__(self, agents: Sequence[TD3]):
        check_members(agents)
        first = agents[0]
        self.k, self.device, self.config = len(agents), first.device, first.config
        check_graph_device(self.config.cuda_graph, self.device)
        self.low, self.high = first.low, first.high
        self.center, self.half_range = first.actor.action_center, first.actor.action_half_range
        self.actor = self.stack([actor_params(a) for a in agents])
        self.actor_target = self.stack([actor_params(a, target=True) for a in agents])
        self.critic = self.stack([critic_params(a) for a in agents])
        self.critic_target = self.stack([critic_params(a, target=True) for a in agents])
        for p in (*self.actor, *self.critic):
            p.requires_grad_(True)
        graphs = self.config.cuda_graph
        self.actor_optimizer = MemberAdam(self.actor, [a.config.actor_lr for a in agents], capturable=graphs)
        self.critic_optimizer = MemberAdam(self.critic, [a.config.critic_lr for a in agents], capturable=graphs)
        self.generators = [a.generator for a in agents]  # each member's smoothing noise, as its own agent draws it
        self.configs = [a.config for a in agents]
        self.set_switches()
        self.total_it = np.zeros(self.k, dtype=np.int64)
        self.everyone = np.ones(self.k, dtype=bool)
        self.masks: dict[tuple, Tensor] = {}
        self.graphs: dict[tuple, object] = {}  # with cuda_graph: the captured steps, by step and members
        self.static = StaticBatch()
        for k, agent in enumerate(agents):
            self.read_member(k, agent)

    def stack(self, members: list[list[Tensor]]) -> list[Tensor]:
        """The members' tensors, each stacked along a new leading member dimension (a copy, detached)."""
        return [torch.stack([m[i].detach() for m in members]).clone() for i in range(len(members[0]))]

    def column(self, values, dtype=torch.float32) -> Tensor:
        return member_column(values, self.device, dtype)

    def set_switches(self) -> None:
        """Each member's switches and scales, as (K,) columns (the noise in action units, per dimension)."""
        cfgs = self.configs
        self.clipped = self.column([c.clipped_double_q for c in cfgs])
        self.smoothing = [k for k, c in enumerate(cfgs) if c.target_policy_smoothing]
        self.smooths = self.column([c.target_policy_smoothing for c in cfgs], torch.bool)
        self.discount = self.column([c.discount for c in cfgs]).view(-1, 1, 1)
        self.tau = self.column([c.tau for c in cfgs])
        self.noise_std = self.column([c.policy_noise for c in cfgs]).view(-1, 1, 1) * self.half_range
        self.noise_clip = self.column([c.noise_clip for c in cfgs]).view(-1, 1, 1) * self.half_range
        self.policy_freq = np.array([c.policy_freq if c.delayed_policy_updates else 1 for c in cfgs])

    # ------------------------------------------------------------------ members in and out
    @torch.no_grad()
    def read_member(self, k: int, agent: TD3) -> None:
        """Load ``agent`` (weights, targets, Adam state, update count) as member k."""
        for stacked, own in ((self.actor, actor_params(agent)), (self.actor_target, actor_params(agent, True)),
                             (self.critic, critic_params(agent)), (self.critic_target, critic_params(agent, True))):
            for s, o in zip(stacked, own):
                s[k] = o
        self.actor_optimizer.read(k, agent.actor_optimizer, actor_params(agent))
        self.critic_optimizer.read(k, agent.critic_optimizer, critic_params(agent))
        self.total_it[k] = agent.total_it

    @torch.no_grad()
    def write_member(self, k: int, agent: TD3) -> None:
        """Copy member k into ``agent`` (built as the member was): weights, targets, Adam state, update count;
        the smoothing-noise generator is already the agent's own."""
        for stacked, own in ((self.actor, actor_params(agent)), (self.actor_target, actor_params(agent, True)),
                             (self.critic, critic_params(agent)), (self.critic_target, critic_params(agent, True))):
            for s, o in zip(stacked, own):
                o.copy_(s[k])
        self.actor_optimizer.write(k, agent.actor_optimizer, actor_params(agent))
        self.critic_optimizer.write(k, agent.critic_optimizer, critic_params(agent))
        agent.total_it = int(self.total_it[k])

    # ------------------------------------------------------------------ acting
    @torch.no_grad()
    def act(self, obs: np.ndarray) -> np.ndarray:
        """Every member's noise-free action mu_k(s_k), one observation per member: (K, obs_dim) -> (K, A)."""
        x = torch.as_tensor(np.asarray(obs, dtype=np.float32), device=self.device).unsqueeze(1)
        return self.mu(self.actor, x).squeeze(1).cpu().numpy()

    def mu(self, params: list[Tensor], obs: Tensor) -> Tensor:
        """The actor (or target actor) ``params`` of every member on ``obs`` (K, B, obs_dim). On the CPU each
        member's layers run as its own actor runs them, so that a member computes its single run's numbers to
        the last bit; on a GPU, where batched and single products round differently anyway, in one batch."""
        return actor_forward(params, obs, self.center, self.half_range, one_by_one=self.device.type == "cpu")

    # ------------------------------------------------------------------ learning
    def update(self, batch: Batch, active: Sequence[bool] | None = None) -> dict[str, Tensor]:
        """One iteration of Algorithm 1 for every member in ``active`` (all by default), each on its own
        minibatch (``batch``'s fields are (K, B, dim)): a critic step, and each member's every d-th time an
        actor and target step. Members left out are untouched (their generators draw nothing). Returns (K,)
        tensors: critic_loss and q1 (NaN where a member did not learn), actor_loss (NaN where it did not step)."""
        active = self.everyone if active is None else np.asarray(active, dtype=bool)
        self.total_it += active
        stepping = active & (self.total_it % self.policy_freq == 0)
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.config.bf16):
            critic_loss, q1 = self.step_of("critic", active)(batch)
            metrics = {"critic_loss": critic_loss, "q1": q1}
            if stepping.any():
                metrics["actor_loss"] = self.step_of("actor", stepping)(batch)
        return metrics

    def step_of(self, which: str, members: np.ndarray):
        """The critic or actor step of ``members`` as a function of the batch: with ``cuda_graph``, a graph
        captured once for each set of members that comes up (the actor's: as many as the members' delays
        make; the critic's: every member learning, else eager), else the eager step itself."""
        step = functools.partial(self.critic_step if which == "critic" else self.actor_step, members=members.copy())
        if not self.config.cuda_graph or (which == "critic" and not members.all()):
            return step
        key = (which, tuple(members))
        if key not in self.graphs:
            self.graphs[key] = GraphedStep(step, self.static, self.device,
                                           [self.generators[k] for k in self.smoothing] if which == "critic" else [],
                                           always_copy=which == "critic")
        return self.graphs[key]

    def mask(self, members: np.ndarray) -> Tensor:
        """``members`` as a (K,) bool tensor on the device, made once per set of members."""
        key = tuple(members)
        if key not in self.masks:
            self.masks[key] = torch.as_tensor(members, device=self.device)
        return self.masks[key]

    def smoothing_noise(self, shape, active: np.ndarray) -> Tensor | None:
        """Each active smoothing member's standard normal draw for its target action, from its own generator,
        as ``target_noise`` draws it; zeros for the others (None when no member smooths)."""
        if not self.smoothing:
            return None
        draws = [torch.randn(shape, generator=self.generators[k], device=self.device) if k in self.smoothing and active[k]
                 else torch.zeros(shape, device=self.device) for k in range(self.k)]
        return torch.stack(draws)

    def target_q(self, batch: Batch, noise: Tensor | None) -> Tensor:
        """y = r + discount * not_done * min(Q1', Q2')(s', a') per member (Q1' alone without clipped double Q),
        a' = clip(pi'(s') + clip(sigma * noise, -c, c), low, high) for a smoothing member, pi'(s') otherwise."""
        with torch.no_grad():
            next_action = self.mu(self.actor_target, batch.next_obs)
            if noise is not None:
                eps = clip_noise(noise, self.noise_std, self.noise_clip)
                smoothed = (next_action + eps).clamp(self.low, self.high)
                next_action = torch.where(per_member(self.smooths, next_action), smoothed, next_action)
            target = critic_forward(self.critic_target, batch.next_obs, next_action).float()
            next_q = torch.where(per_member(self.clipped, target[:, 0]) > 0,
                                 clipped_double_q(target[:, 0], target[:, 1]), target[:, 0])
            return bellman_target(batch.reward, batch.not_done, next_q, self.discount)

    def critic_step(self, batch: Batch, members: np.ndarray):
        """One gradient step of the critics of ``members`` towards their targets; returns (loss, mean Q1), (K,)
        each, NaN for the members left out."""
        y = self.target_q(batch, self.smoothing_noise(batch.action.shape[1:], members))
        q = critic_forward(self.critic, batch.obs, batch.action).float()
        q1_loss = ((q[:, 0] - y) ** 2).mean(dim=(1, 2))
        q2_loss = ((q[:, 1] - y) ** 2).mean(dim=(1, 2))
        losses = q1_loss + self.clipped * q2_loss  # without clipped double Q only Q1 is trained
        self.critic_optimizer.zero_grad()
        losses.sum().backward()  # the members' weights are apart, so each gets its own loss's gradient
        self.critic_optimizer.step(None if members.all() else members)
        return self.where(members, losses.detach()), self.where(members, q[:, 0].detach().mean(dim=(1, 2)))

    def actor_step(self, batch: Batch, members: np.ndarray) -> Tensor:
        """(7) and (8) for ``members``: an actor step along dQ1/da, then both soft target updates; returns each
        member's actor loss (NaN for the others)."""
        action = self.mu(self.actor, batch.obs)
        frozen = [p.detach() for p in self.critic]
        losses = -critic_forward(frozen, batch.obs, action, critics=1)[:, 0].float().mean(dim=(1, 2))
        self.actor_optimizer.zero_grad()
        losses.sum().backward()
        self.actor_optimizer.step(None if members.all() else members)
        with torch.no_grad():
            tau = self.tau * self.mask(members)
            for target, source in zip((*self.critic_target, *self.actor_target), (*self.critic, *self.actor)):
                target.lerp_(source, per_member(tau, target))
        return self.where(members, losses.detach())

    def where(self, members: np.ndarray, values: Tensor) -> Tensor:
        """``values`` (K,) with NaN for the members not in ``members``."""
        return values if members.all() else torch.where(self.mask(members), values, torch.full_like(values, float("nan")))
