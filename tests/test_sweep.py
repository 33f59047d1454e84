"""Sweeps: the variants table, the grid's rules, and real sweeps on a local Ray with 2 CPUs
(equal to train, a lost worker retried from its checkpoint, a killed driver restarted, failures kept)."""

import contextlib
import importlib
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from td3_lib import preset, train
from td3_lib.__main__ import main
from td3_lib.run import CHECKPOINT_NAME, read_history
from td3_lib.stats import difference
from td3_lib.sweep import (DONE_NAME, ERROR_NAME, SWITCHES, VARIANTS, RunRecord, SweepRun, bootstrap_ci, final_score,
                           load_sweep, open_sweep_dir, parse_overrides, parse_seeds, read_summary, sweep, sweep_spec,
                           variant_config)
from td3_lib.sweep.summary import differences_markdown, finished_scores, summary_rows, table2_markdown

ENV = "Pendulum-v1"
TINY = dict(hidden_sizes=(32, 32), start_timesteps=200, eval_freq=200, eval_episodes=1, batch_size=32)
STEPS = 600
TINY_ARGS = ["--steps", str(STEPS), "--set", "hidden_sizes=32,32", "--set", "start_timesteps=200",
             "--set", "eval_freq=200", "--set", "eval_episodes=1", "--set", "batch_size=32"]
COMPARED = ("step", "episodes", "eval_mean", "eval_std", "train_return", "critic_loss")  # not wall_s


# ---------------------------------------------------------------- no Ray needed

def test_variants_are_the_papers_ablations():
    on = {name: {s for s in SWITCHES if switches[s]} for name, switches in VARIANTS.items()}
    assert on["TD3"] == set(SWITCHES) and on["DDPG"] == set()
    short = {"CDQ": "clipped_double_q", "TPS": "target_policy_smoothing", "DP": "delayed_policy_updates"}
    for trick, switch in short.items():
        assert on[f"TD3-{trick}"] == set(SWITCHES) - {switch}
        assert on[f"DDPG+{trick}"] == {switch}
    assert all(set(switches) == set(SWITCHES) for switches in VARIANTS.values())


def test_variant_config_is_preset_then_overrides_then_switches():
    cfg = variant_config(ENV, "DDPG", {"hidden_sizes": (64, 64), "actor_lr": 5e-4}, steps=1234)
    base = preset(ENV)
    assert cfg.hidden_sizes == (64, 64) and cfg.actor_lr == 5e-4 and cfg.total_steps == 1234
    assert cfg.critic_lr == base.critic_lr and cfg.discount == base.discount
    assert not (cfg.clipped_double_q or cfg.target_policy_smoothing or cfg.delayed_policy_updates)
    assert variant_config(ENV, "TD3") == base


def test_bad_names_and_values_name_what_is_allowed():
    with pytest.raises(ValueError, match=r"Unknown variant 'TD4'; allowed: TD3, DDPG, .*TD3-CDQ"):
        variant_config(ENV, "TD4")
    with pytest.raises(ValueError, match=r"Unknown TD3Config field 'lr'; allowed: hidden_sizes, actor_lr"):
        parse_overrides(["lr=1e-3"])
    with pytest.raises(ValueError, match="set by the variant"):
        parse_overrides(["clipped_double_q=false"])
    with pytest.raises(ValueError, match="not an integer"):
        parse_overrides(["batch_size=1.5"])
    assert parse_overrides(["hidden_sizes=64,64", "actor_lr=1e-3", "start_timesteps=2.5e3", "bf16=true"]) == \
        {"hidden_sizes": (64, 64), "actor_lr": 1e-3, "start_timesteps": 2500, "bf16": True}
    assert parse_seeds("0-2,7") == [0, 1, 2, 7]
    with pytest.raises(ValueError, match=r"^Seeds '0,3-1': '3-1' is no range; a range is low-high with low <= high"):
        parse_seeds("0,3-1")


