"""The experiments: the scripts as specifications (each sweep defined once), the runner's rows, restore and
collect, the provenance a result records, and run directories as earlier code wrote them."""

import csv
import itertools
import json
import math
from pathlib import Path

import pytest

from conftest import EXPERIMENT_SCRIPTS as SCRIPTS
from conftest import experiment_script as script
from td3_lib.course import experiments as runner
from td3_lib.course.specs import PENDULUM, Experiment, FinishedRun, Sweep, Take
from td3_lib.course.results import entry as shipped_entry
from td3_lib.course.results import results_dir
from td3_lib.course.results.publish import run_provenance_in_entry, write_result
from td3_lib.provenance import NOT_RECORDED, PROVENANCE_NAME
from td3_lib.run import HISTORY_NAME, history_csv, read_rows
from td3_lib.sweep import DONE_NAME, PROBES, REGISTRY, SweepRun, open_sweep_dir, sweep_spec

FIELDS = ("variant", "policy_freq", "seed", "step", "eval_mean", "q_estimate", "wall_s")
TOY = Sweep("toy-0", ("Pendulum-v1",), ("TD3", "DDPG"), (0, 1), steps=1000, probes=("critic",))
TOY_EXPERIMENT = Experiment("toy.csv", "07", "Pendulum-v1", FIELDS, (Take(TOY, "TD3"), Take(TOY, "DDPG", "AHE")))
MADE = {"commit": "c" * 40, "versions": {"torch": "2"}, "machine": {"cpu": "x", "torch_threads": 1}}


def every_experiment():
    """Every experiment of every script in experiments/, script by script in name order."""
    for path in sorted(SCRIPTS.glob("*.py")):
        yield from script(path.stem).EXPERIMENTS.values()


def args_for(tmp_path, *argv, experiments=None):
    return runner.options("doc", experiments or {"a": None, "b": None}).parse_args(
        ["a", "--root", str(tmp_path / "root"), "--out", str(tmp_path / "out"), *argv])


def finish_run(out: Path, variant: str, seed: int, history: list[dict], made=None, done=None) -> Path:
    """A finished run's directory as a sweep leaves it (the history, done.json, provenance.json if ``made``)."""
    path = out / "Pendulum-v1" / variant / f"seed{seed}"
    path.mkdir(parents=True)
    (path / "history.csv").write_text(history_csv(history))
    (path / DONE_NAME).write_text(json.dumps(done or {"steps": history[-1]["step"]}))
    if made is not None:
        (path / PROVENANCE_NAME).write_text(json.dumps([{"from_step": 0, **made}]))
    return path


def history(seed: int, steps=(500, 1000)) -> list[dict]:
    return [{"step": s, "episodes": s // 200, "eval_mean": -1000.0 + s / 7 + seed, "eval_std": 1.0, "train_return": 0.0,
             "critic_loss": 0.5, "q_estimate": 1.23456789, "wall_s": s / 100 + seed} for s in steps]


def test_every_script_is_a_specification_of_registered_variants_and_probes_each_sweep_defined_once():
    sweeps, files = {}, []
    for experiment in every_experiment():
        files.append(experiment.file)
        for take in experiment.takes:
            assert take.variant in take.sweep.variants and take.variant in REGISTRY
            assert all(p in PROBES for p in take.sweep.probes)
            assert sweeps.setdefault(take.sweep.dir, take.sweep) == take.sweep, take.sweep.dir
            sweep_spec(take.sweep.envs, take.sweep.variants, take.sweep.seeds, dict(take.sweep.overrides),
                       take.sweep.steps)  # a valid sweep
    training = {"hopper_v5_table2.csv"}  # not shipped yet: its runs train, the finished ones kept in finished_runs/
    assert set(files) - training == {p.name for p in results_dir().glob("*.csv")}
    smoothing, results = script("smoothing").EXPERIMENTS, script("lesson_results").EXPERIMENTS
    assert all(t.sweep is PENDULUM for t in smoothing["pendulum"].takes)  # read, not trained again
    assert results["pitfalls"].takes[-1] == Take(PENDULUM, "TD3", "TD3 (correct)")
    assert sum(path.read_text().count("\n") for path in SCRIPTS.glob("*.py")) < 250


