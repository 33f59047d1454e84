"""The course's experiments: each shipped result specified as the runs of sweeps, and the one way
they are run, collected and written.

A result (one CSV, ``Experiment.file``) holds the finished runs of one or more sweeps
(``Sweep``: environments x registered variants x seeds, and probes, kept in ``ROOT/DIR``), each
as a ``Take``: the runs of one variant of one sweep, under a label in the CSV's ``variant``
column, whole or up to a step (``until``: a 300,000-step result read from 1,000,000-step runs).
Results that share runs name the same ``Sweep``, so a run is trained once: ``PENDULUM`` holds the
runs of pendulum_variants.csv, of smoothing_pendulum.csv (its TD3 and TD3-TPS) and the
correct baseline of pitfalls_pendulum.csv. The scripts under ``experiments/`` are the
specifications; each runs as::

    python experiments/SCRIPT.py [EXPERIMENT] [--collect] [--seeds 0,1] [--steps N] [--root DIR]
                                 [--out DIR] [--restore CSV] [--jobs N] [--address HOST:PORT]

It trains the runs not finished yet (Ray: one CPU and one torch thread per run, here or on a
cluster), then writes the CSV (a row per run and evaluation) and its manifest entry (command, seeds,
steps, training time, and the commit, versions and machine of each run) into ``--out``, for
``python -m td3_lib.course.results publish``. ``--collect`` trains nothing; ``--restore CSV`` first
writes an earlier result's finished runs back, with their provenance, so a new machine trains only
the rest. Runs are deterministic on one machine, not across machines.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import shlex
import sys
from pathlib import Path

from .. import __version__, provenance
from ..arguments import OneLineParser, positive_int
from ..checkpoint import atomic_write_text
from ..config import TD3Config
from ..run import HISTORY_NAME, history_csv, read_rows
from ..sweep import (DONE_NAME, SPEC_NAME, SweepRun, open_sweep_dir, parse_seeds, run_config, spec_difference,
                      start_local_ray, sweep, sweep_spec)
from . import tasks  # noqa: F401  (registers the course's tasks, variants and probes, which experiments name)
from .specs import PENDULUM, Experiment, FinishedRun, Sweep, Take  # noqa: F401  (the scripts import them here)
from .results.publish import IN_SWEEP, entry_of_file, provenance_fields, run_provenance_in_entry, write_result

ROOT = Path("runs/lesson_results")
OUT = Path("runs/results")
CONFIG_FIELDS = {f.name for f in dataclasses.fields(TD3Config)}


# ---------------------------------------------------------------- the sweep directories
def sweeps_of(experiment: Experiment) -> list[Sweep]:
    """The experiment's sweeps, each once, in the order its takes name them."""
    return list({t.sweep.dir: t.sweep for t in experiment.takes}.values())


def held_seeds(sweep_: Sweep, root: Path) -> list[int]:
    """The seeds of the sweep's directory: the sweep's, or fewer where an earlier command's ``--seeds``
    made the directory with fewer."""
    saved = root / sweep_.dir / SPEC_NAME
    if saved.exists():
        held = json.loads(saved.read_text())["seeds"]
        if set(held) < set(sweep_.seeds):
            return held
    return list(sweep_.seeds)


def chosen(seeds, args) -> list[int]:
    """The seeds of ``--seeds`` among ``seeds`` (all of them without it)."""
    return [s for s in seeds if args.seeds is None or s in args.seeds]


def spec_of(sweep_: Sweep, args) -> dict:
    """The sweep's ``sweep.json`` as this command makes it (``--steps`` replaces its budget)."""
    return sweep_spec(sweep_.envs, sweep_.variants, held_seeds(sweep_, args.root), dict(sweep_.overrides),
                      args.steps or sweep_.steps, probes=sweep_.probes)


def saved_spec(sweep_: Sweep, args) -> dict | None:
    """The sweep directory's ``sweep.json`` (None before it exists), refused if it holds another sweep."""
    path = args.root / sweep_.dir / SPEC_NAME
    if not path.exists():
        return None
    saved = json.loads(path.read_text())
    difference = spec_difference(saved, spec_of(sweep_, args))
    if difference:
        raise ValueError(f"{path.parent} holds another sweep ({difference}): give this command the settings "
                         "it was made with, or another --root.")
    return saved


def held(experiment: Experiment, sweep_: Sweep, run: SweepRun, root: Path) -> bool:
    """Whether every take of the experiment that reads ``run`` holds it already (nothing to train)."""
    path = run.path(root / sweep_.dir)
    return all(t.holds(path) for t in experiment.takes if t.sweep.dir == sweep_.dir and t.variant == run.variant)


