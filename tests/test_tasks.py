"""The lessons' tasks, registered: NarrowPeak's reward against its formula, the registered id trains as the
class does, the pitfalls as variants, and the names lesson 08 imports."""

from pathlib import Path

import numpy as np
import pytest
import torch

import td3_lib.course.pitfalls as pitfalls
from td3_lib import TD3Config, make_env, train
from td3_lib.agent import TD3
from td3_lib.buffer import Batch
from td3_lib.course import results as shipped
from td3_lib.course.tasks import (LotteryBand, LotteryBandProbe, NarrowPeak, NarrowPeakProbe, TwoKnobs,
                                  lottery_band_2x2)
from td3_lib.course.narrow_peak_clip import nudged_episodes
from td3_lib.stats import bootstrap_difference_ci, paired_permutation_p_value, permutation_p_value
from td3_lib.sweep import REGISTRY, VARIANTS, get_probe, get_variant

TINY = TD3Config(hidden_sizes=(32, 32), start_timesteps=200, total_steps=600, eval_freq=200, eval_episodes=1,
                 batch_size=32)


def test_narrow_peak_reward_is_its_formula_for_floats_arrays_and_tensors():
    def bump(a, w):  # as the task has always computed it for one action
        return float(np.exp(-0.5 * (a / w) ** 2))

    def formula(x, a):
        p = (1 - x) / 2
        return (1 - 0.4 * p) * bump(a, 0.5) + 0.8 * p * bump(a, 0.03)

    assert NarrowPeak.reward(-1.0, 0.0) == pytest.approx(1.4) and NarrowPeak.reward(1.0, 0.0) == pytest.approx(1.0)
    grid = np.linspace(-1, 1, 41)
    for x in (-1.0, -0.3, 1.0):
        exact = [formula(x, float(a)) for a in grid]
        assert [NarrowPeak.reward(x, float(a)) for a in grid] == exact  # the training reward: bit for bit
        np.testing.assert_allclose(NarrowPeak.reward(x, grid), exact, rtol=1e-14)
        as_tensor = NarrowPeak.reward(x, torch.tensor(grid))
        assert isinstance(as_tensor, torch.Tensor)
        np.testing.assert_allclose(as_tensor.numpy(), exact, rtol=1e-14)


def test_narrow_peak_pays_the_second_step_at_the_first_steps_position():
    env = NarrowPeak()
    obs, _ = env.reset(seed=0)
    obs, reward, terminated, _, _ = env.step(np.array([-0.5], np.float32))
    assert (reward, terminated) == (0.0, False) and obs.tolist() == [1.0, -0.5]
    _, reward, terminated, _, _ = env.step(np.array([0.02], np.float32))
    assert terminated and reward == NarrowPeak.reward(-0.5, float(np.float32(0.02)))


def test_the_registered_task_trains_as_the_class_does():
    """A sweep makes NarrowPeak-v0 by its id (gymnasium's wrappers around the class): the same history,
    bit for bit, as training on the class itself."""
    by_id = train("NarrowPeak-v0", TINY, seed=0, device="cpu", progress=False, probes=(NarrowPeakProbe(episodes=5),))
    by_class = train(NarrowPeak(), TINY, seed=0, device="cpu", progress=False, probes=(NarrowPeakProbe(episodes=5),))
    strip = [{k: v for k, v in h.items() if k not in ("wall_s", "critic_loss")} for h in by_id.history]
    assert strip == [{k: v for k, v in h.items() if k not in ("wall_s", "critic_loss")} for h in by_class.history]
    assert [h["critic_loss"] for h in by_id.history[1:]] == [h["critic_loss"] for h in by_class.history[1:]]
    assert isinstance(make_env("TwoKnobs-v0").unwrapped, TwoKnobs)


def test_the_pitfalls_are_variants_of_their_names_and_lesson_08s_imports_still_work():
    from td3_lib.course.pitfalls import PITFALLS, TwoKnobs as from_pitfalls  # lesson 08's import
    assert from_pitfalls is TwoKnobs
    for name, pitfall in PITFALLS.items():
        variant = get_variant(name)
        assert variant.agent is pitfall.agent and variant.switches == VARIANTS["TD3"]
        assert (variant.env is None) == (pitfall.wrapper is None)
    wrapped = get_variant("time limit as terminal").environment("Pendulum-v1")
    assert isinstance(wrapped, pitfalls.TimeLimitAsTerminal)
    assert get_variant("Q1 loss twice").environment("Pendulum-v1") == "Pendulum-v1"
    assert {"fixed policy", "fixed Hopper-v5 policy"} <= set(REGISTRY)
    assert get_probe("critic").__name__ == "critic_probe"


