"""The batched TD3: member k of one batched update is ``TD3.update`` of its own agent (and so the authors'
update in ``reference.py``), for every combination of the tricks, with uneven action bounds; members left
out are untouched; a batched training run is its members' single runs; the stacked replay buffers serve
each member as its own buffer would."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from td3_lib import Batch, ReplayBuffer, TD3, TD3Config, train
from td3_lib.batched import BatchedTD3
from td3_lib.batched_training import train_batched
from td3_lib.buffer import StackedReplayBuffers
from td3_lib.course.reference import ReferenceTD3
from td3_lib.run import saved_step
from test_update import as_td3_lib, in_order

LOW, HIGH = [-2.0, 0.0, -0.1], [2.0, 10.0, 0.3]  # half-ranges 2, 5 and 0.2
SWITCHES = ("clipped_double_q", "target_policy_smoothing", "delayed_policy_updates")
COMBINATIONS = list(itertools.product((True, False), repeat=3))
BASE = TD3Config(hidden_sizes=(32, 32), batch_size=48)


def member_configs(action_dims: int = 3) -> list[TD3Config]:
    """One config per combination of the three tricks, each with its own noise scales, delay, tau, discount
    and learning rates (a large smoothing noise against a small clip, so that the clip acts)."""
    return [dataclasses.replace(BASE, **dict(zip(SWITCHES, on)), policy_noise=0.3 + 0.1 * k, noise_clip=0.25,
                                policy_freq=2 + k % 3, tau=0.05 * (1 + k % 2), discount=0.99 - 0.02 * (k % 3),
                                actor_lr=1e-3 * (1 + k % 2), critic_lr=2e-3 / (1 + k % 2))
            for k, on in enumerate(COMBINATIONS)]


def agents_of(configs, low=LOW, high=HIGH, obs_dim: int = 4) -> list[TD3]:
    agents = []
    for k, cfg in enumerate(configs):
        torch.manual_seed(k)
        agents.append(TD3(obs_dim, low, high, cfg))
    return agents


def batches_of(n_members: int, it: int, low=LOW, high=HIGH, obs_dim: int = 4, size: int = 48) -> list[Batch]:
    g = torch.Generator().manual_seed(1000 + it)
    lo, hi = torch.tensor(low), torch.tensor(high)
    return [Batch(torch.randn(size, obs_dim, generator=g), lo + torch.rand(size, len(low), generator=g) * (hi - lo),
                  torch.randn(size, 1, generator=g), torch.randn(size, obs_dim, generator=g),
                  (torch.rand(size, 1, generator=g) > 0.2).float()) for _ in range(n_members)]


def stacked(batches: list[Batch]) -> Batch:
    return Batch(*(torch.stack(fields) for fields in zip(*batches)))


def state(agent: TD3) -> dict:
    """Everything an update changes: the four networks, both optimizers' states, the update count."""
    full = agent.state_dict()
    return {k: full[k] for k in ("actor", "actor_target", "critic", "critic_target", "actor_optimizer",
                                 "critic_optimizer", "total_it")}


def member_state(batched: BatchedTD3, k: int, member: TD3) -> dict:
    """Member k's ``state``, written into ``member`` (an agent built as member k was)."""
    batched.write_member(k, member)
    return state(member)


@pytest.mark.parametrize("action_dims", [3, 1])
def test_every_member_equals_its_own_td3_update_for_every_combination_of_the_tricks(action_dims):
    """Eight members, one per combination of the tricks, each with its own scales, delay, tau, discount and
    learning rates, against eight ``TD3`` agents, over 120 updates on the same minibatches: each member's
    losses equal its agent's after every update, and its networks, targets, Adam state, update count and
    generator after every 8th and the last (float tolerance; on the CPU they agree to the last bit). One
    action dimension as well as three: a layer of one output is rounded otherwise by a batched product."""
    low, high = LOW[:action_dims], HIGH[:action_dims]
    agents = agents_of(member_configs(), low, high)
    singles, members = [copy.deepcopy(a) for a in agents], [copy.deepcopy(a) for a in agents]
    batched = BatchedTD3(agents)
    for it in range(1, 121):
        batches = batches_of(len(agents), it, low, high)
        wanted = [single.update(b) for single, b in zip(singles, batches)]
        got = batched.update(stacked(batches))
        for k, single in enumerate(singles):
            where = f"member {k} ({dict(zip(SWITCHES, COMBINATIONS[k]))}) after update {it}"
            for name in ("critic_loss", "q1", "actor_loss"):
                mine = got[name][k] if name in got else torch.tensor(float("nan"))
                theirs = wanted[k].get(name, torch.tensor(float("nan")))
                torch.testing.assert_close(mine, theirs, equal_nan=True, msg=f"{where}: {name}")
            if it % 8 == 0 or it == 120:
                assert_near(member_state(batched, k, members[k]), state(single), where)
                assert torch.equal(batched.generators[k].get_state(), single.generator.get_state()), where