def test_the_recorded_command_leaves_out_only_what_decides_which_runs_train_here_and_where():
    argv = ["hopper-v5", "--restore", "old.csv", "--collect", "--restore=x.csv", "--out", "/home/me/o", "--seeds",
            "0,1", "--root=/data/runs", "--root", "r", "--jobs", "1"]
    assert runner.command_line("experiments/lesson_results.py", argv) == \
        "python experiments/lesson_results.py hopper-v5 --seeds 0,1 --jobs 1"


def test_every_shipped_command_runs_from_the_repository_on_any_machine():
    for entry in json.loads((results_dir() / "manifest.json").read_text()):
        words = entry["command"].split()
        assert words[:2] == ["python", f"experiments/{words[1].split('/')[-1]}"], entry["file"]
        assert not any(w.startswith(("/", "~")) or w in ("--root", "--out") for w in words), entry["command"]


def test_rows_are_labelled_rounded_and_in_the_experiments_order(tmp_path):
    args = args_for(tmp_path)
    open_sweep_dir(args.root / "toy-0", runner.spec_of(TOY, args))
    for variant in ("TD3", "DDPG"):
        for seed in (0, 1):
            finish_run(args.root / "toy-0", variant, seed, history(seed), MADE)
    runs = runner.collect(TOY_EXPERIMENT, args)
    assert [(r.take.name, r.seed) for r in runs] == [("TD3", 0), ("TD3", 1), ("AHE", 0), ("AHE", 1)]
    rows = runner.rows_of(runs[2], TOY_EXPERIMENT)
    assert rows[0] == {"variant": "AHE", "policy_freq": 1, "seed": 0, "step": 500, "eval_mean": -928.5714,
                       "q_estimate": 1.2346, "wall_s": 5.0}  # DDPG: no delay, d = 1
    assert runner.rows_of(runs[0], TOY_EXPERIMENT)[0]["policy_freq"] == 2
    seed_major = Experiment("toy.csv", "07", "Pendulum-v1", FIELDS, TOY_EXPERIMENT.takes, seed_major=True)
    assert [(r.take.name, r.seed) for r in runner.collect(seed_major, args)] == \
        [("TD3", 0), ("AHE", 0), ("TD3", 1), ("AHE", 1)]
    path = runner.write(TOY_EXPERIMENT, runs, args, "python experiments/toy.py")
    entry = json.loads(Path(f"{path}.json").read_text())
    assert entry["runs"] == {"TD3": [0, 1], "AHE": [0, 1]} and entry["steps"] == 1000
    assert entry["wall_s"] == 2 * (10.0 + 11.0) and {k: entry[k] for k in MADE} == MADE


def test_collect_reads_runs_as_earlier_code_left_them(tmp_path):
    """A sweep.json without the keys added since, done.json without provenance, no provenance.json: the
    commit comes from ROOT/NAME.provenance.json (written beside runs started by such code), else it is
    said not to be recorded; a run that records its own provenance keeps it."""
    args = args_for(tmp_path)
    spec = runner.spec_of(TOY, args)
    (args.root / "toy-0").mkdir(parents=True)
    (args.root / "toy-0" / "sweep.json").write_text(json.dumps(
        {k: v for k, v in spec.items() if k not in ("settings", "definitions", "probes")}))
    finish_run(args.root / "toy-0", "TD3", 0, history(0))
    finish_run(args.root / "toy-0", "TD3", 1, history(1), {**MADE, "commit": "d" * 40})
    made = {"commit": "e" * 40, "versions": {"torch": "1"}, "machine": {"cpu": "y", "torch_threads": 1}}
    (args.root / "toy.provenance.json").write_text(json.dumps(made))
    runs = runner.collect(TOY_EXPERIMENT, args)
    assert [runner.run_provenance(r, args.root) for r in runs] == [[made], [{"from_step": 0, **MADE, "commit": "d" * 40}]]
    (args.root / "toy.provenance.json").unlink()
    assert runner.run_provenance(runs[0], args.root) == [NOT_RECORDED]
    entry = runner.result_entry(TOY_EXPERIMENT, runs, args, "c")
    assert entry["commit"] == [None, "d" * 40] and entry["provenance"][0]["runs"] == {"TD3": [0]}
    with pytest.raises(ValueError, match="holds another sweep"):  # collect refuses runs made with other settings
        runner.collect(TOY_EXPERIMENT, args_for(tmp_path, "--steps", "500"))


