"""The GPU path a Colab learner takes: train, checkpoint, resume, move checkpoints between devices,
the CUDA-graph update (TD3Config.cuda_graph) against the eager one, and the batched update (K runs in
one process, td3_lib.batched) on the GPU against its eager self and against each member's own TD3.

The tests marked ``needs_cuda`` skip on a machine without CUDA (benchmarks/gpu_check.py runs them
where there is one); the same checkpoint path is covered on the CPU by tests/test_resume.py (a
checkpoint whose tensors were saved on a GPU resumes on the CPU). The CUDA graph's rules that hold
on any machine (refused off a GPU, checkpoints with and without the field) are tested here on the CPU.
"""

import dataclasses

import numpy as np
import pytest
import torch

from conftest import Interrupt, stop_at
from td3_lib import Batch, TD3, TD3Config, train
from td3_lib.batched import BatchedTD3, actor_forward, actor_params, critic_params
from td3_lib.cuda_graph import StaticBatch

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

CFG = TD3Config(hidden_sizes=(64, 64), start_timesteps=300, total_steps=1200, eval_freq=400,
                eval_episodes=1, batch_size=64)
GRAPH_CFG = dataclasses.replace(CFG, cuda_graph=True)
OBS, ACT = 11, 3  # Hopper-v5's sizes


def random_batches(n: int, size: int, device: str, seed: int = 0, act: int = ACT) -> list[Batch]:
    g = torch.Generator(device).manual_seed(seed)

    def draw(*shape):
        return torch.randn(*shape, generator=g, device=device)
    return [Batch(draw(size, OBS), draw(size, act).clamp(-1, 1), draw(size, 1), draw(size, OBS),
                  (torch.rand(size, 1, generator=g, device=device) > 0.05).float()) for _ in range(n)]


def same_start(cfg: TD3Config, device: str) -> tuple[TD3, TD3]:
    """An eager agent and a CUDA-graph one with the same weights and generator state."""
    agents = []
    for cuda_graph in (False, True):
        torch.manual_seed(0)
        agents.append(TD3(OBS, -np.ones(ACT), np.ones(ACT), dataclasses.replace(cfg, cuda_graph=cuda_graph),
                          device=device))
    return agents[0], agents[1]


MEMBERS = [dataclasses.replace(TD3Config(hidden_sizes=(64, 64), batch_size=128), clipped_double_q=c,
                               target_policy_smoothing=s, delayed_policy_updates=d, policy_freq=f)
           for c, s, d, f in [(True, True, True, 2), (False, False, False, 2), (False, True, True, 2),
                              (True, False, True, 3), (True, True, False, 2)]]
"""Members of a batch: TD3, DDPG, TD3 without clipped double Q, without smoothing (delay 3), without the
delay; so the members step their actors at different updates (several actor graphs)."""
TOLERANCE = dict(rtol=1e-5, atol=1e-6)


def members(configs, device: str, act: int = ACT) -> list[TD3]:
    """One agent per config, member k's drawn after torch.manual_seed(k), as train_batched builds them."""
    agents = []
    for k, cfg in enumerate(configs):
        torch.manual_seed(k)
        agents.append(TD3(OBS, -np.ones(act), np.ones(act), cfg, device=device))
    return agents


def stacked_batches(n: int, k: int, size: int, device: str, act: int = ACT) -> list[Batch]:
    """n minibatches of k members each, fields (k, size, dim)."""
    per_member = [random_batches(n, size, device, seed=seed, act=act) for seed in range(k)]
    return [Batch(*(torch.stack(fields) for fields in zip(*(b[i] for b in per_member)))) for i in range(n)]


def batch_tensors(batched: BatchedTD3) -> list[torch.Tensor]:
    return [*batched.actor, *batched.actor_target, *batched.critic, *batched.critic_target]


