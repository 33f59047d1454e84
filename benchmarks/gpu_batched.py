"""The GPU check's batched part (benchmarks/gpu_check.py, part 4): K members in one ``BatchedTD3``, for
K = 1, 5, 10, 20, eager and with CUDA graphs (``TD3Config.cuda_graph``), on the check's environment
(Hopper-v5).

1. Equality: five members that differ in the three tricks and the delay. The CUDA-graph batched update
   against the eager batched update over 100 updates on the same minibatches; and the eager batched
   update against each member's own ``TD3.update`` on the device over 20 updates. Compared: every
   member's actor, critic and both targets, to rtol 1e-5, atol 1e-6 (docs/batched.md).
2. Updates: member-updates per second of the batched update at the environment's sizes and the
   preset's networks and batch, every (mode, K) in interleaved rounds after its warm-up and capture;
   the median over rounds of its ratio to eager at the same K and to K = 1 in the same mode.
3. Training: ``train_batched`` of K seeds, random steps then learning steps, with an evaluation (one
   episode per member) at regular steps: member-steps per second (all members' environment steps) of
   the random phase, the first learning interval (warm-up, capture) and the learning phase after it,
   evaluation time taken out (``training_clock.phase_rates``); the CUDA-graph runs first, each mode's
   learning rate also as a ratio to its K = 1 run.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
import traceback
from dataclasses import dataclass

import torch

from batched_blocks import UpdateSpec, batched_block, even_block, member_agents, sync
from td3_lib import Batch, TD3Config, make_env, preset
from td3_lib.batched import BatchedTD3, actor_params, critic_params
from training_clock import phase_rates, timed_batched_run
from update_blocks import random_transitions

TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}


@dataclass(frozen=True)
class BatchedPlan:
    """What the batched part runs: the full one on a GPU, or the smoke one on the CPU."""

    ks: tuple[int, ...]
    graph_modes: tuple[bool, ...]
    """The cuda_graph settings measured: (True, False) on a GPU, (False,) on the CPU."""
    check_updates: int
    """Updates of the CUDA-graph batched update against the eager one."""
    single_updates: int
    """Updates of the eager batched update against each member's own TD3."""
    buffer: int
    rounds: int
    block_seconds: float
    random_steps: int
    learning_steps: int
    eval_every: int
    updates_until: float
    """The share of the check's budget by which the update measurement ends."""


def gpu_batched_plan() -> BatchedPlan:
    return BatchedPlan((1, 5, 10, 20), (True, False), 100, 20, 100_000, 4, 0.5, 1_000, 1_500, 500, 0.8)


def smoke_batched_plan() -> BatchedPlan:
    return BatchedPlan((1, 2), (False,), 10, 10, 500, 2, 0.02, 40, 60, 20, 0.8)


def check_configs(cfg: TD3Config) -> list[TD3Config]:
    """Five members on ``cfg``'s networks and batch: TD3, DDPG, TD3 without clipped double Q, without target
    policy smoothing (delay 3), without the delay; so the members step their actors at different updates."""
    switches = [(True, True, True, 2), (False, False, False, 2), (False, True, True, 2), (True, False, True, 3),
                (True, True, False, 2)]
    return [dataclasses.replace(cfg, clipped_double_q=c, target_policy_smoothing=s, delayed_policy_updates=d,
                                policy_freq=f) for c, s, d, f in switches]


def random_batches(n: int, k: int, spec: UpdateSpec, device, seed: int = 0) -> list[Batch]:
    """n stacked minibatches of k members, (k, batch, dim) each, actions in [-1, 1], 1 in 20 terminal."""
    g = torch.Generator(device).manual_seed(seed)
    shape = (k, spec.batch)

    def draw(dim: int):
        return torch.randn(*shape, dim, generator=g, device=device)
    return [Batch(draw(spec.obs_dim), draw(spec.action_dim).clamp(-1, 1), draw(1), draw(spec.obs_dim),
                  (torch.rand(*shape, 1, generator=g, device=device) > 0.05).float()) for _ in range(n)]


def stacked_tensors(batched: BatchedTD3) -> list[torch.Tensor]:
    """Every member's networks, stacked: actor, actor target, critic, critic target."""
    return [*batched.actor, *batched.actor_target, *batched.critic, *batched.critic_target]


