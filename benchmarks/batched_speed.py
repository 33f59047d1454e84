"""Many runs in one process: the batched TD3 (``BatchedTD3``, ``train_batched``) against K runs one after
another and against K processes, on the CPU.

Two parts, with three contenders side by side in each:

1. **Updates**: member-updates per second for K = 1, 5, 10, 20 members, at 64-64 networks (Pendulum-v1's
   sizes: 3 observations, 1 action, the preset's batch of 256) and at 256-256 (Hopper-v5's: 11
   observations, 3 actions, batch 256). Every member samples its own minibatches, with its own
   generator, from its own full buffer of 100,000 random transitions.
   - ``batched``: one ``BatchedTD3`` of K members, ``batched.update(replay.sample(...))``;
   - ``sequential``: K ``TD3`` agents in this process, ``agent.update(buffer.sample(...))`` in turn;
   - ``processes``: K worker processes, each updating its own ``TD3`` agent, all at once.
   Each contender runs with 1 and with 2 torch threads (per process), and is compared at the thread
   count with its highest median. After a warm-up, each runs blocks of about ``--block-seconds``, the
   contenders interleaved (A B C, then C B A) for ``--rounds`` rounds; each ratio is the median over
   rounds of the ratio within a round.
2. **Training**: environment steps per second, all members together, of short runs on Pendulum-v1 and
   Hopper-v5 with each preset's networks and batch: ``--random-steps`` random steps, then
   ``--learning-steps`` steps with an update each, and an evaluation (one noise-free episode) at the end
   of the random phase and at the end. Seeds 0 to K-1.
   - ``batched``: one ``train_batched`` call; ``sequential``: K ``train`` calls in turn;
     ``processes``: K ``train`` calls at once, one per worker process.
   Each contender runs with the thread count that was fastest for it in part 1 at the same networks and
   K. Two figures: *whole*, from the call to the end of the last run (building the environments and
   agents, both phases, the evaluations); *learning*, from the end of the evaluation after the last
   random step to the end of the run (updates, acting, storing and the final evaluation). For
   ``sequential`` the K runs' windows are added up; for ``processes`` the window runs from the first
   process's end of its random phase to the last process's end. Starting the worker processes
   (importing torch) is not timed.

    python benchmarks/batched_speed.py                         # everything (see docs/performance.md)
    python benchmarks/batched_speed.py --parts updates --ks 1 10
    python benchmarks/batched_speed.py --smoke --out /tmp/bs   # the same code at tiny sizes, seconds

Writes batched_speed.json (rewritten after each part) and batched_speed.md (the tables) into ``--out``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from batched_blocks import UpdateSpec, batched_block, even_block, sequential_block, warm_up
from batched_tables import markdown
from gpu_report import machine
from td3_lib import TD3Config, preset
from training_clock import timed_batched_run, timed_run
from update_blocks import random_transitions
from worker_pool import WorkerPool

RESULTS = Path(__file__).resolve().parent / "results"
CONTENDERS = ("batched", "sequential", "processes")
SIZES = (UpdateSpec(3, 1, (64, 64), 256, 100_000), UpdateSpec(11, 3, (256, 256), 256, 100_000))
LEARNING_STEPS = {"Pendulum-v1": 1_000, "Hopper-v5": 300}


@dataclass(frozen=True)
class Plan:
    """What one run of the benchmark measures."""

    sizes: tuple[UpdateSpec, ...]
    ks: tuple[int, ...]
    threads: tuple[int, ...]
    rounds: int
    block_seconds: float
    envs: tuple[str, ...]
    train_ks: tuple[int, ...]
    train_rounds: int
    random_steps: int
    learning_steps: dict
    """Learning steps per environment."""
    train_overrides: dict
    """TD3Config fields set on each preset (the smoke run's tiny networks)."""


def smoke_plan() -> Plan:
    tiny = (UpdateSpec(3, 1, (16, 16), 16, 500), UpdateSpec(11, 3, (24, 24), 16, 500))
    return Plan(tiny, (1, 2), (1,), 2, 0.02, ("Pendulum-v1",), (1, 2), 2, 32, {"Pendulum-v1": 32},
                {"hidden_sizes": (16, 16), "batch_size": 16})


def parse(argv) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(RESULTS), help="folder for batched_speed.json and batched_speed.md")
    p.add_argument("--parts", nargs="+", choices=("updates", "training"), default=["updates", "training"])
    p.add_argument("--ks", type=int, nargs="+", default=[1, 5, 10, 20], help="members per batch (part 1)")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch threads tried per contender")
    p.add_argument("--rounds", type=int, default=4, help="an even number of interleaved rounds (part 1)")
    p.add_argument("--block-seconds", type=float, default=1.0, help="about how long one timed block lasts")
    p.add_argument("--envs", nargs="+", default=list(LEARNING_STEPS), help="environments trained (part 2)")
    p.add_argument("--train-ks", type=int, nargs="+", default=[1, 5, 10, 20], help="members per batch (part 2)")
    p.add_argument("--train-rounds", type=int, default=2, help="an even number of rounds (part 2)")
    p.add_argument("--random-steps", type=int, default=1_000, help="random steps of each run (part 2)")
    p.add_argument("--learning-steps", type=int, default=None,
                   help="learning steps of each run (default: Pendulum-v1 1000, Hopper-v5 300)")
    p.add_argument("--smoke", action="store_true", help="tiny sizes, to check that the script runs")
    args = p.parse_args(argv)
    for name in ("rounds", "train_rounds"):
        value = getattr(args, name)
        if value < 2 or value % 2:
            p.error(f"--{name.replace('_', '-')} {value}: it must be an even number >= 2, so each contender "
                    "runs first as often as last")
    if min(args.ks + args.train_ks + args.threads) < 1:
        p.error("--ks, --train-ks and --threads take integers >= 1")
    return args


