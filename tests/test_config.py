import dataclasses

import numpy as np
import pytest

from td3_lib import PRESET_ENVS, TD3Config, preset
from td3_lib.config import PRESET_SETTINGS


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
    ("hidden_sizes", 64, "hidden_sizes=64 is invalid: it must be a tuple or list of layer widths"),
    ("hidden_sizes", (True, 64), "hidden_sizes=(True, 64) is invalid: it must be positive integers"),
    ("actor_lr", "1e-3", "actor_lr='1e-3' is invalid: it must be a number"),
    ("total_steps", 1e6, "total_steps=1000000.0 is invalid: it must be an integer"),
    ("batch_size", True, "batch_size=True is invalid: it must be an integer"),
    ("bf16", 1, "bf16=1 is invalid: it must be True or False"),
])
def test_invalid_values_are_refused_with_a_clear_message(field, value, words):
    with pytest.raises(ValueError) as err:
        TD3Config(**{field: value})
    msg = str(err.value)
    assert words in msg and "must be" in msg and "\n" not in msg
    with pytest.raises(ValueError):  # replace() validates too
        dataclasses.replace(TD3Config(), **{field: value})


def test_every_field_has_a_type_check():
    """Each field's annotation names a kind that check_types knows (a new field cannot skip the check)."""
    from td3_lib.config import KINDS

    assert {f.type for f in dataclasses.fields(TD3Config) if f.name != "hidden_sizes"} <= set(KINDS)
    assert TD3Config(hidden_sizes=[64, 64], discount=1).hidden_sizes == (64, 64)  # a list, an int as a number
    from_numpy = TD3Config(hidden_sizes=np.array([64, 64]), batch_size=np.int64(32), tau=np.float32(0.5),
                           bf16=np.False_)  # numpy's scalars are kept as Python's, so a checkpoint holds plain types
    assert from_numpy == TD3Config(hidden_sizes=(64, 64), batch_size=32, tau=0.5, bf16=False)
    assert {type(v) for v in from_numpy.to_dict().values()} <= {list, int, float, bool}


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


def test_the_papers_settings_differ_from_the_defaults_in_networks_rates_batch_and_random_steps():
    paper, defaults = TD3Config.paper("Hopper-v5"), TD3Config()
    different = {k for k, v in paper.to_dict().items() if defaults.to_dict()[k] != v}
    assert different == {"hidden_sizes", "actor_lr", "critic_lr", "batch_size", "start_timesteps"}
    assert (paper.hidden_sizes, paper.actor_lr, paper.critic_lr, paper.batch_size, paper.start_timesteps) == \
        ((400, 300), 1e-3, 1e-3, 100, 1_000)
    assert (paper.tau, paper.expl_noise, paper.policy_noise, paper.noise_clip, paper.policy_freq) == (0.005, 0.1, 0.2, 0.5, 2)
    assert (paper.eval_freq, paper.eval_episodes, paper.total_steps) == (5_000, 10, 1_000_000)
    for env_id in ("HalfCheetah-v5", "Ant-v5", "Ant-v1"):
        assert TD3Config.paper(env_id).start_timesteps == 10_000
    for env_id in ("Walker2d-v5", "AntBulletEnv-v0", "Pendulum-v1", ""):
        assert TD3Config.paper(env_id).start_timesteps == 1_000


def test_the_paper_preset_is_listed_with_the_presets_and_an_unknown_name_is_one_line():
    assert list(PRESET_SETTINGS) == ["course", "paper"]
    assert preset("Ant-v5", "paper") == TD3Config.paper("Ant-v5")
    assert preset("Pendulum-v1", "course") == preset("Pendulum-v1") != preset("Pendulum-v1", "paper")
    assert preset("Hopper-v5") == TD3Config(total_steps=1_000_000)  # the course's: the authors' current code
    with pytest.raises(ValueError) as err:
        preset("Hopper-v5", "Paper")
    assert str(err.value) == "Unknown preset 'Paper'; allowed: course, paper."


class Started(Exception):
    """Raised by a stand-in for ``train``, once it has the config it was given."""


def test_the_command_line_reaches_the_paper_preset(tmp_path, capsys, monkeypatch):
    from td3_lib import training
    from td3_lib.__main__ import main

    def start(env_id, config, **kwargs):
        raise Started(config)

    monkeypatch.setattr(training, "train", start)
    with pytest.raises(Started) as started:
        main(["train", "--env", "HalfCheetah-v5", "--preset", "paper", "--steps", "5000", "--out", str(tmp_path / "y")])
    assert started.value.args[0] == dataclasses.replace(TD3Config.paper("HalfCheetah-v5"), total_steps=5000)
    for command in (["train", "--env", "Pendulum-v1"], ["sweep", "--env", "Pendulum-v1", "--seeds", "0"]):
        with pytest.raises(SystemExit) as refused:
            main([*command, "--preset", "papr", "--out", str(tmp_path / "x")])
        err = capsys.readouterr().err
        assert refused.value.code == 2
        assert err.count("\n") == 1 and "argument --preset: invalid choice: 'papr' (choose from " in err
        assert all(name in err.split("choose from")[1] for name in ("course", "paper"))  # quoted before Python 3.12.8
    assert not (tmp_path / "x").exists()  # refused before anything was written
