"""What the experiment scripts share: their options, keeping each finished run's rows, and
writing the result with its manifest entry.

A script writes its CSV and the entry into ``--out`` (default runs/results). Shipping it is
a separate step: ``python -m td3_lib.course.results publish runs/results/NAME.csv``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path
from typing import Callable

import td3_lib
from td3_lib.course.results.publish import write_result, write_rows
from td3_lib.run import read_rows
from td3_lib.sweep import parse_seeds

OUT = Path("runs/results")


def options(doc: str, root: str, experiments=None) -> argparse.ArgumentParser:
    """The options every script takes; ``experiments`` (names) adds the positional choice."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    if experiments is not None:
        parser.add_argument("experiment", choices=sorted(experiments))
    parser.add_argument("--root", type=Path, default=Path(root),
                        help=f"where the runs are kept, so an interrupted experiment resumes (default {root})")
    parser.add_argument("--out", type=Path, default=OUT,
                        help=f"where the CSV and its manifest entry are written (default {OUT})")
    parser.add_argument("--seeds", type=parse_seeds, default=None, help="only these seeds, e.g. 0,1")
    parser.add_argument("--steps", type=int, default=None, help="environment steps per run instead of the experiment's")
    return parser


def kept_rows(path: Path, fields, make_rows: Callable[[], list[dict]]) -> list[dict]:
    """The rows of one finished run: read from ``path`` when it exists, else made, written there, and read."""
    if not path.exists():
        started = time.perf_counter()
        write_rows(make_rows(), path, fields)
        print(f"{path.name}: {time.perf_counter() - started:.0f} s", flush=True)
    return read_rows(path)


def training_time(rows: list[dict], run_keys) -> float:
    """Each run's training time (its last row's ``wall_s``, rows in step order), summed over runs."""
    last = {tuple(r[k] for k in run_keys): r["wall_s"] for r in sorted(rows, key=lambda r: r["step"])}
    return round(sum(last.values()), 1)


def seeds_by_variant(rows: list[dict]) -> dict[str, list[int]]:
    """Each variant's seeds, variants in the order they first appear (a sweep in progress has more
    seeds of some variants than of others)."""
    seeds: dict[str, set] = {}
    for r in rows:
        seeds.setdefault(r["variant"], set()).add(int(r["seed"]))
    return {variant: sorted(s) for variant, s in seeds.items()}


def command_line(drop=(), drop_with_value=()) -> str:
    """This script's command line, less the flags in ``drop`` (those that only re-read finished runs)
    and those in ``drop_with_value`` with their values (``--flag VALUE`` or ``--flag=VALUE``)."""
    kept, argv = [], iter(sys.argv)
    for a in argv:
        if a in drop_with_value:
            next(argv, None)
        elif a not in drop and a.partition("=")[0] not in drop_with_value:
            kept.append(a)
    return shlex.join(["python", *kept])


def finish(rows: list[dict], fields, args, *, file: str, lesson: str, env: str, steps: int,
           run_keys=("variant", "seed"), drop=(), drop_with_value=()) -> Path:
    """Write the result into ``args.out`` with its manifest entry (the command that makes it: this
    command line less ``drop``), and say so."""
    wall_s = training_time(rows, run_keys)
    entry = {"file": file, "lesson": lesson, "env": env, "command": command_line(drop, drop_with_value),
             "seeds": sorted({int(r["seed"]) for r in rows}), "steps": steps, "wall_s": wall_s,
             "version": td3_lib.__version__}
    if "variant" in run_keys:
        entry["runs"] = seeds_by_variant(rows)
    path = write_result(rows, fields, entry, args.out)
    print(f"wrote {path}: {len(rows)} rows, {wall_s:.0f} s of training over all runs\n"
          f"ship it with: python -m td3_lib.course.results publish {shlex.quote(str(path))}")
    return path