def make_plan(args) -> Plan:
    if args.smoke:
        return smoke_plan()
    learning = {env: args.learning_steps or LEARNING_STEPS.get(env, 300) for env in args.envs}
    return Plan(SIZES, tuple(args.ks), tuple(args.threads), args.rounds, args.block_seconds, tuple(args.envs),
                tuple(args.train_ks), args.train_rounds, args.random_steps, learning, {})


def median_ratio(a: list[float], b: list[float]) -> float:
    """The median over rounds of a's value over b's in the same round."""
    return statistics.median(x / y for x, y in zip(a, b))


# ------------------------------------------------------------------------------------------ 1. updates
def in_process(block):
    """A contender run in this process: ``run(n, threads)`` -> seconds for n updates of every member."""
    def run(n: int, threads: int) -> float:
        torch.set_num_threads(threads)
        started = time.perf_counter()
        block(n)
        return time.perf_counter() - started
    return run


def in_processes(pool: WorkerPool, k: int):
    """The K-processes contender: each of k workers runs n updates of its own agent, all at once."""
    def run(n: int, threads: int) -> float:
        started = time.perf_counter()
        pool.ask(k, "updates", [(n, threads)] * k)
        return time.perf_counter() - started
    return run


def calibrate(run, threads: int, block_seconds: float) -> int:
    """Warm up (the first calls allocate), then the even number of updates that takes about a block."""
    run(2, threads)
    n = even_block(run(2, threads) / 2, block_seconds / 4)
    return even_block(run(n, threads) / n, block_seconds)


def measure_cell(spec: UpdateSpec, k: int, plan: Plan, pool: WorkerPool, data: dict) -> dict:
    """The three contenders at one size and K, at each thread count, in interleaved rounds."""
    pool.ask(k, "build", [(spec, seed) for seed in range(k)])
    runs = {"batched": in_process(batched_block(spec, k, "cpu", data)),
            "sequential": in_process(sequential_block(spec, range(k), "cpu", data)),
            "processes": in_processes(pool, k)}
    order = [(name, t) for name in CONTENDERS for t in plan.threads]
    blocks = {(name, t): calibrate(runs[name], t, plan.block_seconds) for name, t in order}
    rates = {key: [] for key in order}
    for r in range(plan.rounds):
        for name, t in order if r % 2 == 0 else order[::-1]:
            rates[(name, t)].append(k * blocks[(name, t)] / runs[name](blocks[(name, t)], t))
        print(f"  {spec.name} K={k} round {r + 1}: " + ", ".join(
            f"{name}/{t}t {rates[(name, t)][-1]:.0f}" for name, t in order), flush=True)
    return summarize_cell(k, rates, blocks)


