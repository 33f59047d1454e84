"""Recording and showing videos of an agent, headless, in Jupyter, Colab or a terminal.

``Recorder`` keeps colabgymrender's API (``Recorder(env, directory)``,
``play()``, ``pause()``, ``resume()``) on top of gymnasium 1.x and its video tools.
Environments made by ``make_env`` (and so by ``record`` and ``python -m td3_lib play``)
film MuJoCo's robots with a camera that follows them; ``robot_fraction(clip)`` measures
the share of a MuJoCo clip's running time in which the robot can be seen. ``record``
keeps about 25 frames per second of simulated time (``Recorder(..., every=k)``: one
frame in k steps). ``record_with_critic`` (``critic_video.py``) draws the critic's
estimate and the return earned under each frame.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path

import gymnasium as gym
import numpy as np
from gymnasium.utils.save_video import save_video

from .envs import env_file_name, make_env
from .rollout import evaluation_episodes


PENDULUM_HANGING_SEED = 12493
"""Reset seed of Pendulum-v1 whose first state hangs down: angle -3.1387 rad (pi is straight down, 0
upright), angular speed +0.025 rad/s. Clips of Pendulum agents start from it, so that they show the
swing-up; most reset seeds start the pendulum somewhere else (seed 1, for one, starts 0.07 rad from
upright). Found by resetting seeds 0-19,999 and keeping the one nearest to hanging still."""


WATCH_FPS = 25
"""Frames per second of simulated time that ``record`` keeps, enough to watch: a simulator that draws
more (Hopper-v5: 125) has one frame drawn in every ``render_fps // 25`` steps."""


class Recorder(gym.Wrapper):
    """Record every episode of ``env`` to an mp4 in ``directory``.

    The environment must be made with ``render_mode="rgb_array"``. A clip is
    written when an episode ends (terminated or truncated) or on ``close()``.
    ``every``: draw one frame in every ``every`` steps (the first at reset); the
    clip plays at the simulator's pace, ``render_fps / every`` frames per second,
    unless ``fps`` says otherwise.
    """

    def __init__(self, env: gym.Env, directory, fps: float | None = None, name_prefix: str = "episode",
                 every: int = 1):
        super().__init__(env)
        if env.render_mode != "rgb_array":
            raise ValueError(f"Recorder needs an environment made with render_mode='rgb_array', "
                             f"not {env.render_mode!r}.")
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"every={every!r} is invalid: it must be an integer >= 1.")
        self.directory = Path(directory)
        self.every, self.steps = every, 0
        self.fps = fps or render_fps(env) / every
        self.name_prefix = name_prefix
        self.paused = False
        self.frames: list = []
        self.episode = 0
        self.paths: list[Path] = []

    def pause(self) -> None:
        """Stop capturing frames until ``resume()``."""
        self.paused = True

    def resume(self) -> None:
        self.paused = False

    def _capture(self) -> None:
        if not self.paused and self.steps % self.every == 0:
            self.frames.append(self.env.render())

    def reset(self, **kwargs):
        self._write()
        out = self.env.reset(**kwargs)
        self.steps = 0
        self._capture()
        return out

    def step(self, action):
        out = self.env.step(action)
        self.steps += 1
        self._capture()
        if out[2] or out[3]:
            self._write()
        return out

    def _write(self) -> None:
        if len(self.frames) > 1:
            save_video(self.frames, str(self.directory), episode_trigger=lambda i: True,
                       name_prefix=self.name_prefix, episode_index=self.episode, fps=self.fps)
            self.paths.append(self.directory / f"{self.name_prefix}-episode-{self.episode}.mp4")
            self.episode += 1
        self.frames = []

    def close(self):
        self._write()
        super().close()

    @property
    def last_video(self) -> Path | None:
        return self.paths[-1] if self.paths else None

    def play(self):
        """Show the last recorded clip inline (Jupyter, Colab); elsewhere print its path."""
        if self.last_video is None:
            raise RuntimeError("No clip recorded yet: run at least one episode to its end first.")
        return show_video(self.last_video)


