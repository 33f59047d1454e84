"""A clip of an agent with its critic's estimate drawn in: lessons 02 and 03's overestimation, watched.

    record_with_critic(agent, env_id, out, seed=0, discount=None, max_steps=None, twins=False) -> Path

records one noise-free episode of a TD3 ``agent`` and draws under each frame a small plot, as wide
as the frame (never over the agent), of two curves up to that frame, each with a dot at it and its
value in the legend:

- the critic's estimate Q1(s_t, pi(s_t)) of the state the frame shows (with ``twins=True`` also
  Q2(s_t, pi(s_t)) and min(Q1, Q2), the estimate clipped double Q learns from);
- the discounted return the agent earns from that frame on, G_t = sum_k discount^k r_{t+k}.

Where the estimate runs above the return, the critic overestimates. G_t is computed after the
episode (``returns_to_go``), so the plot knows it from the first frame on. The axes keep their
limits through the clip.

**The episode's end.** A time limit does not end the task: TD3 bootstraps through it (a truncated
step is not "done"), so its critic estimates the return of an episode that goes on. A return
summed only up to the limit would leave out, in the last frames, everything earned after it, and
set the critic against a number it never learned to estimate. So the rollout goes on past the last
frame drawn, unseen, for ``tail_steps(discount)`` steps (discount^tail <= 0.01: 459 steps at 0.99,
228 at Pendulum's 0.98), with the environment's time limit moved out of its way; every drawn G_t
then misses at most 1% of its discounted weight. An episode that
*terminates* (a hopper that falls) ends for real: after it nothing more is earned, the critic was
taught so (not_done = 0), and G_t stops there. ``CriticTrace`` holds every number the plot draws.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import gymnasium as gym
import numpy as np

from .envs import env_file_name, env_spec, id_without_module, make_env
from .rollout import critic_values, returns_to_go, rollout
from .video import moviepy_class, render_fps

TAIL_WEIGHT = 0.01
"""The discounted weight a drawn return may miss: the rollout runs on until discount^k is below it."""
AXES_HEIGHT = 130
"""The height of the plot's axes, in pixels (the legend above them takes a line per curve)."""


@dataclass
class CriticTrace:
    """What a critic clip draws, one entry per frame t (the state s_t it shows)."""

    env_id: str
    discount: float
    q1: np.ndarray  # Q1(s_t, pi(s_t))
    q2: np.ndarray  # Q2(s_t, pi(s_t)): trained only with clipped double Q
    returns: np.ndarray  # G_t, the discounted return earned from s_t on
    twins: bool  # whether the plot draws Q2 and min(Q1, Q2) too
    fps: float  # the environment's frames per second (its metadata's render_fps)
    rewards: list[float] = field(repr=False)  # every reward of the rollout, the unseen tail included
    terminated: bool = False  # the episode ended for real (not at the limit of the rollout)

    def __len__(self) -> int:
        return len(self.q1)

    @property
    def total(self) -> float:
        """The undiscounted return of the frames drawn."""
        return float(sum(self.rewards[:len(self)]))

    def curves(self) -> dict[str, np.ndarray]:
        """The plot's curves, by legend label."""
        estimates = {"critic's estimate $Q_1(s_t, \\pi(s_t))$": self.q1}
        if self.twins:
            estimates.update({"$Q_2(s_t, \\pi(s_t))$": self.q2, "$\\min(Q_1, Q_2)$": np.minimum(self.q1, self.q2)})
        return {**estimates, "return earned from t on, $G_t$": self.returns}


def check_critic(agent, twins: bool) -> None:
    """Refuse, in one sentence, an agent without a trained critic (or without trained twins)."""
    if not hasattr(agent, "critic") or not hasattr(agent, "config"):
        raise TypeError(f"record_with_critic needs a td3_lib.TD3 agent, not {type(agent).__name__}.")
    if not getattr(agent, "can_train", True):
        raise ValueError("This agent was loaded from an actor-only checkpoint (as the shipped agents are), so "
                         "it has no trained critic to draw: give an agent trained here or a full checkpoint.")
    if twins and not agent.config.clipped_double_q:
        raise ValueError("twins=True draws Q2 and min(Q1, Q2), but this agent trains without clipped double "
                         "Q, which leaves Q2 untrained: leave twins=False.")