def summarize_cell(k: int, rates: dict, blocks: dict) -> dict:
    """Per contender: its rate at each thread count, its best thread count; the ratios at each one's best."""
    cell = {"k": k, "contenders": {}, "ratios": {}}
    best = {}
    for name in CONTENDERS:
        per_thread = {str(t): {"member_updates_per_s": statistics.median(rates[(n, t)]), "rounds": rates[(n, t)],
                               "block_updates": blocks[(n, t)]} for n, t in rates if n == name}
        t_best = max(per_thread, key=lambda t: per_thread[t]["member_updates_per_s"])
        best[name] = rates[(name, int(t_best))]
        cell["contenders"][name] = {"threads": per_thread, "best_threads": int(t_best),
                                    "member_updates_per_s": per_thread[t_best]["member_updates_per_s"]}
    for a, b in (("batched", "sequential"), ("batched", "processes"), ("processes", "sequential")):
        cell["ratios"][f"{a} / {b}"] = median_ratio(best[a], best[b])
    return cell


def measure_updates(plan: Plan, pool: WorkerPool) -> dict:
    results = {}
    for spec in plan.sizes:
        data = random_transitions(spec.buffer, spec.obs_dim, spec.action_dim)
        results[spec.name] = {"spec": dataclasses.asdict(spec), "cells": {}}
        for k in plan.ks:
            print(f"updates, {spec.name}, K={k}: warming up", flush=True)
            results[spec.name]["cells"][str(k)] = measure_cell(spec, k, plan, pool, data)
    return results


# ----------------------------------------------------------------------------------------- 2. training
def training_config(plan: Plan, env_id: str) -> TD3Config:
    """The preset, cut to the plan's budget: evaluations (one episode) at the end of the random phase and
    every as many steps after; a buffer as large as the budget."""
    r, total = plan.random_steps, plan.random_steps + plan.learning_steps[env_id]
    return dataclasses.replace(preset(env_id), start_timesteps=r, total_steps=total, eval_freq=r,
                               eval_episodes=1, buffer_size=total, **plan.train_overrides)


def rates_of(k: int, cfg: TD3Config, wall: float, random_s: float, learning_s: float, eval_s: float) -> dict:
    r, learning = cfg.start_timesteps, cfg.total_steps - cfg.start_timesteps
    return {"wall_s": wall, "random_s": random_s, "learning_s": learning_s, "evaluation_s": eval_s,
            "steps_per_s": k * cfg.total_steps / wall, "random_steps_per_s": k * r / random_s,
            "learning_steps_per_s": k * learning / learning_s}


def mark_at(marks: list[tuple], step: int) -> tuple:
    return next(m for m in marks if m[0] == step)


def train_in_batch(env_id: str, cfg: TD3Config, k: int, threads: int, pool) -> dict:
    torch.set_num_threads(threads)
    started = time.perf_counter()
    marks = timed_batched_run(env_id, cfg, range(k), "cpu")
    wall = time.perf_counter() - started
    t_random = mark_at(marks, cfg.start_timesteps)[1]
    return rates_of(k, cfg, wall, t_random, marks[-1][1] - t_random, marks[-1][2])


def train_in_turn(env_id: str, cfg: TD3Config, k: int, threads: int, pool) -> dict:
    torch.set_num_threads(threads)
    started, random_s, learning_s, eval_s = time.perf_counter(), 0.0, 0.0, 0.0
    for seed in range(k):
        marks = timed_run(env_id, cfg, "cpu", seed=seed)
        t_random = mark_at(marks, cfg.start_timesteps)[1]
        random_s, learning_s, eval_s = random_s + t_random, learning_s + marks[-1][1] - t_random, eval_s + marks[-1][2]
    return rates_of(k, cfg, time.perf_counter() - started, random_s, learning_s, eval_s)


