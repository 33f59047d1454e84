"""Variants and probes by name: the registry's rules, sweep.json's record of them, and the sweep's worker
running a registered variant (its agent class, environment factory and probes) without Ray."""

import json
import re

import gymnasium as gym
import numpy as np
import pytest
import torch

from td3_lib import TD3, preset, train
from td3_lib.provenance import PROVENANCE_NAME
from td3_lib.run import read_history
from td3_lib.sweep import (DONE_NAME, REGISTRY, SWITCHES, VARIANTS, SweepRun, Variant, get_probe, get_variant,
                           open_sweep_dir, register, register_probe, run_config, spec_difference, sweep_spec,
                           variant_config)
from td3_lib.sweep.batches import train_batch
from td3_lib.sweep.tasks import registration, train_run

ENV = "Pendulum-v1"
TINY = dict(hidden_sizes=(32, 32), start_timesteps=200, eval_freq=200, eval_episodes=1, batch_size=32)
STEPS = 600


class HalfRewardTD3(TD3):
    """A TD3 subclass that changes one step of the update (the target), as the course's variants do."""

    def target_q(self, batch):
        return super().target_q(batch) * 0.5


class NegatedReward(gym.RewardWrapper):
    def reward(self, reward):
        return -reward


def negated(env_id):
    from td3_lib import make_env
    return NegatedReward(make_env(env_id))


def actor_norm(agent, episodes):
    with torch.no_grad():
        return {"actor_norm": float(sum(p.norm() for p in agent.actor.parameters()))}


class EveryFourHundred:
    every = 400

    def __call__(self, agent, episodes):
        return {"sparse": 1.0}


@pytest.fixture
def mine():
    """A variant of this file, registered for one test and removed after."""
    variant = register(Variant("half-target", VARIANTS["TD3"], agent=HalfRewardTD3, env=negated, probes=(actor_norm,)))
    yield variant
    del REGISTRY["half-target"]


def test_the_papers_variants_are_registered_first_and_named_in_errors():
    assert list(REGISTRY)[:len(VARIANTS)] == list(VARIANTS)
    assert all(get_variant(n).switches == VARIANTS[n] and get_variant(n).agent is TD3 for n in VARIANTS)
    with pytest.raises(ValueError, match=r"Unknown variant 'TD4'; allowed: TD3, DDPG, .*TD3-CDQ"):
        variant_config(ENV, "TD4")


def test_a_registered_variant_is_a_name_for_its_switches_agent_environment_and_probes(mine):
    assert get_variant("half-target") is mine
    assert variant_config(ENV, "half-target", TINY, STEPS) == variant_config(ENV, "TD3", TINY, STEPS)
    assert mine.describe() == {"switches": VARIANTS["TD3"], "agent": f"{__name__}.HalfRewardTD3",
                               "env": f"{__name__}.negated", "probes": [f"{__name__}.actor_norm"]}
    register(Variant("half-target", VARIANTS["TD3"], agent=HalfRewardTD3, env=negated, probes=(actor_norm,)))  # same again
    with pytest.raises(ValueError, match="'half-target' is registered already"):
        register(Variant("half-target", VARIANTS["TD3"], agent=TD3))
    with pytest.raises(ValueError, match="sets exactly the switches"):
        register(Variant("partial", {"clipped_double_q": False}))
    with pytest.raises(ValueError, match="is not TD3 or a subclass"):
        register(Variant("not-an-agent", VARIANTS["TD3"], agent=dict))
    assert "partial" not in REGISTRY and "not-an-agent" not in REGISTRY


def test_probes_by_name():
    register_probe("actor norm (test)", actor_norm)
    try:
        assert get_probe("actor norm (test)") is actor_norm and get_probe(actor_norm) is actor_norm
        with pytest.raises(ValueError, match=re.escape("'actor norm (test)' is registered already")):
            register_probe("actor norm (test)", EveryFourHundred())
        with pytest.raises(ValueError, match=r"Unknown probe 'nope'; allowed: .*actor norm \(test\)"):
            get_probe("nope")
        spec = sweep_spec([ENV], ["TD3"], [0], TINY, STEPS, probes=[get_probe("actor norm (test)"), EveryFourHundred()])
        assert spec["probes"] == [f"{__name__}.actor_norm", f"{__name__}.EveryFourHundred"]  # whatever is registered
        assert sweep_spec([ENV], ["TD3"], [0], TINY, STEPS, probes=["actor norm (test)", EveryFourHundred()]) == spec
    finally:
        del __import__("td3_lib.sweep.variants", fromlist=["PROBES"]).PROBES["actor norm (test)"]