def compare(mine: list[torch.Tensor], theirs: list[torch.Tensor]) -> dict:
    mine, theirs = [t.detach().float() for t in mine], [t.detach().float() for t in theirs]
    diffs = [float((a - b).abs().max()) for a, b in zip(mine, theirs, strict=True)]
    close = all(torch.allclose(a, b, **TOLERANCE) for a, b in zip(mine, theirs))
    return {"max_abs_diff": max(diffs), "within_tolerance": close, "tolerance": TOLERANCE}


def graph_against_eager(spec: UpdateSpec, cfg: TD3Config, n: int, device, graph: bool = True) -> dict:
    """The CUDA-graph batched update against the eager one, n updates on the same minibatches (``graph=False``,
    on the CPU: both eager, which checks this check's own code)."""
    configs = check_configs(cfg)
    eager = BatchedTD3(member_agents(spec.obs_dim, spec.action_dim, configs, device))
    graphed = BatchedTD3(member_agents(spec.obs_dim, spec.action_dim,
                                       [dataclasses.replace(c, cuda_graph=graph) for c in configs], device))
    for batch in random_batches(n, len(configs), spec, device):
        eager.update(batch)
        graphed.update(batch)
    captured = sum(step.graph is not None for step in graphed.graphs.values())
    return {"members": len(configs), "updates": n, "cuda_graph": graph, "graphs_captured": captured,
            **compare(stacked_tensors(graphed), stacked_tensors(eager))}


def batched_against_single(spec: UpdateSpec, cfg: TD3Config, n: int, device) -> dict:
    """The eager batched update against each member's own ``TD3.update``, n updates on the same minibatches."""
    configs = check_configs(cfg)
    singles = member_agents(spec.obs_dim, spec.action_dim, configs, device)
    batched = BatchedTD3(member_agents(spec.obs_dim, spec.action_dim, configs, device))
    for batch in random_batches(n, len(configs), spec, device):
        batched.update(batch)
        for k, single in enumerate(singles):
            single.update(Batch(*(field[k] for field in batch)))
    mine = [t[k] for k in range(len(singles)) for t in stacked_tensors(batched)]
    theirs = [t for s in singles for t in (*actor_params(s), *actor_params(s, True), *critic_params(s),
                                           *critic_params(s, True))]
    return {"members": len(configs), "updates": n, **compare(mine, theirs)}


def equality(bp: BatchedPlan, spec: UpdateSpec, cfg: TD3Config, device: str) -> dict:
    graph = True in bp.graph_modes
    checks = {"graph_vs_eager": lambda: graph_against_eager(spec, cfg, bp.check_updates, device, graph),
              "batched_vs_single": lambda: batched_against_single(spec, cfg, bp.single_updates, device)}
    results = {}
    for name, check in checks.items():
        try:
            results[name] = check()
        except Exception as e:
            results[name] = {"error": f"{type(e).__name__}: {e}".splitlines()[0],
                             "traceback": traceback.format_exc()[-3000:]}
    return results


# ------------------------------------------------------------------------------------------------ updates
def mode_name(graph: bool, k: int) -> str:
    return f"{'cuda_graph' if graph else 'eager'} K={k}"


def set_up(spec: UpdateSpec, k: int, graph: bool, bp: BatchedPlan, device: str, data: dict) -> tuple:
    """A contender built and warmed up (its graphs captured), and its even block size."""
    started = time.perf_counter()
    block = batched_block(spec, k, device, data, cuda_graph=graph)
    block(12)  # the critic's graph is captured at the 4th update, the actor's at the 8th
    seconds = time.perf_counter()
    block(10)
    size = even_block((time.perf_counter() - seconds) / 10, bp.block_seconds)
    return block, size, round(time.perf_counter() - started, 2)


def measure_updates(bp: BatchedPlan, spec: UpdateSpec, device: str, clock) -> dict:
    """Every (mode, K) in interleaved rounds: member-updates/s, x eager at the same K, x K = 1 in the same mode."""
    data = random_transitions(bp.buffer, spec.obs_dim, spec.action_dim)
    contenders = {mode_name(g, k): (g, k) for g in bp.graph_modes for k in bp.ks}
    blocks, rows = {}, {}
    for name, (graph, k) in contenders.items():
        if clock.until(bp.updates_until) < 0.03 * clock.budget_s:
            rows[name] = {"skipped": "the check's time for the batched updates ran out before its setup"}
            continue
        try:
            block, size, setup_s = set_up(spec, k, graph, bp, device, data)
            blocks[name], rows[name] = (block, size), {"k": k, "cuda_graph": graph, "setup_s": setup_s,
                                                       "block_updates": size}
        except Exception as e:  # one contender failing (a capture, memory) leaves the others
            rows[name] = {"error": f"{type(e).__name__}: {e}".splitlines()[0],
                          "traceback": traceback.format_exc()[-3000:]}
    rates = {name: [] for name in blocks}
    order = list(blocks)
    for r in range(bp.rounds):
        if r > 0 and clock.until(bp.updates_until) < 0:
            break
        for name in order if r % 2 == 0 else order[::-1]:
            block, size = blocks[name]
            started = time.perf_counter()
            block(size)
            rates[name].append(contenders[name][1] * size / (time.perf_counter() - started))
    for name, values in rates.items():
        graph, k = contenders[name]
        rows[name].update(member_updates_per_s=statistics.median(values), rounds=values)
        for key, ref in (("x_eager", mode_name(False, k)), ("x_k1", mode_name(graph, 1))):
            if ref in rates and ref != name:
                rows[name][key] = statistics.median(a / b for a, b in zip(values, rates[ref]))
    return rows


