"""One run of td3_lib on a CUDA GPU: its GPU tests, the update's speed, a short training run, and the
batched TD3 (K runs in one process) at K = 1, 5, 10, 20.

    python benchmarks/gpu_check.py --out runs/gpu-check          # a CUDA machine: 7.5 minutes at most
    python benchmarks/gpu_check.py --smoke --out /tmp/gpu-check  # the same code on the CPU, tiny sizes

In order, each part within its share of the time (``--budget-s``):

1. Tests: tests/test_cuda.py (training, checkpoints and resume on the GPU; the CUDA-graph
   update against the eager one) and tests/test_resume.py, by pytest in a subprocess; the
   summary line and the end of the output are kept.
2. Update throughput at 256-256 and at 400-300 networks, batch 256, on 24 observations and 4
   actions (BipedalWalker-v3's, as in update_speed.py): the eager update, its network passes
   under torch.compile, the CUDA-graph update (TD3Config.cuda_graph) and both together. The
   contenders run in interleaved rounds (A B C D, then D C B A); each gets updates/s and the
   median over rounds of its ratio to eager within a round. Warm-up, compilation and graph
   capture happen before the timed rounds and are reported apart (setup_s).
3. A short training run with ``train`` on the GPU (Hopper-v5; Pendulum-v1 without MuJoCo) with
   the preset's networks, eager and with cuda_graph=True: environment steps per second with
   acting included, the random phase and the learning phase apart, evaluation apart; then the
   time the preset's whole budget would take at those rates, an extrapolation.
4. The batched TD3 on the same environment (gpu_batched.py), for K = 1, 5, 10, 20 members, eager and
   with CUDA graphs: the CUDA-graph batched update against the eager one (100 updates) and the eager
   one against each member's own TD3 (20 updates), to float tolerance; member-updates/s in
   interleaved rounds; and a short ``train_batched`` run per K and mode: member-steps/s per phase.

The parts share the budget by deadlines: the tests may take 40% of it, the update throughput ends by
60%, the training runs start only before 65%, the batched updates end by 80%, and a batched training
run starts only while 4% of the budget, and 1.5 times the last run of its mode, is left. A part that
ends early leaves its time to the next.

Writes gpu_check.json (rewritten after each part, so a run cut short keeps what it measured)
and summary.txt into ``--out``; the exit status is 1 if a test failed or a part broke.

``--smoke`` runs the same code on the CPU at tiny sizes, in well under 2 minutes: the tests of
tests/test_cuda.py only (its GPU tests skip), torch.compile with its "eager" backend (tracing
without code generation), no CUDA-graph contender or run, the batched part at K = 1, 2 with tiny
networks; the JSON lists what was skipped.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from td3_lib import TD3, TD3Config, make_env, preset
from gpu_batched import BatchedPlan, gpu_batched_plan, run_batched, smoke_batched_plan
from gpu_report import Clock, broken, machine, summary_text, write
from training_clock import phase_rates, timed_run
from update_blocks import compile_passes, full_buffer, random_transitions, timed  # as update_speed.py

ROOT = Path(__file__).resolve().parents[1]

OBS_DIM, ACTION_DIM = 24, 4  # BipedalWalker-v3's, as update_speed.py
CONTENDERS = ("eager", "compile", "cuda_graph", "compile+cuda_graph")


@dataclass(frozen=True)
class Plan:
    """What one check runs: the full one on a GPU, or the smoke one on the CPU."""

    device: str
    """Where everything runs: "cuda" or "cpu"."""
    test_files: tuple[str, ...]
    """The test files pytest runs first."""
    tests_timeout_s: float
    """The most seconds the tests may take."""
    sizes: tuple[tuple[int, ...], ...]
    """The network sizes whose update throughput is measured."""
    batch: int
    """Minibatch size of the measured updates."""
    buffer: int
    """Transitions in the replay buffer the measured updates sample from."""
    contenders: tuple[str, ...]
    """Ways of running the update that are timed side by side ("eager", "compile", ...)."""
    compile_backend: str
    """torch.compile's backend ("inductor"; "eager" in the smoke check, which generates no code)."""
    rounds: int
    """Interleaved rounds of timed blocks per contender."""
    block_seconds: float
    """About how long one timed block of updates lasts."""
    env_id: str
    """The environment of the short training run."""
    random_steps: int
    """Its random steps before learning."""
    learning_steps: int
    """Its learning steps after them."""
    eval_every: int
    """Its evaluation period, in steps."""
    train_overrides: dict
    """TD3Config fields set on its preset."""
    graph_runs: tuple[bool, ...]
    """The cuda_graph setting of each training run."""
    budget_s: float
    """Seconds the whole check may take."""
    batched: BatchedPlan
    """What the batched part (4) runs."""