def cells(experiment: Experiment, sweep_: Sweep, args) -> list[SweepRun]:
    """The runs of ``sweep_`` that the experiment holds, for this command's seeds."""
    takes = [t for t in experiment.takes if t.sweep.dir == sweep_.dir]
    runs = {SweepRun(e, t.variant, s): None for t in takes for e in sweep_.envs for s in take_seeds(t, args)}
    return list(runs)


def take_seeds(take: Take, args) -> list[int]:
    """The seeds of the take's runs that this command reads: its sweep's (as its directory holds them), those
    ``--seeds`` chose and the take holds."""
    return take.of(chosen(held_seeds(take.sweep, args.root), args))


# ---------------------------------------------------------------- train, collect
def train(experiment: Experiment, args) -> None:
    """Train (or finish) every run the experiment holds that is not finished yet, sweep by sweep."""
    todo = {s.dir: [r for r in cells(experiment, s, args) if not held(experiment, s, r, args.root)]
            for s in sweeps_of(experiment)}
    if not any(todo.values()):
        return
    with local_ray(args.jobs, args.address):
        for sweep_ in sweeps_of(experiment):
            if not todo[sweep_.dir]:
                continue
            result = sweep(sweep_.envs, sweep_.variants, held_seeds(sweep_, args.root), out_dir=args.root / sweep_.dir,
                           steps=args.steps or sweep_.steps, overrides=dict(sweep_.overrides), probes=sweep_.probes,
                           address=args.address, only=todo[sweep_.dir], batched=args.batched)
            print(result.report(), flush=True)
            if result.failed:
                sys.exit(f"{len(result.failed)} runs failed in {args.root / sweep_.dir}:\n{result.report()}")


@contextlib.contextmanager
def local_ray(jobs: int | None, address: str | None):
    """A local Ray of ``jobs`` CPUs for the experiment's sweeps; without ``jobs`` each sweep starts
    its own (one run per core) or joins ``address``."""
    if jobs is None or address is not None:
        yield
        return
    import ray

    start_local_ray(num_cpus=jobs)
    try:
        yield
    finally:
        ray.shutdown()


def run_name(take: Take, experiment: Experiment) -> str:
    """The name a result's provenance gives the take's runs: its label, or ``LABEL @ SWEEP`` (its sweep's
    directory) where another take of the experiment has that label for one of the same seeds (Figure 3's
    update rates share theirs; a variant whose seeds are split between sweeps keeps its label)."""
    shared = any(t != take and t.name == take.name and set(t.of(t.sweep.seeds)) & set(take.of(take.sweep.seeds))
                 for t in experiment.takes)
    return f"{take.name}{IN_SWEEP}{take.sweep.dir}" if shared else take.name


def collect(experiment: Experiment, args) -> list[FinishedRun]:
    """Every finished run the experiment holds, for this command's seeds, in the CSV's order."""
    runs = []
    for take in experiment.takes:
        spec = saved_spec(take.sweep, args)
        if spec is None:
            continue
        for env_id in take.sweep.envs:
            for seed in take_seeds(take, args):
                path = SweepRun(env_id, take.variant, seed).path(args.root / take.sweep.dir)
                history = take.history(path)
                if history is not None:
                    config = run_config(spec, env_id, take.variant)
                    held_rows = [row for row in history if row["step"] <= take.budget(config)]
                    runs.append(FinishedRun(take, env_id, seed, path, config, held_rows, run_name(take, experiment)))
    return sorted(runs, key=lambda r: r.seed) if experiment.seed_major else runs


def labels(take: Take, env_id: str, seed: int, config: dict, experiment: Experiment) -> dict:
    """The columns that say which run a row belongs to: its label, env, seed and config fields."""
    values = {"variant": take.name, "env": env_id, "seed": seed}
    for name in experiment.fields:
        if name in CONFIG_FIELDS:
            delayed = name != "policy_freq" or config["delayed_policy_updates"]
            values[name] = config[name] if delayed else 1  # policy_freq: the d the run used
    return {k: v for k, v in values.items() if k in experiment.fields}


def rows_of(run: FinishedRun, experiment: Experiment) -> list[dict]:
    """A run's history as the CSV's rows: its labels, then each history column, rounded."""
    fixed = labels(run.take, run.env_id, run.seed, run.config, experiment)
    return [{**fixed, **{k: round(h[k], experiment.digits.get(k, 4)) for k in experiment.fields
                         if k in h and k not in fixed}} for h in run.history]


