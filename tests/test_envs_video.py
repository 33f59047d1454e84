import importlib.util
import json
import os
import sys
import warnings
import gymnasium as gym
import numpy as np
import pytest

from td3_lib import Recorder, make_env, show_video, show_videos
from td3_lib.__main__ import main
from td3_lib.envs import check_spaces


def test_make_env_seeds_reproducibly():
    a, b = make_env("Pendulum-v1", seed=3), make_env("Pendulum-v1", seed=3)
    np.testing.assert_array_equal(a.reset()[0], b.reset()[0])


def test_unknown_id_suggests_close_names():
    with pytest.raises(ValueError) as err:
        make_env("BipedalWalkr-v3")
    msg = str(err.value)
    assert "Unknown environment 'BipedalWalkr-v3'" in msg and "BipedalWalker-v3" in msg
    assert "\n" not in msg


def test_discrete_action_space_refused():
    with pytest.raises(ValueError, match="TD3 needs a continuous action space"):
        make_env("CartPole-v1")


class _Spaces(gym.Env):
    def __init__(self, obs, act):
        self.observation_space, self.action_space = obs, act


def test_infinite_bounds_and_non_flat_observations_refused():
    with pytest.raises(ValueError, match="infinite action bounds"):
        check_spaces(_Spaces(gym.spaces.Box(-1, 1, (3,)), gym.spaces.Box(-np.inf, np.inf, (2,))), "X")
    with pytest.raises(ValueError, match="flat Box"):
        check_spaces(_Spaces(gym.spaces.Box(0, 1, (4, 4)), gym.spaces.Box(-1, 1, (2,))), "X")
    with pytest.raises(ValueError, match="flat Box"):
        check_spaces(_Spaces(gym.spaces.Dict({"a": gym.spaces.Box(0, 1, (2,))}),
                             gym.spaces.Box(-1, 1, (2,))), "X")