def test_restore_writes_an_earlier_results_runs_back_with_their_provenance_and_collect_reads_them_as_they_were(tmp_path):
    args = args_for(tmp_path)
    rows = [{"variant": v, "policy_freq": f, "seed": seed, "step": step, "eval_mean": -1000.0 + step / 10,
             "q_estimate": 1.5, "wall_s": step / 100}
            for v, f, seed, steps in (("TD3", 2, 0, (500, 1000)), ("AHE", 1, 1, (500, 1000)), ("AHE", 1, 0, (500,)))
            for step in steps]
    earlier = write_result(rows, FIELDS, {"file": "earlier.csv", "lesson": "07", "env": "E", "command": "c", "seeds": [0, 1],
                                          "steps": 1000, "wall_s": 1.0, "version": "0", **MADE}, tmp_path)
    runner.restore(TOY_EXPERIMENT, earlier, args)
    runs = runner.collect(TOY_EXPERIMENT, args)
    assert [(r.take.name, r.seed) for r in runs] == [("TD3", 0), ("AHE", 1)]  # AHE seed 0 is short of the budget
    assert [row for r in runs for row in runner.rows_of(r, TOY_EXPERIMENT)] == rows[:4]
    assert runner.run_provenance(runs[0], args.root) == [{"from_step": 0, **MADE, "restored_from": str(earlier)}]
    before = (runs[0].path / "history.csv").read_text()
    write_result([{**r, "eval_mean": 0.0} for r in rows], FIELDS, json.loads(Path(f"{earlier}.json").read_text()), tmp_path)
    runner.restore(TOY_EXPERIMENT, earlier, args)  # a finished run is never written again
    assert (runs[0].path / "history.csv").read_text() == before


@pytest.mark.parametrize("argv, words", [
    (["--restore", "missing.csv"], "error: No CSV file at missing.csv."),
    (["--seeds", "0", "--jobs", "0"], "error: argument --jobs: 0 must be a positive integer"),
])
def test_a_bad_option_or_a_missing_file_is_one_line_and_trains_nothing(tmp_path, monkeypatch, capsys, argv, words):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        runner.main("doc", {"toy": TOY_EXPERIMENT}, argv=["--root", "root", "--out", "out", *argv])
    message = str(exit_.value.code) if exit_.value.code != 2 else capsys.readouterr().err
    assert words in message and len(message.strip().splitlines()) == 1
    assert not (tmp_path / "root").exists() and not (tmp_path / "out").exists()


def test_takes_that_share_a_label_keep_their_own_provenance_in_the_entry_and_when_restored(tmp_path):
    """Figure 3's update rates share the labels "fixed policy" and "learned policy": the entry names each
    run by its label and sweep, so a result made on two machines says which run came from which, and
    restoring it gives each run its own provenance."""
    fast = Sweep("toy-fast-0", ("Pendulum-v1",), ("TD3",), (0,), steps=1000, overrides={"tau": 1.0})
    slow = Sweep("toy-slow-0", ("Pendulum-v1",), ("TD3",), (0,), steps=1000, overrides={"tau": 0.01})
    rates = Experiment("rates.csv", "05", "Pendulum-v1", ("variant", "tau", "seed", "step", "eval_mean", "wall_s"),
                       (Take(fast, "TD3", "learned policy"), Take(slow, "TD3", "learned policy")))
    args, other = args_for(tmp_path), {**MADE, "machine": {"cpu": "y", "torch_threads": 1}}
    for sweep_, made in ((fast, MADE), (slow, other)):
        open_sweep_dir(args.root / sweep_.dir, runner.spec_of(sweep_, args))
        finish_run(args.root / sweep_.dir, "TD3", 0, history(0), made)
    path = runner.write(rates, runner.collect(rates, args), args, "c")
    entry = json.loads(Path(f"{path}.json").read_text())
    assert [g["runs"] for g in entry["provenance"]] == [{"learned policy @ toy-fast-0": [0]},
                                                        {"learned policy @ toy-slow-0": [0]}]
    again = args_for(tmp_path / "again")
    runner.restore(rates, path, again)
    restored = runner.collect(rates, again)
    assert [runner.run_provenance(r, again.root)[0]["machine"] for r in restored] == [MADE["machine"], other["machine"]]