def free_port() -> int:
    """A port on this machine that nothing listens on (the system's choice, released again)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_cli_errors_are_one_line(tmp_path, capsys):
    base = ["sweep", "--env", ENV, "--seeds", "0", "--out", str(tmp_path / "s")]
    assert main(base + ["--variants", "TD3,TD4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Unknown variant 'TD4'; allowed: TD3, DDPG" in err
    assert main(base + ["--set", "widths=64"]) == 2
    assert "Unknown TD3Config field 'widths'" in capsys.readouterr().err
    port = free_port()
    assert main(base + ["--address", f"127.0.0.1:{port}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"Cannot reach a Ray cluster at 127.0.0.1:{port}" in err
    ray = pytest.importorskip("ray")
    assert not ray.is_initialized()  # refused before Ray, which would retry the address for minutes



def test_a_refused_address_or_device_leaves_no_sweep_json(tmp_path, capsys, monkeypatch):
    """A sweep refused for its address, or for device cuda where the cluster has no GPU, writes nothing:
    a retry with other settings is a new sweep, not "another sweep" in the same folder."""
    out = tmp_path / "s"
    base = ["sweep", "--env", ENV, "--out", str(out), *TINY_ARGS]
    assert main(base + ["--address", "nohost"]) == 2
    assert "Ray address 'nohost' must be HOST:PORT" in capsys.readouterr().err and not out.exists()
    package, tasks = importlib.import_module("td3_lib.sweep"), importlib.import_module("td3_lib.sweep.tasks")
    monkeypatch.setattr(package, "ray_session", lambda address: contextlib.nullcontext(0.0))  # a Ray without GPUs:
    monkeypatch.setattr(tasks, "import_ray", lambda: SimpleNamespace(cluster_resources=lambda: {"CPU": 2.0}))
    assert main(base + ["--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert "device='cuda' asked for, but the Ray cluster has no GPU" in err and err.count("\n") == 1
    assert not out.exists()

def run_record(env: str, variant: str, seed: int, values, status="finished") -> RunRecord:
    """A run whose evaluations, at steps 100, 200, ..., returned ``values``."""
    return RunRecord(SweepRun(env, variant, seed), Path(f"{env}/{variant}/seed{seed}"), status,
                     [{"step": 100 * (i + 1), "eval_mean": v} for i, v in enumerate(values)])


def finished_runs(scores: dict) -> list[RunRecord]:
    """Finished runs whose final score (the mean of their last 3 evaluations) is the given one."""
    return [run_record(env, variant, seed, [score] * 4)
            for (env, variant), seeds in scores.items() for seed, score in enumerate(seeds)]


def test_summary_sets_each_variant_against_td3_with_the_courses_difference():
    scores = {(ENV, "TD3"): [10.0, 11.0, 12.0, 13.0, 14.0], (ENV, "DDPG"): [0.0, 1.0, 1.0, 4.0, 4.0],
              (ENV, "TD3-DP"): [9.0, 12.0, 15.0], ("Hopper-v5", "TD3"): [5.0, 6.0], ("Hopper-v5", "DDPG"): [7.0],
              ("Hopper-v5", "TD3-DP"): [1.0, 2.0]}
    runs = finished_runs(scores) + [RunRecord(SweepRun(ENV, "DDPG", 9), Path("failed"), "failed", [])]
    spec = {"envs": [ENV, "Hopper-v5"], "variants": ["DDPG", "TD3", "TD3-DP"], "seeds": [0, 1, 2, 3, 4]}
    lines = differences_markdown(spec, runs).splitlines()
    assert lines[0].startswith("Each variant minus TD3:") and lines[2] == "| Method | Pendulum-v1 | Hopper-v5 |"
    d = difference(scores[ENV, "DDPG"], scores[ENV, "TD3"])  # TD3 is the baseline though DDPG comes first
    assert lines[4] == (f"| DDPG − TD3 | {d.mean:+.1f}, 95% interval [{d.low:+.1f}, {d.high:+.1f}], p = 0.008 "
                        "(5 v 5 seeds): separates | — |")  # Hopper: DDPG has one seed, no interval
    d = difference(scores[ENV, "TD3-DP"], scores[ENV, "TD3"])
    e = difference(scores["Hopper-v5", "TD3-DP"], scores["Hopper-v5", "TD3"])
    assert lines[5] == (f"| TD3-DP − TD3 | {d.mean:+.1f}, 95% interval [{d.low:+.1f}, {d.high:+.1f}], "
                        f"p = {d.p:.3f} (3 v 5 seeds): does not separate | {e.mean:+.1f}, 95% interval "
                        f"[{e.low:+.1f}, {e.high:+.1f}], p = 0.333 (2 v 2 seeds): does not separate |")
    # without TD3 the first variant is the baseline; one variant alone has nothing to be set against
    assert "| TD3-DP − DDPG |" in differences_markdown(dict(spec, variants=["DDPG", "TD3-DP"]), runs)
    assert differences_markdown(dict(spec, variants=["TD3"]), runs) == ""


def test_summary_scores_finished_runs_by_their_last_k_evaluations_as_mean_and_std_with_ddof_1():
    runs = [run_record(ENV, "TD3", 0, [0.0, 10.0, 20.0, 30.0]), run_record(ENV, "TD3", 1, [100.0, 1.0, 3.0, 5.0]),
            run_record(ENV, "TD3", 2, [7.0, 7.0, 8.0, 10.0]), run_record(ENV, "DDPG", 0, [50.0, 6.0, 2.0, 4.0]),
            run_record(ENV, "DDPG", 1, [0.0, 0.0, 1.0, 3.0]),
            run_record(ENV, "DDPG", 2, [9.0, 9.0, 9.0, 90.0], "unfinished")]
    spec = {"envs": [ENV], "variants": ["TD3", "DDPG"], "seeds": [0, 1, 2]}
    # each finished run's last 2 evaluations (DDPG's seed 2 has not finished)
    td3, ddpg = [(20 + 30) / 2, (3 + 5) / 2, (8 + 10) / 2], [(2 + 4) / 2, (1 + 3) / 2]
    assert finished_scores(runs, ENV, "TD3", last_k=2) == td3 and finished_scores(runs, ENV, "DDPG", last_k=2) == ddpg
    assert finished_scores(runs, ENV, "TD3") == [(10 + 20 + 30) / 3, (1 + 3 + 5) / 3, (7 + 8 + 10) / 3]  # LAST_K = 3
    mean = {v: sum(x) / len(x) for v, x in (("TD3", td3), ("DDPG", ddpg))}
    std = {v: math.sqrt(sum((s - mean[v]) ** 2 for s in x) / (len(x) - 1)) for v, x in (("TD3", td3), ("DDPG", ddpg))}
    rows = summary_rows(spec, runs, last_k=2)
    assert [(r["variant"], r["n_seeds"], r["mean"]) for r in rows] == [("TD3", 3, mean["TD3"]), ("DDPG", 2, mean["DDPG"])]
    assert [r["std"] for r in rows] == [pytest.approx(std["TD3"]), pytest.approx(std["DDPG"])]
    lines = table2_markdown(spec, rows, last_k=2).splitlines()
    assert lines[0].startswith("Final return: mean of the last 2 evaluations of each run; mean ± std over 3 seeds")
    assert lines[4:] == [f"| TD3 | **{mean['TD3']:.1f} ± {std['TD3']:.1f}** |",  # the best mean in bold
                         f"| DDPG | {mean['DDPG']:.1f} ± {std['DDPG']:.1f} (n=2) |"]  # a seed missing: n shown
    one = summary_rows(spec, runs[:1] + runs[3:], last_k=2)  # TD3 with one finished seed: a score, no spread
    assert table2_markdown(spec, one, last_k=2).splitlines()[4] == f"| TD3 | **{td3[0]:.1f}** (n=1) |"


def test_another_sweep_in_the_same_directory_is_refused(tmp_path):
    open_sweep_dir(tmp_path / "s", sweep_spec([ENV], ["TD3"], [0, 1], TINY, STEPS))
    with pytest.raises(ValueError, match=r"seeds is \[0, 1\] there, \[0, 1, 2\] now"):
        sweep(ENV, ["TD3"], [0, 1, 2], out_dir=tmp_path / "s", overrides=TINY, steps=STEPS)
    with pytest.raises(ValueError, match=r"overrides is .* there"):
        sweep(ENV, ["TD3"], [0, 1], out_dir=tmp_path / "s", overrides={**TINY, "tau": 0.01}, steps=STEPS)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not empty and holds no sweep.json"):
        sweep(ENV, ["TD3"], [0], out_dir=tmp_path / "other")


def test_a_sweep_saved_before_a_config_field_existed_resumes_while_the_field_keeps_its_default(tmp_path):
    """A sweep.json written before TD3Config had cuda_graph lacks it in every config: absent
    stands for the default, so the sweep resumes; a value other than the default is another sweep."""
    spec = sweep_spec([ENV], ["TD3", "DDPG"], [0, 1], TINY, STEPS)
    out = tmp_path / "s"
    open_sweep_dir(out, spec)
    saved = json.loads((out / "sweep.json").read_text())
    for config in saved["configs"].values():
        del config["cuda_graph"]
    (out / "sweep.json").write_text(json.dumps(saved))
    open_sweep_dir(out, spec)  # resumes
    graphed = json.loads(json.dumps(spec))
    graphed["configs"][f"{ENV}/TD3"]["cuda_graph"] = True
    with pytest.raises(ValueError, match=r"holds another sweep \(the Pendulum-v1/TD3 config has "
                                         r"cuda_graph=False there, True now\)"):
        open_sweep_dir(out, graphed)
    saved["configs"][f"{ENV}/DDPG"]["cuda_graph"] = True
    (out / "sweep.json").write_text(json.dumps(saved))
    with pytest.raises(ValueError, match=r"the Pendulum-v1/DDPG config has cuda_graph=True there, False now"):
        open_sweep_dir(out, spec)


def test_a_local_ray_that_does_not_start_leaves_the_runs_to_this_process(tmp_path, monkeypatch, capsys):
    """On a machine too busy for Ray's helpers to come up, the sweep trains its runs here, one after
    another, with the task Ray would run: the same histories as train, the thread count restored."""
    pytest.importorskip("ray")
    tasks = importlib.import_module("td3_lib.sweep.tasks")  # td3_lib.sweep is also the function

    def busy(*args, **kwargs):
        raise tasks.LocalRayDidNotStart("Ray did not start on this machine (timed out)")

    monkeypatch.setattr(tasks, "start_local_ray", busy)
    threads = torch.get_num_threads()
    result = sweep(ENV, ["TD3", "DDPG"], [0], out_dir=tmp_path / "s", steps=STEPS, overrides=TINY,
                   device="cpu", progress=False)
    assert "Training the 2 runs in this process" in capsys.readouterr().out
    assert not result.failed and len(result.finished) == 2 and torch.get_num_threads() == threads
    direct = direct_histories(["TD3", "DDPG"], [0])
    for run in result.finished:
        assert comparable(run.history) == comparable(direct[run.variant, run.seed])


# ---------------------------------------------------------------- a real local Ray

@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    from td3_lib.sweep import start_local_ray
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # this file's probes, to the workers
    start_local_ray(num_cpus=2)
    yield ray
    ray.shutdown()


def direct_histories(variants, seeds):
    """The same runs made with train in this process, one torch thread."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return {(v, s): train(ENV, variant_config(ENV, v, TINY, STEPS), seed=s, device="cpu",
                              progress=False).history for v in variants for s in seeds}
    finally:
        torch.set_num_threads(threads)


