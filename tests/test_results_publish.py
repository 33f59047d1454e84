"""Results are written to an output folder and shipped by a separate, explicit step."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from td3_lib.course.results import load, manifest, results_dir
from td3_lib.course.results.__main__ import main as results_cli
from td3_lib.course.results.publish import entry_path, publish, write_result
from td3_lib.run import read_rows

FIELDS = ("variant", "seed", "step", "eval_mean", "wall_s")
ROWS = [{"variant": "TD3", "seed": 0, "step": 500, "eval_mean": -1200.5, "wall_s": 3.2},
        {"variant": "TD3", "seed": 0, "step": 1000, "eval_mean": -800.25, "wall_s": 6.0}]


def entry(file="toy.csv", **changes):
    return {"file": file, "lesson": "04", "env": "Pendulum-v1", "command": "python experiments/x.py",
            "seeds": [0], "steps": 1000, "wall_s": 6.0, "version": "0.1.0", **changes}


def test_write_result_writes_the_csv_and_its_entry_outside_the_package(tmp_path):
    before = (results_dir() / "manifest.json").read_text()
    path = write_result(ROWS, FIELDS, entry(), tmp_path / "out")
    assert path == tmp_path / "out" / "toy.csv"
    assert read_rows(path) == ROWS
    assert json.loads(entry_path(path).read_text()) == entry()
    assert (results_dir() / "manifest.json").read_text() == before
    assert "toy.csv" not in {e["file"] for e in manifest()}


def test_publish_copies_the_result_and_replaces_its_manifest_entry(tmp_path):
    package = tmp_path / "package"
    package.mkdir()
    (package / "manifest.json").write_text(json.dumps([entry("other.csv"), entry("toy.csv", wall_s=1.0)]))
    shipped = publish(write_result(ROWS, FIELDS, entry(), tmp_path / "out"), package)
    assert read_rows(shipped) == ROWS
    entries = json.loads((package / "manifest.json").read_text())
    assert [e["file"] for e in entries] == ["other.csv", "toy.csv"]
    assert entries[1] == entry()
    assert not list(package.glob("*.tmp")) and not list(package.glob(".*"))


def test_publish_refuses_a_csv_without_its_entry_and_changes_nothing(tmp_path):
    package = tmp_path / "package"
    package.mkdir()
    (package / "manifest.json").write_text("[]")
    stray = tmp_path / "stray.csv"
    stray.write_text("variant,seed\nTD3,0\n")
    with pytest.raises(ValueError, match="stray.csv.json"):
        publish(stray, package)
    assert sorted(p.name for p in package.iterdir()) == ["manifest.json"]
    assert (package / "manifest.json").read_text() == "[]"


def test_an_entry_must_name_every_manifest_field(tmp_path):
    incomplete = entry()
    del incomplete["command"]
    with pytest.raises(ValueError, match="lacks command"):
        write_result(ROWS, FIELDS, incomplete, tmp_path)
    assert not (tmp_path / "toy.csv").exists()


def test_the_command_line_reports_a_bad_file_in_one_line(tmp_path, capsys):
    assert results_cli(["publish", str(tmp_path / "missing.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "missing.csv" in err and "\n" not in err


def test_every_shipped_result_is_listed_and_loads():
    listed = {e["file"] for e in manifest()}
    assert listed == {p.name for p in results_dir().glob("*.csv")}
    for file in listed:
        assert load(file), file


def test_the_experiment_scripts_import_and_record_the_command_that_makes_their_result(tmp_path):
    """Every script under experiments/ imports (with its shared ``common``), and a result it writes
    records the command line less the flags that only re-read finished runs."""
    code = (
        "import sys; from pathlib import Path; sys.path.insert(0, 'experiments')\n"
        "import common, critic_shape_bug, lesson_results, smoothing, target_networks\n"
        "sys.argv = ['experiments/lesson_results.py', 'hopper-v5', '--collect', '--out', sys.argv[1]]\n"
        "parser = common.options(lesson_results.__doc__, 'runs/x', lesson_results.EXPERIMENTS)\n"
        "parser.add_argument('--collect', action='store_true')\n"
        "args = parser.parse_args(sys.argv[1:])\n"
        "rows = [{'variant': 'TD3', 'seed': 0, 'step': 5, 'wall_s': 2.0}, {'variant': 'TD3', 'seed': 0, 'step': 10, 'wall_s': 4.5},\n"
        "        {'variant': 'DDPG', 'seed': 1, 'step': 10, 'wall_s': 3.0}, {'variant': 'TD3', 'seed': 2, 'step': 10, 'wall_s': 1.0}]\n"
        "common.finish(rows, ('variant', 'seed', 'step', 'wall_s'), args, file='x.csv', lesson='07', env='E', steps=10,"
        " drop=('--collect',))\n"
    )
    root = Path(__file__).resolve().parent.parent
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=root, check=True, capture_output=True)
    entry = json.loads((tmp_path / "x.csv.json").read_text())
    assert entry["command"] == f"python experiments/lesson_results.py hopper-v5 --out {tmp_path}"
    assert entry["seeds"] == [0, 1, 2] and entry["wall_s"] == 8.5 and entry["steps"] == 10
    assert entry["runs"] == {"TD3": [0, 2], "DDPG": [1]}  # a sweep in progress: seeds per variant


@pytest.fixture
def lesson_results(monkeypatch):
    """experiments/lesson_results.py as a module (its folder on sys.path for ``common``, restored after)."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent.parent / "experiments"))
    import lesson_results
    return lesson_results


