"""The full-budget experiments behind lessons 02-08, over seeds, shipped in td3_lib/course/results/.

    python experiments/lesson_results.py pendulum   # lessons 02-05 and 07 on Pendulum-v1
    python experiments/lesson_results.py pitfalls   # lesson 08's pitfalls on Pendulum-v1
    python experiments/lesson_results.py hopper-v5  # lessons 02, 03, 04 and 07 on MuJoCo's Hopper-v5
    python experiments/lesson_results.py hopper-v5-1m  # TD3 and DDPG on Hopper-v5 at the paper's 1M steps

``pendulum`` and ``hopper-v5`` are sweeps (``td3_lib.sweep``, Ray, one CPU and one
torch thread per run): every run is an ordinary ``train`` run whose history
holds, at each evaluation, the return and the critic's probe
(``td3_lib.course.analysis.critic_probe``: value estimate against the true discounted
return, the value at fixed start states, and the critic's roughness in the
action). ``pitfalls`` trains TD3 with one bug each (a process per run, two at
a time): ``train(..., agent=...)`` with the pitfall's TD3 subclass, or on its
environment wrapper, from ``td3_lib.course.pitfalls``, on the same settings as
the ``pendulum`` sweep's TD3, whose runs are its correct baseline.

Runs are checkpointed under ``--root`` (default runs/lesson_results): an
interrupted experiment started again resumes its unfinished runs and skips the
finished ones. At the end the per-seed histories are written as one CSV, with
its manifest entry (this command), into ``--out`` (default runs/results);
``python -m td3_lib.course.results publish runs/results/FILE`` ships it in
td3_lib/course/results/. ``--collect`` trains nothing and writes the CSV from
the runs finished so far. ``--seeds`` runs only those of each sweep's seeds.

``--restore RESULT_CSV`` first writes the finished runs of an earlier result
(a CSV this script wrote, such as the shipped one) back into the sweep
directories as finished runs, with a ``done.json`` that names the file they
came from, so that a new machine trains only the runs the result lacks. The
runs are deterministic on one machine, not across machines: a restored run is
one draw of the same experiment, not the run this machine would have made.
"""

from __future__ import annotations

import json
import multiprocessing
import sys
from pathlib import Path

import torch

import td3_lib
from td3_lib import load_sweep, sweep, train
from td3_lib.course.analysis import critic_probe
from td3_lib.course.pitfalls import PITFALLS
from td3_lib.checkpoint import atomic_write_text
from td3_lib.run import HISTORY_NAME, history_csv, read_history, read_rows
from td3_lib.sweep import DONE_NAME, SPEC_NAME, grid, open_sweep_dir, sweep_spec, variant_config

from common import finish, options

SEEDS = [0, 1, 2, 3, 4]
PENDULUM = dict(envs=["Pendulum-v1"], variants=["TD3", "TD3-DP", "TD3-TPS", "TD3-CDQ", "DDPG", "DDPG+CDQ"],
                seeds=SEEDS, overrides={"eval_freq": 500})
PENDULUM_D5 = dict(envs=["Pendulum-v1"], variants=["TD3"], seeds=SEEDS,
                   overrides={"eval_freq": 500, "policy_freq": 5})
# The paper's own task with the authors' settings (Hopper-v5's preset): TD3, DDPG (AHE) and TD3
# without each trick, 300,000 steps (30% of the paper's budget), evaluated every 5,000 steps over
# 10 episodes. Three sweeps, one after another, so that a stop part-way leaves the most useful
# result: every variant to 3 seeds first, then TD3 and DDPG to 5, then the ablations to 5.
HOPPER_VARIANTS = ["TD3", "DDPG", "TD3-CDQ", "TD3-TPS", "TD3-DP"]
HOPPER_V5 = [dict(envs=["Hopper-v5"], variants=HOPPER_VARIANTS, seeds=[0, 1, 2], steps=300_000, overrides={}),
             dict(envs=["Hopper-v5"], variants=HOPPER_VARIANTS[:2], seeds=[3, 4], steps=300_000, overrides={}),
             dict(envs=["Hopper-v5"], variants=HOPPER_VARIANTS[2:], seeds=[3, 4], steps=300_000, overrides={})]