def comparable(history):
    """History rows without wall_s, NaN as None (the first evaluation has no loss yet)."""
    return [{k: None if isinstance(h[k], float) and np.isnan(h[k]) else h[k] for k in COMPARED}
            for h in history]


class WorkerDiesOnce:
    """A probe that ends its Ray worker's process at the run's second evaluation, once per sweep
    (the marker file says it has happened): the run then has a checkpoint from its first one, and
    Ray retries it on a new worker. Sent to the workers by value (see ``local_ray``)."""

    def __init__(self, marker):
        self.marker, self.evaluations = str(marker), 0

    def __call__(self, agent, episodes) -> dict:
        self.evaluations += 1
        if self.evaluations == 2 and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            os._exit(9)
        return {}


@pytest.mark.slow
def test_sweep_equals_train_survives_a_lost_worker_and_skips_finished_runs(tmp_path, local_ray):
    out, marker = tmp_path / "sweep", tmp_path / "a-worker-died"
    result = sweep([ENV], ["TD3", "DDPG"], [0, 1], out_dir=out, overrides=TINY, steps=STEPS, progress=False,
                   probes=(WorkerDiesOnce(marker),))
    assert marker.exists() and not result.failed and len(result.finished) == 4
    resumed = [json.loads((run.path / DONE_NAME).read_text())["resumed_from"] for run in result.runs]
    assert sorted(resumed) == [0, 0, 0, 200]  # the lost run, retried from its checkpoint at step 200

    direct = direct_histories(["TD3", "DDPG"], [0, 1])
    for run in result.runs:
        assert comparable(read_history(run.path / "history.csv")) == comparable(direct[run.variant, run.seed])

    rows = {r["variant"]: r for r in read_summary(out / "summary.csv")}
    for variant in ("TD3", "DDPG"):
        scores = [final_score(direct[variant, s], 3) for s in (0, 1)]
        low, high = bootstrap_ci(scores)
        assert rows[variant] == {"env": ENV, "variant": variant, "n_seeds": 2,
                                 "mean": pytest.approx(np.mean(scores)),
                                 "std": pytest.approx(np.std(scores, ddof=1)),
                                 "ci_low": pytest.approx(low), "ci_high": pytest.approx(high)}
    table = (out / "summary.md").read_text()
    assert "| Method | Pendulum-v1 |" in table and "last 3 evaluations" in table
    assert "| DDPG − TD3 | " in table.split("Each variant minus TD3")[1]
    assert (out / f"curves-{ENV}.png").stat().st_size > 0

    before = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file() and p.parent != out}
    again = sweep([ENV], ["TD3", "DDPG"], [0, 1], out_dir=out, overrides=TINY, steps=STEPS, progress=False,
                  probes=(WorkerDiesOnce(marker),))
    assert len(again.finished) == 4 and again.ray_start_s == 0.0
    assert {p: p.stat().st_mtime_ns for p in before} == before  # nothing redone or rewritten