def own_tensors(agent: TD3) -> list[torch.Tensor]:
    """An agent's tensors in the batch's order (batch_tensors' member slices)."""
    return [*actor_params(agent), *actor_params(agent, True), *critic_params(agent), *critic_params(agent, True)]


def assert_batched_equals_singles(batched: BatchedTD3, singles: list[TD3], n: int, device: str) -> None:
    """n updates of the batch and of each member's own agent on the same minibatches: every loss after every
    update, every network and target after the last, to float tolerance."""
    size, act = singles[0].config.batch_size, singles[0].action_dim
    for it, batch in enumerate(stacked_batches(n, len(singles), size, device, act)):
        got = batched.update(batch)
        for k, single in enumerate(singles):
            wanted = single.update(Batch(*(field[k] for field in batch)))
            for name in ("critic_loss", "q1", "actor_loss"):
                mine = got[name][k] if name in got else torch.tensor(float("nan"), device=device)
                theirs = wanted.get(name, torch.tensor(float("nan"), device=device))
                torch.testing.assert_close(mine, theirs, equal_nan=True, **TOLERANCE,
                                           msg=lambda m: f"member {k}, {name}, update {it + 1}: {m}")
    for k, single in enumerate(singles):
        for mine, theirs in zip([t[k] for t in batch_tensors(batched)], own_tensors(single), strict=True):
            torch.testing.assert_close(mine.detach(), theirs.detach(), **TOLERANCE, msg=lambda m: f"member {k}: {m}")


def assert_same_weights(a: TD3, b: TD3, **tol) -> None:
    for name in ("actor", "critic", "actor_target", "critic_target"):
        for p, q in zip(getattr(a, name).parameters(), getattr(b, name).parameters()):
            torch.testing.assert_close(q, p, **tol)


# ------------------------------------------------------------------ on a GPU

@needs_cuda
def test_train_on_cuda_keeps_everything_on_the_gpu():
    result = train("Pendulum-v1", CFG, seed=0, device="cuda", progress=False)
    agent = result.agent
    assert all(p.is_cuda for m in (agent.actor, agent.critic, agent.actor_target, agent.critic_target)
               for p in m.parameters())
    assert agent.generator.device.type == "cuda" and len(result.history) == 3


@needs_cuda
@pytest.mark.parametrize("cfg", [CFG, GRAPH_CFG], ids=["eager", "cuda_graph"])
def test_checkpoint_resume_on_cuda_equals_uninterrupted(tmp_path, cfg):
    full = train("Pendulum-v1", cfg, seed=3, device="cuda", progress=False)
    with pytest.raises(Interrupt):
        train("Pendulum-v1", cfg, seed=3, device="cuda", checkpoint_dir=tmp_path, progress=False,
              save_buffer=True, callback=stop_at(800))
    resumed = train("Pendulum-v1", None, seed=3, device="cuda", checkpoint_dir=tmp_path, progress=False,
                    resume=True, save_buffer=True)
    assert resumed.steps == cfg.total_steps and resumed.agent.config.cuda_graph == cfg.cuda_graph
    np.testing.assert_allclose([h["eval_mean"] for h in resumed.history],
                               [h["eval_mean"] for h in full.history], rtol=1e-4)


@needs_cuda
def test_agent_checkpoints_move_between_devices(tmp_path):
    torch.manual_seed(0)
    gpu = TD3(3, [-2.0], [2.0], CFG, device="cuda")
    gpu.save(tmp_path / "gpu.pt", env_id="Pendulum-v1")
    obs = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    on_cpu = TD3.load(tmp_path / "gpu.pt", device="cpu")  # saved on the GPU, loaded on the CPU
    np.testing.assert_allclose(on_cpu.act(obs), gpu.act(obs), rtol=1e-5, atol=1e-6)
    on_cpu.save(tmp_path / "cpu.pt", env_id="Pendulum-v1")
    back = TD3.load(tmp_path / "cpu.pt", device="cuda")  # and back onto the GPU, full state included
    assert back.generator.device.type == "cuda" and back.total_it == gpu.total_it
    np.testing.assert_allclose(back.act(obs), gpu.act(obs), rtol=1e-5, atol=1e-6)


