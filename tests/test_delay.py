"""Lesson 05's delay probe (``td3_lib.course.delay``): the vectorised dynamics are Pendulum-v1's, the
true value is a rollout's discounted return, the measures and the probe's means are their explicit
forms, probing changes no bit of TD3's training, the schedules move what they say when they say it, a
warm run is d = 1's run up to its switch, and the variants are registered for the sweep."""

import dataclasses

import gymnasium as gym
import numpy as np
import pytest
import torch

from conftest import experiment_script
from td3_lib import TD3, Batch, TD3Config, preset, train
from td3_lib.course import delay
from td3_lib.course.delay import (ActorTruth, ProbedTD3TargetsEvery1, ProbedTD3TargetsEvery2,
                                  WarmProbedTD3TargetsEvery1, WarmProbedTD3TargetsEvery2, critic_measures,
                                  delay_probe, fixed_states, observation, pendulum_step, true_q, variant_name,
                                  window_mean, window_means)
from td3_lib.sweep import get_probe, get_variant

RUN = TD3Config(hidden_sizes=(32, 32), start_timesteps=300, total_steps=600, eval_freq=200, eval_episodes=1,
                batch_size=64, discount=0.98)
"""300 updates: probes at updates 100, 200 and 300."""


def gym_pendulums(states):
    envs = [gym.make("Pendulum-v1").unwrapped for _ in states]
    for env, state in zip(envs, states):
        env.reset(seed=0)
        env.state = np.array(state, dtype=np.float64)
    return envs


def test_pendulum_step_is_gymnasiums_step():
    """300 steps of random torques in [-2.5, 2.5] (clipped to +-2) from 10 of the fixed states, each step
    from the same state (gymnasium computes the torque's term in float32, so long trajectories drift apart
    by a few 1e-7 and then grow apart: the dynamics are chaotic)."""
    states, rng = fixed_states()[:10], np.random.default_rng(1)
    envs = gym_pendulums(states)
    for _ in range(300):
        u = rng.uniform(-2.5, 2.5, len(states)).astype(np.float32)  # gymnasium receives float32 actions
        for env, state in zip(envs, states):
            env.state = state.copy()
        steps = [env.step(np.array([a])) for env, a in zip(envs, u)]
        states, reward = pendulum_step(states, u.astype(np.float64))
        np.testing.assert_allclose(states, np.stack([env.state for env in envs]), rtol=0, atol=1e-6)
        np.testing.assert_allclose(observation(states), np.stack([s[0] for s in steps]), rtol=0, atol=1e-6)
        np.testing.assert_allclose(reward, [s[1] for s in steps], rtol=1e-6, atol=1e-6)


def test_true_q_is_the_discounted_return_of_a_rollout():
    torch.manual_seed(0)
    actor = torch.nn.Sequential(torch.nn.Linear(3, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1), torch.nn.Tanh())
    states, first = fixed_states()[:6], np.linspace(-2.0, 2.0, 6)
    envs, expected = gym_pendulums(states), np.zeros(6)
    for t in range(40):
        for i, env in enumerate(envs):
            if t == 0:
                u = np.float32(first[i])
            else:
                with torch.no_grad():
                    u = actor(torch.as_tensor(observation(env.state[None]))).numpy()[0, 0]
            expected[i] += 0.98 ** t * env.step(np.array([u]))[1]
    np.testing.assert_allclose(true_q(actor, states, first, 0.98, horizon=40), expected, rtol=1e-5)


def test_critic_measures_are_their_explicit_forms():
    truth = ActorTruth(it=100, action=torch.zeros(4, 1), q=np.array([-10.0, -20.0, -30.0, -40.0]),
                       grad=np.array([1.0, -1.0, 2.0, -0.5]), reward=np.zeros(4), next_obs=torch.zeros(4, 3))
    q1, grad, y = np.array([-8.0, -25.0, -30.0, -35.0]), np.array([0.5, 1.0, 3.0, -1.0]), np.array([-9.0, -24.0, -31.0, -35.0])
    assert critic_measures(q1, grad, y, truth) == {"q_error": (2 + 5 + 0 + 5) / 4, "q_bias": (2 - 5 + 0 + 5) / 4,
                                                   "td_error": (1 + 1 + 1 + 0) / 4, "grad_agree": 3 / 4,
                                                   "true_value": -25.0}