def test_a_take_of_some_seeds_reads_only_those_and_is_restored_only_from_a_result_of_its_sweep(tmp_path):
    """Table 2's TD3 takes seed 0 from a sweep that trains it again and seeds 1-4 from the earlier sweep. A
    result of the earlier sweep restores into the later experiment only what that sweep made: the seed trained
    again is never filled with the earlier run of the same label and seed."""
    again = Sweep("toy-again-0", ("Pendulum-v1",), ("TD3",), (0,), steps=1000, probes=("critic",))
    mixed = Experiment("mixed.csv", "07", "Pendulum-v1", FIELDS,
                       (Take(again, "TD3"), Take(TOY, "TD3", seeds=(1,)), Take(TOY, "DDPG", "AHE")))
    args = args_for(tmp_path)
    open_sweep_dir(args.root / TOY.dir, runner.spec_of(TOY, args))
    for variant, seed in (("TD3", 0), ("TD3", 1), ("DDPG", 0), ("DDPG", 1)):
        finish_run(args.root / TOY.dir, variant, seed, history(seed), MADE)
    earlier = runner.write(TOY_EXPERIMENT, runner.collect(TOY_EXPERIMENT, args), args, "python x.py toy")
    assert [(r.take.sweep.dir, r.take.name, r.seed) for r in runner.collect(mixed, args)] == [
        ("toy-0", "TD3", 1), ("toy-0", "AHE", 0), ("toy-0", "AHE", 1)]  # seed 0 of TD3 is the new sweep's
    fresh = args_for(tmp_path / "fresh")
    runner.restore(mixed, earlier, fresh, {"toy": TOY_EXPERIMENT, "mixed": mixed})
    assert not (fresh.root / again.dir / "Pendulum-v1").exists()
    assert [(r.take.name, r.seed) for r in runner.collect(mixed, fresh)] == [("TD3", 1), ("AHE", 0), ("AHE", 1)]
    assert runner.cells(mixed, TOY, fresh) == [SweepRun("Pendulum-v1", "TD3", 1), SweepRun("Pendulum-v1", "DDPG", 0),
                                               SweepRun("Pendulum-v1", "DDPG", 1)]


def test_hopper_v5_restored_from_the_shipped_result_with_its_1m_runs_past_300k_is_the_shipped_file(tmp_path):
    """--restore td3_lib/course/results/hopper_v5_variants.csv brings the ablations' runs back as finished runs,
    each with the provenance its entry gives it; TD3 and DDPG are the first 300,000 steps of hopper-v5-1m's runs,
    which a shorter result never restores, so they alone are left to train. Once those runs have passed 300,000
    steps (here their shipped rows and provenance, as a machine training them holds them, unfinished), collect
    writes the shipped file and entry again exactly."""
    specs = script("lesson_results")
    experiment, long = specs.EXPERIMENTS["hopper-v5"], specs.HOPPER_V5_1M
    args = args_for(tmp_path, experiments={"a": experiment, "b": None})
    shipped, before = results_dir() / "hopper_v5_variants.csv", shipped_entry("hopper_v5_variants.csv")
    runner.restore(experiment, shipped, args)
    pending = [(sweep.dir, r.variant, r.seed) for sweep in runner.sweeps_of(experiment)
               for r in runner.cells(experiment, sweep, args) if not runner.held(experiment, sweep, r, args.root)]
    assert pending == [(long.dir, variant, seed) for variant in ("TD3", "DDPG") for seed in range(5)]
    spec = runner.spec_of(long, args)
    open_sweep_dir(args.root / long.dir, spec)
    rows, configs = read_rows(shipped), spec["configs"]
    for take, seed in ((t, s) for t in experiment.takes if t.sweep is long for s in long.seeds):
        path = SweepRun("Hopper-v5", take.variant, seed).path(args.root / long.dir)
        path.mkdir(parents=True)
        key = runner.labels(take, "Hopper-v5", seed, configs[f"Hopper-v5/{take.variant}"], experiment)
        (path / HISTORY_NAME).write_text(history_csv(runner.run_history(rows, key)))
        made = run_provenance_in_entry(before, take.name, seed)
        (path / PROVENANCE_NAME).write_text(json.dumps([{"from_step": 0, **m} for m in made]))
    assert all(runner.held(experiment, long, r, args.root) for r in runner.cells(experiment, long, args))
    path = runner.write(experiment, runner.collect(experiment, args), args, before["command"])
    assert path.read_text() == shipped.read_text()
    assert json.loads(Path(f"{path}.json").read_text()) == before


