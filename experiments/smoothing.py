"""Lesson 04's experiment on Pendulum-v1: the critic's peak height at the actor's action, with and without
target policy smoothing.

    python experiments/smoothing.py     # td3_lib/results/smoothing_pendulum.csv

TD3 and TD3 - TPS (``target_policy_smoothing=False``, all else equal), 5
seeds, ``preset("Pendulum-v1")`` with an evaluation every 500 steps: the same
settings as the TD3 and TD3-TPS runs of ``lesson_results.py pendulum``. Each
run is an ordinary ``train`` run; at every evaluation its history records
``q_peak`` (``td3_lib.analysis.peak_height``: Q1(s, mu(s)) minus the mean of
Q1(s, a) over actions a near mu(s), drawn like the smoothing noise, on up to
64 states of the evaluation episodes), the critic's roughness, its value
estimate against the true discounted return, and the return.

Each run is one process thread (``torch.set_num_threads(1)``), one after the
other. A finished run's rows are kept under ``--root`` (default
runs/smoothing), so an interrupted experiment started again skips them. At the
end the rows are written as one CSV into td3_lib/results/ and listed in its
manifest with this command; ``--out`` writes the CSV elsewhere and leaves the
manifest alone (for trying the script with fewer ``--seeds`` or ``--steps``).
"""

from __future__ import annotations

import argparse
import csv
import shlex
import time
from pathlib import Path

import torch

import td3_lib
from td3_lib import train, variant_config
from td3_lib.analysis import critic_probe
from td3_lib.results import add_to_manifest, results_dir
from td3_lib.sweep import parse_seeds

ENV_ID = "Pendulum-v1"
FILE = "smoothing_pendulum.csv"
VARIANTS = ("TD3", "TD3-TPS")
SEEDS = [0, 1, 2, 3, 4]
OVERRIDES = {"eval_freq": 500}
FIELDS = ("variant", "seed", "step", "eval_mean", "eval_std", "q_estimate", "q_true", "q_roughness", "q_peak",
          "wall_s")


def run_one(variant: str, seed: int, steps: int | None) -> list[dict]:
    """One training run of the variant; its history rows."""
    torch.set_num_threads(1)
    config = variant_config(ENV_ID, variant, OVERRIDES, steps)
    result = train(ENV_ID, config, seed=seed, device="cpu", progress=False, probes=(critic_probe,))
    return [{"variant": variant, "seed": seed, **{k: round(row[k], 4) for k in FIELDS[2:]}}
            for row in result.history]


def write_csv(rows: list[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def run_all(seeds: list[int], steps: int | None, root: Path) -> list[dict]:
    """Every run, each skipped when its rows are already under ``root``."""
    rows = []
    for variant in VARIANTS:
        for seed in seeds:
            path = root / f"{variant}_seed{seed}_steps{steps or 'preset'}.csv"
            if not path.exists():
                started = time.perf_counter()
                write_csv(run_one(variant, seed, steps), path)
                print(f"{path.name}: {time.perf_counter() - started:.0f} s", flush=True)
            rows += read_csv(path)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("runs/smoothing"),
                        help="where finished runs are kept (default runs/smoothing)")
    parser.add_argument("--out", type=Path, default=None,
                        help="write the CSV here instead of td3_lib/results/ (the manifest is left alone)")
    parser.add_argument("--seeds", type=parse_seeds, default=None, help="only these seeds, e.g. 0,1 (with --out)")
    parser.add_argument("--steps", type=int, default=None, help="steps per run instead of 15,000 (with --out)")
    args = parser.parse_args(argv)
    if (args.seeds or args.steps) and args.out is None:
        parser.error("--seeds and --steps change the experiment: write its CSV elsewhere with --out")
    rows = run_all(args.seeds or SEEDS, args.steps, args.root)
    path = args.out or results_dir() / FILE
    write_csv(rows, path)
    last = {(r["variant"], r["seed"]): float(r["wall_s"]) for r in rows}
    wall_s = round(sum(last.values()), 1)  # each run's training time, summed
    print(f"wrote {path}: {len(rows)} rows, {wall_s:.0f} s of training over {len(last)} runs")
    if args.out is None:
        add_to_manifest({"file": FILE, "lesson": "04", "env": ENV_ID, "command": "python experiments/smoothing.py",
                         "seeds": sorted({int(r["seed"]) for r in rows}),
                         "steps": variant_config(ENV_ID, "TD3", OVERRIDES).total_steps,
                         "wall_s": wall_s, "version": td3_lib.__version__})


if __name__ == "__main__":
    main()