# The paper's budget: TD3 and DDPG (AHE) to 1,000,000 steps, 5 seeds, same settings and evaluation.
HOPPER_V5_1M = [dict(envs=["Hopper-v5"], variants=HOPPER_VARIANTS[:2], seeds=SEEDS, steps=1_000_000, overrides={})]
SWEEPS = {"pendulum": [PENDULUM, PENDULUM_D5], "hopper-v5": HOPPER_V5, "hopper-v5-1m": HOPPER_V5_1M}
"""Each sweep experiment's sweeps, run in this order into ROOT/NAME-0, ROOT/NAME-1, ..."""
FIELDS = ("variant", "policy_freq", "seed", "step", "eval_mean", "eval_std", "critic_loss",
          "q_estimate", "q_true", "q_start", "q_roughness", "q_peak", "wall_s")


# ------------------------------------------------------------------------ sweeps
def run_sweeps(name: str, specs: list[dict], args) -> list[dict]:
    """Run (or finish) each sweep and return its finished runs' history rows, labelled.
    With ``--collect`` nothing is trained: the finished runs so far are read back."""
    rows = []
    for i, spec in enumerate(specs):
        out, seeds = args.root / f"{name}-{i}", sweep_seeds(spec, args)
        if not seeds:
            continue
        if not args.collect:
            result = sweep(spec["envs"], spec["variants"], seeds, out_dir=out,
                           steps=args.steps or spec.get("steps"), overrides=spec["overrides"], progress=True,
                           probes=(critic_probe,))
            print(result.report(), flush=True)
            if result.failed:
                sys.exit(f"{len(result.failed)} runs failed in {out}:\n{result.report()}")
        for record in load_sweep(out).finished:
            config = variant_config(record.env_id, record.variant, spec["overrides"])
            freq = config.policy_freq if config.delayed_policy_updates else 1  # d as the run used it
            label = record.variant if config.policy_freq == 2 else f"{record.variant} (d={freq})"
            rows += labelled(record.history, label, freq, record.seed)
    return rows


def sweep_seeds(spec: dict, args) -> list[int]:
    """The seeds of one sweep that this command runs: all of them, or those of ``--seeds`` among them."""
    return [s for s in spec["seeds"] if args.seeds is None or s in args.seeds]


def restore_runs(result_csv: Path, name: str, specs: list[dict], args) -> None:
    """Write the finished runs of an earlier result (``result_csv``, as this script wrote it) back
    into the sweep directories as finished runs: their histories, and a ``done.json`` that says
    where they came from. Only runs at the full budget are restored, and no run already there is
    touched; the sweep then trains only the rest."""
    runs: dict[tuple[str, int], list[dict]] = {}
    for row in read_rows(result_csv):
        runs.setdefault((row["variant"], int(row["seed"])), []).append(row)
    for i, spec in enumerate(specs):
        out, seeds, steps = args.root / f"{name}-{i}", sweep_seeds(spec, args), args.steps or spec.get("steps")
        if not seeds:
            continue
        open_sweep_dir(out, sweep_spec(spec["envs"], spec["variants"], seeds, spec["overrides"], steps))
        for run in grid(json.loads((out / SPEC_NAME).read_text())):
            history = [{k: v for k, v in r.items() if k not in FIELDS[:3]}
                       for r in sorted(runs.get((run.variant, run.seed), []), key=lambda r: r["step"])]
            path = run.path(out)
            budget = variant_config(run.env_id, run.variant, spec["overrides"], steps).total_steps
            if not history or history[-1]["step"] < budget or path.exists():
                continue
            path.mkdir(parents=True)
            atomic_write_text(history_csv(history), path / HISTORY_NAME)
            done = {"steps": history[-1]["step"], "final_eval": history[-1]["eval_mean"],
                    "wall_s": history[-1]["wall_s"], "restored_from": str(result_csv)}
            atomic_write_text(json.dumps(done) + "\n", path / DONE_NAME)
            print(f"restored {path} from {result_csv}", flush=True)


def labelled(history: list[dict], variant: str, policy_freq: int, seed: int) -> list[dict]:
    return [{"variant": variant, "policy_freq": policy_freq, "seed": seed,
             **{k: round(h[k], 4) for k in FIELDS[3:] if k in h}} for h in history]


# ---------------------------------------------------------------------- pitfalls
# The four pitfalls trained over seeds, by their names in td3_lib.course.pitfalls.PITFALLS (and in the CSV).
PITFALL_RUNS = ("uniform noise (rand)", "target critic as current", "Q1 loss twice", "time limit as terminal")