def waiting_for_longer_runs(experiment: Experiment, shipped: list[Experiment]) -> bool:
    """Whether a result holds a shorter take of runs that no shipped result restores (its longer runs still training)."""
    restored = {t.sweep.dir for e in shipped for t in e.takes if t.until is None}
    return any(t.until is not None and t.sweep.dir not in restored for t in experiment.takes)


@pytest.mark.slow
def test_every_shipped_result_restored_and_collected_again_is_the_same_file_and_entry(tmp_path):
    """A shipped result is what its run directories hold: every shipped result written back into one root
    (the runs that results share, once), then collected, gives its CSV byte for byte and its manifest
    entry, provenance included."""
    experiments = [e for e in every_experiment() if (results_dir() / e.file).exists()]
    assert len(experiments) == len(list(results_dir().glob("*.csv")))
    assert [e.file for e in experiments if waiting_for_longer_runs(e, experiments)] == []
    args = args_for(tmp_path)
    for experiment in experiments:
        runner.restore(experiment, results_dir() / experiment.file, args)
    for experiment in experiments:
        before = shipped_entry(experiment.file)
        path = runner.write(experiment, runner.collect(experiment, args), args, before["command"])
        assert path.read_text() == (results_dir() / experiment.file).read_text(), experiment.file
        assert json.loads(Path(f"{path}.json").read_text()) == before, experiment.file


def test_a_shorter_take_holds_the_first_steps_of_longer_runs_finished_or_not_and_is_never_restored(tmp_path):
    """Take(until=N): a run counts once its history has passed step N, done or not; its rows and its
    provenance stop there; nothing is trained for a run that has passed N, and restoring the shorter
    result writes nothing into the longer runs' directories."""
    args = args_for(tmp_path)
    short = Experiment("short.csv", "07", "Pendulum-v1", FIELDS, (Take(TOY, "TD3", until=500), Take(TOY, "DDPG", until=500)))
    open_sweep_dir(args.root / "toy-0", runner.spec_of(TOY, args))
    finish_run(args.root / "toy-0", "TD3", 0, history(0), MADE)  # finished at 1,000 steps
    later = {**MADE, "commit": "f" * 40}
    running = finish_run(args.root / "toy-0", "TD3", 1, history(1, (500, 600)))  # past 500, still training
    (running / DONE_NAME).unlink()
    (running / PROVENANCE_NAME).write_text(json.dumps([{"from_step": 0, **MADE}, {"from_step": 600, **later}]))
    short_of = finish_run(args.root / "toy-0", "DDPG", 0, history(0, (250,)))  # not yet at 500
    (short_of / DONE_NAME).unlink()
    runs = runner.collect(short, args)
    assert [(r.take.name, r.seed, [h["step"] for h in r.history]) for r in runs] == [("TD3", 0, [500]), ("TD3", 1, [500])]
    assert runner.run_provenance(runs[1], args.root) == [{"from_step": 0, **MADE}]
    pending = [(r.variant, r.seed) for r in runner.cells(short, TOY, args) if not runner.held(short, TOY, r, args.root)]
    assert pending == [("DDPG", 0), ("DDPG", 1)]
    both = Experiment("both.csv", "07", "Pendulum-v1", FIELDS, (*short.takes, Take(TOY, "TD3", "TD3 1k")))
    assert not runner.held(both, TOY, runner.cells(both, TOY, args)[1], args.root)  # the full take needs seed 1 done
    entry = runner.result_entry(short, runs, args, "c")
    assert entry["steps"] == 500 and {k: entry[k] for k in MADE} == MADE
    path = runner.write(short, runs, args, "c")
    fresh = args_for(tmp_path / "fresh")
    runner.restore(short, path, fresh)
    assert not (fresh.root / "toy-0").exists()


