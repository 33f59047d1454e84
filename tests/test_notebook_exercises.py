"""Every lesson's exercise check accepts a right solution and refuses wrong ones.

The check functions are read from the stored notebooks: each test runs the lesson's set-up cell
(its imports), then the top-level definitions of the cell that defines the check (not the line
that calls it), and hands the check a right solution and several wrong ones, each a plausible
slip. A right one must get "Right", every wrong one "Not yet".
"""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

import pytest

from td3_lib.course.loss_check import check_critic_loss

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def cell_sources(lesson: str) -> list[str]:
    path = next(NOTEBOOKS.glob(f"{lesson}_*.ipynb"))
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


def definitions(source: str) -> str:
    """``source`` without its top-level expression statements (the calls that run the check)."""
    tree = ast.parse(source)
    tree.body = [node for node in tree.body if not isinstance(node, ast.Expr)]
    return ast.unparse(tree)


def check_from(lesson: str, name: str):
    """The function ``name`` as the lesson defines it, in a namespace holding the lesson's imports."""
    sources = cell_sources(lesson)
    namespace: dict = {}
    setup = next(s for s in sources if "QUICK = os.environ" in s)
    exec(compile(definitions(setup), f"{lesson}-setup", "exec"), namespace)
    cell = next(s for s in sources if f"def {name}(" in s)
    exec(compile(definitions(cell), f"{lesson}-{name}", "exec"), namespace)
    return namespace[name], namespace


def solution(namespace: dict, source: str, name: str):
    """The function ``name`` defined by ``source`` in a copy of the lesson's namespace."""
    scope = dict(namespace)
    exec(compile(textwrap.dedent(source), "solution", "exec"), scope)
    return scope[name]


def verdicts(lesson: str, check: str, name: str, right: str, wrong: dict[str, str]) -> None:
    run, namespace = check_from(lesson, check)
    message = run(solution(namespace, right, name))
    assert message.startswith("Right"), message
    for slip, source in wrong.items():
        message = run(solution(namespace, source, name))
        assert message.startswith("Not yet"), f"{slip}: {message}"


def library_verdicts(lesson: str, run, name: str, right: str, wrong: dict[str, str]) -> None:
    """``verdicts`` for a check the library holds (``run``), with solutions in the lesson's namespace."""
    namespace: dict = {}
    setup = next(s for s in cell_sources(lesson) if "QUICK = os.environ" in s)
    exec(compile(definitions(setup), f"{lesson}-setup", "exec"), namespace)
    assert namespace[run.__name__] is run  # the lesson imports the library's check
    assert run(solution(namespace, right, name)).startswith("Right")
    for slip, source in wrong.items():
        message = run(solution(namespace, source, name))
        assert message.startswith("Not yet"), f"{slip}: {message}"


# ------------------------------------------------------------------ 00
def test_00_scale_action():
    verdicts("00", "check_scale_action", "scale_action", """
        def scale_action(u, low, high):
            return (high + low) / 2 + (high - low) / 2 * u
    """, {
        "returns None": "def scale_action(u, low, high):\n    return None",
        "one bound for all": "def scale_action(u, low, high):\n    return high[0] * u",
        "symmetric bounds assumed": "def scale_action(u, low, high):\n    return high * u",
        "whole range as half-range": "def scale_action(u, low, high):\n    return (high + low) / 2 + (high - low) * u",
        "from low, wrong scale": "def scale_action(u, low, high):\n    return low + (high - low) * u",
    })


def test_00_play_random_episode():
    body = """
        def play_random_episode(env_id, seed):
            env = make_env(env_id, seed=seed)
            obs, info = env.reset(seed=seed)
            total, steps = 0.0, 0
            terminated = truncated = False
            {loop}
            env.close()
            return total, steps, terminated, truncated
    """
    loop = lambda text: textwrap.dedent(body).replace("{loop}", textwrap.indent(textwrap.dedent(text), "    ").strip())
    verdicts("00", "check_play_random_episode", "play_random_episode", loop("""
        while not (terminated or truncated):
            obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
            total += reward
            steps += 1
    """), {
        "no loop": loop("pass"),
        "a fixed 200 steps": loop("""
            for _ in range(200):
                obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
                total += reward
                steps += 1
        """),
        "stops before the last reward": loop("""
            while True:
                obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
                steps += 1
                if terminated or truncated:
                    break
                total += reward
        """),
        "counts from 1": loop("""
            steps = 1
            while not (terminated or truncated):
                obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
                total += reward
                steps += 1
        """),
        "flags swapped": loop("""
            while not (terminated or truncated):
                obs, reward, truncated, terminated, info = env.step(env.action_space.sample())
                total += reward
                steps += 1
        """),
    })