@pytest.mark.parametrize("on", COMBINATIONS, ids=lambda on: "".join("+" if x else "-" for x in on))
def test_a_member_equals_the_authors_update(on):
    """Member 0 against the flat reference TD3 (the authors' shape: two nn.Linear critics, plain Adam, a
    loop per parameter), drawing the same smoothing noise, for six iterations, for each combination of the
    tricks; member 1 (the other clipped-double-Q setting) shares the batch."""
    cfg = dataclasses.replace(member_configs()[COMBINATIONS.index(on)], tau=0.1)
    agent, partner = agents_of([cfg, dataclasses.replace(cfg, clipped_double_q=not on[0])])
    ref = ReferenceTD3.from_agent(agent)
    batched = BatchedTD3([agent, partner])
    member = copy.deepcopy(agent)
    for it in range(6):
        batches = batches_of(2, it)
        torch.set_rng_state(batched.generators[0].get_state())  # the reference draws from the global generator
        ref.train(batches[0])
        batched.update(stacked(batches))
        batched.write_member(0, member)
        mine, theirs = in_order(member), as_td3_lib(ref)
        for name in mine:
            for p, q in zip(mine[name], theirs[name], strict=True):
                torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6, msg=f"{name} after iteration {it + 1}")


def test_members_left_out_and_members_between_actor_steps_are_untouched():
    """A member left out of an update keeps everything (weights, targets, Adam state, update count, generator)
    to the last bit; a member whose delay skips the actor step keeps its actor, actor Adam state and targets."""
    configs = member_configs()
    batched = BatchedTD3(agents_of(configs))
    batched.update(stacked(batches_of(8, 0)))
    like = agents_of(configs)
    before = [copy.deepcopy(member_state(batched, k, like[k])) for k in range(8)]
    generators = [g.get_state() for g in batched.generators]
    active = np.array([True, False] * 4)
    batched.update(stacked(batches_of(8, 1)), active)
    for k in range(8):
        after = member_state(batched, k, like[k])
        if not active[k]:
            assert all(torch.equal(a, b) for a, b in zip(flat(after), flat(before[k]))), f"member {k} moved"
            assert torch.equal(batched.generators[k].get_state(), generators[k])
        elif batched.total_it[k] % batched.policy_freq[k] != 0:
            for name in ("actor", "actor_target", "critic_target", "actor_optimizer"):
                assert all(torch.equal(a, b) for a, b in zip(flat(after[name]), flat(before[k][name]))), (k, name)
            assert not all(torch.equal(a, b) for a, b in zip(flat(after["critic"]), flat(before[k]["critic"])))


def assert_near(mine: dict, theirs: dict, where: str) -> None:
    """Every tensor of two states equal to float tolerance (rtol 1e-5, atol 1e-6), the first that is not named."""
    for (path, a), (_, b) in zip(flat_named(mine), flat_named(theirs), strict=True):
        if not torch.allclose(a.float(), b.float(), rtol=1e-5, atol=1e-6):
            raise AssertionError(f"{where}: {path} differs by up to {(a.float() - b.float()).abs().max().item():.3g}")


def flat_named(tree, path: str = "") -> list[tuple[str, torch.Tensor]]:
    """The tensors of a nested state with their paths, in a fixed order (numbers as tensors)."""
    if isinstance(tree, torch.Tensor):
        return [(path, tree)]
    if isinstance(tree, dict):
        return [x for key in sorted(tree, key=str) for x in flat_named(tree[key], f"{path}/{key}")]
    if isinstance(tree, (list, tuple)):
        return [x for i, item in enumerate(tree) for x in flat_named(item, f"{path}/{i}")]
    return [(path, torch.tensor(float(tree)))] if isinstance(tree, (int, float)) else []


