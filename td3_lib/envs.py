"""Making the course's environments, with clear errors for ones TD3 cannot drive."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import difflib
import importlib
import io
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium as gym

from .networks import check_action_bounds

COURSE_ENVS = ("Pendulum-v1", "MountainCarContinuous-v0", "LunarLanderContinuous-v3",
               "BipedalWalker-v3", "Hopper-v5", "Walker2d-v5", "HalfCheetah-v5", "Ant-v5")
BULLET_ENVS = ("AntBulletEnv-v0", "HalfCheetahBulletEnv-v0", "HopperBulletEnv-v0",
               "Walker2DBulletEnv-v0", "InvertedPendulumBulletEnv-v0",
               "InvertedDoublePendulumBulletEnv-v0", "ReacherBulletEnv-v0", "HumanoidBulletEnv-v0")


BULLET_MISSING = ("PyBullet's environments need the bullet extra: pip install 'td3_lib[bullet]' "
                  "(on Python 3.12 and later pip builds PyBullet from source, several minutes).")


@contextlib.contextmanager
def _silence_c_output():
    """Send what C code writes to stdout/stderr to /dev/null for a moment.

    PyBullet prints its build time from C on import; contextlib.redirect_stdout
    cannot catch that, and in a notebook it would land in whichever cell runs next.
    """
    fds = (1, 2)  # the C streams' descriptors (in Jupyter, sys.stdout is not one of them)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(fd) for fd in fds]
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in fds:
            os.dup2(devnull, fd)
        yield
    finally:
        try:
            ctypes.CDLL(None).fflush(None)  # push out C's buffered text while it still goes nowhere
        except (OSError, AttributeError):
            pass
        for fd, old in zip(fds, saved):
            os.dup2(old, fd)
            os.close(old)
        os.close(devnull)


def _register_bullet() -> None:
    """PyBullet's environments register themselves when their package is imported."""
    try:
        with _silence_c_output(), contextlib.redirect_stdout(io.StringIO()):  # it prints its build time
            import pybullet_envs_gymnasium  # noqa: F401
    except ImportError:
        raise ValueError(BULLET_MISSING) from None


def headless_rendering(render_mode) -> None:
    """Without a display, let SDL draw rgb_array frames off-screen, silently.

    pygame (which draws the classic-control and Box2D frames) starts SDL, and
    SDL without a display tries Wayland and ALSA first: from C it prints
    "error: XDG_RUNTIME_DIR is invalid or not set in the environment." and
    ALSA errors, which would land in a notebook cell. Its dummy drivers draw
    the same frames. A driver the user chose is kept.
    """
    if render_mode == "rgb_array" and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
        os.environ.setdefault("SDL_AUDIODRIVER", "dummy")


class RenderingUnavailable(RuntimeError):
    """An environment's frames cannot be drawn: this machine has no display and no headless backend,
    or the environment does not draw that kind of frame."""


MUJOCO_BACKENDS = ("egl", "osmesa")
"""Headless OpenGL backends for MuJoCo's rgb_array frames, in the order they are tried."""
MUJOCO_NO_BACKEND = ("MuJoCo cannot draw frames on this machine, which has no display: install EGL "
                     "(apt-get install libegl1) or OSMesa (apt-get install libosmesa6), or set MUJOCO_GL "
                     "to a backend that works here.")
MUJOCO_IMPORTED_FIRST = ("mujoco was imported before a headless rendering backend was chosen, so it "
                         "cannot draw frames on this machine without a display: set MUJOCO_GL=egl before "
                         "importing mujoco, or restart and make the environment with make_env first.")
NVIDIA_EGL_VENDOR = Path("/usr/share/glvnd/egl_vendor.d/10_nvidia.json")
BACKEND_SEARCH = {"none_works": False}
"""Whether this process looked for a headless MuJoCo backend and found none: once mujoco is imported,
the reason a frame cannot be drawn is that, not the order of the imports."""


def is_mujoco(env_id: str) -> bool:
    """Whether a registered id is one of gymnasium's MuJoCo environments."""
    entry = gym.spec(env_id).entry_point
    return isinstance(entry, str) and entry.startswith("gymnasium.envs.mujoco")