# ---------------------------------------------------------------- provenance
def run_provenance(run: FinishedRun, root: Path) -> list[dict]:
    """What made a run: its directory's record; for a run restored by code that recorded none, what the
    result it came from says; else what its sweep says (``td3_lib.provenance.earlier``)."""
    recorded = provenance.read(run.path)
    if recorded and run.take.until is not None:  # what made the steps the take holds
        return [s for s in recorded if s.get("from_step", 0) < run.take.until]
    if recorded:
        return recorded
    done = json.loads((run.path / DONE_NAME).read_text()) if (run.path / DONE_NAME).exists() else {}
    if "restored_from" in done:
        return restored_provenance(Path(done["restored_from"]), run.name, run.seed)
    return provenance.earlier(root / run.take.sweep.dir)


def restored_provenance(csv_path: Path, name: str, seed: int) -> list[dict]:
    """The provenance of a run restored from ``csv_path``, as that result's entry gives it (``name``: ``run_name``)."""
    entry = entry_of_file(csv_path)
    made = run_provenance_in_entry(entry, name, seed) if entry else [dict(provenance.NOT_RECORDED)]
    return [{"from_step": 0, **m, "restored_from": str(csv_path)} for m in made]


# ---------------------------------------------------------------- restore
def restore(experiment: Experiment, csv_path: Path, args, experiments: dict | None = None) -> None:
    """Write the finished runs of an earlier result (a CSV written by these experiments, such as the
    shipped one) back into the sweep directories as finished runs: their histories, a ``done.json``
    that says where they came from, and the provenance the result's entry gives them. Only runs at
    the full budget are restored, no run already there is touched, and where the result's command names
    one of ``experiments``, only into the sweeps that experiment read (a run trained again in a new sweep
    is never filled with the earlier run of the same label and seed)."""
    rows, made_by = read_rows(csv_path), source_runs(csv_path, experiments or {})
    for take in experiment.takes:
        seeds = [s for s in take_seeds(take, args) if made_by is None or (take.sweep.dir, take.variant, s) in made_by]
        if not seeds or take.until is not None:  # a shorter result cannot stand for the longer runs
            continue
        spec = spec_of(take.sweep, args)
        open_sweep_dir(args.root / take.sweep.dir, spec)
        for env_id in take.sweep.envs:
            config = run_config(spec, env_id, take.variant)
            for seed in seeds:
                history = run_history(rows, labels(take, env_id, seed, config, experiment))
                path = SweepRun(env_id, take.variant, seed).path(args.root / take.sweep.dir)
                if history and history[-1]["step"] >= config["total_steps"] and not path.exists():
                    restore_run(path, history, csv_path, run_name(take, experiment), seed)


def source_runs(csv_path: Path, experiments: dict) -> set | None:
    """The (sweep directory, variant, seed) of every run the result in ``csv_path`` holds, where its entry's
    command names one of ``experiments``; None where it does not (the runs are then told by their labels)."""
    entry = entry_of_file(csv_path)
    words = shlex.split(entry["command"]) if entry else []
    source = next((experiments[w] for w in words if w in experiments), None)
    if source is None:
        return None
    return {(t.sweep.dir, t.variant, s) for t in source.takes for s in t.of(t.sweep.seeds)}


def run_history(rows: list[dict], key: dict) -> list[dict]:
    """One run's history in a result's rows: the rows that ``key`` (its ``labels``) picks, less those
    columns, in step order."""
    return sorted(({k: v for k, v in r.items() if k not in key} for r in rows
                   if all(r.get(k) == v for k, v in key.items())), key=lambda h: h["step"])


def restore_run(path: Path, history: list[dict], csv_path: Path, name: str, seed: int) -> None:
    path.mkdir(parents=True)
    atomic_write_text(history_csv(history), path / HISTORY_NAME)
    provenance.write(path, restored_provenance(csv_path, name, seed))
    done = {"steps": history[-1]["step"], "final_eval": history[-1]["eval_mean"],
            "wall_s": history[-1]["wall_s"], "restored_from": str(csv_path)}
    atomic_write_text(json.dumps(done) + "\n", path / DONE_NAME)
    print(f"restored {path} from {csv_path}", flush=True)