def test_00_reference_is_out_of_the_learners_reach():
    _, namespace = check_from("00", "check_play_random_episode")
    assert "reference_episode" not in namespace and "reference" not in namespace


# ------------------------------------------------------------------ 01
def test_01_td_target():
    stub = "def td_target(reward, terminated, truncated, next_q, discount):\n    not_done = {}\n    return reward + discount * not_done * next_q"
    verdicts("01", "check_td_target", "td_target", stub.format("1.0 - terminated"), {
        "left as it is": stub.format("..."),
        "done = terminated or truncated": stub.format("1.0 - torch.maximum(terminated, truncated)"),
        "truncated ends the sum": stub.format("1.0 - truncated"),
        "always bootstrap": stub.format("1.0"),
        "never bootstrap": stub.format("0.0"),
    })


# ------------------------------------------------------------------ 02
def test_02_two_action_bias():
    verdicts("02", "check_two_action_bias", "two_action_bias", """
        def two_action_bias(sigma):
            return sigma / np.sqrt(np.pi)
    """, {
        "the stub": "def two_action_bias(sigma):\n    return 0.0",
        "a factor read off the table": "def two_action_bias(sigma):\n    return 0.564 * sigma",
        "the table's values": "def two_action_bias(sigma):\n    return {0.5: 0.285, 1.0: 0.564, 2.0: 1.130}.get(sigma, 0.564 * sigma)",
        "E|x1 - x2| without the half": "def two_action_bias(sigma):\n    return sigma * np.sqrt(2 / np.pi)",
        "pi without the root": "def two_action_bias(sigma):\n    return sigma / np.pi",
        "grows with the variance": "def two_action_bias(sigma):\n    return sigma ** 2 / np.sqrt(np.pi)",
    })


# ------------------------------------------------------------------ 03
def test_03_clipped_target():
    stub = "def clipped_target(reward, not_done, q1_next, q2_next, discount):\n    return {}"
    verdicts("03", "check_clipped_target", "clipped_target",
             stub.format("reward + discount * not_done * torch.minimum(q1_next, q2_next)"), {
        "DDPG's target": stub.format("reward + discount * not_done * q1_next"),
        "the larger critic": stub.format("reward + discount * not_done * torch.maximum(q1_next, q2_next)"),
        "the mean of the two": stub.format("reward + discount * not_done * (q1_next + q2_next) / 2"),
        "not_done forgotten": stub.format("reward + discount * torch.minimum(q1_next, q2_next)"),
        "the second critic alone": stub.format("reward + discount * not_done * q2_next"),
    })


# ------------------------------------------------------------------ 04
def test_04_clip_probability():
    verdicts("04", "check_clip_probability", "clip_probability", """
        def clip_probability(policy_noise, noise_clip):
            return math.erfc(noise_clip / policy_noise / math.sqrt(2))
    """, {
        "the stub": "def clip_probability(policy_noise, noise_clip):\n    return None",
        "one side only": "def clip_probability(policy_noise, noise_clip):\n    return 0.5 * math.erfc(noise_clip / policy_noise / math.sqrt(2))",
        "no square root of 2": "def clip_probability(policy_noise, noise_clip):\n    return math.erfc(noise_clip / policy_noise)",
        "the ratio upside down": "def clip_probability(policy_noise, noise_clip):\n    return math.erfc(policy_noise / noise_clip / math.sqrt(2))",
        "the paper's value for every setting": "def clip_probability(policy_noise, noise_clip):\n    return 0.0124",
    })


# ------------------------------------------------------------------ 06
def test_06_count_updates():
    verdicts("06", "check_count_updates", "count_updates", """
        def count_updates(cfg):
            critic = max(0, cfg.total_steps - max(cfg.start_timesteps, cfg.batch_size - 1))
            return critic, critic // cfg.policy_freq
    """, {
        "the stub": "def count_updates(cfg):\n    return None",
        "batch size ignored": "def count_updates(cfg):\n    critic = cfg.total_steps - cfg.start_timesteps\n    return critic, critic // cfg.policy_freq",
        "actor at every step": "def count_updates(cfg):\n    critic = max(0, cfg.total_steps - max(cfg.start_timesteps, cfg.batch_size - 1))\n    return critic, critic",
        "actor rounded up": "def count_updates(cfg):\n    critic = max(0, cfg.total_steps - max(cfg.start_timesteps, cfg.batch_size - 1))\n    return critic, -(-critic // cfg.policy_freq)",
        "every step updates": "def count_updates(cfg):\n    return cfg.total_steps, cfg.total_steps // cfg.policy_freq",
    })