def test_a_shorter_take_holds_a_run_evaluated_exactly_at_its_step_and_no_provenance_from_that_step_on(tmp_path):
    """Take(until=500): a run still training whose last evaluation is at step 500 has reached it (one at 499 has
    not); a segment of its provenance that starts at step 500 made only later steps, so the take leaves it out."""
    take = Take(TOY, "TD3", until=500)
    at = finish_run(tmp_path, "TD3", 0, history(0, (250, 500)))
    before = finish_run(tmp_path, "TD3", 1, history(1, (250, 499)))
    for path in (at, before):
        (path / DONE_NAME).unlink()
    assert [row["step"] for row in take.history(at)] == [250, 500] and take.history(before) is None
    later = {"from_step": 500, **MADE, "commit": "f" * 40}
    (at / PROVENANCE_NAME).write_text(json.dumps([{"from_step": 0, **MADE}, later]))
    run = FinishedRun(take, "Pendulum-v1", 0, at, {}, take.history(at), "TD3")
    assert runner.run_provenance(run, tmp_path) == [{"from_step": 0, **MADE}]


def test_seeds_pick_among_each_sweeps_own_seeds_and_a_directory_made_with_fewer_keeps_them(tmp_path):
    specs = script("lesson_results")
    sweeps = (*specs.HOPPER_V5_ABLATIONS, specs.HOPPER_V5_1M)
    assert [runner.chosen(runner.held_seeds(s, tmp_path), args_for(tmp_path)) for s in sweeps] == \
        [[0, 1, 2], [3, 4], [0, 1, 2, 3, 4]]
    assert [runner.chosen(runner.held_seeds(s, tmp_path), args_for(tmp_path, "--seeds", "0,4")) for s in sweeps] == \
        [[0], [4], [0, 4]]
    args = args_for(tmp_path)  # an earlier command's --seeds 0 made the first sweep's directory with seed 0 only
    open_sweep_dir(args.root / sweeps[0].dir, sweep_spec(sweeps[0].envs, sweeps[0].variants, [0], {}, sweeps[0].steps,
                                                         probes=sweeps[0].probes))
    assert runner.held_seeds(sweeps[0], args.root) == [0] and runner.saved_spec(sweeps[0], args) is not None


def shipped_takes() -> dict:
    """(sweep dir, variant) -> [(file, take)] for every take of every shipped result."""
    held = {}
    for experiment in every_experiment():
        if (results_dir() / experiment.file).exists():
            for take in experiment.takes:
                held.setdefault((take.sweep.dir, take.variant), []).append((experiment.file, take))
    return held


def shipped_run(file: str, take: Take) -> dict:
    """A take's rows in a shipped CSV (its label, its seeds), by (seed, step), without the label."""
    with open(results_dir() / file, newline="") as f:
        return {(r["seed"], r["step"]): {k: v for k, v in r.items() if k != "variant"}
                for r in csv.DictReader(f) if r["variant"] == take.name and take.of([int(r["seed"])])}


def test_results_that_take_the_same_runs_hold_the_same_values():
    """One configuration and seed is one run: where two shipped files take a sweep's variant, every
    evaluation both hold agrees in every column both have (pendulum_variants, smoothing_pendulum and
    pitfalls_pendulum's TD3 (correct) are the runs of one sweep; hopper_v5_variants holds the first 300,000
    steps of hopper_v5_1m's TD3 and DDPG)."""
    shared = {key: takes for key, takes in shipped_takes().items() if len(takes) > 1}
    assert ("pendulum-0", "TD3") in shared and ("hopper-v5-1m-0", "TD3") in shared
    for key, ((file, take), *others) in shared.items():
        for other_file, other_take in others:
            held = min(t.until or t.sweep.steps or math.inf for t in (take, other_take))  # the steps both hold
            first, other = ({at: row for at, row in shipped_run(f, t).items() if int(at[1]) <= held}
                            for f, t in ((file, take), (other_file, other_take)))
            assert first and other.keys() == first.keys(), (key, file, other_file)
            for at, row in other.items():
                common = row.keys() & first[at].keys()
                assert {k: row[k] for k in common} == {k: first[at][k] for k in common}, (key, other_file, at)


def test_each_shipped_result_names_the_lessons_that_read_it():
    """The manifest's ``lesson`` (written from the experiment's) lists exactly the notebooks that load the file."""
    notebooks = sorted(SCRIPTS.parent.glob("notebooks/[0-9][0-9]_*.ipynb"))
    for experiment in every_experiment():
        if (results_dir() / experiment.file).exists():
            readers = " ".join(nb.name[:2] for nb in notebooks if f'"{experiment.file}' in nb.read_text())
            assert experiment.lesson == readers == shipped_entry(experiment.file)["lesson"], experiment.file