# ---------------------------------------------------------------- the result
def result_entry(experiment: Experiment, runs: list[FinishedRun], args, command: str) -> dict:
    """The manifest entry of the result: what it is, the command that makes it, its runs and their provenance."""
    budgets = sorted({t.budget(run_config(spec_of(t.sweep, args), e, t.variant))
                      for t in experiment.takes for e in t.sweep.envs})
    seeds: dict[str, set] = {}
    for run in runs:
        seeds.setdefault(run.take.name, set()).add(run.seed)
    entry = {"file": experiment.file, "lesson": experiment.lesson, "env": experiment.env, "command": command,
             "seeds": sorted({r.seed for r in runs}), "steps": budgets[0] if len(budgets) == 1 else budgets,
             "wall_s": round(sum(r.history[-1]["wall_s"] for r in runs if r.history), 1),
             "version": __version__, "runs": {label: sorted(s) for label, s in seeds.items()}}
    made = [(r.name, r.seed, run_provenance(r, args.root)) for r in runs]
    return {**entry, **provenance_fields(made)}


def write(experiment: Experiment, runs: list[FinishedRun], args, command: str) -> Path:
    """Write the CSV and its entry into ``--out``, and say so."""
    rows = [row for run in runs for row in rows_of(run, experiment)]
    entry = result_entry(experiment, runs, args, command)
    path = write_result(rows, experiment.fields, entry, args.out)
    wanted = sum(len(t.sweep.envs) * len(chosen(t.of(t.sweep.seeds), args)) for t in experiment.takes)
    print(f"wrote {path}: {len(rows)} rows, {entry['wall_s']:.0f} s of training over all runs")
    if len(runs) < wanted:  # a part: kept until the rest has trained, not shipped
        print(f"{len(runs)} of its {wanted} runs have finished: keep them with --out experiments/finished_runs "
              "(docs/results.md), and ship the result once every run has finished")
    else:
        print(f"ship it with: python -m td3_lib.course.results publish {shlex.quote(str(path))}")
    return path


# ---------------------------------------------------------------- the command line
def options(doc: str, experiments: dict) -> argparse.ArgumentParser:
    """The options every experiment script takes; with several experiments, the positional choice."""
    parser = OneLineParser(description=doc.splitlines()[0])
    if len(experiments) > 1:
        parser.add_argument("experiment", choices=list(experiments))
    parser.add_argument("--collect", action="store_true", help="train nothing: write the CSV from the runs finished so far")
    parser.add_argument("--seeds", type=parse_seeds, default=None, help="only these of each sweep's seeds, e.g. 0,1")
    parser.add_argument("--steps", type=positive_int, default=None, help="environment steps per run instead of the experiment's")
    parser.add_argument("--root", type=Path, default=ROOT, help=f"where the runs are kept (default {ROOT})")
    parser.add_argument("--out", type=Path, default=OUT, help=f"where the CSV and its entry are written (default {OUT})")
    parser.add_argument("--restore", type=Path, default=None, metavar="RESULT_CSV",
                        help="first write this earlier result's finished runs back as finished runs")
    parser.add_argument("--jobs", type=positive_int, default=None, help="runs at a time here (default: one per core)")
    parser.add_argument("--address", default=None, help="join a running Ray cluster (HOST:PORT or auto)")
    parser.add_argument("--batched", action="store_true", help="train the runs that fit one process as batches")
    return parser


def command_line(script: str, argv: list[str]) -> str:
    """The command that makes the result: this one, less ``--collect`` and ``--restore CSV`` (which only
    decide which runs are trained here) and ``--root DIR`` and ``--out DIR`` (where this machine keeps
    them: the result is the same in the default folders)."""
    kept, rest = [], iter(argv)
    for arg in rest:
        if arg in ("--restore", "--root", "--out"):
            next(rest, None)
        elif arg != "--collect" and not arg.startswith(("--restore=", "--root=", "--out=")):
            kept.append(arg)
    return shlex.join(["python", script, *kept])


def main(doc: str, experiments: dict, argv=None, script: str | None = None) -> Path:
    """Run one experiment of a script (``experiments``: name -> ``Experiment``) as its command line says."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = options(doc, experiments).parse_args(argv)
    experiment = experiments[args.experiment] if len(experiments) > 1 else next(iter(experiments.values()))
    try:
        if args.restore is not None:
            restore(experiment, args.restore, args, experiments)
        if not args.collect:
            train(experiment, args)
        runs = collect(experiment, args)
    except (ValueError, OSError) as error:  # bad input: one line, no traceback
        sys.exit(f"error: {error}")
    return write(experiment, runs, args, command_line(script or sys.argv[0], argv))
