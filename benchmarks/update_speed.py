"""Updates per second of the TD3 update: td3_lib against a plain reference and Stable-Baselines3.

What is timed, for every contender: a block of K consecutive TD3 updates, each
one sampling a batch from a replay buffer that is already full, taking a critic
step and, every ``policy_freq``-th update, an actor step and a soft update of
both target networks. K is even, so every block holds the same share of actor
steps. Per contender:

- ``td3_lib``: ``agent.update(buffer.sample(batch))``, K times.
- ``td3_lib bf16``: the same with ``TD3Config(bf16=True)`` (bfloat16 autocast).
- ``td3_lib compile``: the same with the update's three network passes (target
  Q, critic loss, actor loss) each wrapped in ``torch.compile``; the smoothing
  noise, backward calls and fused Adam steps stay eager.
- ``plain``: the flat reference TD3 (``td3_lib.course.reference``, the authors'
  ``TD3.py`` in shape and tested equal to ``TD3.update``): two ``nn.Linear``
  critics called in turn, actor loss through Q1 with gradients for the critic's
  weights, plain Adam, a per-parameter Polyak loop; on a numpy replay buffer
  whose batch is converted to tensors every update, as the authors' ``utils.py``.
- ``sb3``: Stable-Baselines3's ``TD3.train(gradient_steps=K, batch_size=batch)``
  (its own replay-buffer sampling included), same network sizes and batch,
  ``policy_delay=2``. Skipped with a message when stable-baselines3 is missing.
- ``sb3 fused``: the same with Adam's fused kernel
  (``policy_kwargs=dict(optimizer_kwargs=dict(fused=True))``), as td3_lib uses it.

The contenders run interleaved (A B C ... then the reverse order next round)
for an even number of rounds, so each is first as often as last; the table gives each one's median updates/s and the median
over rounds of its ratio to SB3 and to the plain reference within the same
round, which cancels most of the drift of a shared machine. Matrix-multiply
throughput is measured inside every round too, and gives the compute ceiling:
matmul FLOPs per update divided by that throughput.

    python benchmarks/update_speed.py                 # BipedalWalker-v3 sizes: 24 obs, 4 actions
    python benchmarks/update_speed.py --rounds 10 --block-seconds 2
    python benchmarks/update_speed.py --wait-policy active

OpenMP's wait policy (``OMP_WAIT_POLICY``) must be set before torch starts, and
which one is faster depends on the contender and on the machine's load: by
default the script runs itself once with each (``--wait-policy active``, then
``passive``) and reports both.
"""

from __future__ import annotations

import os
import sys


def requested_wait_policy(argv: list[str]) -> str:
    """The last value of --wait-policy in ``argv`` (as argparse reads it; default "both"),
    read before torch is imported."""
    policy = "both"
    for i, arg in enumerate(argv):
        if arg == "--wait-policy" and i + 1 < len(argv):
            policy = argv[i + 1]
        elif arg.startswith("--wait-policy="):
            policy = arg.split("=", 1)[1]
    return policy


# OpenMP's default is to spin while waiting at a barrier: fastest on an idle machine,
# but on a shared one a spinning thread burns the time slice its partner needs (two
# torch threads then ran up to 100x slower than one here). Passive waiting avoids that
# collapse. One policy per process, for every contender, set before torch starts.
if requested_wait_policy(sys.argv[1:]) in ("active", "passive"):
    os.environ["OMP_WAIT_POLICY"] = requested_wait_policy(sys.argv[1:]).upper()

import argparse
import json
import platform
import statistics
import subprocess
import time
from pathlib import Path

import numpy as np
import torch

from td3_lib import TD3, Batch, TD3Config
from td3_lib.course.reference import ReferenceTD3
from update_blocks import compile_passes, full_buffer, random_transitions, timed

RESULTS = Path(__file__).resolve().parent / "results"


# ------------------------------------------------------------- td3_lib
def make_td3_lib(data: dict, args, compiled: bool = False, **config) -> callable:
    """A block of K td3_lib updates on a full ReplayBuffer."""
    obs_dim, action_dim = data["obs"].shape[1], data["action"].shape[1]
    cfg = TD3Config(hidden_sizes=tuple(args.hidden), batch_size=args.batch, **config)
    agent = TD3(obs_dim, -np.ones(action_dim), np.ones(action_dim), cfg, device="cpu")
    if compiled:
        compile_passes(agent)
    buffer = full_buffer(data)

    def block(k: int) -> None:
        for _ in range(k):
            agent.update(buffer.sample(args.batch))
    return block