def test_the_paper_preset_reaches_a_sweeps_configs():
    spec = sweep_spec([ENV], ["DDPG"], [0], {"eval_freq": 500}, 1000, settings="paper")
    config = spec["configs"][f"{ENV}/DDPG"]
    assert (config["hidden_sizes"], config["actor_lr"], config["batch_size"], config["start_timesteps"]) == \
        ([400, 300], 1e-3, 100, 1000)
    assert config["eval_freq"] == 500 and config["total_steps"] == 1000 and not config["clipped_double_q"]
    assert spec["settings"] == "paper"
    with pytest.raises(ValueError, match=r"Unknown preset 'papr'; allowed: course, paper\."):
        sweep_spec([ENV], ["TD3"], [0], settings="papr")


def test_a_sweep_saved_before_variants_were_recorded_resumes_and_a_changed_definition_is_refused(tmp_path, mine):
    spec = sweep_spec([ENV], ["TD3", "half-target"], [0], TINY, STEPS)
    old = {k: v for k, v in spec.items() if k not in ("settings", "definitions", "probes")}  # as older code wrote it
    (tmp_path / "sweep.json").write_text(json.dumps(old))
    open_sweep_dir(tmp_path, spec)  # resumes
    assert spec_difference(old, sweep_spec([ENV], ["TD3", "half-target"], [0], TINY, STEPS, settings="paper"))
    saved = {**spec, "definitions": {**spec["definitions"], "half-target": {**spec["definitions"]["half-target"],
                                                                           "agent": "td3_lib.agent.TD3"}}}
    (tmp_path / "sweep.json").write_text(json.dumps(saved))
    with pytest.raises(ValueError, match="holds another sweep \\(definitions is"):
        open_sweep_dir(tmp_path, spec)


def test_the_worker_trains_the_variant_as_train_would_and_records_its_provenance(tmp_path, mine):
    """train_run (what each Ray task runs) with a registered variant: its agent class on its environment,
    its probe beside the sweep's; the history equals train's; provenance.json says what made it; a second
    call finds the run finished and changes nothing."""
    spec = sweep_spec([ENV], ["half-target"], [0], TINY, STEPS, probes=[EveryFourHundred()])
    open_sweep_dir(tmp_path, spec)
    config = spec["configs"][f"{ENV}/half-target"]
    threads = torch.get_num_threads()
    try:
        outcome = train_run(ENV, mine, 0, config, str(tmp_path), "cpu", (EveryFourHundred(),), registration(ENV))
        direct = train(negated(ENV), variant_config(ENV, "half-target", TINY, STEPS), seed=0, device="cpu",
                       progress=False, agent=HalfRewardTD3, probes=(EveryFourHundred(), actor_norm)).history
    finally:
        torch.set_num_threads(threads)
    run_dir = tmp_path / ENV / "half-target" / "seed0"
    assert outcome["status"] == "finished" and (run_dir / DONE_NAME).exists()
    history = read_history(run_dir / "history.csv")
    keys = ("step", "eval_mean", "eval_std", "critic_loss", "actor_norm")
    same = [{k: None if np.isnan(h[k]) else h[k] for k in keys} for h in history]
    assert same == [{k: None if np.isnan(h[k]) else h[k] for k in keys} for h in direct]
    assert [h["step"] for h in history if "sparse" in h] == [400]  # a probe with every=400: at step 400 only
    assert preset(ENV) != variant_config(ENV, "half-target", TINY, STEPS)
    made = json.loads((run_dir / PROVENANCE_NAME).read_text())
    assert len(made) == 1 and made[0]["from_step"] == 0 and made[0]["machine"]["torch_threads"] == 1
    assert set(made[0]["versions"]) == {"torch", "gymnasium", "numpy", "python"}  # no mujoco for Pendulum
    before = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    assert train_run(ENV, mine, 0, config, str(tmp_path), "cpu", (EveryFourHundred(),))["status"] == "finished"
    assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == before


def test_an_environment_registered_by_the_drivers_code_is_sent_to_the_worker():
    assert registration(ENV) is None  # gymnasium's own
    gym.register("Toy-v9", entry_point="td3_lib.course.tasks:TwoKnobs")
    try:
        assert registration("Toy-v9").entry_point == "td3_lib.course.tasks:TwoKnobs"
    finally:
        del gym.registry["Toy-v9"]