def flat(tree) -> list[torch.Tensor]:
    """The tensors of a nested state, in a fixed order."""
    if isinstance(tree, torch.Tensor):
        return [tree]
    if isinstance(tree, dict):
        return [t for key in sorted(tree, key=str) for t in flat(tree[key])]
    if isinstance(tree, (list, tuple)):
        return [t for item in tree for t in flat(item)]
    return [torch.tensor(float(tree))] if isinstance(tree, (int, float)) else []


def test_members_that_cannot_share_a_batch_are_refused_in_one_line():
    small, wide = agents_of([BASE, dataclasses.replace(BASE, hidden_sizes=(64, 64))])
    with pytest.raises(ValueError, match=r"Member 1 has hidden_sizes \(64, 64\), member 0 \(32, 32\)"):
        BatchedTD3([small, wide])
    other_bounds = agents_of([BASE], low=[-1.0, 0.0, -0.1])[0]
    with pytest.raises(ValueError, match="Member 1 has action bounds"):
        BatchedTD3([small, other_bounds])

    class Changed(TD3):
        pass

    torch.manual_seed(0)
    with pytest.raises(ValueError, match="Member 0 is a Changed: a batch updates plain TD3 agents only"):
        BatchedTD3([Changed(4, LOW, HIGH, BASE)])
    with pytest.raises(ValueError, match="at least one member"):
        BatchedTD3([])


def test_stacked_buffers_add_and_sample_as_each_members_own_buffer():
    """Two members' transitions stored together are the ones their own ReplayBuffers store, and each member's
    minibatch, drawn from its own generator, is the one its buffer would draw; a member left out draws nothing."""
    own = [ReplayBuffer(3, 2, 50), ReplayBuffer(3, 2, 30)]
    theirs = [ReplayBuffer(3, 2, 50), ReplayBuffer(3, 2, 30)]
    replay = StackedReplayBuffers(theirs)
    rng = np.random.default_rng(0)
    for t in range(70):
        members = [0, 1] if t % 3 else [0]
        rows = [(rng.normal(size=3), rng.normal(size=2), rng.normal(), rng.normal(size=3), bool(rng.random() < 0.1))
                for _ in members]
        for k, row in zip(members, rows):
            own[k].add(*row)
        replay.add(*(np.stack(column) for column in zip(*rows)), members=members)
    for k in range(2):
        assert (theirs[k].ptr, theirs[k].size) == (own[k].ptr, own[k].size)
        for name in ("obs", "action", "reward", "next_obs", "not_done"):
            assert torch.equal(getattr(theirs[k], name), getattr(own[k], name)), (k, name)
    g_own = [torch.Generator().manual_seed(s) for s in (5, 6)]
    g_stacked = [torch.Generator().manual_seed(s) for s in (5, 6)]
    batch = replay.sample(16, g_stacked, members=[0])
    for field, value in zip(Batch._fields, own[0].sample(16, generator=g_own[0])):
        assert torch.equal(getattr(batch, field)[0], value), field
    assert torch.equal(g_stacked[1].get_state(), g_own[1].get_state())  # member 1 drew nothing


RUN = TD3Config(hidden_sizes=(32, 32), start_timesteps=300, total_steps=900, eval_freq=300, eval_episodes=1,
                batch_size=64)


def without_clock(history: list[dict]) -> list[str]:
    """A history's rows without their clock, as text (so that a NaN loss equals a NaN loss)."""
    return [repr({k: v for k, v in row.items() if k != "wall_s"}) for row in history]