def tail_steps(discount: float, weight: float = TAIL_WEIGHT) -> int:
    """The steps after which the discounted weight left, discount^k, is at most ``weight``."""
    if not 0.0 < discount < 1.0:
        raise ValueError(f"discount={discount!r} is invalid: it must be between 0 and 1, both excluded.")
    return max(1, math.ceil(math.log(weight) / math.log(discount)))


def frames_to_draw(env_id: str, max_steps: int | None) -> int:
    """The frames a clip shows: the episode's time limit, or ``max_steps`` if that is fewer."""
    if max_steps is not None and (isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1):
        raise ValueError(f"max_steps={max_steps!r} is invalid: it must be an integer >= 1, or None.")
    limit = env_spec(env_id).max_episode_steps
    if limit is None and max_steps is None:
        raise ValueError(f"{env_id} has no time limit: give max_steps, the frames to draw.")
    return min(n for n in (limit, max_steps) if n is not None)


class FirstFrames(gym.Wrapper):
    """Keep the frames of the first ``count`` states of the episode: frame t shows state s_t."""

    def __init__(self, env: gym.Env, count: int):
        super().__init__(env)
        self.count, self.frames = count, []

    def _capture(self) -> None:
        if len(self.frames) < self.count:
            self.frames.append(self.env.render())

    def reset(self, **kwargs):
        self.frames = []
        out = self.env.reset(**kwargs)
        self._capture()
        return out

    def step(self, action):
        out = self.env.step(action)
        self._capture()
        return out


def critic_episode(agent, env_id: str, seed: int = 0, discount: float | None = None,
                   max_steps: int | None = None, twins: bool = False) -> tuple[list[np.ndarray], CriticTrace]:
    """One noise-free episode of ``agent`` from ``reset(seed=seed)``: its frames (one per state drawn)
    and the numbers a critic clip draws on them (the module's doc says how the returns end)."""
    check_critic(agent, twins)
    discount = agent.config.discount if discount is None else float(discount)
    shown = frames_to_draw(env_id, max_steps)
    env = make_env(env_id, render_mode="rgb_array", max_episode_steps=shown + tail_steps(discount))
    with FirstFrames(env, shown) as recorded:
        episode = rollout(recorded, agent.act, seed=seed, keep_states=True)
        frames = recorded.frames[:len(episode)]
    q1, q2 = critic_values(agent, episode.states[:len(frames)])
    returns = returns_to_go(episode.rewards, discount)[:len(frames)]
    fps = render_fps(env)
    ended = len(episode) < shown + tail_steps(discount)
    trace = CriticTrace(id_without_module(env_id), discount, q1, q2, returns, twins, fps, episode.rewards, ended)
    return frames, trace