class _MatrixAction(gym.Env):
    """Actions of shape (1, 2); ten steps of reward 0."""
    observation_space = gym.spaces.Box(-1, 1, (3,), np.float32)
    action_space = gym.spaces.Box(-1, 1, (1, 2), np.float32)

    def __init__(self, render_mode=None):
        self.render_mode, self.t = render_mode, 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(3, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(3, np.float32), 0.0, False, self.t >= 10, {}


def test_an_action_space_of_more_than_one_dimension_is_refused_before_a_run_directory_is_made(tmp_path, capsys):
    gym.register("MatrixAction-v0", entry_point=_MatrixAction)
    try:
        assert main(["train", "--env", "MatrixAction-v0", "--out", str(tmp_path / "run"), "--quiet"]) == 2
    finally:
        del gym.registry["MatrixAction-v0"]
    assert capsys.readouterr().err == (
        "python -m td3_lib train: error: MatrixAction-v0 has action space Box(-1.0, 1.0, (1, 2), float32): td3_lib "
        "needs a flat Box of actions (shape (n,)); give it one, e.g. with gymnasium.wrappers.TransformAction "
        "reshaping a flat action.\n")
    assert not (tmp_path / "run").exists()


needs_bullet = pytest.mark.skipif(importlib.util.find_spec("pybullet_envs_gymnasium") is None,
                                  reason="PyBullet is the optional bullet extra: pip install 'td3_lib[bullet]'")


@needs_bullet
def test_bullet_envs_register_on_demand():
    env = make_env("AntBulletEnv-v0", seed=0)
    assert env.action_space.shape == (8,) and env.observation_space.shape == (28,)
    env.close()


def _run_episode(env, steps=None, seed=0):
    env.reset(seed=seed)
    for i in range(steps or 10**9):
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        if term or trunc:
            break


def test_recorder_writes_a_clip_per_episode_and_pauses(tmp_path, capsys):
    env = Recorder(make_env("Pendulum-v1", render_mode="rgb_array"), tmp_path / "clips")
    _run_episode(env)
    assert env.last_video is not None and env.last_video.stat().st_size > 1000
    env.pause()
    _run_episode(env)  # paused: nothing captured, no second clip
    assert len(env.paths) == 1
    env.resume()
    _run_episode(env)
    env.close()
    assert len(env.paths) == 2 and all(p.is_file() for p in env.paths)
    assert env.play() == env.last_video  # outside a notebook: prints the path
    assert str(env.last_video) in capsys.readouterr().out


@pytest.mark.parametrize("env_id", ["LunarLanderContinuous-v3", "Hopper-v5",
                                    pytest.param("HopperBulletEnv-v0", marks=needs_bullet)])
def test_recorder_headless_box2d_mujoco_and_bullet(tmp_path, env_id):
    env = Recorder(make_env(env_id, render_mode="rgb_array"), tmp_path / env_id)
    env.reset(seed=0)
    for _ in range(15):
        env.step(env.action_space.sample())
    env.close()  # an unfinished episode is written on close
    assert env.last_video is not None and env.last_video.stat().st_size > 1000


def test_recorder_needs_rgb_array_and_show_video_needs_a_file(tmp_path):
    with pytest.raises(ValueError, match="rgb_array"):
        Recorder(make_env("Pendulum-v1"), tmp_path)
    with pytest.raises(FileNotFoundError, match="No video at"):
        show_video(tmp_path / "none.mp4")


def test_show_videos_embeds_each_clip_with_its_caption_in_one_row(tmp_path, monkeypatch, capsys):
    import base64
    import td3_lib.video as video
    clips = [tmp_path / "a.mp4", tmp_path / "b.mp4"]
    for i, clip in enumerate(clips):
        clip.write_bytes(bytes([i]) * 50)
    assert show_videos(clips) == clips  # outside a notebook: the paths, printed
    assert capsys.readouterr().out.count("Video saved to") == 2
    shown = []
    monkeypatch.setattr(video, "notebook_display", lambda: shown.append)
    assert show_videos(clips, ["Pendulum <random>", "Hopper"], width=200) is None
    (row,) = shown
    html = row.data
    assert html.count("<video") == 2 and html.count('width="200"') == 2
    for clip in clips:
        assert base64.b64encode(clip.read_bytes()).decode() in html
    assert "Pendulum &lt;random&gt;" in html and html.index("Pendulum") < html.index("Hopper")
    with pytest.raises(ValueError, match="1 captions for 2 videos"):
        show_videos(clips, ["one"])
    with pytest.raises(FileNotFoundError, match="No video at"):
        show_videos([clips[0], tmp_path / "none.mp4"])


def test_gif_of_a_clip_can_be_cut_short(tmp_path):
    from moviepy import VideoFileClip

    from td3_lib.video import to_gif

    env = Recorder(make_env("Pendulum-v1", render_mode="rgb_array"), tmp_path)
    env.reset(seed=0)
    for _ in range(90):  # 3 s at Pendulum's 30 frames per second
        env.step(env.action_space.sample())
    env.close()
    full = to_gif(env.paths[0], tmp_path / "full.gif", width=64)
    cut = to_gif(env.paths[0], tmp_path / "cut.gif", width=64, seconds=1.0)
    with VideoFileClip(str(full)) as a, VideoFileClip(str(cut)) as b:
        assert a.duration > 2.5 and 0.5 < b.duration <= 1.0
        assert a.size[0] == b.size[0] == 64


def test_headless_rendering_uses_sdl_dummy_drivers_unless_chosen(monkeypatch):
    from td3_lib.envs import headless_rendering
    for var in ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER", "SDL_AUDIODRIVER"):
        monkeypatch.delenv(var, raising=False)
    headless_rendering(None)  # no rendering asked for: nothing set
    assert "SDL_VIDEODRIVER" not in os.environ
    headless_rendering("rgb_array")
    assert os.environ["SDL_VIDEODRIVER"] == "dummy" and os.environ["SDL_AUDIODRIVER"] == "dummy"
    monkeypatch.setenv("SDL_VIDEODRIVER", "x11")  # the user's choice is kept
    headless_rendering("rgb_array")
    assert os.environ["SDL_VIDEODRIVER"] == "x11"


def test_bullet_id_without_pybullet_says_how_to_install():
    import subprocess
    import sys
    code = ("import sys; sys.modules['pybullet_envs_gymnasium'] = None  # as if not installed\n"
            "from td3_lib import make_env\n"
            "try:\n    make_env('HopperBulletEnv-v0')\nexcept ValueError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ("PyBullet's environments need the bullet extra: pip install 'td3_lib[bullet]' "
                           "(on Python 3.12 and later pip builds PyBullet from source, several minutes).")


def test_hopper_renders_headless_with_no_backend_chosen_by_the_user():
    """A fresh process, no display and no MUJOCO_GL: make_env picks a backend that draws a real frame."""
    import subprocess
    import sys
    code = ("import os\nfrom td3_lib import make_env\n"
            "env = make_env('Hopper-v5', seed=0, render_mode='rgb_array')\n"
            "frame = env.render()\n"
            "print(os.environ['MUJOCO_GL'], frame.shape, int(frame.std() > 5))\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    backend, shape = done.stdout.split(" ", 1)
    assert backend in ("egl", "osmesa")
    assert shape.strip() == "(480, 480, 3) 1"  # 480 x 480 RGB, not a blank image


@pytest.fixture
def no_backend_chosen(monkeypatch, tmp_path):
    """No display, no MUJOCO_GL, mujoco not yet imported, the NVIDIA vendor file in a temporary folder;
    MUJOCO_GL as it was afterwards (a wrong one would break every later import of mujoco here)."""
    from td3_lib import envs
    saved = os.environ.get("MUJOCO_GL")
    for var in ("MUJOCO_GL", "DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delitem(sys.modules, "mujoco", raising=False)
    monkeypatch.setattr(envs, "NVIDIA_EGL_VENDOR", tmp_path / "egl_vendor.d" / "10_nvidia.json")
    monkeypatch.setattr(envs.ctypes.util, "find_library", lambda name: None)
    monkeypatch.setitem(envs.BACKEND_SEARCH, "none_works", False)
    yield envs
    os.environ.pop("MUJOCO_GL", None)
    if saved is not None:
        os.environ["MUJOCO_GL"] = saved


def test_mujoco_backend_choice(no_backend_chosen, monkeypatch):
    """EGL first, OSMesa second; chosen once; the user's MUJOCO_GL is kept."""
    envs, tried = no_backend_chosen, []
    monkeypatch.setattr(envs, "backend_works", lambda b: tried.append(b) or b == "osmesa")
    envs.headless_mujoco("rgb_array")
    assert tried == ["egl", "osmesa"] and os.environ["MUJOCO_GL"] == "osmesa"
    assert not envs.NVIDIA_EGL_VENDOR.exists()
    envs.headless_mujoco(None)  # chosen already: nothing tried again
    assert tried == ["egl", "osmesa"]


def test_mujoco_without_a_backend(no_backend_chosen, monkeypatch):
    """Rendering gets one line naming what to install; training without frames goes on."""
    envs = no_backend_chosen
    monkeypatch.setattr(envs, "backend_works", lambda b: False)
    envs.headless_mujoco(None)
    assert "MUJOCO_GL" not in os.environ
    with pytest.raises(envs.RenderingUnavailable) as e:
        envs.headless_mujoco("rgb_array")
    assert str(e.value) == envs.MUJOCO_NO_BACKEND and "\n" not in str(e.value)


def test_a_video_after_training_without_a_backend_names_what_to_install(no_backend_chosen, monkeypatch):
    """Training imports mujoco after a search that found no backend; the video asked for next gets the
    line that says what to install, not the one about the order of imports."""
    envs = no_backend_chosen
    monkeypatch.setattr(envs, "backend_works", lambda b: False)
    envs.headless_mujoco(None)  # training: no frames needed
    monkeypatch.setitem(sys.modules, "mujoco", object())  # as route_mujoco_warnings leaves it
    with pytest.raises(envs.RenderingUnavailable, match="install EGL"):
        envs.headless_mujoco("rgb_array")
    monkeypatch.setitem(envs.BACKEND_SEARCH, "none_works", False)  # imported before any search
    with pytest.raises(envs.RenderingUnavailable, match="was imported before"):
        envs.headless_mujoco("rgb_array")
    monkeypatch.setitem(sys.modules, "mujoco", object())  # imported before make_env could choose
    with pytest.raises(envs.RenderingUnavailable, match="mujoco was imported before a headless rendering backend"):
        envs.headless_mujoco("rgb_array")


def test_nvidia_egl_vendor_file_where_the_driver_has_none(no_backend_chosen, monkeypatch):
    envs = no_backend_chosen
    monkeypatch.setattr(envs.ctypes.util, "find_library", lambda name: "libEGL_nvidia.so.0")
    monkeypatch.setattr(envs, "backend_works", lambda b: b == "egl")
    envs.headless_mujoco("rgb_array")
    assert json.loads(envs.NVIDIA_EGL_VENDOR.read_text())["ICD"]["library_path"] == "libEGL_nvidia.so.0"
    assert os.environ["MUJOCO_GL"] == "egl"


def test_mujoco_warnings_are_python_warnings_not_a_log_file(tmp_path, monkeypatch):
    """HalfCheetah-v5's model uses an attribute mujoco 4 deprecates: a DeprecationWarning, and no
    MUJOCO_LOG.TXT left in the working directory."""
    monkeypatch.chdir(tmp_path)
    with pytest.warns(DeprecationWarning, match="MuJoCo: compiler attribute 'settotalmass' is deprecated"):
        make_env("HalfCheetah-v5", seed=0).close()
    assert list(tmp_path.iterdir()) == []


def test_mujoco_presets_are_the_authors_settings():
    from td3_lib import TD3Config, preset
    for env_id in ("Hopper-v5", "Walker2d-v5", "HalfCheetah-v5", "Ant-v5"):
        assert preset(env_id) == TD3Config(total_steps=1_000_000)
        env = make_env(env_id, seed=0)
        assert env.action_space.shape[0] in (3, 6, 8)
        env.close()


LOCOMOTION = ("Hopper-v5", "Walker2d-v5", "HalfCheetah-v5", "Ant-v5")


@pytest.mark.parametrize("env_id", LOCOMOTION)
def test_mujoco_robots_are_filmed_by_their_tracking_camera(env_id):
    """make_env films a MuJoCo robot with its model's "track" camera (which follows the robot's centre of
    mass) when it draws frames; a camera the caller chose is kept; without frames nothing changes."""
    import mujoco

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # HalfCheetah's model: see the test above
        envs = {"drawn": make_env(env_id, render_mode="rgb_array"), "not drawn": make_env(env_id),
                "chosen": make_env(env_id, render_mode="rgb_array", camera_id=-1)}
    model = envs["drawn"].unwrapped.model
    track = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, "track")
    assert track >= 0 and model.cam_mode[track] == mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM
    cameras = {name: env.unwrapped.mujoco_renderer.camera_id for name, env in envs.items()}
    assert cameras == {"drawn": track, "not drawn": -1, "chosen": -1}  # -1: MuJoCo's free camera
    for env in envs.values():
        env.close()


def hopper_frames(env, agent, steps: int, every: int) -> list:
    """Frames of the shipped hopper's episode from seed 10000 (the README's clip), one in ``every`` steps."""
    obs, _ = env.reset(seed=10_000)
    frames = [env.render()]
    for t in range(1, steps + 1):
        obs, _, terminated, truncated, _ = env.step(agent.act(obs))
        if t % every == 0:
            frames.append(env.render())
        if terminated or truncated:
            break
    return frames


@pytest.mark.slow  # 22 frames drawn by EGL on the CPU: about 6 s of CPU time
def test_the_hopper_stays_in_the_picture():
    """The shipped hopper hops forward about 3 m/s: make_env's camera keeps it in every frame of its first
    2 s; gymnasium's own camera (free, where the episode starts) loses it after about 1 s."""
    from td3_lib.pretrained import load_pretrained
    from td3_lib.video import robot_fraction

    agent, size = load_pretrained("Hopper-v5"), dict(width=64, height=64)
    tracked = hopper_frames(make_env("Hopper-v5", render_mode="rgb_array", **size), agent, 250, every=25)
    fixed = hopper_frames(gym.make("Hopper-v5", render_mode="rgb_array", **size), agent, 250, every=25)
    assert len(tracked) == len(fixed) == 11  # steps 0, 25, ..., 250: 0 to 2 s
    assert robot_fraction(tracked) >= 0.95
    assert robot_fraction(fixed) < 0.7  # the same measure, on the camera that does not follow


def test_robot_fraction_counts_a_gifs_time_not_its_frames(tmp_path):
    """A gif writer merges repeated frames (an empty floor's) into one long frame: the fraction is of time."""
    from PIL import Image

    from td3_lib.video import robot_fraction, shows_robot

    floor = np.zeros((40, 40, 3), np.uint8) + np.array([200, 220, 200], np.uint8)  # a pale green square
    robot = floor.copy()
    robot[10:30, 18:22] = (204, 153, 102)  # a hopper's leg: rgba 0.8 0.6 0.4
    assert shows_robot(robot) and not shows_robot(floor)
    Image.fromarray(robot).save(tmp_path / "a.gif", save_all=True, duration=[100, 300],
                                append_images=[Image.fromarray(floor)])
    assert robot_fraction(tmp_path / "a.gif") == pytest.approx(0.25)
    assert robot_fraction([robot, floor, floor, floor]) == 0.25
    with pytest.raises(ValueError, match="has no frames"):
        robot_fraction([])


def test_recorder_can_draw_one_frame_in_every_k_steps(tmp_path):
    """Hopper's simulator draws 125 frames a second: one in 5 is enough to watch, at the same pace."""
    import imageio.v3 as iio

    env = Recorder(make_env("Pendulum-v1", render_mode="rgb_array"), tmp_path, every=3)
    assert env.fps == 10  # Pendulum's 30 frames per second, one in 3 kept
    env.reset(seed=0)
    for _ in range(10):
        env.step(env.action_space.sample())
    env.close()
    assert len(list(iio.imiter(env.last_video))) == 4  # steps 0, 3, 6, 9
    with pytest.raises(ValueError, match="every=0 is invalid"):
        Recorder(make_env("Pendulum-v1", render_mode="rgb_array"), tmp_path, every=0)