def pitfall_run(job: tuple[str, int, str, int | None]) -> list[dict]:
    """One run of TD3 with one pitfall, checkpointed in ``run_dir`` (resumed if there)."""
    name, seed, run_dir, steps = job
    torch.set_num_threads(1)
    pitfall = PITFALLS[name]
    config = variant_config("Pendulum-v1", "TD3", PENDULUM["overrides"], steps)
    result = train(pitfall.make_env("Pendulum-v1"), config, agent=pitfall.agent, seed=seed, device="cpu",
                   checkpoint_dir=run_dir, resume=True, progress=False, probes=(critic_probe,))
    return labelled(result.history, name, config.policy_freq, seed)


def finished_pitfall_run(job: tuple[str, int, str, int | None]) -> list[dict]:
    """The history of a pitfall run that reached its budget, read back; none for an unfinished one."""
    name, seed, run_dir, steps = job
    history = Path(run_dir) / "history.csv"
    config = variant_config("Pendulum-v1", "TD3", PENDULUM["overrides"], steps)
    rows = read_history(history) if history.exists() else []
    finished = rows and rows[-1]["step"] >= config.total_steps
    return labelled(rows, name, config.policy_freq, seed) if finished else []


def run_pitfalls(args) -> list[dict]:
    seeds = args.seeds or SEEDS
    jobs = [(name, seed, str(args.root / "pitfalls" / name.replace(" ", "_") / f"seed{seed}"), args.steps)
            for name in PITFALL_RUNS for seed in seeds]
    if args.collect:  # train nothing: the histories of the runs finished so far
        rows = [row for job in jobs for row in finished_pitfall_run(job)]
    else:
        with multiprocessing.get_context("spawn").Pool(2, maxtasksperchild=1) as pool:
            rows = [row for rows in pool.imap(pitfall_run, jobs) for row in rows]
    baseline = args.root / "pendulum-0" / "Pendulum-v1" / "TD3"
    for seed in seeds:
        history = baseline / f"seed{seed}" / "history.csv"
        if not history.exists():
            sys.exit(f"The correct baseline {history} is missing: run the pendulum experiment first.")
        rows += labelled(read_history(history), "TD3 (correct)", 2, seed)
    return rows


# ------------------------------------------------------------------------ output
EXPERIMENTS = {
    "pendulum": dict(file="pendulum_variants.csv", lesson="02 03 04 05 07", env="Pendulum-v1",
                     steps=td3_lib.preset("Pendulum-v1").total_steps,
                     run=lambda args: run_sweeps("pendulum", SWEEPS["pendulum"], args)),
    "pitfalls": dict(file="pitfalls_pendulum.csv", lesson="08", env="Pendulum-v1",
                     steps=td3_lib.preset("Pendulum-v1").total_steps, run=run_pitfalls),
    "hopper-v5": dict(file="hopper_v5_variants.csv", lesson="02 03 04 07", env="Hopper-v5",
                      steps=HOPPER_V5[0]["steps"], run=lambda args: run_sweeps("hopper-v5", SWEEPS["hopper-v5"], args)),
    "hopper-v5-1m": dict(file="hopper_v5_1m.csv", lesson="02 03 07", env="Hopper-v5",
                         steps=HOPPER_V5_1M[0]["steps"],
                         run=lambda args: run_sweeps("hopper-v5-1m", SWEEPS["hopper-v5-1m"], args)),
}


def main(argv=None) -> None:
    parser = options(__doc__, "runs/lesson_results", EXPERIMENTS)
    parser.add_argument("--collect", action="store_true",
                        help="train nothing: write the CSV from the runs finished so far")
    parser.add_argument("--restore", type=Path, default=None, metavar="RESULT_CSV",
                        help="first write the finished runs of this earlier result (a CSV this script wrote) "
                             "into the sweep directories, so that only the other runs train")
    args = parser.parse_args(argv)
    experiment = EXPERIMENTS[args.experiment]
    if args.restore is not None:
        if args.experiment not in SWEEPS:
            parser.error(f"--restore works for the sweeps ({', '.join(SWEEPS)}), not {args.experiment}.")
        restore_runs(args.restore, args.experiment, SWEEPS[args.experiment], args)
    rows = experiment["run"](args)
    finish(rows, FIELDS, args, file=experiment["file"], lesson=experiment["lesson"], env=experiment["env"],
           steps=args.steps or experiment["steps"], drop=("--collect",), drop_with_value=("--restore",))


if __name__ == "__main__":
    main()