def test_narrow_peak_probe_measures_the_position_and_the_perturbed_return():
    class Constant:  # an agent that always acts a (plus the noise)
        def __init__(self, a):
            self.a = a

        def act(self, obs, noise=0.0, rng=None):
            return np.array([self.a + (rng.normal(0.0, noise) if noise else 0.0)], np.float32)

    exact = NarrowPeakProbe(episodes=50, noise=0.0)(Constant(0.0))
    assert exact == {"position": 0.0, "perturbed_return": pytest.approx(1.2)}  # x = 0, a = 0: 0.8 + 0.4
    noisy = NarrowPeakProbe(episodes=50)(Constant(0.0))  # about 0.9: the narrow peak is mostly missed
    assert noisy["perturbed_return"] < 1.0 and noisy == NarrowPeakProbe(episodes=50)(Constant(0.0))


def test_lottery_band_pays_its_hill_exactly_outside_the_band_and_noise_of_mean_zero_inside():
    assert LotteryBand.expected_reward(1.0, 0.0) == 1.0 and LotteryBand.expected_reward(-1.0, 0.0) == 0.5
    x = np.linspace(-1, 1, 9)
    np.testing.assert_allclose(LotteryBand.expected_reward(x, 0.0), 0.75 + 0.25 * x)  # V*(x)
    env = LotteryBand()
    env.reset(seed=0)
    obs, reward, terminated, _, _ = env.step(np.array([-0.5], np.float32))
    assert (reward, terminated) == (0.0, False) and obs[:2].tolist() == [1.0, -0.5] and -1 <= obs[2] <= 1
    _, reward, terminated, _, _ = env.step(np.array([0.3], np.float32))  # outside the band: no noise
    assert terminated and reward == LotteryBand.expected_reward(-0.5, float(np.float32(0.3)))
    in_band = []
    for seed in range(4000):  # at x = -1 the band pays the hill 0.5 plus noise of std 8
        env.reset(seed=seed)
        env.step(np.array([-1.0], np.float32))
        in_band.append(env.step(np.array([0.0], np.float32))[1])
    assert abs(np.mean(in_band) - 0.5) < 4 * 8 / np.sqrt(4000) and 7.5 < np.std(in_band) < 8.5
    env.reset(seed=1)
    env.step(np.array([1.0], np.float32))
    assert env.step(np.array([0.0], np.float32))[1] == 1.0  # at x = +1 the band is quiet


def test_lottery_band_probe_reads_the_target_both_ways_on_a_fixed_grid_as_computed_by_hand():
    """Both ways on both kinds of agent: the states are the 5 positions x 41 dials, whatever the actor
    chooses; one action is the target actor's; the average is over the smoothing noise's 64 seeded draws."""
    torch.manual_seed(0)
    for smoothing in (False, True):
        agent = TD3(3, [-1.0], [1.0], TD3Config(hidden_sizes=(16, 16), target_policy_smoothing=smoothing))
        probe = LotteryBandProbe(draws=64)
        row = probe(agent)
        eps = (torch.randn(64, generator=torch.Generator().manual_seed(0)) * 0.2).clamp(-0.5, 0.5)
        point, averaged = np.zeros((5, 41)), np.zeros((5, 41))
        with torch.no_grad():
            for i, x in enumerate((-1.0, -0.5, 0.0, 0.5, 1.0)):
                for j, c in enumerate(np.linspace(-1, 1, 41)):
                    s = torch.tensor([[1.0, x, c]], dtype=torch.float32)
                    a = agent.actor_target(s)[0, 0]
                    for way, actions, out in (("point", a[None], point), ("averaged", (a + eps).clamp(-1, 1), averaged)):
                        q1, q2 = agent.critic_target(s.repeat(len(actions), 1), actions[:, None])
                        truth = LotteryBand.expected_reward(x, actions.numpy()).mean()
                        out[i, j] = torch.minimum(q1, q2).mean().item() - truth
        for way, error in (("point", point), ("averaged", averaged)):
            assert row[f"{way}_bias"] == pytest.approx(error.mean(), abs=1e-6)
            assert row[f"{way}_error_spread"] == pytest.approx(error.std(axis=1).mean(), abs=1e-6)
        assert row["point_error_spread"] != pytest.approx(row["averaged_error_spread"])
        x = float(agent.act(np.zeros(3, np.float32))[0])
        s2 = torch.tensor([[1.0, x, c] for c in np.linspace(-1, 1, 41)], dtype=torch.float32)
        with torch.no_grad():
            actor = agent.actor(s2)[:, 0].numpy()
        assert row["position"] == x
        assert row["true_return"] == pytest.approx(LotteryBand.expected_reward(x, actor).mean())
        assert row == probe(agent)  # the same agent, the same numbers


