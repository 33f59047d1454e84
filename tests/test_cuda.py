"""The GPU path a Colab learner takes: train, checkpoint, resume, and move checkpoints between devices.

Skipped on a machine without CUDA; the same code path is covered on the CPU by
tests/test_resume.py (a checkpoint whose tensors were saved on a GPU resumes on the CPU).
"""

import numpy as np
import pytest
import torch

from td3_lib import TD3, TD3Config, train

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

CFG = TD3Config(hidden_sizes=(64, 64), start_timesteps=300, total_steps=1200, eval_freq=400,
                eval_episodes=1, batch_size=64)


class Interrupt(Exception):
    pass


def stop_at(step):
    def callback(t, agent):
        if t >= step:
            raise Interrupt
    return callback


def test_train_on_cuda_keeps_everything_on_the_gpu():
    result = train("Pendulum-v1", CFG, seed=0, device="cuda", progress=False)
    agent = result.agent
    assert all(p.is_cuda for m in (agent.actor, agent.critic, agent.actor_target, agent.critic_target)
               for p in m.parameters())
    assert agent.generator.device.type == "cuda" and len(result.history) == 3


def test_checkpoint_resume_on_cuda_equals_uninterrupted(tmp_path):
    full = train("Pendulum-v1", CFG, seed=3, device="cuda", progress=False)
    with pytest.raises(Interrupt):
        train("Pendulum-v1", CFG, seed=3, device="cuda", checkpoint_dir=tmp_path, progress=False,
              save_buffer=True, callback=stop_at(800))
    resumed = train("Pendulum-v1", None, seed=3, device="cuda", checkpoint_dir=tmp_path, progress=False,
                    resume=True, save_buffer=True)
    assert resumed.steps == CFG.total_steps
    np.testing.assert_allclose([h["eval_mean"] for h in resumed.history],
                               [h["eval_mean"] for h in full.history], rtol=1e-4)


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


def test_a_run_checkpointed_on_the_gpu_resumes_on_the_cpu(tmp_path):
    with pytest.raises(Interrupt):
        train("Pendulum-v1", CFG, seed=1, device="cuda", checkpoint_dir=tmp_path, progress=False,
              save_buffer=True, callback=stop_at(800))
    resumed = train("Pendulum-v1", None, device="cpu", checkpoint_dir=tmp_path, progress=False,
                    resume=True, save_buffer=True)
    assert resumed.steps == CFG.total_steps and resumed.agent.device.type == "cpu"
