"""td3_lib: a small, fast TD3 for the course, one module per lesson's idea."""

from .agent import TD3, resolve_device, soft_update
from .buffer import Batch, ReplayBuffer
from .checkpoint import CheckpointError
from .config import PRESET_ENVS, TD3Config, preset
from .envs import make_env
from .targets import bellman_target, clipped_double_q, smooth_target_action
from .training import TrainResult, evaluate, train
from .video import Recorder, show_video

__all__ = [
    "TD3", "TD3Config", "preset", "PRESET_ENVS", "ReplayBuffer", "Batch", "bellman_target",
    "clipped_double_q", "smooth_target_action", "make_env", "Recorder", "show_video", "train",
    "evaluate", "TrainResult", "CheckpointError", "resolve_device", "soft_update",
]
__version__ = "0.1.0"
