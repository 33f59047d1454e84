import dataclasses

import numpy as np
import pytest
import torch

from td3_lib import TD3, TD3Config, evaluate, make_env, preset, train
from td3_lib.run import read_history

SMALL = TD3Config(hidden_sizes=(64, 64), start_timesteps=400, total_steps=1000, eval_freq=500,
                  eval_episodes=2, batch_size=64)


@pytest.mark.slow
def test_same_seed_same_returns_on_cpu():
    """Seed 0 included: a seed is never skipped for being falsy (the `if seed:` pitfall)."""
    a = train("Pendulum-v1", SMALL, seed=0, device="cpu", progress=False)
    b = train("Pendulum-v1", SMALL, seed=0, device="cpu", progress=False)
    assert [h["eval_mean"] for h in a.history] == [h["eval_mean"] for h in b.history]
    np.testing.assert_array_equal(evaluate(a.agent, "Pendulum-v1", 2, seed=1),
                                  evaluate(b.agent, "Pendulum-v1", 2, seed=1))
    c = train("Pendulum-v1", SMALL, seed=1, device="cpu", progress=False)
    assert [h["eval_mean"] for h in a.history] != [h["eval_mean"] for h in c.history]


def test_history_and_csv(tmp_path):
    r = train("Pendulum-v1", SMALL, seed=1, device="cpu", checkpoint_dir=tmp_path, progress=False)
    assert [h["step"] for h in r.history] == [500, 1000]
    assert r.history[0]["episodes"] == 2  # Pendulum episodes are 200 steps
    rows = read_history(tmp_path / "history.csv")
    assert [row["eval_mean"] for row in rows] == pytest.approx([h["eval_mean"] for h in r.history])
    assert (tmp_path / "checkpoint.pt").is_file()


def test_evaluate_uses_seeds_and_validates():
    r = train("Pendulum-v1", dataclasses.replace(SMALL, total_steps=500), seed=0, device="cpu",
              progress=False)
    x = evaluate(r.agent, "Pendulum-v1", episodes=3, seed=5)
    assert x.shape == (3,) and np.all(x < 0)
    np.testing.assert_array_equal(x, evaluate(r.agent, make_env("Pendulum-v1"), 3, seed=5))
    with pytest.raises(ValueError, match="episodes=0"):
        evaluate(r.agent, "Pendulum-v1", episodes=0)


def test_evaluation_episode_i_is_reset_with_seed_plus_i():
    torch.manual_seed(0)
    agent = TD3(3, [-2.0], [2.0], SMALL)
    together = evaluate(agent, "Pendulum-v1", episodes=3, seed=5)
    one_by_one = [evaluate(agent, "Pendulum-v1", episodes=1, seed=s)[0] for s in (5, 6, 7)]
    np.testing.assert_array_equal(together, one_by_one)


@pytest.mark.slow
def test_pendulum_learns_with_its_preset():
    """The course's first promise: TD3 with the Pendulum preset reaches -250 or better."""
    result = train("Pendulum-v1", preset("Pendulum-v1"), seed=0, device="cpu", progress=False)
    final = evaluate(result.agent, "Pendulum-v1", episodes=10, seed=1000)
    assert final.mean() >= -250, f"mean evaluation return {final.mean():.1f}"