def gpu_plan(env_id: str, budget_s: float) -> Plan:
    return Plan("cuda", ("tests/test_cuda.py", "tests/test_resume.py"), 0.4 * budget_s,
                ((256, 256), (400, 300)), 256, 100_000, CONTENDERS, "inductor", 6, 0.5,
                env_id, 1_000, 4_000, 1_000, {}, (False, True), budget_s, gpu_batched_plan())


def smoke_plan(budget_s: float) -> Plan:
    return Plan("cpu", ("tests/test_cuda.py",), 0.6 * budget_s, ((16, 16), (20, 15)), 16, 1_000,
                ("eager", "compile"), "eager", 2, 0.05, "Pendulum-v1", 100, 100, 100,
                {"hidden_sizes": (16, 16), "batch_size": 16}, (False,), budget_s, smoke_batched_plan())


def smoke_skipped() -> list[str]:
    return ["tests/test_resume.py: the smoke check runs tests/test_cuda.py only, whose GPU tests skip here",
            "throughput at 256-256 and 400-300: tiny networks instead (16-16, 20-15, batch 16)",
            "cuda_graph and compile+cuda_graph contenders: CUDA graphs need a CUDA device",
            "torch.compile code generation: the smoke check compiles with the 'eager' backend",
            "the training run with cuda_graph=True: CUDA graphs need a CUDA device",
            "Hopper-v5: the smoke check trains Pendulum-v1 for 200 steps",
            "the batched part's CUDA-graph contenders and runs: CUDA graphs need a CUDA device; its graph "
            "check compares two eager batches instead (the check's code, not the graphs)",
            "the batched part at K = 1, 5, 10, 20: K = 1, 2 with tiny networks instead (16-16, batch 16)"]


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