def train_in_processes(env_id: str, cfg: TD3Config, k: int, threads: int, pool) -> dict:
    started = time.monotonic()
    runs = pool.ask(k, "train", [(env_id, cfg.to_dict(), seed, threads) for seed in range(k)])
    wall = time.monotonic() - started
    random_ends = [run["started"] + mark_at(run["marks"], cfg.start_timesteps)[1] for run in runs]
    ends = [run["started"] + run["marks"][-1][1] for run in runs]
    return rates_of(k, cfg, wall, max(random_ends) - started, max(ends) - min(random_ends),
                    sum(run["marks"][-1][2] for run in runs))


TRAINERS = {"batched": train_in_batch, "sequential": train_in_turn, "processes": train_in_processes}


def best_threads(updates: dict, cfg: TD3Config, k: int, name: str) -> int:
    """The thread count that was fastest for contender ``name`` in part 1 at these networks and K (else 1)."""
    cell = updates.get("-".join(map(str, cfg.hidden_sizes)), {}).get("cells", {}).get(str(k))
    return cell["contenders"][name]["best_threads"] if cell else 1


def train_cell(env_id: str, cfg: TD3Config, k: int, plan: Plan, pool, updates: dict) -> dict:
    threads = {name: best_threads(updates, cfg, k, name) for name in CONTENDERS}
    rounds = {name: [] for name in CONTENDERS}
    for r in range(plan.train_rounds):
        for name in CONTENDERS if r % 2 == 0 else CONTENDERS[::-1]:
            rounds[name].append(TRAINERS[name](env_id, cfg, k, threads[name], pool))
        print(f"  {env_id} K={k} round {r + 1}: " + ", ".join(
            f"{name} {rounds[name][-1]['steps_per_s']:.0f} steps/s" for name in CONTENDERS), flush=True)
    cell = {"k": k, "contenders": {}, "ratios": {}}
    for name, runs in rounds.items():
        cell["contenders"][name] = {"threads": threads[name], "rounds": runs, **{
            key: statistics.median(run[key] for run in runs)
            for key in ("steps_per_s", "learning_steps_per_s", "random_steps_per_s", "wall_s", "evaluation_s")}}
    for a, b in (("batched", "sequential"), ("batched", "processes"), ("processes", "sequential")):
        cell["ratios"][f"{a} / {b}"] = {key: median_ratio([run[key] for run in rounds[a]], [run[key] for run in rounds[b]])
                                        for key in ("steps_per_s", "learning_steps_per_s")}
    return cell


def measure_training(plan: Plan, pool: WorkerPool, updates: dict) -> dict:
    results = {}
    for env_id in plan.envs:
        cfg = training_config(plan, env_id)
        results[env_id] = {"config": cfg.to_dict(), "cells": {}}
        for k in plan.train_ks:
            print(f"training, {env_id}, K={k}", flush=True)
            results[env_id]["cells"][str(k)] = train_cell(env_id, cfg, k, plan, pool, updates)
    return results


# --------------------------------------------------------------------------------------------- main
def cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), None)
    except OSError:
        return None


def write(report: dict, out: Path) -> None:
    report["loadavg"].append(os.getloadavg())
    (out / "batched_speed.json").write_text(json.dumps(report, indent=1, default=str) + "\n")


def main(argv=None) -> dict:
    args = parse(argv)
    plan = make_plan(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = {"smoke": args.smoke, "parts": args.parts, "plan": dataclasses.asdict(plan),
              "machine": {**machine("cpu"), "cpu": cpu_model(), "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY")},
              "loadavg": [os.getloadavg()]}
    sizes = (plan.ks if "updates" in args.parts else ()) + (plan.train_ks if "training" in args.parts else ())
    started = time.perf_counter()
    env_ids = plan.envs if "training" in args.parts else ()
    warm_up(env_ids)
    with WorkerPool(max(sizes), env_ids) as pool:
        if "updates" in args.parts:
            report["updates"] = measure_updates(plan, pool)
            write(report, out)
        if "training" in args.parts:
            report["training"] = measure_training(plan, pool, report.get("updates", {}))
    report["wall_s"] = round(time.perf_counter() - started, 1)
    write(report, out)
    text = markdown(report)
    (out / "batched_speed.md").write_text(text)
    print(text, end="")
    print(f"wrote {out / 'batched_speed.json'} and {out / 'batched_speed.md'}")
    return report


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