# ------------------------------------------------- the plain reference
class PlainBuffer:
    """A numpy replay buffer; each sample is converted to float tensors (the authors' utils.py)."""

    def __init__(self, data: dict):
        self.data = {k: v.copy() for k, v in data.items()}
        self.size = len(data["obs"])

    def sample(self, batch_size) -> Batch:
        ind = np.random.randint(0, self.size, size=batch_size)
        return Batch(*(torch.FloatTensor(self.data[k][ind]) for k in ("obs", "action", "reward", "next_obs",
                                                                        "not_done")))


def make_plain(data: dict, args) -> callable:
    """A block of K updates of the reference TD3."""
    action_dim = data["action"].shape[1]
    ref = ReferenceTD3(data["obs"].shape[1], -np.ones(action_dim), np.ones(action_dim),
                       TD3Config(hidden_sizes=tuple(args.hidden), batch_size=args.batch))
    buffer = PlainBuffer(data)

    def block(k: int) -> None:
        for _ in range(k):
            ref.train(buffer.sample(args.batch))
    return block


# ------------------------------------------------------ Stable-Baselines3
def make_sb3(data: dict, args, fused: bool = False) -> callable | None:
    """A block of K SB3 gradient steps: ``model.train(gradient_steps=K, batch_size)``."""
    try:
        import gymnasium as gym
        from stable_baselines3 import TD3 as SB3TD3
        from stable_baselines3.common.logger import configure
    except ImportError:
        print("stable-baselines3 is not installed: skipping it "
              "(pip install -r benchmarks/requirements.txt).")
        return None
    obs_dim, action_dim, n = data["obs"].shape[1], data["action"].shape[1], len(data["obs"])

    class SpacesOnly(gym.Env):
        """An env that only carries the spaces (nothing is stepped)."""
        observation_space = gym.spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32)
        action_space = gym.spaces.Box(-1.0, 1.0, (action_dim,), np.float32)

        def reset(self, *, seed=None, options=None):
            return np.zeros(obs_dim, np.float32), {}

        def step(self, action):
            return np.zeros(obs_dim, np.float32), 0.0, False, False, {}

    policy_kwargs = dict(net_arch=list(args.hidden))
    if fused:
        policy_kwargs["optimizer_kwargs"] = dict(fused=True)
    model = SB3TD3("MlpPolicy", SpacesOnly(), policy_kwargs=policy_kwargs,
                   batch_size=args.batch, learning_starts=0, buffer_size=n, learning_rate=3e-4,
                   policy_delay=2, device="cpu", seed=0)
    model.set_logger(configure(None, []))
    rb = model.replay_buffer
    rb.observations[:, 0] = data["obs"]
    rb.next_observations[:, 0] = data["next_obs"]
    rb.actions[:, 0] = data["action"]
    rb.rewards[:, 0] = data["reward"][:, 0]
    rb.dones[:, 0] = 1.0 - data["not_done"][:, 0]
    rb.full, rb.pos = True, 0

    def block(k: int) -> None:
        model.train(gradient_steps=k, batch_size=args.batch)
    return block


# ----------------------------------------------------- the compute ceiling
def update_flops(obs_dim: int, action_dim: int, hidden: list[int], batch: int, policy_freq: int = 2) -> dict:
    """Matrix-multiply FLOPs of one TD3 update (2*m*n*k per product).

    Critic step: target actor and target twin critic forward, twin critic
    forward, its backward counted as 2x its forward. Actor step (every
    ``policy_freq`` updates): actor forward, Q1 forward, Q1 backward to its
    input only (its weights are frozen: 1x forward), actor backward (2x).
    """
    def forward(sizes):
        return sum(2 * batch * a * b for a, b in zip(sizes[:-1], sizes[1:]))
    actor = forward([obs_dim, *hidden, action_dim])
    q = forward([obs_dim + action_dim, *hidden, 1])
    critic_step = actor + 2 * q + 2 * q + 2 * (2 * q)
    actor_step = actor + q + q + 2 * actor
    return {"critic_step": critic_step, "actor_step": actor_step,
            "per_update": critic_step + actor_step / policy_freq}