@needs_cuda
def test_a_run_checkpointed_on_the_gpu_resumes_on_the_cpu(tmp_path):
    with pytest.raises(Interrupt):
        train("Pendulum-v1", CFG, seed=1, device="cuda", checkpoint_dir=tmp_path, progress=False,
              save_buffer=True, callback=stop_at(800))
    resumed = train("Pendulum-v1", None, device="cpu", checkpoint_dir=tmp_path, progress=False,
                    resume=True, save_buffer=True)
    assert resumed.steps == CFG.total_steps and resumed.agent.device.type == "cpu"


@needs_cuda
@pytest.mark.parametrize("bf16", [False, True], ids=["float32", "bf16"])
def test_cuda_graph_update_equals_eager_over_100_updates(bf16):
    """The same weights, losses and noise draws as the eager update, delayed actor steps included;
    the graphs are captured after a few eager warm-up calls and replayed from then on."""
    cfg = TD3Config(hidden_sizes=(64, 64), batch_size=128, bf16=bf16)
    eager, graphed = same_start(cfg, "cuda")
    metrics = {"eager": [], "graph": []}
    for batch in random_batches(100, cfg.batch_size, "cuda"):
        metrics["eager"].append(eager.update(batch))
        metrics["graph"].append(graphed.update(batch))
    assert graphed.critic_step.graph is not None and graphed.actor_step.graph is not None
    assert [sorted(m) for m in metrics["graph"]] == [sorted(m) for m in metrics["eager"]]
    assert sum("actor_loss" in m for m in metrics["graph"]) == 100 // cfg.policy_freq
    tol = dict(rtol=1e-3, atol=1e-4) if bf16 else dict(rtol=1e-5, atol=1e-6)
    for a, b in zip(metrics["eager"], metrics["graph"]):  # each update's own values, none overwritten
        for key in a:
            torch.testing.assert_close(b[key], a[key], **tol)
    assert_same_weights(eager, graphed, **tol)
    assert torch.equal(graphed.generator.get_state(), eager.generator.get_state())


@needs_cuda
def test_a_cuda_graph_agent_saved_loads_on_the_gpu_and_on_the_cpu(tmp_path):
    eager, graphed = same_start(TD3Config(hidden_sizes=(64, 64), batch_size=64), "cuda")
    batches = random_batches(40, 64, "cuda")
    for batch in batches[:20]:
        eager.update(batch)
        graphed.update(batch)
    graphed.save(tmp_path / "graph.pt")
    again = TD3.load(tmp_path / "graph.pt", device="cuda")  # new graphs, captured after the load
    assert again.config.cuda_graph and TD3.load(tmp_path / "graph.pt", device="cpu").config.cuda_graph is False
    for batch in batches[20:]:
        eager.update(batch)
        again.update(batch)
    assert_same_weights(eager, again, rtol=1e-5, atol=1e-6)


@needs_cuda
def test_batched_cuda_graph_update_equals_the_batched_eager_one_over_100_updates():
    """Five members that step their actors at different updates: the same losses after every update and the
    same networks, targets and smoothing-noise generators after 100, with the critic's graph and one actor
    graph per set of members that step together captured and replayed."""
    eager = BatchedTD3(members(MEMBERS, "cuda"))
    graphed = BatchedTD3(members([dataclasses.replace(c, cuda_graph=True) for c in MEMBERS], "cuda"))
    for it, batch in enumerate(stacked_batches(100, len(MEMBERS), 128, "cuda")):
        a, b = eager.update(batch), graphed.update(batch)
        assert sorted(a) == sorted(b), f"update {it + 1}"
        for key in a:
            torch.testing.assert_close(b[key], a[key], equal_nan=True, **TOLERANCE)
    captured = {key for key, step in graphed.graphs.items() if step.graph is not None}
    assert ("critic", (True,) * len(MEMBERS)) in captured
    assert len([key for key in captured if key[0] == "actor"]) >= 3  # delays 1, 2 and 3 give several member sets
    for p, q in zip(batch_tensors(graphed), batch_tensors(eager), strict=True):
        torch.testing.assert_close(p.detach(), q.detach(), **TOLERANCE)
    for g, e in zip(graphed.generators, eager.generators):
        assert torch.equal(g.get_state(), e.get_state())