def test_the_lottery_band_2x2_is_each_arms_spread_per_seed_after_the_random_steps():
    rows = [{"variant": v, "seed": seed, "step": step, "point_error_spread": 10 * seed + step / 1000 + (v == "TD3"),
             "averaged_error_spread": seed} for v in ("TD3", "TD3-TPS") for seed in (0, 1) for step in (1000, 2000, 3000)]
    table = lottery_band_2x2(rows)
    assert table[("TD3", "point")].tolist() == [3.5, 13.5] and table[("TD3-TPS", "point")].tolist() == [2.5, 12.5]
    assert table[("TD3", "averaged")].tolist() == [0, 1] and set(table) == {(v, w) for v in ("TD3", "TD3-TPS")
                                                                           for w in ("point", "averaged")}


def test_the_shipped_lottery_band_2x2_gives_the_numbers_docs_results_quotes():
    """docs/results.md quotes the 2 x 2 (each probe: both arms' spread, the count of seeds, the difference with
    its interval and p, the paired p; each arm: averaged minus point) from the shipped file."""
    page = " ".join((Path(__file__).resolve().parent.parent / "docs" / "results.md").read_text().split())
    minus = lambda text: text.replace("-", "−")  # the page prints a minus sign
    table = lottery_band_2x2(shipped.load("smoothing_lottery_band.csv"))

    def quoted(a, b):
        low, high = bootstrap_difference_ci(a, b)
        return (f"{minus(f'{a.mean() - b.mean():+.3f}')}, interval [{minus(f'{low:+.3f}')}, {minus(f'{high:+.3f}')}], "
                f"p = {permutation_p_value(a, b):.3f}")

    for way in ("point", "averaged"):
        a, b = table[("TD3", way)], table[("TD3-TPS", way)]
        assert f"{a.mean():.3f} ± {a.std(ddof=1):.3f}" in page and f"{b.mean():.3f} ± {b.std(ddof=1):.3f}" in page
        assert f"on {np.sum(a < b)} of 10 seeds" in page and quoted(a, b) in page, way
        assert f"paired p = {paired_permutation_p_value(a, b):.3f}" in page, way
    for variant in ("TD3", "TD3-TPS"):
        averaged, point = table[(variant, "averaged")], table[(variant, "point")]
        assert quoted(averaged, point) in page, variant
        assert f"on {np.sum(averaged < point)} of 10 seeds in each arm" in page
        assert f"paired p = {paired_permutation_p_value(averaged, point):.3f} in each" in page


def test_nudged_narrow_peak_episodes_add_the_nudge_to_each_noise_free_action_and_pay_the_reward():
    class Constant:
        def act(self, obs, noise=0.0):
            return np.array([-1.0 if obs[0] == 0 else 0.0], np.float32)

    nudges = np.array([[0.0, 0.0], [0.5, 0.02], [-0.3, 2.0]])
    episodes = nudged_episodes(Constant(), nudges)
    assert [e["x"] for e in episodes] == [-1.0, -0.5, -1.0] and [e["meant"] for e in episodes] == [0.0] * 3
    assert [e["taken"] for e in episodes] == pytest.approx([0.0, 0.02, 1.0])
    assert [e["reward"] for e in episodes] == pytest.approx([1.4, float(NarrowPeak.reward(-0.5, np.float32(0.02))),
                                                            float(NarrowPeak.reward(-1.0, 1.0))])


def test_pitfall_2_leaves_the_critic_untrained_while_backward_fills_the_target_critics_gradients():
    """The silent version of the bug: the loss is the critics' loss on the target critic's Q, backward()
    reaches the thawed target critic, no optimiser steps it, and the critic keeps its initial weights;
    with td3_lib's frozen targets the same loss has no gradient at all, so backward() would raise."""
    g = torch.Generator().manual_seed(0)
    batch = Batch(torch.randn(64, 3, generator=g), torch.rand(64, 1, generator=g) * 4 - 2,
                  torch.randn(64, 1, generator=g), torch.randn(64, 3, generator=g), torch.ones(64, 1))
    torch.manual_seed(0)
    agent = pitfalls.TargetCriticAsCurrentTD3(3, [-2.0], [2.0], TINY)
    before = [p.detach().clone() for p in agent.critic.parameters()]
    target_q = agent.target_q(batch)
    q1, q2 = agent.critic_target(batch.obs, batch.action)
    expected = torch.nn.functional.mse_loss(q1, target_q) + torch.nn.functional.mse_loss(q2, target_q)
    assert torch.equal(agent.critic_loss(batch.obs, batch.action, target_q)[0], expected)
    for _ in range(4):
        agent.update(batch)
    assert all(torch.equal(a, b) for a, b in zip(before, agent.critic.parameters()))
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in agent.critic_target.parameters())
    torch.manual_seed(0)
    correct = TD3(3, [-2.0], [2.0], TINY)
    q1, q2 = correct.critic_target(batch.obs, batch.action)
    frozen_loss = torch.nn.functional.mse_loss(q1, target_q) + torch.nn.functional.mse_loss(q2, target_q)
    with pytest.raises(RuntimeError, match="does not require grad"):
        frozen_loss.backward()
    correct.update(batch)
    assert not all(torch.equal(a, b) for a, b in zip(before, correct.critic.parameters()))