def test_the_probe_reports_the_means_since_the_last_evaluation_and_clears_them():
    m = [{"it": 100, "k": 0, "q_error": 5.0, "q_bias": 1.0, "td_error": 0.5, "grad_agree": 0.5, "true_value": -100.0},
         {"it": 100, "k": 2, "q_error": 4.0, "q_bias": 2.0, "td_error": 0.3, "grad_agree": 0.25, "true_value": -100.0},
         {"it": 200, "k": 0, "q_error": 7.0, "q_bias": -1.0, "td_error": 0.7, "grad_agree": 1.0, "true_value": -90.0},
         {"it": 200, "k": 2, "q_error": 6.0, "q_bias": 4.0, "td_error": 0.1, "grad_agree": 0.75, "true_value": -90.0},
         {"it": 300, "k": 0, "q_error": 9.0, "q_bias": 0.0, "td_error": 0.2, "grad_agree": 0.0, "true_value": -80.0}]
    agent = type("Agent", (), {"measurements": list(m), "config": TD3Config(policy_freq=2)})()
    assert delay_probe(agent) == {"q_error_before": 5.0, "q_error_after": 7.0, "q_bias_before": 3.0,
                                  "td_error_before": pytest.approx(0.2), "grad_agree_before": 0.5, "true_value": -90.0}
    assert agent.measurements == [] and delay_probe(agent) == {}
    assert window_means([x for x in m if x["k"] == 0]) == {"q_error_after": 7.0, "true_value": -90.0}


def trained(agent, policy_freq, **changes):
    config = dataclasses.replace(RUN, policy_freq=policy_freq, **changes)
    return train("Pendulum-v1", config, agent=agent, seed=0, device="cpu", progress=False)


def same_training(a, b) -> bool:
    strip = [[{k: "nan" if v != v else v for k, v in h.items() if k != "wall_s"} for h in r.history]
             for r in (a, b)]  # the first rows' train_return and critic_loss are nan, which equals nothing
    return strip[0] == strip[1] and all(
        torch.equal(x, y) for net in ("actor", "critic", "actor_target", "critic_target")
        for x, y in zip(getattr(a.agent, net).state_dict().values(), getattr(b.agent, net).state_dict().values()))


@pytest.mark.parametrize("policy_freq, agent", [(1, ProbedTD3TargetsEvery1), (2, ProbedTD3TargetsEvery2)])
def test_probing_with_target_freq_equal_to_policy_freq_trains_as_td3_bit_for_bit(policy_freq, agent):
    probed = trained(agent, policy_freq)
    assert same_training(trained(TD3, policy_freq), probed)
    assert [(m["it"], m["k"]) for m in probed.agent.measurements] == [
        (100, 0), (100, policy_freq), (200, 0), (200, policy_freq), (300, 0)]


def test_bf16_training_is_probed_in_float32_as_without_it():
    """The probe just before the actor's step runs inside the update's bf16 autocast: it measures in float32."""
    probed = train("Pendulum-v1", dataclasses.replace(RUN, policy_freq=2, bf16=True), agent=ProbedTD3TargetsEvery1,
                   seed=0, device="cpu", progress=False)
    assert [(m["it"], m["k"]) for m in probed.agent.measurements][:2] == [(100, 0), (100, 2)]
    assert all(type(v) is float and np.isfinite(v) for m in probed.agent.measurements for k, v in m.items()
               if k not in ("it", "k"))


def test_the_other_target_freq_changes_training():
    """actor/2: the actor every 2 updates, the targets at every one: not TD3's run."""
    assert not same_training(trained(TD3, 2), trained(ProbedTD3TargetsEvery1, 2))


def moves(agent_class, policy_freq, tau, updates=8):
    """For each of ``updates`` updates on one batch: (the actor stepped, the target networks moved, and
    whether each target parameter moved to its lerp by ``tau`` towards the learned one)."""
    torch.manual_seed(0)
    agent = agent_class(3, [-2.0], [2.0], dataclasses.replace(RUN, policy_freq=policy_freq, tau=tau))
    g = torch.Generator().manual_seed(0)
    batch = Batch(torch.randn(64, 3, generator=g), torch.rand(64, 1, generator=g) * 4 - 2,
                        torch.randn(64, 1, generator=g), torch.randn(64, 3, generator=g), torch.ones(64, 1))
    out = []
    for _ in range(updates):
        before = [p.clone() for p in (*agent.critic_target.parameters(), *agent.actor_target.parameters())]
        metrics = agent.update(batch)
        learned = [*agent.critic.parameters(), *agent.actor.parameters()]
        after = [*agent.critic_target.parameters(), *agent.actor_target.parameters()]
        moved = any(not torch.equal(a, b) for a, b in zip(before, after))
        lerped = all(torch.allclose(a, b + tau * (p - b), rtol=0, atol=1e-7) for a, b, p in zip(after, before, learned))
        out.append(("actor_loss" in metrics, moved, lerped or not moved))
    return out