@pytest.mark.slow
def test_failed_run_keeps_its_traceback_and_the_others_go_on(tmp_path, local_ray, capsys):
    out = tmp_path / "sweep"
    open_sweep_dir(out, sweep_spec([ENV], ["TD3"], [0, 1], TINY, STEPS))
    broken = out / ENV / "TD3" / "seed1"
    broken.mkdir(parents=True)
    (broken / CHECKPOINT_NAME).write_bytes(b"not a checkpoint")
    with pytest.raises(SystemExit) as exit_:
        main(["sweep", "--env", ENV, "--variants", "TD3", "--seeds", "0,1", "--out", str(out), "--quiet"]
             + TINY_ARGS)
    assert exit_.value.code == 1
    printed = capsys.readouterr().out
    assert "1 of 2 runs finished, 1 failed" in printed and f"FAILED {broken}" in printed
    trace = (broken / ERROR_NAME).read_text()
    assert trace.startswith("Traceback") and "CheckpointError" in trace and "not a readable checkpoint" in trace
    assert (out / ENV / "TD3" / "seed0" / DONE_NAME).exists()
    assert [r["n_seeds"] for r in read_summary(out / "summary.csv")] == [1]

    (broken / CHECKPOINT_NAME).unlink()  # repaired: the next start retries the failed run only
    finished = (out / ENV / "TD3" / "seed0" / DONE_NAME).stat().st_mtime_ns
    result = sweep([ENV], ["TD3"], [0, 1], out_dir=out, overrides=TINY, steps=STEPS, progress=False)
    assert len(result.finished) == 2 and not (broken / ERROR_NAME).exists()
    assert (out / ENV / "TD3" / "seed0" / DONE_NAME).stat().st_mtime_ns == finished


