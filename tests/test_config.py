import dataclasses

import pytest

from td3_lib import PRESET_ENVS, TD3Config, preset


def test_defaults_are_the_authors():
    c = TD3Config()
    assert c.hidden_sizes == (256, 256) and c.actor_lr == 3e-4 and c.critic_lr == 3e-4
    assert (c.batch_size, c.discount, c.tau) == (256, 0.99, 0.005)
    assert (c.policy_noise, c.noise_clip, c.policy_freq, c.expl_noise) == (0.2, 0.5, 2, 0.1)
    assert c.start_timesteps == 25_000
    assert c.clipped_double_q and c.target_policy_smoothing and c.delayed_policy_updates


@pytest.mark.parametrize("field, value, words", [
    ("batch_size", 0, "batch_size=0"),
    ("tau", 0.0, "(0, 1]"),
    ("tau", 1.5, "tau=1.5"),
    ("discount", -0.1, "[0, 1]"),
    ("discount", 1.01, "discount=1.01"),
    ("policy_freq", 0, "policy_freq=0"),
    ("policy_noise", -0.2, "policy_noise=-0.2"),
    ("noise_clip", -1.0, "noise_clip=-1.0"),
    ("expl_noise", -0.1, "expl_noise=-0.1"),
    ("hidden_sizes", (), "hidden_sizes=()"),
])
def test_invalid_values_are_refused_with_a_clear_message(field, value, words):
    with pytest.raises(ValueError) as err:
        TD3Config(**{field: value})
    msg = str(err.value)
    assert words in msg and "must be" in msg and "\n" not in msg
    with pytest.raises(ValueError):  # replace() validates too
        dataclasses.replace(TD3Config(), **{field: value})


def test_presets_cover_the_course_and_unknown_ids_get_defaults():
    for env_id in ("Pendulum-v1", "MountainCarContinuous-v0", "LunarLanderContinuous-v3",
                   "BipedalWalker-v3", "AntBulletEnv-v0", "HalfCheetahBulletEnv-v0",
                   "HopperBulletEnv-v0", "Walker2DBulletEnv-v0"):
        assert env_id in PRESET_ENVS
        assert isinstance(preset(env_id), TD3Config)
    assert preset("BipedalWalker-v3").total_steps == 1_000_000
    assert preset("LunarLanderContinuous-v3").total_steps == 300_000
    assert preset("SomethingElse-v0") == TD3Config()


def test_config_round_trips_through_plain_dict():
    c = preset("Pendulum-v1")
    assert TD3Config.from_dict(c.to_dict()) == c
    with pytest.raises(ValueError, match="Unknown TD3Config fields"):
        TD3Config.from_dict({**c.to_dict(), "gamma": 0.9})
