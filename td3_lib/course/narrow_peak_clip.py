"""Lesson 04's clip: NarrowPeak's agents side by side, every action nudged by the same noise (the task has
one start state, so the nudges are its hard start): the reward at the position each chose, the action it
meant and the one it took."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..agent import TD3
from .tasks import NarrowPeak


def nudged_episodes(agent: TD3, nudges: np.ndarray) -> list[dict]:
    """One NarrowPeak episode per row of ``nudges`` (shape (episodes, 2)): the agent's noise-free action at
    each step plus that row's nudge, clipped to [-1, 1]. Each: the position x, the second action the agent
    meant and the one it took, and the reward."""
    env, out = NarrowPeak(), []
    for nudge in nudges:
        obs, _ = env.reset()
        obs, _, _, _, _ = env.step(np.clip(agent.act(obs) + nudge[0], -1.0, 1.0))
        meant = float(agent.act(obs)[0])
        taken = float(np.clip(meant + nudge[1], -1.0, 1.0))
        reward = env.step(np.array([taken], np.float32))[1]
        out.append({"x": float(obs[1]), "meant": meant, "taken": taken, "reward": reward})
    return out


def narrow_peak_frame(runs: dict, episode: int, taken: bool, size=(10.0, 3.6), dpi: int = 80) -> np.ndarray:
    """One frame of the clip: a panel per agent (``runs``: label -> (``nudged_episodes``, mean return over
    many such episodes)) with the reward r(x, a) at the position x it chose in ``episode``, the action it
    meant (dotted) and, once ``taken``, the action it took and its reward (a dot). Drawn on a Figure of its
    own (no pyplot), as an RGB array."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, dpi=dpi)
    FigureCanvasAgg(fig)
    a = np.linspace(-1.0, 1.0, 801)
    for ax, (label, (episodes, mean)) in zip(fig.subplots(1, len(runs), sharey=True), runs.items()):
        now = episodes[episode]
        ax.plot(a, NarrowPeak.reward(now["x"], a), color="0.3", lw=1.5, label="reward at this position")
        ax.axvline(now["meant"], color="C0", ls=":", lw=1.5, label="the action meant")
        ax.plot([now["taken"]] * taken, [now["reward"]] * taken, "o", color="C3", ms=9, label="the action taken")
        reward = f"{now['reward']:.2f}" if taken else "..."
        ax.set(xlim=(-1, 1), ylim=(0, 1.5), xlabel="second action a",
               title=f"{label}: mean return {mean:.2f} when nudged\nepisode {episode + 1}: position x = "
                     f"{now['x']:+.2f}, reward {reward}")
        ax.title.set_fontsize(10)
    fig.axes[0].set_ylabel("reward r(x, a)")
    fig.axes[0].legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba())[..., :3].copy()


def record_narrow_peak(agents: dict, out, episodes: int = 20, noise: float = 0.1, seed: int = 0, fps: int = 3,
                       score_episodes: int = 1_000) -> Path:
    """Lesson 04's clip: ``agents`` (label -> agent) side by side on NarrowPeak for ``episodes`` episodes,
    every action nudged by Gaussian noise of std ``noise`` (the same draws for every agent, from a generator
    seeded ``seed``), two frames an episode (the position chosen, then the action taken and its reward).
    Each panel's title gives the agent's mean return over ``score_episodes`` more episodes nudged alike,
    which the clip's few episodes only sample. Writes ``out``/narrow-peak-episode-0.mp4, prints both means
    and returns its path."""
    from gymnasium.utils.save_video import save_video

    nudges = np.random.default_rng(seed).normal(0.0, noise, (episodes + score_episodes, 2))
    runs = {}
    for label, agent in agents.items():
        run = nudged_episodes(agent, nudges)
        runs[label] = (run[:episodes], float(np.mean([e["reward"] for e in run[episodes:]])))
        print(f"{label}: mean return {np.mean([e['reward'] for e in run[:episodes]]):.3f} over the clip's "
              f"{episodes} episodes, {runs[label][1]:.3f} over {score_episodes:,} more")
    frames = [narrow_peak_frame(runs, k, taken) for k in range(episodes) for taken in (False, True)]
    save_video(frames, str(out), fps=fps, name_prefix="narrow-peak", episode_trigger=lambda i: True,
               episode_index=0)
    return Path(out) / "narrow-peak-episode-0.mp4"