def backend_works(backend: str) -> bool:
    """Whether MuJoCo can make an off-screen OpenGL context with ``backend``, tried in a child process:
    the backend is fixed when mujoco is first imported, so a failed try must not touch this one."""
    probe = "import mujoco; c = mujoco.GLContext(8, 8); c.make_current(); c.free()"
    env = {**os.environ, "MUJOCO_GL": backend}
    env.pop("PYOPENGL_PLATFORM", None)
    try:
        done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def add_nvidia_egl_vendor() -> None:
    """On a GPU machine whose NVIDIA driver ships libEGL_nvidia but no EGL vendor file (Colab's GPU
    runtimes), write the file, so that EGL renders on the GPU. Where it cannot be written, nothing."""
    if NVIDIA_EGL_VENDOR.exists() or ctypes.util.find_library("EGL_nvidia") is None:
        return
    try:
        NVIDIA_EGL_VENDOR.parent.mkdir(parents=True, exist_ok=True)
        NVIDIA_EGL_VENDOR.write_text(json.dumps({"file_format_version": "1.0.0",
                                                 "ICD": {"library_path": "libEGL_nvidia.so.0"}}) + "\n")
    except OSError:
        pass


def headless_mujoco(render_mode) -> None:
    """Choose MuJoCo's rendering backend on a machine without a display, before mujoco is imported
    (mujoco fixes its backend on import, so this runs for every MuJoCo env, rendered or not): EGL,
    else OSMesa. A backend the user chose (MUJOCO_GL) is kept. Where none works, rendering gets one
    line saying what to install; training, which draws nothing, goes on."""
    if os.environ.get("MUJOCO_GL") or os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return
    if "mujoco" in sys.modules:  # imported already, its backend fixed: after a search that found none,
        if render_mode == "rgb_array":  # or before any MuJoCo env was made here, too late to choose
            raise RenderingUnavailable(MUJOCO_NO_BACKEND if BACKEND_SEARCH["none_works"] else MUJOCO_IMPORTED_FIRST)
        return
    add_nvidia_egl_vendor()
    for backend in MUJOCO_BACKENDS:
        if backend_works(backend):
            os.environ["MUJOCO_GL"] = backend
            return
    BACKEND_SEARCH["none_works"] = True
    if render_mode == "rgb_array":
        raise RenderingUnavailable(MUJOCO_NO_BACKEND)


def mujoco_warning(message: str) -> None:
    """MuJoCo's warnings as Python warnings (deprecations as DeprecationWarning), instead of a
    MUJOCO_LOG.TXT file that MuJoCo would otherwise write into the working directory."""
    category = DeprecationWarning if "deprecated" in message else RuntimeWarning
    warnings.warn(f"MuJoCo: {message.strip()}", category, stacklevel=2)


def route_mujoco_warnings() -> None:
    import mujoco

    mujoco.set_mju_user_warning(mujoco_warning)


TRACKED_MUJOCO = ("Ant", "HalfCheetah", "Hopper", "Humanoid", "HumanoidStandup", "Swimmer", "Walker2d")
"""gymnasium's MuJoCo robots whose models carry a camera named "track" (in MuJoCo's mode
"trackcom": it keeps a fixed offset from the robot's centre of mass, so it follows the robot)."""
CAMERA_KEYWORDS = ("camera_id", "camera_name", "default_camera_config")


def tracking_camera(env_id: str, render_mode, kwargs: dict) -> dict:
    """``kwargs`` for ``gym.make``, with the model's tracking camera (``camera_name="track"``) for a
    MuJoCo robot that draws frames, unless the caller chose a camera.

    Without it, gymnasium 1.4 draws these robots from a free camera: their ``default_camera_config``
    names a body to track (``trackbodyid``), but the renderer sets the camera's type to
    ``mjCAMERA_FREE`` before every frame, and MuJoCo follows a body only with ``mjCAMERA_TRACKING``.
    The camera stays where the episode starts, and a hopper that hops forward leaves the picture
    after about a second. Box2D's BipedalWalker and PyBullet's robots follow by themselves.
    """
    chosen = any(key in kwargs for key in CAMERA_KEYWORDS)
    if render_mode is None or chosen or gym.spec(env_id).name not in TRACKED_MUJOCO:
        return kwargs
    return {**kwargs, "camera_name": "track"}