# ---------------------------------------------------------------- 1. tests
def run_tests(plan: Plan) -> dict:
    """pytest on the plan's test files in a subprocess; its summary line and the end of its output."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-rfEs", "-o", "addopts=", "-p", "no:cacheprovider",
           *plan.test_files]  # addopts cleared: the notebooks' nbval options are not needed here
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=plan.tests_timeout_s)
        output, returncode = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as e:
        output, returncode = f"{e.stdout or ''}{e.stderr or ''}", None
        output = output.decode() if isinstance(output, bytes) else output
    lines = [line for line in output.splitlines() if line.strip()]
    summary = next((line.strip("= ") for line in reversed(lines) if " in " in line and
                    any(w in line for w in ("passed", "failed", "skipped", "error"))), None)
    return {"command": " ".join(cmd[1:]), "files": list(plan.test_files), "returncode": returncode,
            "timed_out": returncode is None, "summary": summary or "(no pytest summary line)",
            "wall_s": round(time.perf_counter() - started, 1), "output_tail": output[-4000:]}


# ---------------------------------------------------------- 2. throughput
def make_block(name: str, hidden: tuple, plan: Plan, buffer):
    """A block of k consecutive updates of contender ``name``, ending when the device is done."""
    cfg = TD3Config(hidden_sizes=hidden, batch_size=plan.batch, cuda_graph="cuda_graph" in name)
    torch.manual_seed(0)
    agent = TD3(OBS_DIM, -np.ones(ACTION_DIM), np.ones(ACTION_DIM), cfg, device=plan.device)
    if "compile" in name:
        compile_passes(agent, plan.compile_backend)
    generator = torch.Generator(plan.device).manual_seed(0)

    def block(k: int) -> None:
        for _ in range(k):
            agent.update(buffer.sample(plan.batch, generator=generator))
        sync(plan.device)
    return block


def set_up(name: str, hidden: tuple, plan: Plan, buffer) -> tuple:
    """Build a contender, warm it up (compilation, graph capture) and size its timed block."""
    started = time.perf_counter()
    block = make_block(name, hidden, plan, buffer)
    block(30)  # the graphs are captured by the 8th update, compilation happens in the first
    rate = timed(block, 20)
    size = max(20, int(rate * plan.block_seconds) // 2 * 2)  # even: every block holds as many actor steps
    return block, size, round(time.perf_counter() - started, 2)


def measure_size(hidden: tuple, plan: Plan, data: dict, clock: Clock, deadline_share: float) -> dict:
    """Every contender at one network size, interleaved over rounds; rates and ratios to eager."""
    buffer, blocks, rows = full_buffer(data, plan.device), {}, {}
    for name in plan.contenders:
        if clock.until(deadline_share) < 0.03 * plan.budget_s:
            rows[name] = {"skipped": "the check's time for throughput ran out before its setup"}
            continue
        try:
            block, size, setup_s = set_up(name, hidden, plan, buffer)
            blocks[name], rows[name] = (block, size), {"setup_s": setup_s, "block_updates": size}
        except Exception as e:  # one contender failing (a compiler, a capture) leaves the others
            rows[name] = {"error": f"{type(e).__name__}: {e}".splitlines()[0],
                          "traceback": traceback.format_exc()[-3000:]}
    rates = {name: [] for name in blocks}
    order = list(blocks)
    for r in range(plan.rounds):
        if r > 0 and clock.until(deadline_share) < 0:
            break
        for name in order if r % 2 == 0 else order[::-1]:
            rates[name].append(timed(*blocks[name]))
    for name, values in rates.items():
        rows[name].update(updates_per_s=statistics.median(values), rounds=values)
        if "eager" in rates and name != "eager":
            rows[name]["x_eager"] = statistics.median(a / b for a, b in zip(values, rates["eager"]))
    return rows


def measure_throughput(plan: Plan, clock: Clock) -> dict:
    data = random_transitions(plan.buffer, OBS_DIM, ACTION_DIM)
    results = {}
    for i, hidden in enumerate(plan.sizes):
        share = 0.4 + 0.2 * (i + 1) / len(plan.sizes)  # throughput ends at 60% of the budget
        results["-".join(map(str, hidden))] = measure_size(hidden, plan, data, clock, share)
        if plan.device == "cuda":
            torch.cuda.empty_cache()  # the graphs and agents of this size are gone
    return {"batch": plan.batch, "obs_dim": OBS_DIM, "action_dim": ACTION_DIM, "sizes": results}


# ------------------------------------------------------------ 3. training
def training_env(plan: Plan) -> tuple[str, str | None]:
    """The plan's environment, or Pendulum-v1 (with the reason) where it cannot be made."""
    try:
        make_env(plan.env_id).close()
        return plan.env_id, None
    except Exception as e:
        return "Pendulum-v1", f"{plan.env_id} could not be made ({type(e).__name__}: {e}); Pendulum-v1 instead"


