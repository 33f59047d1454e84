"""The agents shipped with the package reach their bars on seeds training never used."""

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from td3_lib import CheckpointError, TD3, TD3Config, evaluate, train
from td3_lib.pretrained import (TEST_EPISODES, TEST_SEED, available, export_pretrained, held_out_test,
                                load_pretrained, package_dir, readme_row, reference_history, shipped_test_result,
                                write_test_result)
from td3_lib.pretrained.__main__ import main as pretrained_main
from td3_lib.run import wall_clock

README = Path(__file__).resolve().parents[1] / "README.md"

# mean evaluation return each shipped agent must reach (no noise)
BARS = {"Pendulum-v1": -200.0, "LunarLanderContinuous-v3": 200.0, "BipedalWalker-v3": 300.0,
        "AntBulletEnv-v0": 2500.0, "Hopper-v5": 3000.0}
EPISODES = {"Pendulum-v1": 20, "LunarLanderContinuous-v3": 10, "BipedalWalker-v3": 3,
            "AntBulletEnv-v0": 3, "Hopper-v5": 5}


def test_every_shipped_agent_has_a_bar_and_a_curve():
    assert "Pendulum-v1" in available()
    for env_id in available():
        assert env_id in BARS
        history = reference_history(env_id)
        assert history and history[-1]["step"] > history[0]["step"]


def needs_its_extra(env_id: str):
    """PyBullet's agents are tested where the optional bullet extra is installed."""
    if "Bullet" not in env_id:
        return env_id
    missing = importlib.util.find_spec("pybullet_envs_gymnasium") is None
    return pytest.param(env_id, marks=[pytest.mark.skipif(missing, reason="needs the bullet extra"),
                                       pytest.mark.slow])  # PyBullet's Ant: seconds per episode


@pytest.mark.parametrize("env_id", [needs_its_extra(e) for e in available()])
def test_shipped_agent_reaches_its_bar(env_id):
    agent = load_pretrained(env_id)
    returns = evaluate(agent, env_id, episodes=EPISODES[env_id], seed=50_000)
    assert returns.mean() >= BARS[env_id], f"{env_id}: {returns.mean():.1f} < {BARS[env_id]}"


def test_unknown_pretrained_is_a_clear_error():
    with pytest.raises(ValueError, match="No pretrained agent for 'Nope-v0'; available: "):
        load_pretrained("Nope-v0")
    with pytest.raises(ValueError, match="No pretrained agent for 'Nope-v0'; available: "):
        shipped_test_result("Nope-v0")


def test_every_shipped_agent_has_its_held_out_test_stored():
    for env_id in available():
        result = shipped_test_result(env_id)
        returns = np.array(result["returns"])
        assert result["env_id"] == env_id and result["first_seed"] == TEST_SEED
        assert result["episodes"] == TEST_EPISODES == len(returns) == len(result["lengths"])
        assert result["mean"] == pytest.approx(returns.mean(), abs=0.051)
        assert result["std"] == pytest.approx(returns.std(), abs=0.051)
        assert (result["min"], result["max"]) == pytest.approx((returns.min(), returns.max()), abs=0.051)
        assert result["mean"] >= BARS[env_id] and min(result["lengths"]) >= 1
        assert "td3_lib" in result["versions"] and "torch" in result["versions"]


def readme_agents() -> dict[str, tuple[str, str]]:
    """The README's trained agents: for each, its 'steps trained' cell and its test result."""
    section = README.read_text().split("## Trained agents", 1)[1].split("\n## ", 1)[0]
    return {m[1]: (m[2], m[3]) for m in re.finditer(r"^\| ([\w-]+-v\d) \| (.*?) \| (-?[\d.]+ ± [\d.]+) \|", section, re.M)}


def test_the_printed_readme_row_holds_what_the_readme_quotes(tmp_path):
    """The row ``python -m td3_lib.pretrained`` prints when it ships Pendulum-v1's run: its steps, wall clock,
    best evaluation and test as the README gives them (the README adds the settings in words)."""
    (tmp_path / "history.csv").write_text((package_dir() / "Pendulum-v1.csv").read_text())
    row = readme_row(tmp_path, "Pendulum-v1", shipped_test_result("Pendulum-v1"), "videos/Pendulum-v1.gif")
    steps, test = readme_agents()["Pendulum-v1"]
    assert row.startswith(f"| Pendulum-v1 | {steps.replace(', preset, seed 0', '')} | {test} | none registered |")
    assert row.endswith("| ![Pendulum-v1](videos/Pendulum-v1.gif) |")


def test_readme_quotes_each_agents_stored_test():
    rows = readme_agents()
    for env_id in available():
        result = shipped_test_result(env_id)
        assert rows[env_id][1] == f"{result['mean']:.1f} ± {result['std']:.1f}", env_id


