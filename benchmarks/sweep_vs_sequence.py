"""Wall clock of one grid of runs: ``td3_lib.sweep`` (Ray, one core per run) against the same runs in sequence.

The grid is environments x variants x seeds at each environment's preset budget.

- ``sweep``: ``td3_lib.sweep(...)`` into a fresh directory. Ray starts locally with one worker per
  core, each run gets one core and one torch thread. Reported: the whole call's wall clock, Ray's
  start-up (already part of it), and each worker's peak resident memory (``done.json``'s ``max_rss_mb``).
- ``sequence``: the same runs, with the same configs (``sweep.variant_config``), one after another
  in this process through ``td3_lib.train``. This is what a loop in a notebook does, and torch keeps
  its default thread count (all cores). Reported: the wall clock and this process's peak memory.

Both write checkpoints into their run directories (with the replay buffer, as a sweep does).
Run it on an idle machine: the two halves take turns, never overlapping.

    python benchmarks/sweep_vs_sequence.py          # Pendulum-v1, 5 variants x seeds 0,1,2
    python benchmarks/sweep_vs_sequence.py --variants TD3,DDPG --seeds 0,1 --steps 3000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path

import torch

from td3_lib import sweep, train
from td3_lib.sweep import DONE_NAME, grid, max_rss_mb, parse_seeds, sweep_spec, variant_config

RESULTS = Path(__file__).resolve().parent / "results"


def run_sweep(args, out: Path) -> dict:
    """The grid through td3_lib.sweep; wall clock, Ray start-up and each worker's peak memory."""
    started = time.perf_counter()
    result = sweep(args.env, args.variants, args.seeds, out_dir=out, steps=args.steps, device="cpu",
                   progress=False)
    wall = time.perf_counter() - started
    done = [json.loads((r.path / DONE_NAME).read_text()) for r in result.runs]
    return {"wall_s": wall, "ray_start_s": result.ray_start_s, "runs": len(result.finished),
            "failed": len(result.failed), "run_wall_s": [d["wall_s"] for d in done],
            "worker_max_rss_mb": [d["max_rss_mb"] for d in done]}


def run_sequence(args, out: Path) -> dict:
    """The same runs one after another in this process, torch's default thread count."""
    spec = sweep_spec(args.env, args.variants, args.seeds, steps=args.steps)
    started = time.perf_counter()
    run_wall = []
    for run in grid(spec):
        cfg = variant_config(run.env_id, run.variant, steps=args.steps)
        result = train(run.env_id, cfg, seed=run.seed, device="cpu", checkpoint_dir=run.path(out),
                       progress=False, save_buffer=True)
        run_wall.append(result.wall_s)
    return {"wall_s": time.perf_counter() - started, "runs": len(run_wall), "run_wall_s": run_wall,
            "threads": torch.get_num_threads(), "max_rss_mb": max_rss_mb()}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", action="append", help="environment id; repeat for several (default Pendulum-v1)")
    p.add_argument("--variants", default="TD3,TD3-DP,TD3-TPS,TD3-CDQ,DDPG", help="comma-separated")
    p.add_argument("--seeds", default="0,1,2", help="e.g. 0,1,2 or 0-4")
    p.add_argument("--steps", type=int, help="env steps per run (default: each preset's)")
    p.add_argument("--work", default="runs/sweep_vs_sequence", help="scratch directory, emptied first")
    p.add_argument("--out", default=str(RESULTS / "sweep_vs_sequence.json"))
    args = p.parse_args(argv)
    args.env = args.env or ["Pendulum-v1"]
    args.variants = args.variants.split(",")
    args.seeds = parse_seeds(args.seeds)
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    result = {"env": args.env, "variants": args.variants, "seeds": args.seeds, "steps": args.steps,
              "cores": os.cpu_count(), "torch": torch.__version__, "loadavg_before": os.getloadavg()}
    result["sweep"] = run_sweep(args, work / "sweep")
    result["sequence"] = run_sequence(args, work / "sequence")
    result["loadavg_after"] = os.getloadavg()
    result["speedup"] = result["sequence"]["wall_s"] / result["sweep"]["wall_s"]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    s, q = result["sweep"], result["sequence"]
    print(f"{len(s['run_wall_s'])} runs ({', '.join(args.env)}; {len(args.variants)} variants x "
          f"{len(args.seeds)} seeds), {os.cpu_count()} cores")
    print(f"sweep (Ray, 1 core per run): {s['wall_s']:.0f} s, of which Ray start-up {s['ray_start_s']:.1f} s; "
          f"worker peak memory {min(s['worker_max_rss_mb']):.0f}-{max(s['worker_max_rss_mb']):.0f} MB")
    print(f"sequence ({q['threads']} torch threads): {q['wall_s']:.0f} s; peak memory {q['max_rss_mb']:.0f} MB")
    print(f"sweep speed-up: {result['speedup']:.2f}x; wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