def test_restore_writes_an_earlier_results_finished_runs_back_as_finished_runs(tmp_path, lesson_results):
    """--restore: a run of the earlier CSV at the full budget becomes a finished run of its sweep, with
    the same history; a run short of the budget is not restored; a run already there is not touched."""
    rows = [{"variant": v, "policy_freq": 2, "seed": seed, "step": step, "eval_mean": -1000.0 + step / 10,
             "q_estimate": 1.5, "wall_s": step / 100}
            for v, seed, steps in (("TD3", 0, (500, 1000)), ("DDPG", 1, (500, 1000)), ("DDPG", 0, (500,)))
            for step in steps]
    earlier = tmp_path / "earlier.csv"
    write_result(rows, list(rows[0]), entry("earlier.csv"), tmp_path)
    specs = [dict(envs=["Pendulum-v1"], variants=["TD3", "DDPG"], seeds=[0, 1], steps=1000, overrides={})]
    args = lesson_results.options(lesson_results.__doc__, str(tmp_path / "root"), ["x"]).parse_args(["x"])
    args.collect = True
    lesson_results.restore_runs(earlier, "toy", specs, args)
    sweep_dir = tmp_path / "root" / "toy-0"
    finished = {(r.variant, r.seed): r for r in lesson_results.load_sweep(sweep_dir).finished}
    assert sorted(finished) == [("DDPG", 1), ("TD3", 0)]
    assert finished["TD3", 0].history == [{k: v for k, v in r.items() if k not in ("variant", "policy_freq", "seed")}
                                          for r in rows[:2]]
    assert finished["TD3", 0].done["restored_from"] == str(earlier)
    before = (sweep_dir / "Pendulum-v1" / "TD3" / "seed0" / "history.csv").read_text()
    rows[1]["eval_mean"] = 0.0  # a second restore from a changed file leaves the finished run as it was
    write_result(rows, list(rows[0]), entry("earlier.csv"), tmp_path)
    lesson_results.restore_runs(earlier, "toy", specs, args)
    assert (sweep_dir / "Pendulum-v1" / "TD3" / "seed0" / "history.csv").read_text() == before
    assert lesson_results.run_sweeps("toy", specs, args) == [  # --collect reads them back, labelled
        {"variant": v, "policy_freq": f, "seed": s, **{k: r[k] for k in ("step", "eval_mean", "q_estimate", "wall_s")}}
        for (v, f, s), r in [(("TD3", 2, 0), rows[0]), (("TD3", 2, 0), {**rows[1], "eval_mean": -900.0}),
                             (("DDPG", 1, 1), rows[2]), (("DDPG", 1, 1), rows[3])]]


def test_seeds_pick_among_each_sweeps_own_seeds(lesson_results):
    """--seeds keeps, of each of an experiment's sweeps, the seeds given: no run twice, none outside it."""
    parse = lesson_results.options(lesson_results.__doc__, "runs/x", ["x"]).parse_args
    hopper = lesson_results.SWEEPS["hopper-v5"]
    assert [lesson_results.sweep_seeds(s, parse(["x"])) for s in hopper] == [[0, 1, 2], [3, 4], [3, 4]]
    assert [lesson_results.sweep_seeds(s, parse(["x", "--seeds", "0,4"])) for s in hopper] == [[0], [4], [4]]


def test_a_flag_with_a_value_is_left_out_of_the_recorded_command(monkeypatch, lesson_results):
    monkeypatch.setattr(sys, "argv", ["experiments/lesson_results.py", "hopper-v5", "--restore", "old.csv",
                                      "--collect", "--restore=x.csv", "--out", "o"])
    import common
    assert common.command_line(("--collect",), ("--restore",)) == "python experiments/lesson_results.py hopper-v5 --out o"