@needs_cuda
def test_batched_eager_update_on_cuda_equals_each_members_own_td3_update():
    """On a GPU the members' actors run as one batched product, which sums in another order than a single
    actor's: the first 20 updates agree to float tolerance (docs/batched.md)."""
    assert_batched_equals_singles(BatchedTD3(members(MEMBERS, "cuda")), members(MEMBERS, "cuda"), 20, "cuda")


# ------------------------------------------------------------ on any machine

@pytest.mark.parametrize("act", [ACT, 1])
def test_the_batched_actor_a_gpu_runs_equals_each_members_own_actor_on_the_cpu(monkeypatch, act):
    """The GPU's form of the batch (the members' actors as one batched product, not one by one) run on the
    CPU: its first 20 updates agree with each member's own TD3 to the tolerance the GPU is held to. With one
    action the batched product rounds the last layer otherwise than F.linear does, as a GPU's kernels do."""
    def batched_mu(self, params, obs):
        return actor_forward(params, obs, self.center, self.half_range, one_by_one=False)
    monkeypatch.setattr(BatchedTD3, "mu", batched_mu)
    assert_batched_equals_singles(BatchedTD3(members(MEMBERS, "cpu", act)), members(MEMBERS, "cpu", act), 20, "cpu")


def test_cuda_graph_off_a_gpu_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^TD3Config.cuda_graph=True needs a CUDA device, not 'cpu': "
                                         r"use device='cuda' on a GPU, or cuda_graph=False.$"):
        TD3(OBS, -np.ones(ACT), np.ones(ACT), TD3Config(cuda_graph=True), device="cpu")


def test_checkpoints_with_and_without_the_cuda_graph_field_load_on_the_cpu(tmp_path):
    torch.manual_seed(0)
    agent = TD3(OBS, -np.ones(ACT), np.ones(ACT), TD3Config(hidden_sizes=(32, 32)))
    obs = np.linspace(-1, 1, 4 * OBS, dtype=np.float32).reshape(4, OBS)
    old = agent.state_dict(env_id="Hopper-v5")
    del old["config"]["cuda_graph"]  # as written before the field existed
    graphed = agent.state_dict(env_id="Hopper-v5")
    graphed["config"]["cuda_graph"] = True  # as written by a run on a GPU
    for name, state in (("old", old), ("graphed", graphed)):
        torch.save(state, tmp_path / f"{name}.pt")
        loaded = TD3.load(tmp_path / f"{name}.pt", device="cpu")
        assert loaded.config.cuda_graph is False and loaded.total_it == agent.total_it
        np.testing.assert_array_equal(loaded.act(obs), agent.act(obs))


def test_static_batch_copies_each_batch_in_and_refuses_another_size():
    first, second = random_batches(2, 8, "cpu")
    static = StaticBatch()
    held = static.load(first)
    assert all(torch.equal(s, t) and s.data_ptr() != t.data_ptr() for s, t in zip(held, first))
    assert static.load(second) is held and all(torch.equal(s, t) for s, t in zip(held, second))
    second.obs.add_(1.0)  # the actor step of the same update reads what its critic step copied in
    static.load(second, always=False)
    assert not torch.equal(held.obs, second.obs)
    static.load(second)
    assert torch.equal(held.obs, second.obs)
    with pytest.raises(ValueError, match="captured for batches of 8 transitions; this batch has 4"):
        static.load(random_batches(1, 4, "cpu")[0])