@pytest.mark.slow
def test_killed_driver_restarts_without_redoing_a_finished_run(tmp_path, local_ray):
    """The driver process ends itself as soon as it has the first run's outcome; the third run is
    held back until the driver is gone (2 CPUs: it waits for the first two anyway), so the driver
    always dies part-way. A new driver finishes the sweep without touching what was finished.

    The third run waits on a lock the driver holds (flock): the system releases it when the driver's
    process ends, however it ends, so the run goes on at that moment, with no clock involved."""
    out, held = tmp_path / "sweep", tmp_path / "held-by-the-driver"
    address = local_ray.get_runtime_context().gcs_address
    argv = ["sweep", "--env", ENV, "--variants", "TD3", "--seeds", "0-2", "--out", str(out), "--address",
            address, "--quiet"] + TINY_ARGS
    driver = textwrap.dedent(f"""
        import fcntl
        import os
        from td3_lib.sweep import tasks
        from td3_lib.__main__ import main
        first_outcome = tasks.ray_outcome
        real_train_run = tasks.train_run
        HELD = {str(held)!r}
        lock = open(HELD, "w")
        fcntl.flock(lock, fcntl.LOCK_EX)  # held until this process ends

        def die_after_the_first_outcome(*args):
            first_outcome(*args)
            os._exit(9)

        def train_run_holding_seed_2(env_id, variant, seed, *rest):  # sent to the workers by value
            if seed != 2:
                return real_train_run(env_id, variant, seed, *rest)
            with open(HELD) as wait:
                fcntl.flock(wait, fcntl.LOCK_EX)  # returns once the driver is gone
            return {{"status": "failed", "error": "held back until the driver was gone"}}

        tasks.ray_outcome = die_after_the_first_outcome
        tasks.train_run = train_run_holding_seed_2
        main({argv!r})
    """)
    done = subprocess.run([sys.executable, "-c", driver], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert done.returncode == 9
    dones = [out / ENV / "TD3" / f"seed{s}" / DONE_NAME for s in range(3)]
    finished = {d: d.parent for d in dones if d.exists()}
    assert 1 <= len(finished) < 3 and dones[2] not in finished
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for d in finished.values()
              for p in d.iterdir()}
    result = sweep([ENV], ["TD3"], [0, 1, 2], out_dir=out, overrides=TINY, steps=STEPS, progress=False)
    assert len(result.finished) == 3
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in before} == before
    assert all(read_history(d.parent / "history.csv")[-1]["step"] == STEPS for d in dones)
    assert [r.status for r in load_sweep(out).runs] == ["finished"] * 3