def extrapolate(env_id: str, rates: dict) -> dict:
    """The time of the preset's whole budget at the measured rates: an extrapolation, with every
    evaluation episode counted at the environment's full length (so an upper bound for evaluation)."""
    full = preset(env_id)
    episode = gym.spec(env_id).max_episode_steps
    eval_steps = (full.total_steps // full.eval_freq) * full.eval_episodes * episode
    parts = {"random": full.start_timesteps / rates["random_steps_per_s"],
             "learning": (full.total_steps - full.start_timesteps) / rates["learning_steps_per_s"],
             "evaluation": eval_steps / rates["evaluation_steps_per_s"] if rates["evaluation_steps_per_s"] else 0.0}
    total_s = sum(parts.values())
    return {"budget_steps": full.total_steps, "start_timesteps": full.start_timesteps,
            "evaluations": full.total_steps // full.eval_freq, "eval_episodes": full.eval_episodes,
            "episode_steps_at_most": episode, "seconds": {k: round(v) for k, v in parts.items()},
            "total_s": round(total_s, 1), "hours": round(total_s / 3600, 4),
            "how": "extrapolated from this short run's rates, not measured; every evaluation episode "
                   "counted at full length"}


def training_run(plan: Plan, env_id: str, cuda_graph: bool) -> dict:
    cfg = dataclasses.replace(preset(env_id), start_timesteps=plan.random_steps,
                              total_steps=plan.random_steps + plan.learning_steps,
                              eval_freq=plan.eval_every, eval_episodes=1, cuda_graph=cuda_graph,
                              **plan.train_overrides)
    started = time.perf_counter()
    marks = timed_run(env_id, cfg, plan.device)
    rates = phase_rates(marks, plan.random_steps)
    return {"env_id": env_id, "cuda_graph": cuda_graph, "hidden_sizes": list(cfg.hidden_sizes),
            "batch_size": cfg.batch_size, "random_steps": plan.random_steps,
            "learning_steps": plan.learning_steps, "wall_s": round(time.perf_counter() - started, 1),
            **rates, "preset_budget": extrapolate(env_id, rates)}


def run_training(plan: Plan, clock: Clock, skipped: list[str]) -> dict:
    env_id, fallback = training_env(plan)
    if fallback:
        skipped.append(fallback)
    runs = {}
    for cuda_graph in plan.graph_runs:
        name = "cuda_graph" if cuda_graph else "eager"
        if clock.until(0.65) < 0:  # the rest is the batched part's
            runs[name] = {"skipped": "the check's time ran out"}
            continue
        try:
            runs[name] = training_run(plan, env_id, cuda_graph)
        except Exception as e:
            runs[name] = {"error": f"{type(e).__name__}: {e}".splitlines()[0],
                          "traceback": traceback.format_exc()[-3000:]}
    return runs


# ------------------------------------------------------------------ main
def parse(argv) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="folder for gpu_check.json and summary.txt")
    p.add_argument("--smoke", action="store_true", help="the same code on the CPU at tiny sizes (for CI)")
    p.add_argument("--env", default="Hopper-v5", help="the training run's environment (default Hopper-v5)")
    p.add_argument("--budget-s", type=float, default=None,
                   help="time for the whole check (default 450 on a GPU, 90 with --smoke)")
    args = p.parse_args(argv)
    if not args.smoke and not torch.cuda.is_available():
        p.error("this machine has no CUDA GPU: run the check on one, or add --smoke to run its code "
                "on the CPU at tiny sizes")
    return args


def main(argv=None) -> int:
    args = parse(argv)
    budget = args.budget_s or (90.0 if args.smoke else 450.0)
    plan = smoke_plan(budget) if args.smoke else gpu_plan(args.env, budget)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.smoke:
        torch.set_num_threads(1)  # tiny networks; and CI machines are often shared
    clock = Clock(plan.budget_s)
    report = {"smoke": args.smoke, "plan": dataclasses.asdict(plan), "machine": machine(plan.device),
              "skipped": smoke_skipped() if args.smoke else [], "errors": {}}
    parts = (("tests", lambda: run_tests(plan)), ("throughput", lambda: measure_throughput(plan, clock)),
             ("training", lambda: run_training(plan, clock, report["skipped"])),
             ("batched", lambda: run_batched(plan.batched, training_env(plan)[0], plan.train_overrides, plan.device,
                                             clock)))
    for part, run in parts:
        print(f"[{clock.elapsed():5.0f} s] {part} ...", flush=True)
        try:
            report[part] = run()
        except Exception as e:
            report["errors"][part] = f"{type(e).__name__}: {e}".splitlines()[0]
            report[f"{part}_traceback"] = traceback.format_exc()[-3000:]
        write(report, out, clock)
    print(summary_text(report), end="")
    print(f"wrote {out / 'gpu_check.json'} and {out / 'summary.txt'}")
    return 1 if broken(report) else 0


if __name__ == "__main__":
    sys.exit(main())