# ------------------------------------------------------------------ 07
def test_07_permutation_p():
    verdicts("07", "check_permutation_p", "permutation_p", """
        def permutation_p(a, b):
            pooled, n = np.concatenate([a, b]), len(a)
            observed = abs(a.mean() - b.mean())
            splits = list(itertools.combinations(range(len(pooled)), n))
            count = 0
            for idx in splits:
                in_a = np.zeros(len(pooled), dtype=bool)
                in_a[list(idx)] = True
                count += abs(pooled[in_a].mean() - pooled[~in_a].mean()) >= observed - 1e-9
            return count / len(splits)
    """, {
        "the stub": "def permutation_p(a, b):\n    return None",
        "td3_lib's test called": "def permutation_p(a, b):\n    return permutation_p_value(a, b)",
        "td3_lib's test called through its module": """
            def permutation_p(a, b):
                import td3_lib.stats
                return float(td3_lib.stats.permutation_p_value(list(a), list(b)))
        """,
        "one-sided": """
            def permutation_p(a, b):
                pooled, n = np.concatenate([a, b]), len(a)
                observed = a.mean() - b.mean()
                splits = list(itertools.combinations(range(len(pooled)), n))
                hits = [pooled[list(i)].mean() - np.delete(pooled, list(i)).mean() >= observed - 1e-9 for i in splits]
                return sum(hits) / len(splits)
        """,
        "strictly larger": """
            def permutation_p(a, b):
                pooled, n = np.concatenate([a, b]), len(a)
                observed = abs(a.mean() - b.mean())
                splits = list(itertools.combinations(range(len(pooled)), n))
                hits = [abs(pooled[list(i)].mean() - np.delete(pooled, list(i)).mean()) > observed + 1e-9 for i in splits]
                return sum(hits) / len(splits)
        """,
        "sums, not means": """
            def permutation_p(a, b):
                pooled, n = np.concatenate([a, b]), len(a)
                observed = abs(a.sum() - b.sum())
                splits = list(itertools.combinations(range(len(pooled)), n))
                hits = [abs(pooled[list(i)].sum() - np.delete(pooled, list(i)).sum()) >= observed - 1e-9 for i in splits]
                return sum(hits) / len(splits)
        """,
        "the observed split left out": """
            def permutation_p(a, b):
                pooled, n = np.concatenate([a, b]), len(a)
                observed = abs(a.mean() - b.mean())
                splits = list(itertools.combinations(range(len(pooled)), n))
                hits = [abs(pooled[list(i)].mean() - np.delete(pooled, list(i)).mean()) >= observed - 1e-9 for i in splits]
                return (sum(hits) - 1) / (len(splits) - 1)
        """,
    })


# ------------------------------------------------------------------ 08
def test_08_critic_loss():
    library_verdicts("08", check_critic_loss, "critic_loss", """
        def critic_loss(agent, batch, target_q):
            current_q1, current_q2 = agent.critic(batch.obs, batch.action)
            return F.mse_loss(current_q1, target_q) + F.mse_loss(current_q2, target_q)
    """, {
        "as given: both bugs": """
            def critic_loss(agent, batch, target_q):
                y = target_q.view(-1)
                current_q1, current_q2 = agent.critic(batch.obs, batch.action)
                return ((current_q1 - y) ** 2).mean() + ((current_q1 - y) ** 2).mean()
        """,
        "the shape fixed, Q1 still twice": """
            def critic_loss(agent, batch, target_q):
                current_q1, current_q2 = agent.critic(batch.obs, batch.action)
                return ((current_q1 - target_q) ** 2).mean() + ((current_q1 - target_q) ** 2).mean()
        """,
        "Q2 fixed, the shape still broadcast": """
            def critic_loss(agent, batch, target_q):
                y = target_q.view(-1)
                current_q1, current_q2 = agent.critic(batch.obs, batch.action)
                return ((current_q1 - y) ** 2).mean() + ((current_q2 - y) ** 2).mean()
        """,
        "TD3's own loss called": """
            def critic_loss(agent, batch, target_q):
                return agent.critic_loss(batch.obs, batch.action, target_q)[0]
        """,
        "TD3's own loss called through the class": """
            def critic_loss(agent, batch, target_q):
                own = type(agent).critic_loss
                return own(agent, batch.obs, batch.action, target_q)[0]
        """,
        "the target critic as current": """
            def critic_loss(agent, batch, target_q):
                current_q1, current_q2 = agent.critic_target(batch.obs, batch.action)
                return F.mse_loss(current_q1, target_q) + F.mse_loss(current_q2, target_q)
        """,
        "sums instead of means": """
            def critic_loss(agent, batch, target_q):
                current_q1, current_q2 = agent.critic(batch.obs, batch.action)
                return ((current_q1 - target_q) ** 2).sum() + ((current_q2 - target_q) ** 2).sum()
        """,
    })