class CriticPlot:
    """The plot of a trace, drawn for one frame after another on one off-screen matplotlib Figure
    (never pyplot: a notebook's figures and backend are left alone), as wide as the frames. The
    axes' limits hold for the whole clip, so the picture does not rescale as it plays."""

    def __init__(self, trace: CriticTrace, width: int, dpi: int = 100):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        self.trace, self.curves = trace, trace.curves()
        legend, axes, below = 19 * len(self.curves) + 8, AXES_HEIGHT, 42  # pixels, top to bottom
        height = legend + axes + below
        self.figure = Figure(figsize=(width / dpi, height / dpi), dpi=dpi)
        FigureCanvasAgg(self.figure)
        self.axes = self.figure.add_axes((0.15, below / height, 0.81, axes / height))
        self.lines = {label: self.axes.plot([], [], lw=1.8, label=label, **style)[0]
                      for label, style in zip(self.curves, curve_styles(trace.twins))}
        self.markers = [self.axes.plot([], [], "o", ms=5, color=line.get_color())[0] for line in self.lines.values()]
        self.cursor = self.axes.axvline(0, color="0.7", lw=0.8)
        self.legend = self.figure.legend(handles=list(self.lines.values()), loc="upper left", fontsize=9,
                                         frameon=False, borderaxespad=0.3, handlelength=1.6)
        self.style_axes()

    def style_axes(self) -> None:
        values = np.concatenate(list(self.curves.values()))
        low, high = float(values.min()), float(values.max())
        pad = 0.08 * (high - low or 1.0)
        self.axes.set(xlim=(0, max(1, len(self.trace) - 1)), ylim=(low - pad, high + pad))
        self.axes.set_xlabel("time step t of the episode", fontsize=9, labelpad=1)
        self.axes.set_ylabel("discounted\nreturn", fontsize=9, labelpad=2)
        self.axes.tick_params(labelsize=8.5, pad=1.5, length=2.5)

    def draw(self, t: int) -> np.ndarray:
        """The plot for frame ``t``: each curve up to t, a dot at t, its value at t in the legend."""
        steps = np.arange(t + 1)
        for text, marker, (label, values) in zip(self.legend.get_texts(), self.markers, self.curves.items()):
            self.lines[label].set_data(steps, values[:t + 1])
            marker.set_data([t], [values[t]])
            text.set_text(f"{label} = {values[t]:.1f}".replace("= -0.0", "= 0.0"))
        self.cursor.set_xdata([t, t])
        self.figure.canvas.draw()
        return np.asarray(self.figure.canvas.buffer_rgba())[..., :3]


def curve_styles(twins: bool) -> list[dict]:
    """The estimate(s) in blue shades, the return earned in black."""
    estimates = [dict(color="tab:blue")]
    if twins:
        estimates += [dict(color="tab:cyan", ls=":"), dict(color="tab:purple", ls="--")]
    return estimates + [dict(color="black")]


def with_plot(frame: np.ndarray, plot: np.ndarray) -> np.ndarray:
    """The frame with the plot under it, a grey line between them."""
    frame = np.asarray(frame)[..., :3]
    line = np.full((2, frame.shape[1], 3), 160, dtype=np.uint8)
    return np.concatenate([frame, line, plot], axis=0)


def record_with_critic(agent, env_id: str, out, seed: int = 0, discount: float | None = None,
                       max_steps: int | None = None, twins: bool = False) -> Path:
    """Record one noise-free episode of ``agent`` (reset seed ``seed``) with its critic's estimate and
    the discounted return it earns drawn into each frame (the module's doc says how). ``out`` is the
    mp4 to write, or a folder to write ``ENV_ID-critic.mp4`` into. ``discount``: the agent's own by
    default; ``max_steps``: draw at most that many frames. Prints and returns the clip's path."""
    frames, trace = critic_episode(agent, env_id, seed, discount, max_steps, twins)
    plot = CriticPlot(trace, width=frames[0].shape[1])
    drawn = [with_plot(frame, plot.draw(t)) for t, frame in enumerate(frames)]
    path = clip_path(out, trace.env_id)
    write_mp4(drawn, path, trace.fps)
    print(f"{path}  (return {trace.total:.1f} over {len(trace)} steps; at t = 0 the critic's estimate "
          f"Q1 = {trace.q1[0]:.1f}, the return earned G_0 = {trace.returns[0]:.1f})")
    return path


def clip_path(out, env_id: str) -> Path:
    out = Path(out)
    path = out if out.suffix == ".mp4" else out / f"{env_file_name(env_id)}-critic.mp4"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def write_mp4(frames: list[np.ndarray], path: Path, fps: float) -> None:
    """Frames to an H.264 mp4 with moviepy (2, or Colab's 1.0.3)."""
    clip = moviepy_class("ImageSequenceClip")(frames, fps=fps)
    clip.write_videofile(str(path), codec="libx264", audio=False, logger=None)