EVALUATION_ONLY = ("eval_freq",)
"""Settings that decide when a run is evaluated, not how it trains (an evaluation uses its own
environment and draws nothing from the training's random streams)."""


def test_a_run_is_the_same_run_in_every_result_that_evaluates_it_on_another_schedule():
    """Takes of one variant in sweeps that differ only in when they evaluate (and in their probes) are
    one run: where two shipped files evaluate it at the same step, the returns agree to the coarser
    file's rounding (critic_shape_bug.csv's correct TD3 is pendulum_variants.csv's TD3, evaluated every
    2,500 steps instead of every 500)."""
    groups = {}
    for (_, variant), ((file, take), *_) in shipped_takes().items():
        training = tuple(sorted((k, v) for k, v in take.sweep.overrides.items() if k not in EVALUATION_ONLY))
        groups.setdefault((take.sweep.envs, variant, take.sweep.steps, training), []).append((file, take))
    compared = 0
    for key, takes in groups.items():
        for (file_a, take_a), (file_b, take_b) in itertools.combinations(takes, 2):
            a, b = shipped_run(file_a, take_a), shipped_run(file_b, take_b)
            for at in a.keys() & b.keys():
                assert float(a[at]["eval_mean"]) == pytest.approx(float(b[at]["eval_mean"]), abs=1e-3), (key, at)
                compared += 1
    assert compared >= 5 * 6  # critic_shape_bug's correct TD3: 5 seeds, evaluations at 2,500 ... 15,000


def test_runs_kept_while_an_experiment_is_unfinished_come_back_as_they_were(tmp_path):
    """experiments/finished_runs/ holds the finished runs of experiments still training: each CSV there,
    restored (--restore) and collected again, gives the same file and entry, provenance included, and
    every run in it reached its experiment's full budget."""
    experiments = {e.file: e for e in every_experiment()}
    kept = sorted((SCRIPTS / "finished_runs").glob("*.csv"))
    for path in kept:
        experiment, entry = experiments[path.name], json.loads(Path(f"{path}.json").read_text())
        args = args_for(tmp_path / path.stem)
        runner.restore(experiment, path, args)
        written = runner.write(experiment, runner.collect(experiment, args), args, entry["command"])
        assert written.read_text() == path.read_text(), path.name
        assert json.loads(Path(f"{written}.json").read_text()) == entry, path.name
        assert entry["steps"] == max(take.sweep.steps for take in experiment.takes), path.name


def test_writing_a_part_of_an_experiment_says_to_keep_it_and_the_whole_says_how_to_ship_it(tmp_path, capsys):
    def finished(runs):
        return [{"variant": v, "policy_freq": f, "seed": seed, "step": step, "eval_mean": float(step), "q_estimate": 0.0,
                 "wall_s": 1.0} for v, f, seed in runs for step in (500, 1000)]
    entry = {"file": "earlier.csv", "lesson": "07", "env": "E", "command": "c", "seeds": [0, 1], "steps": 1000,
             "wall_s": 1.0, "version": "0", **MADE}
    part = write_result(finished([("TD3", 2, 0), ("AHE", 1, 1)]), FIELDS, entry, tmp_path / "part")
    args = args_for(tmp_path)
    runner.restore(TOY_EXPERIMENT, part, args)
    runner.write(TOY_EXPERIMENT, runner.collect(TOY_EXPERIMENT, args), args, "c")
    said = capsys.readouterr().out
    assert "2 of its 4 runs have finished: keep them" in said and "publish" not in said
    whole = write_result(finished([("TD3", 2, 0), ("TD3", 2, 1), ("AHE", 1, 0), ("AHE", 1, 1)]), FIELDS, entry,
                         tmp_path / "whole")
    runner.restore(TOY_EXPERIMENT, whole, args)
    runner.write(TOY_EXPERIMENT, runner.collect(TOY_EXPERIMENT, args), args, "c")
    said = capsys.readouterr().out
    assert "ship it with: python -m td3_lib.course.results publish" in said and "have finished" not in said