@pytest.mark.slow
def test_cuda_without_a_gpu_in_the_cluster_is_refused(tmp_path, local_ray):
    if local_ray.cluster_resources().get("GPU"):
        pytest.skip("this Ray cluster has a GPU")
    with pytest.raises(ValueError, match="device='cuda' asked for, but the Ray cluster has no GPU"):
        sweep([ENV], ["TD3"], [0], out_dir=tmp_path / "s", overrides=TINY, steps=STEPS, device="cuda")
    with pytest.raises(ValueError, match=r"gpus_per_run=1.5: it must be in \(0, 1\]"):
        sweep([ENV], ["TD3"], [0], out_dir=tmp_path / "s", overrides=TINY, steps=STEPS, gpus_per_run=1.5)


def test_a_sweep_names_its_folders_and_curves_by_the_id_without_its_module(tmp_path):
    """``--env my_tasks:MyTask-v0`` (your own environment) keeps the module out of every path: a colon
    in a folder name breaks Windows and the train command's own naming (runs/MyTask-v0-seed0)."""
    from td3_lib.sweep.grid import SweepRun
    from td3_lib.sweep.summary import curves_path
    assert SweepRun("my_tasks:MyTask-v0", "TD3", 2).path(tmp_path) == tmp_path / "MyTask-v0" / "TD3" / "seed2"
    assert SweepRun("Pendulum-v1", "TD3", 0).path(tmp_path) == tmp_path / "Pendulum-v1" / "TD3" / "seed0"
    assert curves_path(tmp_path, "my_tasks:MyTask-v0") == tmp_path / "curves-MyTask-v0.png"


