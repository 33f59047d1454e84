"""The agents shipped with the package reach their bars on seeds training never used."""

import pytest

from td3_lib import evaluate
from td3_lib.pretrained import available, load_pretrained, reference_history

# mean evaluation return each shipped agent must reach (no noise)
BARS = {"Pendulum-v1": -200.0, "LunarLanderContinuous-v3": 200.0, "BipedalWalker-v3": 300.0,
        "AntBulletEnv-v0": 2500.0}
EPISODES = {"Pendulum-v1": 20, "LunarLanderContinuous-v3": 10, "BipedalWalker-v3": 3,
            "AntBulletEnv-v0": 3}


def test_every_shipped_agent_has_a_bar_and_a_curve():
    assert "Pendulum-v1" in available()
    for env_id in available():
        assert env_id in BARS
        history = reference_history(env_id)
        assert history and history[-1]["step"] > history[0]["step"]


@pytest.mark.parametrize("env_id", available())
def test_shipped_agent_reaches_its_bar(env_id):
    agent = load_pretrained(env_id)
    returns = evaluate(agent, env_id, episodes=EPISODES[env_id], seed=50_000)
    assert returns.mean() >= BARS[env_id], f"{env_id}: {returns.mean():.1f} < {BARS[env_id]}"


def test_unknown_pretrained_is_a_clear_error():
    with pytest.raises(ValueError, match="No pretrained agent for 'Nope-v0'; available: "):
        load_pretrained("Nope-v0")