@pytest.mark.slow
def test_a_batched_run_is_its_members_single_runs(tmp_path):
    """TD3, DDPG and TD3 without delay with different seeds and budgets, trained as one batch, against each
    trained alone: the same histories (every evaluation, loss and episode count) and the same final agents,
    to the last bit on the CPU; each member's directory holds an ordinary run that ``train`` resumes."""
    configs = [RUN, dataclasses.replace(RUN, clipped_double_q=False, target_policy_smoothing=False,
                                        delayed_policy_updates=False, total_steps=600),
               dataclasses.replace(RUN, delayed_policy_updates=False, expl_noise=0.3)]
    seeds, dirs = [0, 7, 3], [tmp_path / f"m{k}" for k in range(3)]
    results = train_batched("Pendulum-v1", configs, seeds, run_dirs=dirs, device="cpu", progress=False)
    for result, config, seed, run_dir in zip(results, configs, seeds, dirs):
        alone = train("Pendulum-v1", config, seed=seed, device="cpu", progress=False)
        assert without_clock(result.history) == without_clock(alone.history)
        assert all(torch.equal(a, b) for a, b in zip(flat(state(result.agent)), flat(state(alone.agent))))
        assert (run_dir / "checkpoint.pt").exists() and (run_dir / "best_actor.pt").exists()
    longer = dataclasses.replace(configs[1], total_steps=900)
    resumed = train("Pendulum-v1", longer, device="cpu", checkpoint_dir=dirs[1], resume=True, progress=False)
    assert [h["step"] for h in resumed.history] == [300, 600, 900]


KILLED = textwrap.dedent("""
    import os, sys, torch
    torch.set_num_threads(1)
    import td3_lib.checkpoint as checkpoint
    from td3_lib.batched_training import train_batched
    from test_batched import KILL_CONFIGS, KILL_SEEDS

    root, nth = sys.argv[1], int(sys.argv[2])
    writes = []

    def die_at_nth_checkpoint(path):  # the process ends once its nth checkpoint is complete, not yet renamed
        writes.append(path.name)
        if writes.count("checkpoint.pt") == nth:
            os._exit(9)

    checkpoint.after_temp_written = die_at_nth_checkpoint
    train_batched("Pendulum-v1", KILL_CONFIGS, KILL_SEEDS, run_dirs=[f"{root}/m{k}" for k in range(3)],
                  device="cpu", progress=False, resume=True, save_buffer=True)
""")
KILL_CONFIGS = [dataclasses.replace(RUN, total_steps=1500, eval_freq=300),
                dataclasses.replace(RUN, total_steps=1200, eval_freq=500, clipped_double_q=False),
                dataclasses.replace(RUN, total_steps=1500, eval_freq=700, delayed_policy_updates=False)]
KILL_SEEDS = [4, 5, 4]


@pytest.mark.slow
def test_a_batched_run_killed_twice_resumes_to_the_uninterrupted_runs(tmp_path):
    """A batched run of three members whose evaluations (and so checkpoints) fall at different steps, its
    process ended at two exact moments (a checkpoint complete in its temporary file, not yet renamed), then
    resumed to its budgets: each member resumes from its own last checkpoint, and every member's history and
    final agent equal its run trained alone without a stop."""
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path])}
    # Checkpoints follow the evaluations (every 300, 500 and 700 steps) at the next episode end (every 200):
    # the 6th write of the first process leaves them at 1000, 600 and 800; the second process resumes the
    # members from there, at three different steps, and its 2nd write (member 1's at 1000) ends it.
    for nth, left in ((6, [1000, 600, 800]), (2, [1200, 600, 800])):
        done = subprocess.run([sys.executable, "-W", "ignore", str(script), str(tmp_path), str(nth)], env=env)
        assert done.returncode == 9, f"the process did not end at its checkpoint {nth}"
        assert [saved_step(tmp_path / f"m{k}") for k in range(3)] == left
    # resumed without save_buffer: each member keeps saving the buffer its checkpoint holds
    resumed = train_batched("Pendulum-v1", KILL_CONFIGS, KILL_SEEDS, run_dirs=[tmp_path / f"m{k}" for k in range(3)],
                            device="cpu", progress=False, resume=True)
    assert all(torch.load(tmp_path / f"m{k}" / "checkpoint.pt", weights_only=True)["buffer"] is not None for k in range(3))
    for result, config, seed in zip(resumed, KILL_CONFIGS, KILL_SEEDS):
        alone = train("Pendulum-v1", config, seed=seed, device="cpu", progress=False)
        assert without_clock(result.history) == without_clock(alone.history)
        assert all(torch.equal(a, b) for a, b in zip(flat(state(result.agent)), flat(state(alone.agent))))
