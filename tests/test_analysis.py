"""The critic probe recorded at each evaluation, checked on critics with known answers, and the seed bands."""

import numpy as np
import pytest
import torch

from td3_lib import TD3, TD3Config, train
from td3_lib.course.analysis import bias_on_episodes, critic_probe, peak_height, roughness
from td3_lib.course.plots import over_seeds
from td3_lib.course.results import histories
from td3_lib.rollout import Episode
from td3_lib.run import BASE_FIELDS, read_history

LOW, HIGH = np.array([-2.0, 0.0], np.float32), np.array([2.0, 10.0], np.float32)  # half-ranges 2 and 5


class Quadratic(torch.nn.Module):
    """Q(s, a) = c * sum_j u_j^2 + b * sum_j u_j, with u_j = (a_j - mid_j) / h_j in [-1, 1]; Q1 = Q2."""

    def __init__(self, c: float, b: float = 0.0):
        super().__init__()
        self.c, self.b = c, b
        self.mid, self.h = torch.tensor((LOW + HIGH) / 2), torch.tensor((HIGH - LOW) / 2)

    def forward(self, obs, action):
        u = (action - self.mid) / self.h
        q = (self.c * u ** 2 + self.b * u).sum(-1, keepdim=True) + 0 * obs[:, :1]
        return q, q

    def q1(self, obs, action):
        return self(obs, action)[0]


def agent_with(critic) -> TD3:
    torch.manual_seed(0)
    agent = TD3(3, LOW, HIGH, TD3Config(hidden_sizes=(16, 16)), device="cpu")
    agent.critic = critic
    return agent


@pytest.mark.parametrize("c", [0.0, 0.5, -3.0])
def test_roughness_is_the_second_derivative_in_half_ranges(c):
    """Along u, c*u^2 has second derivative 2c everywhere (finite differences of a parabola are exact);
    a part linear in u adds nothing."""
    agent = agent_with(Quadratic(c, b=4.0))
    states = np.random.default_rng(0).normal(size=(7, 3)).astype(np.float32)
    assert roughness(agent, states, points=21) == pytest.approx(2 * abs(c), abs=1e-4)


def test_roughness_of_a_kink():
    """Q = |u_0| (a ReLU-like kink): along dimension 0 exactly one second difference is nonzero, 2 * delta at
    u_0 = 0; along dimension 1 Q is constant. So the mean over points, dimensions and states is known."""
    class Kink(torch.nn.Module):
        def forward(self, obs, action):
            q = ((action[:, :1] - 0.0) / 2.0).abs()
            return q, q
    agent = agent_with(Kink())
    points = 21  # the kink at u = 0 is a grid point: one second difference of 2*delta, the others 0
    delta = 2.0 / (points - 1)
    want = (2 * delta / delta ** 2) / (points - 2) / 2  # one nonzero of (points - 2) on dimension 0 only
    assert roughness(agent, np.zeros((3, 3), np.float32), points=points) == pytest.approx(want, rel=1e-5)


def centred_actor(agent: TD3) -> TD3:
    """pi(s) = the middle of the bounds for every s: the last layer's weights and bias at zero."""
    with torch.no_grad():
        agent.actor.net[-1].weight.zero_()
        agent.actor.net[-1].bias.zero_()
    return agent


@pytest.mark.parametrize("c, b", [(0.0, 4.0), (-3.0, 0.0), (-3.0, 1.0), (2.0, 0.0)])
def test_peak_height_against_the_formula(c, b):
    """pi(s) = mid, so u = eps / h with eps the clipped smoothing noise (never past the bounds):
    Q(mid) - mean_k Q(mid + eps_k) = -mean_k sum_j (c * u_kj^2 + b * u_kj), over the same draws."""
    agent = centred_actor(agent_with(Quadratic(c, b)))
    n, samples, seed = 5, 16, 3
    states = np.random.default_rng(0).normal(size=(n, 3)).astype(np.float32)
    g = torch.Generator().manual_seed(seed)
    z = torch.randn((samples * n, 2), generator=g)
    u = (z * agent.config.policy_noise).clamp(-agent.config.noise_clip, agent.config.noise_clip)
    want = -(c * u ** 2 + b * u).sum(-1).mean()
    assert peak_height(agent, states, samples=samples, seed=seed) == pytest.approx(float(want), rel=1e-5, abs=1e-6)


def test_peak_height_sign_and_seed():
    """A critic peaked at mu (c < 0) stands above its surroundings; a valley (c > 0) below; the same
    seed gives the same number, another seed another."""
    states = np.zeros((4, 3), np.float32)
    peaked = centred_actor(agent_with(Quadratic(-1.0)))
    assert peak_height(peaked, states) > 0.01
    assert peak_height(centred_actor(agent_with(Quadratic(1.0))), states) < -0.01
    assert peak_height(peaked, states, seed=1) == peak_height(peaked, states, seed=1)
    assert peak_height(peaked, states, seed=1) != peak_height(peaked, states, seed=2)