def test_readme_gives_each_agents_steps_wall_clock_and_best_evaluation_from_its_history():
    rows = readme_agents()
    for env_id in available():
        history = reference_history(env_id)
        best = max(history, key=lambda row: row["eval_mean"])
        steps_trained = rows[env_id][0]
        assert steps_trained.startswith(f"{history[-1]['step']:,}"), env_id
        assert f"({wall_clock(history[-1]['wall_s'])})" in steps_trained, env_id
        assert f"best evaluation at {best['step']:,}" in steps_trained, env_id


def test_held_out_test_is_the_noise_free_evaluation_on_the_test_seeds(tmp_path):
    agent = load_pretrained("Pendulum-v1")
    result = held_out_test(agent, "Pendulum-v1", episodes=3)
    assert result["returns"] == pytest.approx(evaluate(agent, "Pendulum-v1", episodes=3, seed=TEST_SEED), abs=0.005)
    assert result["lengths"] == [200, 200, 200]
    path = write_test_result(result, dest=tmp_path)
    assert path == tmp_path / "Pendulum-v1.test.json"
    assert path.read_text().startswith("{") and not list(tmp_path.glob("*.tmp*"))


@pytest.mark.parametrize("argv", [[], ["runs/x"], ["--test", "Pendulum-v1", "runs/x"],
                                  ["runs/x", "Pendulum-v1", "--test", "Pendulum-v1"],
                                  ["--clip", "Pendulum-v1", "runs/x"],
                                  ["--test", "Pendulum-v1", "--clip", "Pendulum-v1"]])
def test_shipping_command_takes_a_run_a_test_or_a_clip_one_at_a_time(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        pretrained_main(argv)
    assert exit_.value.code == 2
    assert ("give either RUN_DIR ENV_ID (ship a run), --test ENV_ID alone (test a shipped agent) or --clip "
            "ENV_ID alone (record its clip again)") in capsys.readouterr().err


def test_the_clip_command_records_the_shipped_agents_clip_again(tmp_path, capsys):
    assert pretrained_main(["--clip", "Pendulum-v1", "--videos", str(tmp_path), "--clip-seed", "12493",
                            "--gif-seconds", "1", "--gif-width", "64"]) == 0
    mp4, gif = tmp_path / "Pendulum-v1.mp4", tmp_path / "Pendulum-v1.gif"
    assert capsys.readouterr().out.strip().endswith(f"{mp4} and {gif}")
    assert sorted(tmp_path.iterdir()) == [gif, mp4] and mp4.stat().st_size > 1000
    from PIL import Image
    with Image.open(gif) as image:
        assert image.width == 64


@pytest.mark.parametrize("argv, words", [
    (["--test", "Foo-v0"], "python -m td3_lib.pretrained: error: No pretrained agent for 'Foo-v0'; available: "),
    (["no/such/run", "Pendulum-v1"],
     "python -m td3_lib.pretrained: error: No checkpoint file at no/such/run/best_actor.pt"),
    (["--test", "Pendulum-v1", "--episodes", "0"], "argument --episodes: 0 must be a positive integer"),
])
def test_shipping_command_refuses_bad_input_in_one_line(argv, words, capsys):
    shipped = {p: p.stat().st_mtime_ns for p in package_dir().iterdir()}
    try:
        code = pretrained_main(argv)
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err
    assert {p: p.stat().st_mtime_ns for p in package_dir().iterdir()} == shipped  # nothing shipped or tested


@pytest.mark.slow
def test_run_keeps_the_best_evaluated_actor_and_exports_it(tmp_path):
    cfg = TD3Config(hidden_sizes=(32, 32), start_timesteps=200, total_steps=1500, eval_freq=300,
                    eval_episodes=1, batch_size=32)
    snapshots = []
    result = train("Pendulum-v1", cfg, seed=3, device="cpu", progress=False, checkpoint_dir=tmp_path / "run",
                   callback=lambda t, agent: snapshots.append(
                       {k: v.clone() for k, v in agent.actor.state_dict().items()}))
    means = [h["eval_mean"] for h in result.history]
    assert len(snapshots) == len(means) == 5
    best = TD3.load(tmp_path / "run" / "best_actor.pt", env_id="Pendulum-v1")
    assert not best.can_train
    for k, v in best.actor.state_dict().items():
        assert torch.equal(v, snapshots[int(np.argmax(means))][k])

    path = export_pretrained(tmp_path / "run", "Pendulum-v1", dest=tmp_path, best=True)
    shipped = TD3.load(path)
    assert all(torch.equal(a, b) for a, b in zip(shipped.actor.parameters(), best.actor.parameters()))
    assert (tmp_path / "Pendulum-v1.csv").read_text() == (tmp_path / "run" / "history.csv").read_text()
    with pytest.raises(CheckpointError, match="was trained on Pendulum-v1, not BipedalWalker-v3"):
        export_pretrained(tmp_path / "run", "BipedalWalker-v3", dest=tmp_path, best=True)