@contextlib.contextmanager
def ray_started_by_the_cli(env: dict, port: int):
    """`ray start --head` in a session of its own (so that ending it ends every Ray process it began,
    and nothing else), its files under a short folder (Ray's sockets must fit a Unix path)."""
    temp_dir = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    cmd = [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", f"--port={port}", "--num-cpus=1",
           "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={temp_dir}", "--block"]
    head = subprocess.Popen(cmd, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(head.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                head.wait(timeout=30)
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.mark.slow
def test_a_sweep_joins_a_cluster_begun_by_ray_start_with_rays_token_mode(tmp_path):
    """docs/sweeps.md's recipe, on one machine. Where the machine holds a token, `ray start --head` turns
    Ray's token authentication on (Ray >= 2.59); a sweep that joins by address without RAY_AUTH_MODE is
    refused in one line that names the setting; with RAY_AUTH_MODE=token the same sweep finishes."""
    ray = pytest.importorskip("ray")
    if tuple(int(p) for p in ray.__version__.split(".")[:2]) < (2, 59):
        pytest.skip(f"Ray {ray.__version__} does not turn token authentication on by itself")
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    env.pop("RAY_AUTH_MODE", None)  # a Ray started in this process (another test's) sets it here
    subprocess.run([sys.executable, "-m", "ray.scripts.scripts", "get-auth-token", "--generate"], env=env,
                   check=True, capture_output=True)
    port = free_port()
    out = tmp_path / "sweep"
    argv = [sys.executable, "-m", "td3_lib", "sweep", "--env", ENV, "--variants", "TD3", "--seeds", "0", "--out",
            str(out), "--address", f"127.0.0.1:{port}", "--quiet"] + TINY_ARGS
    with ray_started_by_the_cli(env, port):
        for _ in range(240):  # until its GCS listens
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            time.sleep(0.5)
        refused = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
        assert refused.returncode == 2, refused.stderr[-2000:]
        last = refused.stderr.strip().splitlines()[-1]
        assert f"Cannot join a Ray cluster at 127.0.0.1:{port}" in last and "set RAY_AUTH_MODE=token" in last
        joined = subprocess.run(argv, env={**env, "RAY_AUTH_MODE": "token"}, capture_output=True, text=True,
                                timeout=600)
    assert joined.returncode == 0, joined.stderr[-2000:]
    assert (out / ENV / "TD3" / "seed0" / DONE_NAME).exists()


@pytest.mark.slow
def test_a_batched_sweep_writes_the_runs_a_sweep_of_single_runs_writes(tmp_path, local_ray, capsys):
    """TD3, DDPG and the three ablations over 5 seeds as batches (two processes, one per core of the local
    Ray), one of whose workers dies at its second evaluation and is retried: 25 ordinary run directories,
    each member resumed from its own checkpoint (or from scratch), whose histories are the single runs'
    (the same numbers, to the last bit, on the CPU), which the summary scores and ``evaluate`` reads."""
    variants, seeds = ["TD3", "DDPG", "TD3-CDQ", "TD3-TPS", "TD3-DP"], [0, 1, 2, 3, 4]
    out, marker = tmp_path / "sweep", tmp_path / "a-worker-died"
    result = sweep([ENV], variants, seeds, out_dir=out, overrides=TINY, steps=STEPS, progress=False,
                   probes=(WorkerDiesOnce(marker),), batched=True)
    assert marker.exists() and not result.failed and len(result.finished) == 25
    done = [json.loads((run.path / DONE_NAME).read_text()) for run in result.runs]
    assert sorted({d["batch_members"] for d in done}) == [12, 13]  # 25 runs cut into one batch per core
    assert sorted(d["resumed_from"] for d in done).count(200) == 1  # the member checkpointed before the death
    for run in result.runs:
        assert {"history.csv", "checkpoint.pt", "best_actor.pt", "provenance.json"} <= {p.name for p in run.path.iterdir()}
    direct = direct_histories(["TD3", "DDPG"], [0, 3])
    for run in result.runs:
        if (run.variant, run.seed) in direct:
            assert comparable(read_history(run.path / "history.csv")) == comparable(direct[run.variant, run.seed])
    assert [r["n_seeds"] for r in read_summary(out / "summary.csv")] == [5] * 5
    assert main(["evaluate", str(out / ENV / "TD3-DP" / "seed4" / "best_actor.pt"),
                 "--episodes", "1"]) == 0
    assert "Pendulum-v1: mean" in capsys.readouterr().out