def test_probe_of_a_constant_critic():
    """Q = 7 everywhere; rewards 1, 2, 3, 4 then 1, 1: estimate, truth and start value are known by hand."""
    agent = agent_with(Quadratic(0.0))
    agent.critic = type("Seven", (torch.nn.Module,), {
        "forward": lambda self, obs, action: (torch.full((len(obs), 1), 7.0),) * 2,
        "q1": lambda self, obs, action: torch.full((len(obs), 1), 7.0)})()
    obs = [np.full(3, k, np.float32) for k in range(4)]
    episodes = [Episode(rewards=[1.0, 2.0, 3.0, 4.0], states=obs), Episode(rewards=[1.0, 1.0], states=obs[:2])]
    g = agent.config.discount
    first_halves = [1 + 2 * g + 3 * g ** 2 + 4 * g ** 3, 2 + 3 * g + 4 * g ** 2, 1 + g]
    probe = critic_probe(agent, episodes)
    assert probe["q_estimate"] == pytest.approx(7.0)
    assert probe["q_true"] == pytest.approx(np.mean(first_halves))
    assert probe["q_start"] == pytest.approx(7.0)
    assert probe["q_roughness"] == pytest.approx(0.0)
    assert probe["q_peak"] == pytest.approx(0.0)
    assert bias_on_episodes(agent, episodes).n_states == 3


def test_history_records_the_probe_and_old_histories_still_read(tmp_path):
    """The history holds the base columns, each probe's columns and wall_s; without probes, no q_* column."""
    cfg = TD3Config(hidden_sizes=(16, 16), start_timesteps=100, total_steps=300, eval_freq=100,
                    eval_episodes=1, batch_size=32)
    result = train("Pendulum-v1", cfg, seed=0, device="cpu", checkpoint_dir=tmp_path, progress=False,
                   probes=(critic_probe,))
    saved = read_history(tmp_path / "history.csv")
    probe_keys = ["q_estimate", "q_true", "q_start", "q_roughness", "q_peak"]
    assert list(saved[0]) == [*BASE_FIELDS, *probe_keys, "wall_s"]
    plain = train("Pendulum-v1", cfg, seed=0, device="cpu", checkpoint_dir=tmp_path / "plain", progress=False,
                  probes=())
    assert list(read_history(tmp_path / "plain" / "history.csv")[0]) == [*BASE_FIELDS, "wall_s"]
    assert [h["eval_mean"] for h in plain.history] == [h["eval_mean"] for h in result.history]
    for row in result.history:
        assert all(np.isfinite(row[k]) for k in ("q_estimate", "q_true", "q_start", "q_roughness", "q_peak"))
    assert np.isfinite(result.history[-1]["critic_loss"])  # the mean of the 100 losses since the last evaluation
    old = tmp_path / "old.csv"
    old.write_text("step,episodes,eval_mean,eval_std,train_return,critic_loss,wall_s\n100,0,-1.5,0.1,-2.0,,0.5\n")
    assert read_history(old) == [{"step": 100, "episodes": 0, "eval_mean": -1.5, "eval_std": 0.1,
                                  "train_return": -2.0, "wall_s": 0.5}]


def test_over_seeds_and_histories():
    rows = [{"variant": "A", "seed": s, "step": t, "eval_mean": float(s * 10 + t)}
            for s in (0, 1) for t in (3, 1, 2)] + [{"variant": "A", "seed": 2, "step": 1, "eval_mean": 5.0}]
    per_seed = histories(rows, "A")
    assert [[r["step"] for r in h] for h in per_seed] == [[1, 2, 3], [1, 2, 3], [1]]
    steps, mean, std = over_seeds(per_seed[:2])
    np.testing.assert_allclose(steps, [1, 2, 3])
    np.testing.assert_allclose(mean, [6, 7, 8])
    np.testing.assert_allclose(std, [np.std([1, 11], ddof=1)] * 3)
    steps, mean, _ = over_seeds(per_seed, lambda r: -r["eval_mean"])  # only the step all three have
    np.testing.assert_allclose(steps, [1])
    np.testing.assert_allclose(mean, [-(1 + 11 + 5) / 3])
    with pytest.raises(ValueError, match="No rows for variant 'B'; the result has: A"):
        histories(rows, "B")


def test_finals():
    from td3_lib.course.results import finals
    rows = [{"variant": "A", "seed": s, "step": t, "eval_mean": 10.0 * s + t} for s in (0, 1) for t in (1, 2, 3)]
    np.testing.assert_allclose(finals(rows, "A", last_k=2), [2.5, 12.5])
    np.testing.assert_allclose(finals(rows, "A", lambda r: -r["step"]), [-3, -3])


def test_bias_is_estimate_minus_true_value():
    from td3_lib.course.results import bias, finals
    rows = [{"variant": "A", "seed": 0, "step": t, "q_estimate": 5.0 * t, "q_true": 2.0 * t} for t in (1, 2)]
    assert bias(rows[1]) == 10.0 - 4.0
    np.testing.assert_allclose(finals(rows, "A", bias, last_k=2), [(3.0 + 6.0) / 2])


def test_score_line():
    from td3_lib.course.results import score_line
    rows = [{"variant": "A", "seed": s, "step": t, "eval_mean": 10.0 * s + t} for s in (0, 1) for t in (1, 2, 3)]
    assert score_line(rows, "A", last_k=1, fmt=".1f") == f"{'A':26s} 8.0 ± {np.std([3, 13], ddof=1):.1f}   3.0  13.0"
    one = [r for r in rows if r["seed"] == 1]  # one seed has no spread: said, not printed as nan
    assert score_line(one, "A", last_k=1, fmt="6.1f") == f"{'A':26s}   13.0 {'(1 seed)':>8s}     13.0"