def matmul_gflops(n: int = 256, dtype=torch.float32, seconds: float = 0.3) -> float:
    """Measured throughput of n x n by n x n products, in GFLOP/s."""
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    for _ in range(10):
        torch.matmul(a, b)
    reps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(20):
            torch.matmul(a, b)
        reps += 20
    return 2 * n ** 3 * reps / (time.perf_counter() - start) / 1e9


# ------------------------------------------------------------ measurement
def calibrate(block, seconds: float) -> int:
    """Warm up, then the even block size that takes about ``seconds``."""
    block(20)  # first calls: allocation, compilation
    rate = timed(block, 20)
    rate = timed(block, max(20, int(rate * 0.3) // 2 * 2))
    return max(20, int(rate * seconds) // 2 * 2)


def machine() -> dict:
    """The facts a reader needs to compare numbers across machines."""
    model = platform.processor()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    flags = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    return {"cpu": model, "logical_cpus": os.cpu_count(), "torch": torch.__version__,
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
            "torch_threads": torch.get_num_threads(), "python": platform.python_version(),
            "avx512_bf16": "avx512_bf16" in flags}


def parse(argv) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--obs-dim", type=int, default=24, help="BipedalWalker-v3: 24")
    p.add_argument("--action-dim", type=int, default=4, help="BipedalWalker-v3: 4")
    p.add_argument("--hidden", type=int, nargs=2, default=[256, 256], help="two hidden widths, as the reference")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--buffer", type=int, default=100_000, help="transitions in the (full) buffers")
    p.add_argument("--rounds", type=int, default=8, help="an even number: each contender first as often as last")
    p.add_argument("--block-seconds", type=float, default=1.0, help="length of one timed block")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads, all contenders")
    p.add_argument("--skip", nargs="*", default=[], help="contenders to leave out")
    p.add_argument("--json", default=None, help="default benchmarks/results/update_speed-POLICY.json")
    p.add_argument("--wait-policy", choices=("both", "active", "passive"), default="both",
                   help="OpenMP's wait policy; both (default): one run with each, in separate processes")
    args = p.parse_args(argv)
    if args.rounds < 2 or args.rounds % 2:
        p.error(f"--rounds {args.rounds}: it must be an even number >= 2, so each contender runs "
                "first as often as last")
    return args


def build_blocks(data: dict, args) -> tuple[dict, dict]:
    """Every contender not skipped (SB3 where installed): its block of updates and its block size."""
    makers = {
        "td3_lib": lambda: make_td3_lib(data, args),
        "td3_lib bf16": lambda: make_td3_lib(data, args, bf16=True),
        "td3_lib compile": lambda: make_td3_lib(data, args, compiled=True),
        "plain": lambda: make_plain(data, args),
        "sb3": lambda: make_sb3(data, args),
        "sb3 fused": lambda: make_sb3(data, args, fused=True),
    }
    blocks, sizes = {}, {}
    for name, make in makers.items():
        block = None if name in args.skip else make()
        if block is not None:
            print(f"warming up {name} ...", flush=True)
            blocks[name], sizes[name] = block, calibrate(block, args.block_seconds)
    return blocks, sizes


def run_rounds(blocks: dict, sizes: dict, rounds: int) -> tuple[dict, dict, list]:
    """The contenders interleaved, in reversed order every other round; rates, matmul GFLOP/s, loads."""
    rates: dict[str, list[float]] = {name: [] for name in blocks}
    gflops: dict[str, list[float]] = {"float32": [], "bfloat16": []}
    loads, order = [os.getloadavg()], list(blocks)
    for r in range(rounds):
        for name in (order if r % 2 == 0 else order[::-1]):
            rates[name].append(timed(blocks[name], sizes[name]))
        gflops["float32"].append(matmul_gflops(dtype=torch.float32))
        gflops["bfloat16"].append(matmul_gflops(dtype=torch.bfloat16))
        loads.append(os.getloadavg())
        print(f"round {r + 1}/{rounds}: " + ", ".join(f"{n} {rates[n][-1]:.0f}/s" for n in order), flush=True)
    return rates, gflops, loads


def contender_rows(rates: dict, sizes: dict, peak: dict, flops: dict) -> dict:
    """Per contender: median updates/s, its median ratio to SB3, SB3 fused and plain, its ceiling."""
    rows = {}
    for name, values in rates.items():
        row = {"updates_per_s": statistics.median(values), "rounds": values, "block_updates": sizes[name]}
        for ref in ("sb3", "sb3 fused", "plain"):
            if ref in rates and ref != name:
                row[f"x_{ref}"] = statistics.median(a / b for a, b in zip(values, rates[ref]))
        row["ceiling_updates_per_s"] = peak["bfloat16" if "bf16" in name else "float32"] * 1e9 / flops["per_update"]
        row["fraction_of_ceiling"] = row["updates_per_s"] / row["ceiling_updates_per_s"]
        rows[name] = row
    return rows


def print_table(args, rows: dict, flops: dict, peak: dict, loads: list) -> None:
    print(f"\nTD3 update, {args.obs_dim} obs, {args.action_dim} actions, hidden {args.hidden}, "
          f"batch {args.batch}, {args.threads} threads, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}; "
          f"median of {args.rounds} interleaved rounds")
    print(f"{'contender':<17}{'updates/s':>10}{'x SB3':>8}{'x SB3 fused':>13}{'x plain':>9}{'of ceiling':>12}")
    for name, row in rows.items():
        xs, xf, xp = (f"{row[k]:.2f}" if k in row else "-" for k in ("x_sb3", "x_sb3 fused", "x_plain"))
        share = row["fraction_of_ceiling"]
        print(f"{name:<17}{row['updates_per_s']:>10.0f}{xs:>8}{xf:>13}{xp:>9}"
              + (f"{share:>11.1%}" if share <= 1 else f"{'-':>11}*"))
    if any(row["fraction_of_ceiling"] > 1 for row in rows.values()):
        print("* faster than its matmul 'ceiling': that 256x256x256 matmul is slower than the update's own "
              "(no native bfloat16 on this CPU?), so it bounds nothing")
    print(f"matmul FLOPs per update: {flops['per_update'] / 1e6:.0f} M (critic step {flops['critic_step'] / 1e6:.0f} "
          f"M, actor step {flops['actor_step'] / 1e6:.0f} M every 2nd update)")
    print(f"measured 256x256x256 matmul: float32 {peak['float32']:.0f} GFLOP/s, bfloat16 {peak['bfloat16']:.0f} "
          f"GFLOP/s -> ceiling {peak['float32'] * 1e9 / flops['per_update']:.0f} updates/s (float32)")
    print(f"load average (1 min) from {loads[0][0]:.1f} to {loads[-1][0]:.1f}")


def main(argv=None) -> dict:
    args = parse(argv)
    if args.wait_policy == "both":
        return run_both_policies(sys.argv[1:] if argv is None else list(argv))
    args.json = args.json or str(RESULTS / f"update_speed-{args.wait_policy}.json")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    np.random.seed(0)
    blocks, sizes = build_blocks(random_transitions(args.buffer, args.obs_dim, args.action_dim), args)
    rates, gflops, loads = run_rounds(blocks, sizes, args.rounds)
    flops = update_flops(args.obs_dim, args.action_dim, args.hidden, args.batch)
    peak = {k: statistics.median(v) for k, v in gflops.items()}
    rows = contender_rows(rates, sizes, peak, flops)
    print_table(args, rows, flops, peak, loads)
    result = {"settings": vars(args), "machine": machine(), "flops": flops, "matmul_gflops": peak,
              "matmul_gflops_rounds": gflops, "loadavg": loads, "contenders": rows}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=1))
    print(f"wrote {args.json}")
    return result


def run_both_policies(argv: list[str]) -> dict:
    """Run the benchmark once per wait policy, each in its own process (the policy is fixed when
    torch starts), and print each contender's rate under both."""
    results = {}
    for policy in ("active", "passive"):
        out = RESULTS / f"update_speed-{policy}.json"
        print(f"=== OMP_WAIT_POLICY={policy.upper()}", flush=True)
        subprocess.run([sys.executable, __file__, *argv, "--wait-policy", policy, "--json", str(out)],
                       check=True)
        results[policy] = json.loads(out.read_text())["contenders"]
    print(f"\n{'contender':<17}{'active /s':>11}{'x SB3 fused':>13}{'passive /s':>12}{'x SB3 fused':>13}")
    for name in results["active"]:
        line = f"{name:<17}"
        for policy, width in (("active", 11), ("passive", 12)):
            row = results[policy].get(name, {})
            x = row.get("x_sb3 fused")
            line += f"{row.get('updates_per_s', float('nan')):>{width}.0f}{(f'{x:.2f}' if x else '-'):>13}"
        print(line)
    return results


if __name__ == "__main__":
    main()