def test_switches_of_every_registered_variant_are_the_three():
    import td3_lib.course.tasks  # noqa: F401  (registers the course's variants)
    assert all(set(v.switches) == set(SWITCHES) for v in REGISTRY.values())


def single_worker(run: SweepRun, spec: dict, out_dir: str) -> dict:
    return train_run(run.env_id, get_variant(run.variant), run.seed, run_config(spec, run.env_id, run.variant),
                     out_dir, "cpu")


def batched_worker(run: SweepRun, spec: dict, out_dir: str) -> dict:
    return train_batch([run], spec, out_dir, "cpu")[0]


@pytest.mark.parametrize("worker", [single_worker, batched_worker], ids=["single", "batched"])
def test_a_run_started_by_code_that_recorded_nothing_keeps_that_part_when_resumed(tmp_path, worker):
    """The first 400 steps trained as earlier code did (a checkpoint, no provenance.json), the rest by the
    worker (``train_run``, or ``train_batch`` with the run as its one member): the record says what the
    sweep's earlier record says from step 0, and this code from 400 on."""
    spec = sweep_spec([ENV], ["TD3"], [0], TINY, STEPS)
    open_sweep_dir(tmp_path / "old-0", spec)
    run_dir = tmp_path / "old-0" / ENV / "TD3" / "seed0"
    threads = torch.get_num_threads()
    try:
        train(ENV, variant_config(ENV, "TD3", TINY, 400), seed=0, device="cpu", progress=False,
              checkpoint_dir=run_dir, save_buffer=True)
        earlier = {"commit": "f" * 40, "versions": {"torch": "2"}, "machine": {"cpu": "x", "torch_threads": 1}}
        (tmp_path / "old.provenance.json").write_text(json.dumps(earlier))
        assert worker(SweepRun(ENV, "TD3", 0), spec, str(tmp_path / "old-0"))["status"] == "finished"
    finally:
        torch.set_num_threads(threads)
    made = json.loads((run_dir / PROVENANCE_NAME).read_text())
    assert [(m["from_step"], m["commit"] == "f" * 40) for m in made] == [(0, True), (400, False)]
    assert json.loads((run_dir / DONE_NAME).read_text())["resumed_from"] == 400


WORKER = """
import pickle, sys
import gymnasium
from td3_lib.sweep.tasks import train_run
assert "NarrowPeak-v0" not in gymnasium.registry and "td3_lib.course.tasks" not in sys.modules  # a fresh worker
first = pickle.load(sys.stdin.buffer)  # a run of TD3 on a task only the driver's code registered
print(train_run(*first)["status"])
course = pickle.load(sys.stdin.buffer)  # the course's variants and probes, imported by name as they load
print(sorted(v.name for v in course["variants"]), [type(p).__name__ for p in course["probes"]])
"""


def test_what_a_task_carries_reaches_a_fresh_worker_process(tmp_path):
    """What Ray sends each task (by pickle: classes and functions by name) reaches a worker process that
    never imported the course: the driver's registration of NarrowPeak-v0 lets it train there, and the
    course's variants and probes load there."""
    import pickle
    import subprocess
    import sys

    import td3_lib.course.tasks  # noqa: F401
    spec = sweep_spec(["NarrowPeak-v0"], ["TD3"], [0], TINY, 400)
    open_sweep_dir(tmp_path, spec)
    first = ("NarrowPeak-v0", get_variant("TD3"), 0, spec["configs"]["NarrowPeak-v0/TD3"], str(tmp_path), "cpu", (),
             registration("NarrowPeak-v0"))
    course = {"variants": [get_variant("time limit as terminal"), get_variant("fixed Hopper-v5 policy")],
              "probes": [get_probe(n) for n in ("narrow peak", "Pendulum-v1 true value", "critic")]}
    done = subprocess.run([sys.executable, "-c", WORKER], input=pickle.dumps(first) + pickle.dumps(course),
                          capture_output=True, check=True)
    lines = done.stdout.decode().splitlines()
    assert lines[0] == "finished" and (tmp_path / "NarrowPeak-v0" / "TD3" / "seed0" / DONE_NAME).exists()
    assert lines[1] == "['fixed Hopper-v5 policy', 'time limit as terminal'] ['NarrowPeakProbe', 'TrueValue', 'function']"
