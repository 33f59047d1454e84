"""What made a run: the commit (dirty said, never hidden), the versions and the machine, and the run's record of it."""

import json
import os
import subprocess
from pathlib import Path

import pytest
import torch

from td3_lib import provenance
from td3_lib.provenance import NOT_RECORDED, PROVENANCE_NAME, commit_of, current, earlier, record


def git(folder, *args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=folder, check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def checkout(tmp_path):
    """A git checkout holding a package folder ``pkg`` with a tracked __init__.py, one commit."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("x = 1\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "first")
    return tmp_path


def test_the_commit_is_the_checkouts_and_a_changed_tree_is_said(checkout):
    sha = git(checkout, "rev-parse", "HEAD")
    assert len(sha) == 40 and commit_of(checkout / "pkg") == sha
    (checkout / "pkg" / "__init__.py").write_text("x = 2\n")  # a tracked file changed
    assert commit_of(checkout / "pkg") == f"{sha}-dirty"
    git(checkout, "checkout", "-q", "--", ".")
    assert commit_of(checkout / "pkg") == sha
    (checkout / "notes.txt").write_text("new")  # an untracked file anywhere in the tree
    assert commit_of(checkout / "pkg") == f"{sha}-dirty"
    (checkout / ".gitignore").write_text("notes.txt\n.gitignore\n")  # ignored files are not changes
    assert commit_of(checkout / "pkg") == sha


def test_a_folder_that_is_not_tracked_in_a_checkout_has_no_commit(checkout, tmp_path_factory):
    stray = tmp_path_factory.mktemp("stray")
    (stray / "__init__.py").write_text("")
    assert commit_of(stray).startswith("unknown: ")
    (checkout / "copy").mkdir()  # inside a checkout, but not tracked there
    (checkout / "copy" / "__init__.py").write_text("")
    assert commit_of(checkout / "copy").startswith("unknown: ")


def test_versions_and_machine():
    found = current("Hopper-v5")
    assert set(found["versions"]) == {"torch", "gymnasium", "numpy", "mujoco", "python"}
    assert found["versions"]["torch"] == torch.__version__
    assert "mujoco" not in current("Pendulum-v1")["versions"] and "mujoco" not in current(None)["versions"]
    assert found["machine"]["torch_threads"] == torch.get_num_threads() and found["machine"]["cpu"]
    assert found["machine"]["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert {k: found["machine"][k] for k in provenance.ISA_OVERRIDES if k in found["machine"]} == \
        {k: os.environ[k] for k in provenance.ISA_OVERRIDES if k in os.environ}
    assert found["commit"] == provenance.code_commit()


@pytest.mark.skipif(provenance.cpuinfo("flags") is None, reason="reads the flags of Linux's /proc/cpuinfo (x86)")
def test_the_machine_names_the_instruction_sets_that_decide_the_arithmetic(monkeypatch):
    lines = Path("/proc/cpuinfo").read_text().splitlines()
    flags = next(line for line in lines if line.startswith("flags")).partition(":")[2].split()
    assert provenance.cpu_model() == next(line for line in lines if line.startswith("model name")).split(":", 1)[1].strip()
    kept = provenance.vector_extensions().split()
    assert kept == sorted(kept) and set(kept) <= set(flags)
    assert ("avx2" in kept) == ("avx2" in flags) and ("avx512f" in kept) == ("avx512f" in flags)
    assert "sse2" not in kept and all(f.startswith(("avx", "fma", "amx")) for f in kept)
    monkeypatch.setenv("MKL_ENABLE_INSTRUCTIONS", "AVX2")
    assert provenance.machine()["MKL_ENABLE_INSTRUCTIONS"] == "AVX2"


def test_a_run_records_a_segment_per_change_of_what_made_it(tmp_path):
    made = {"commit": "a" * 40, "versions": {"torch": "1"}, "machine": {"cpu": "c", "torch_threads": 1}}
    record(tmp_path, 0, made)
    record(tmp_path, 2000, made)  # resumed by the same code on the same machine: nothing new
    record(tmp_path, 4000, {**made, "commit": "b" * 40 + "-dirty"})
    segments = json.loads((tmp_path / PROVENANCE_NAME).read_text())
    assert [(s["from_step"], s["commit"]) for s in segments] == [(0, "a" * 40), (4000, "b" * 40 + "-dirty")]
    assert provenance.read(tmp_path) == segments and provenance.read(tmp_path / "none") is None


def test_a_sweep_whose_code_recorded_nothing_takes_its_record_from_beside_it(tmp_path):
    """ROOT/hopper-v5-1m.provenance.json describes every sweep ROOT/hopper-v5-1m-i; the sweep's own
    provenance.json comes first; without either, nothing is claimed."""
    sweep_dir = tmp_path / "hopper-v5-1m-0"
    sweep_dir.mkdir()
    assert earlier(sweep_dir) == [NOT_RECORDED]
    beside = {"commit": "d" * 40, "versions": {"torch": "2"}, "machine": {"cpu": "x", "torch_threads": 1}}
    (tmp_path / "hopper-v5-1m.provenance.json").write_text(json.dumps(beside))
    (tmp_path / "hopper-v5.provenance.json").write_text(json.dumps({**beside, "commit": "wrong"}))
    assert earlier(sweep_dir) == [beside]
    (sweep_dir / PROVENANCE_NAME).write_text(json.dumps([{**beside, "commit": "e" * 40}]))
    assert earlier(sweep_dir) == [{**beside, "commit": "e" * 40}]