def record(agent, env_id: str, out, episodes: int = 1, seed: int = 0, every: int | None = None) -> list[Path]:
    """Record ``episodes`` noise-free episodes of ``agent`` (reset seeds ``seed``, ``seed + 1``, ...)
    to mp4 files in ``out``; prints and returns their paths. A clip plays at the simulator's pace with
    one frame in every ``every`` steps drawn: by default about 25 per second of simulated time
    (``WATCH_FPS``; all of Pendulum's 30, one in 5 of Hopper's 125)."""
    env = make_env(env_id, render_mode="rgb_array")
    if every is None:
        every = max(1, render_fps(env) // WATCH_FPS)
    with Recorder(env, out, name_prefix=env_file_name(env_id), every=every) as env:
        returns = [e.total for e in evaluation_episodes(agent, env, episodes, seed)]
    for path, ret in zip(env.paths, returns):
        print(f"{path}  (return {ret:.1f})")
    return env.paths


def notebook_display():
    """IPython's ``display`` where a notebook kernel runs (Jupyter, Colab), else None."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return None
    shell = get_ipython()
    return display if shell is not None and hasattr(shell, "kernel") else None


def existing_file(path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No video at {path}.")
    return path


def show_video(path, width: int = 480):
    """Display an mp4 inline in a notebook (embedded, so it works in Colab too).

    Outside a notebook, prints the path and returns it.
    """
    path = existing_file(path)
    display = notebook_display()
    if display is None:
        print(f"Video saved to {path}")
        return path
    from IPython.display import Video
    display(Video(str(path), embed=True, width=width, html_attributes="controls autoplay loop muted"))
    return None


def show_videos(paths, captions=None, width: int = 240):
    """Display several mp4s side by side, each embedded with its caption below it (a row that wraps).

    Outside a notebook, prints the paths and returns them.
    """
    paths = [existing_file(p) for p in paths]
    captions = [p.stem for p in paths] if captions is None else [str(c) for c in captions]
    if len(captions) != len(paths):
        raise ValueError(f"{len(captions)} captions for {len(paths)} videos: give one per video.")
    display = notebook_display()
    if display is None:
        for path in paths:
            print(f"Video saved to {path}")
        return paths
    from IPython.display import HTML
    figures = "".join(
        f'<figure style="display:inline-block; margin:4px; text-align:center">'
        f'<video width="{width}" controls autoplay loop muted><source type="video/mp4" '
        f'src="data:video/mp4;base64,{base64.b64encode(path.read_bytes()).decode()}"></video>'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>" for path, caption in zip(paths, captions))
    display(HTML(f"<div>{figures}</div>"))
    return None


def to_gif(mp4_path, gif_path, width: int = 240, fps: int = 15, seconds: float | None = None):
    """A small looping gif of a clip (for a README), at most its first ``seconds``, written with moviepy.

    Works with moviepy 2 and with moviepy 1.0.3 (Colab's), whose methods have other names.
    """
    with moviepy_class("VideoFileClip")(str(mp4_path)) as clip:
        if seconds is not None and seconds < clip.duration:
            # a long episode (1,600 walker steps) would make a huge gif
            clip = clip.subclipped(0, seconds) if hasattr(clip, "subclipped") else clip.subclip(0, seconds)
        resized(clip, width).write_gif(str(gif_path), fps=fps, logger=None)
    return Path(gif_path)


def moviepy_class(name: str):
    """moviepy's class ``name`` (``VideoFileClip``, ``ImageSequenceClip``), from moviepy 2 or from 1.0.3
    (Colab's), which keeps its classes in ``moviepy.editor``; imported only when a clip is written."""
    import moviepy

    if hasattr(moviepy, name):  # moviepy >= 2
        return getattr(moviepy, name)
    from moviepy import editor  # moviepy 1.x: an import error here names what it misses
    return getattr(editor, name)


def render_fps(env) -> float:
    """The environment's frames per second (its metadata's ``render_fps``; 30 where it gives none)."""
    return env.metadata.get("render_fps") or 30


def resized(clip, width: int):
    """The clip scaled to ``width`` pixels. moviepy 1.0.3's own resize calls a Pillow
    constant removed in Pillow 10 (unless OpenCV is installed), so there each frame is
    scaled with Pillow directly."""
    if hasattr(clip, "resized"):  # moviepy >= 2
        return clip.resized(width=width)
    from PIL import Image

    size = (width, round(clip.h * width / clip.w))
    return clip.fl_image(lambda frame: np.asarray(Image.fromarray(frame).resize(size, Image.LANCZOS)))


ROBOT_SHARE = 0.001
"""The least share of a frame's pixels in the robot's colour for the frame to count as showing it:
a hopper seen whole covers about 2% of the frame, so a twentieth of it is enough."""


def robot_pixels(frames) -> np.ndarray:
    """Where frames of gymnasium's MuJoCo robots show the robot: the orange-brown its models paint it
    (rgba 0.8 0.6 0.4, in light and shade), red above green above blue; the floor's black and pale
    green squares and the blue-grey sky are not. One frame (H, W, 3) or a stack (N, H, W, 3)."""
    rgb = np.asarray(frames)[..., :3].astype(np.int16)
    red, green, blue = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return (red - blue > 40) & (red > green) & (green > blue)


def shows_robot(frame, share: float = ROBOT_SHARE, pixels=robot_pixels) -> bool:
    """Whether a frame shows the robot: at least ``share`` of its pixels are the robot's (``pixels``:
    a frame -> a boolean mask, by default the MuJoCo robots' colour)."""
    return bool(pixels(frame).mean() >= share)


def robot_fraction(clip, share: float = ROBOT_SHARE, pixels=robot_pixels) -> float:
    """The fraction of a clip's running time in which it shows the robot (``shows_robot``): ``clip``
    is a video file (mp4; gif, whose frames last as long as the file says: a gif writer merges
    repeated frames, such as an empty floor's, into one long frame) or a sequence of frames. A camera
    that follows the robot gives 1.0; a fixed one, which the robot leaves, gives the share of the clip
    before it left. ``pixels`` finds the robot in a frame: by default gymnasium's MuJoCo robots; give
    your own for a robot of another colour."""
    frames = timed_frames(existing_file(clip)) if isinstance(clip, (str, Path)) else ((f, 1) for f in clip)
    shown = total = 0.0
    for frame, duration in frames:
        shown += duration * shows_robot(frame, share, pixels)
        total += duration
    if total == 0:
        raise ValueError(f"{clip!r} has no frames.")
    return shown / total


def timed_frames(path: Path):
    """A video file's frames, each with how long it shows (a gif's own durations; 1 for each frame of
    an mp4, whose frames all last the same)."""
    if path.suffix.lower() == ".gif":
        from PIL import Image, ImageSequence

        with Image.open(path) as gif:
            for frame in ImageSequence.Iterator(gif):
                yield np.asarray(frame.convert("RGB")), frame.info.get("duration") or 1
        return
    import imageio.v3 as iio

    for frame in iio.imiter(path):
        yield frame, 1