# ----------------------------------------------------------------------------------------------- training
def training_run(env_id: str, cfg: TD3Config, k: int, device: str) -> dict:
    """One ``train_batched`` run of k seeds; member-steps/s per phase (``phase_rates`` times k)."""
    started = time.perf_counter()
    marks = timed_batched_run(env_id, cfg, range(k), device)
    wall = time.perf_counter() - started
    rates = phase_rates(marks, cfg.start_timesteps)
    return {"k": k, "cuda_graph": cfg.cuda_graph, "wall_s": round(wall, 1),
            "member_steps_per_s": k * cfg.total_steps / wall,
            **{f"{phase}_member_steps_per_s": k * rates[f"{phase}_steps_per_s"]
               for phase in ("random", "first_learning", "learning")},
            "evaluation_steps_per_s": rates["evaluation_steps_per_s"], "intervals": rates["intervals"]}


def run_training(bp: BatchedPlan, env_id: str, base: TD3Config, device: str, clock) -> dict:
    """Every (mode, K) trained once, the CUDA-graph runs first; a run is skipped when the check's time left is
    under 4% of its budget or under 1.5 times the last run of its mode (K grows, so runs take longer)."""
    runs = {}
    for graph in sorted(bp.graph_modes, reverse=True):
        last_s = 0.0
        for k in bp.ks:
            name = mode_name(graph, k)
            if clock.until(1.0) < max(0.04 * clock.budget_s, 1.5 * last_s):
                runs[name] = {"skipped": "the check's time ran out"}
                continue
            started = time.perf_counter()
            try:
                runs[name] = training_run(env_id, dataclasses.replace(base, cuda_graph=graph), k, device)
            except Exception as e:
                runs[name] = {"error": f"{type(e).__name__}: {e}".splitlines()[0],
                              "traceback": traceback.format_exc()[-3000:]}
            last_s = time.perf_counter() - started
            if device == "cuda":
                torch.cuda.empty_cache()
    for name, run in runs.items():
        one = runs.get(mode_name(run.get("cuda_graph", False), 1), {})
        if "learning_member_steps_per_s" in run and "learning_member_steps_per_s" in one:
            run["x_k1"] = run["learning_member_steps_per_s"] / one["learning_member_steps_per_s"]
    return runs


# ---------------------------------------------------------------------------------------------------- all
def training_config(bp: BatchedPlan, env_id: str, overrides: dict) -> TD3Config:
    total = bp.random_steps + bp.learning_steps
    return dataclasses.replace(preset(env_id), start_timesteps=bp.random_steps, total_steps=total,
                               eval_freq=bp.eval_every, eval_episodes=1, buffer_size=total, **overrides)


def run_batched(bp: BatchedPlan, env_id: str, overrides: dict, device: str, clock) -> dict:
    """The batched part: equality, then updates, then training, on ``env_id``'s sizes and preset networks."""
    env = make_env(env_id)
    obs_dim, action_dim = env.observation_space.shape[0], env.action_space.shape[0]
    env.close()
    cfg = training_config(bp, env_id, overrides)
    spec = UpdateSpec(obs_dim, action_dim, tuple(cfg.hidden_sizes), cfg.batch_size, bp.buffer)
    report = {"env_id": env_id, "spec": dataclasses.asdict(spec), "config": cfg.to_dict()}
    report["equality"] = equality(bp, spec, cfg, device)
    report["updates"] = measure_updates(bp, spec, device, clock)
    if device == "cuda":
        torch.cuda.empty_cache()
    sync(device)
    report["training"] = run_training(bp, env_id, cfg, device, clock)
    return report
