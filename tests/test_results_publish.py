"""Results are written to an output folder and shipped by a separate, explicit step; every entry says what
made its runs."""

import json
from collections import Counter
from itertools import combinations

import pytest

from conftest import EXPERIMENT_SCRIPTS, experiment_script
from td3_lib.course.experiments import CONFIG_FIELDS
from td3_lib.course.results import load, made_on, manifest, results_dir
from td3_lib.course.results.__main__ import main as results_cli
from td3_lib.course.results.publish import (entry_path, provenance_fields, publish, run_label,
                                            run_provenance_in_entry, write_result)
from td3_lib.run import read_rows

FIELDS = ("variant", "seed", "step", "eval_mean", "wall_s")
ROWS = [{"variant": "TD3", "seed": 0, "step": 500, "eval_mean": -1200.5, "wall_s": 3.2},
        {"variant": "TD3", "seed": 0, "step": 1000, "eval_mean": -800.25, "wall_s": 6.0}]


MADE = {"commit": "a" * 40, "versions": {"torch": "2", "gymnasium": "1", "numpy": "2", "python": "3.11"},
        "machine": {"cpu": "a CPU", "torch_threads": 1}}


def entry(file="toy.csv", **changes):
    return {"file": file, "lesson": "04", "env": "Pendulum-v1", "command": "python experiments/x.py",
            "seeds": [0], "steps": 1000, "wall_s": 6.0, "version": "0.1.0", **MADE, **changes}


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


@pytest.mark.parametrize("field", ["command", "commit", "versions", "machine"])
def test_an_entry_must_name_every_manifest_field(tmp_path, field):
    incomplete = entry()
    del incomplete[field]
    with pytest.raises(ValueError, match=f"lacks {field}"):
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


def test_every_shipped_entry_says_what_made_its_runs_or_that_it_was_recorded_afterwards():
    for e in manifest():
        assert {"commit", "versions", "machine"} <= set(e), e["file"]
        groups = e.get("provenance", [e])
        for made in (s for group in groups for s in group.get("segments", [group])):  # a resumed run: each part
            if made["commit"] is None:  # unknown: said, with the commit that first shipped the runs
                assert made["recorded_afterwards"] and len(made["shipped_in"]) == 40, e["file"]
            else:
                assert made["versions"] and made["machine"]["cpu"], e["file"]
        if "provenance" in e:  # per group of runs: the groups cover every run of the file once, and no other
            listed = Counter((run_label(name), s) for g in groups for name, seeds in g["runs"].items() for s in seeds)
            rows = load(e["file"])
            labels = [k for k in rows[0] if k in ("variant", "seed", *CONFIG_FIELDS)]  # a run's row labels
            runs = {tuple(r[k] for k in labels): r for r in rows}.values()
            assert listed == Counter((r["variant"], r["seed"]) for r in runs), e["file"]


def test_pendulum_results_that_share_a_run_were_made_by_one_commit():
    """One configuration and seed is one run in every file that holds it (pendulum_variants.csv,
    smoothing_pendulum.csv and pitfalls_pendulum.csv share TD3's runs): one commit made every file that
    shares a run with another. A result whose runs are its own (lesson 05's schedules) may be newer."""
    entries = {e["file"]: e for e in manifest() if e["env"] == "Pendulum-v1"}
    assert len(entries) >= 7 and all(isinstance(e["commit"], str) and len(e["commit"]) == 40
                                     for e in entries.values()), entries
    runs = {x.file: {(t.sweep.dir, t.variant, s) for t in x.takes for s in t.of(t.sweep.seeds)}
            for path in sorted(EXPERIMENT_SCRIPTS.glob("*.py")) for x in experiment_script(path.stem).EXPERIMENTS.values()
            if x.file in entries}
    sharing = [(a, b) for a, b in combinations(sorted(runs), 2) if runs[a] & runs[b]]
    assert len(sharing) >= 3, sharing
    assert all(entries[a]["commit"] == entries[b]["commit"] for a, b in sharing), {f: entries[f]["commit"] for f in runs}


def test_made_on_names_each_machine_of_an_entry_with_its_threads():
    assert made_on(entry()) == "a CPU, 1 torch thread per run"
    two = {"machine": [MADE["machine"], {"cpu": "another CPU", "torch_threads": 2}]}
    assert made_on(two) == "a CPU, 1 torch thread per run and another CPU, 2 torch threads per run"
    assert made_on({"machine": [{"cpu": None, "torch_threads": 1}]}) == "a CPU not recorded, 1 torch thread per run"
    assert made_on({"machine": None}) == "a machine not recorded"


def test_an_entry_groups_its_runs_by_what_made_them():
    other = {**MADE, "commit": "b" * 40 + "-dirty"}
    assert provenance_fields([("TD3", 0, [{"from_step": 0, **MADE}]), ("DDPG", 1, [MADE])]) == MADE
    mixed = provenance_fields([("TD3", 0, [MADE]), ("TD3", 1, [other]), ("DDPG", 0, [MADE]),
                               ("DDPG", 1, [{**MADE, "from_step": 0}, {**other, "from_step": 500}])])
    assert mixed["commit"] == ["a" * 40, "b" * 40 + "-dirty"] and mixed["machine"] == [MADE["machine"]]
    segments = [{**MADE, "from_step": 0}, {**other, "from_step": 500}]  # where each starts is kept
    assert mixed["provenance"] == [{"runs": {"TD3": [0], "DDPG": [0]}, **MADE}, {"runs": {"TD3": [1]}, **other},
                                   {"runs": {"DDPG": [1]}, "segments": segments}]
    assert run_provenance_in_entry(mixed, "TD3", 1) == [other]
    assert run_provenance_in_entry(mixed, "DDPG", 1) == segments
    assert run_provenance_in_entry(entry(), "TD3", 0) == [MADE]
