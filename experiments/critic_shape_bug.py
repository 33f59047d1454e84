"""The critic-loss shape bug, measured: TD3 on Pendulum-v1 with the correct loss and the buggy one.

The bug: the critic's output Q(s, a) has shape (N, 1); if the target y is
squeezed to shape (N,), then ``F.mse_loss(q, y)`` broadcasts (N, 1) against
(N,) to an (N, N) matrix and averages (q_i - y_j)^2 over every pair i, j.
Each Q(s_i, a_i) is then pulled towards the mean of all N targets of the
batch instead of towards its own y_i. Nothing crashes; torch only warns.

The buggy agent is ``td3_lib.course.pitfalls.SqueezedTargetTD3``: TD3 whose
``critic_loss`` squeezes the target before calling TD3's own (lesson 08's
pitfall 7), passed to ``train(..., agent=SqueezedTargetTD3)``. Everything
else (training loop, seeds, evaluation) is ``td3_lib.train`` with
``preset("Pendulum-v1")`` unchanged.

Usage (the command that wrote td3_lib/results/critic_shape_bug.csv):

    python experiments/critic_shape_bug.py

Each run is one thread (``torch.set_num_threads(1)``). ``--out DIR`` writes
the CSV elsewhere and leaves the manifest alone (for trying the script with
fewer ``--seeds`` or ``--steps``).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import shlex
import sys
import time
import warnings
from pathlib import Path

import torch

import td3_lib
from td3_lib import TD3, preset, train
from td3_lib.course.pitfalls import SqueezedTargetTD3
from td3_lib.results import add_to_manifest, results_dir

ENV_ID = "Pendulum-v1"
FILE = "critic_shape_bug.csv"
FIELDS = ("variant", "seed", "step", "eval_mean", "eval_std")


AGENTS = {"correct": TD3, "buggy": SqueezedTargetTD3}


def run_one(variant: str, seed: int, steps: int | None) -> list[dict]:
    """One training run of the variant's agent class (``AGENTS``)."""
    config = preset(ENV_ID) if steps is None else dataclasses.replace(preset(ENV_ID), total_steps=steps)
    result = train(ENV_ID, config, seed=seed, device="cpu", progress=False, agent=AGENTS[variant])
    return [{"variant": variant, "seed": seed, "step": row["step"],
             "eval_mean": round(row["eval_mean"], 3), "eval_std": round(row["eval_std"], 3)}
            for row in result.history]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0 .. N-1 (default 5)")
    parser.add_argument("--steps", type=int, default=None,
                        help="environment steps per run (default: the preset's 15,000)")
    parser.add_argument("--out", type=Path, default=None,
                        help="write the CSV here instead of td3_lib/results/ (the manifest is left alone)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    # torch warns once that the sizes differ; the point of the experiment is that training goes on anyway.
    warnings.filterwarnings("ignore", message="Using a target size")

    started = time.perf_counter()
    rows = []
    for seed in range(args.seeds):
        for variant in ("correct", "buggy"):
            t0 = time.perf_counter()
            history = run_one(variant, seed, args.steps)
            rows += history
            print(f"{variant:8s} seed {seed}: final eval {history[-1]['eval_mean']:9.1f} "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)
    wall_s = round(time.perf_counter() - started, 1)

    out_dir = args.out if args.out is not None else results_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / FILE, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    steps = args.steps if args.steps is not None else preset(ENV_ID).total_steps
    if args.out is None:
        add_to_manifest({"file": FILE, "lesson": "08", "env": ENV_ID,
                         "command": shlex.join(["python", "experiments/critic_shape_bug.py", *sys.argv[1:]]),
                         "seeds": list(range(args.seeds)), "steps": steps, "wall_s": wall_s,
                         "version": td3_lib.__version__})
    print(f"wrote {out_dir / FILE} ({len(rows)} rows) in {wall_s} s")


if __name__ == "__main__":
    main()