@pytest.mark.parametrize("agent_class, policy_freq, target_freq, tau", [
    (ProbedTD3TargetsEvery1, 1, 1, 0.005), (ProbedTD3TargetsEvery2, 2, 2, 0.005), (ProbedTD3TargetsEvery1, 2, 1, 0.005),
    (ProbedTD3TargetsEvery2, 1, 2, 0.005), (ProbedTD3TargetsEvery2, 1, 2, 0.01)])
def test_each_schedule_steps_the_actor_and_lerps_the_targets_by_tau_when_it_says(agent_class, policy_freq, target_freq, tau):
    assert moves(agent_class, policy_freq, tau) == [(it % policy_freq == 0, it % target_freq == 0, True)
                                                    for it in range(1, 9)]


class WarmFor100(ProbedTD3TargetsEvery2):
    """Targets every 2, after 100 critic updates on d = 1's schedule."""

    warm_updates = 100


def test_a_warm_run_is_d1s_run_up_to_its_switch_and_its_own_after():
    """100 warm updates with tau 0.005 at d = 1, whatever the run's own schedule (here d = 2, tau 0.01); RUN
    has 300 updates, probed at 100 (the switch), 200 and 300."""
    d1 = trained(ProbedTD3TargetsEvery1, 1, total_steps=400)
    assert same_training(d1, trained(WarmFor100, 2, total_steps=400, tau=0.01))
    assert not same_training(trained(ProbedTD3TargetsEvery1, 1), trained(WarmFor100, 2, tau=0.01))
    warm = trained(WarmFor100, 2, tau=0.01).agent
    assert [(m["it"], m["k"]) for m in warm.measurements] == [(100, 0), (100, 2), (200, 0), (200, 2), (300, 0)]
    assert [warm.schedule() for warm.total_it in (1, 100, 101)] == [(1, 1, 0.005), (1, 1, 0.005), (2, 2, 0.01)]


def test_a_delay_the_probe_cannot_measure_is_refused():
    with pytest.raises(ValueError, match="policy_freq=3: the delay probe needs a divisor of 100"):
        ProbedTD3TargetsEvery2(3, [-2.0], [2.0], dataclasses.replace(RUN, policy_freq=3))
    with pytest.raises(ValueError, match="cuda_graph=True: the delay probe measures the critic between its steps"):
        ProbedTD3TargetsEvery2(3, [-2.0], [2.0], dataclasses.replace(RUN, cuda_graph=True))


def test_the_variants_and_the_probe_are_registered_for_the_sweep():
    for name, target_freq, warm, agent in (
            ("delay probe, targets every 1", 1, 0, ProbedTD3TargetsEvery1),
            ("delay probe, targets every 2", 2, 0, ProbedTD3TargetsEvery2),
            ("delay probe, targets every 1, warm start", 1, 5_000, WarmProbedTD3TargetsEvery1),
            ("delay probe, targets every 2, warm start", 2, 5_000, WarmProbedTD3TargetsEvery2)):
        variant = get_variant(name)
        assert variant.agent is agent and variant.probes == (delay_probe,)
        assert (agent.target_freq, agent.warm_updates) == (target_freq, warm)
        assert variant.switches == get_variant("TD3").switches
    assert get_probe("delay") is delay_probe and delay.PROBE_EVERY == 100


def test_the_experiment_runs_every_schedule_cold_and_every_other_warm():
    """Nine takes: the five schedules from a cold start, and all but d = 1 from a warm one (d = 1's cold run is
    its own warm run); each sweep's config is its schedule's, and the windows lie where the docstring says."""
    takes = experiment_script("delay").EXPERIMENTS["delay-mechanism"].takes
    expected = [(start + label, variant_name(t, start), {"policy_freq": p, "tau": tau, "eval_freq": 1_000})
                for start in ("", "warm ") for label, p, t, tau in delay.SCHEDULES if start + label != "warm d=1"]
    assert [(t.name, t.variant, dict(t.sweep.overrides)) for t in takes] == expected
    assert all(t.sweep.seeds == (0, 1, 2, 3, 4) and t.sweep.steps == 12_000 for t in takes)
    assert delay.SWITCH == preset("Pendulum-v1").start_timesteps + delay.WARM_UPDATES
    assert delay.START_UP == (2_000, delay.SWITCH) and delay.WARM_WINDOW == (delay.SWITCH + 2_000, 12_000)


def test_a_window_mean_is_the_mean_of_the_evaluations_inside_it():
    history = [{"step": 1_000, "eval_mean": 1.0}, {"step": 2_000, "q_error_before": 4.0},
               {"step": 3_000, "q_error_before": 6.0}, {"step": 4_000, "q_error_before": 20.0}]
    assert window_mean(history, "q_error_before", (2_000, 3_000)) == 5.0
    with pytest.raises(ValueError, match="No evaluation between steps 5,000 and 6,000 holds 'q_error_before'"):
        window_mean(history, "q_error_before", (5_000, 6_000))