def _known_ids() -> list[str]:
    return sorted(set(gym.registry) | set(BULLET_ENVS))


def check_spaces(env: gym.Env, env_id: str) -> None:
    """Refuse, in one sentence, an environment TD3 cannot learn on."""
    space = env.action_space
    if not isinstance(space, gym.spaces.Box):
        raise ValueError(f"{env_id} has a {type(space).__name__} action space: "
                         "TD3 needs a continuous action space (gymnasium.spaces.Box).")
    if len(space.shape) != 1:
        raise ValueError(f"{env_id} has action space {space}: td3_lib needs a flat Box of actions (shape (n,)); "
                         "give it one, e.g. with gymnasium.wrappers.TransformAction reshaping a flat action.")
    check_action_bounds(space.low, space.high, env_id)
    obs = env.observation_space
    if not isinstance(obs, gym.spaces.Box) or len(obs.shape) != 1:
        raise ValueError(f"{env_id} has observation space {obs}: td3_lib needs a flat Box "
                         "(a 1-D vector); flatten it first, e.g. with gymnasium.wrappers.FlattenObservation.")


def id_without_module(env_id: str) -> str:
    """``"EnvId-v0"`` of gymnasium's ``"module:EnvId-v0"`` (an id without a module, as it is): the
    registered id (files and folders name it as ``env_file_name`` writes it)."""
    return env_id.rpartition(":")[2]


def env_file_name(env_id: str) -> str:
    """An environment's id as the names of files and folders hold it (run directories, clips, a sweep's
    folders and curves): without its module (``"module:ENV_ID"``), and with ``_`` for each character a file
    name cannot hold or that would make a folder (the ``/`` of a namespace: ``"ns/Name-v0"`` is
    ``ns_Name-v0``)."""
    return re.sub(r"[^\w.-]", "_", id_without_module(env_id))


def registered_id(env_id: str) -> str:
    """gymnasium's ``"module:EnvId-v0"``: import ``module`` (which registers the environment, as a
    user's own package does), then return ``"EnvId-v0"``. An id without a module is returned as it is."""
    module, colon, name = env_id.rpartition(":")
    if colon and not (name and all(part.isidentifier() for part in module.split("."))):
        raise ValueError(f"Environment {env_id!r}: give a registered id, or MODULE:ID with MODULE a module "
                         "to import (such as my_tasks) and ID the id it registers (such as MyTask-v0).")
    if colon:
        try:
            import_from_working_directory(module)
        except ImportError as error:
            raise ValueError(f"Cannot import module {module!r} of environment {env_id!r}: {error}. Give MODULE:ID "
                             "with MODULE importable here (in the working directory or on the path) and registering "
                             "ID.") from None
    return id_without_module(env_id)


def import_from_working_directory(module: str) -> None:
    """Import ``module`` from the working directory too, as ``python -m td3_lib`` finds it: an installed
    console script (``td3``) has its own folder on the path instead, so the working directory is added,
    after everything else there."""
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.append(cwd)
    importlib.import_module(module)


def check_render_mode(env: gym.Env, env_id: str, render_mode: str | None) -> None:
    """Refuse, in one sentence, frames of a kind the environment does not draw."""
    modes = env.metadata.get("render_modes", [])
    if render_mode is not None and render_mode not in modes:
        raise RenderingUnavailable(f"{env_id} does not draw {render_mode!r} frames: the render_modes in its "
                                   f"metadata are {list(modes)}.")


class UnknownEnvironment(ValueError):
    """An environment id that nothing registers here (and no module given with it registers)."""


def env_spec(env_id: str) -> gym.envs.registration.EnvSpec:
    """The registration of ``env_id`` (its id, time limit, ...), registering it first where that is
    on demand (PyBullet's, yours as ``"module:EnvId-v0"``); an unknown id gets the names close to it."""
    if not isinstance(env_id, str):
        raise TypeError(f"env_id must be a string such as 'Pendulum-v1', not {env_id!r}.")
    env_id = registered_id(env_id)
    if "Bullet" in env_id and env_id not in gym.registry:
        _register_bullet()
    if env_id not in gym.registry:
        close = difflib.get_close_matches(env_id, _known_ids(), n=3, cutoff=0.6)
        hint = f" Did you mean {', '.join(close)}?" if close else \
            f" The course's environments are {', '.join(COURSE_ENVS)}."
        raise UnknownEnvironment(f"Unknown environment {env_id!r}.{hint}")
    return gym.spec(env_id)


def make_env(env_id: str, seed: int | None = None, render_mode: str | None = None, **kwargs) -> gym.Env:
    """``gymnasium.make`` for the course: registers PyBullet on demand and checks the spaces.

    ``env_id`` is a registered id, or ``"module:EnvId-v0"`` for an environment that importing
    ``module`` registers (your own). With ``seed``, the environment and its action space are seeded,
    so the first ``reset()`` (without a seed) is already reproducible. MuJoCo's robots that draw
    frames are filmed by their model's tracking camera, which follows them (``tracking_camera``);
    a camera given in ``kwargs`` (``camera_id``, ``camera_name``, ``default_camera_config``) is kept.
    """
    env_id = env_spec(env_id).id
    # PyBullet's C code prints on first use (build time, then "argv[0]=" when the
    # first reset connects its physics client): both happen here, silenced.
    bullet = "Bullet" in env_id
    headless_rendering(render_mode)
    if is_mujoco(env_id):
        headless_mujoco(render_mode)
        route_mujoco_warnings()
        kwargs = tracking_camera(env_id, render_mode, kwargs)
    quiet = _silence_c_output if bullet else contextlib.nullcontext
    with quiet(), warnings.catch_warnings():  # check_render_mode says it in one line
        warnings.filterwarnings("ignore", message=".*not in the possible render_modes")
        env = gym.make(env_id, render_mode=render_mode, **kwargs)
    try:
        check_spaces(env, env_id)
        check_render_mode(env, env_id, render_mode)
    except (ValueError, RenderingUnavailable):
        env.close()
        raise
    if seed is not None or bullet:
        with quiet():
            env.reset(seed=seed)
    if seed is not None:
        env.action_space.seed(seed)
    return env


@contextlib.contextmanager
def opened_env(env_or_id, **kwargs):
    """The environment to use: ``env_or_id`` itself (left open), or one made from an id and closed after."""
    if not isinstance(env_or_id, str):
        yield env_or_id
        return
    env = make_env(env_or_id, **kwargs)
    try:
        yield env
    finally:
        env.close()


NOT_USER_MODULES = ("gymnasium", "td3_lib", "pybullet_envs_gymnasium", "__main__")
"""Packages whose environments are not saved as ``"module:ID"``: gymnasium's and td3_lib's own (PyBullet's
registered on demand), and a script's, which no other process can import."""


def env_id_of(env: gym.Env) -> str:
    """The id a run of ``env`` is saved under, for ``evaluate`` and ``play`` to make it again: its registered
    id, as ``"module:ID"`` where the module of its entry point is a user's (``user_module``), else its class
    name (an environment not registered: used from Python only)."""
    if env.spec is None:
        return type(env.unwrapped).__name__
    module = user_module(env.spec.entry_point)
    return f"{module}:{env.spec.id}" if module else env.spec.id


def user_module(entry_point) -> str | None:
    """The module an entry point (``"module:Class"`` or a callable) comes from, where it is a user's
    one that can be imported again (none of ``NOT_USER_MODULES``); else None."""
    if isinstance(entry_point, str):
        module = entry_point.partition(":")[0]
    else:
        module = getattr(entry_point, "__module__", None)
    return module if module and module.split(".")[0] not in NOT_USER_MODULES else None
