"""td3_lib: a small, fast TD3 for the course, one module per lesson's idea."""

from .agent import TD3, resolve_device
from .batched import BatchedTD3
from .batched_training import train_batched
from .buffer import Batch, ReplayBuffer
from .checkpoint import CheckpointError
from .config import PRESET_ENVS, TD3Config, preset
from .envs import make_env
from .rollout import Episode, evaluate, rollout
from .targets import (bellman_target, clip_noise, clipped_double_q, half_range, smooth_target_action, soft_update,
                      target_noise)
from .training import TrainResult, TrainingDiverged, train
from .sweep import VARIANTS, load_sweep, summarize, sweep, variant_config  # Ray: only once a sweep starts
from .video import Recorder, record, show_video, show_videos
from .critic_video import record_with_critic

__all__ = [
    "TD3", "TD3Config", "preset", "PRESET_ENVS", "ReplayBuffer", "Batch", "bellman_target",
    "clipped_double_q", "smooth_target_action", "target_noise", "clip_noise", "make_env", "Recorder", "show_video",
    "show_videos", "train",
    "evaluate", "TrainResult", "CheckpointError", "resolve_device", "soft_update", "half_range",
    "rollout", "Episode", "record", "TrainingDiverged",
    "sweep", "VARIANTS", "variant_config", "summarize", "load_sweep", "BatchedTD3", "train_batched",
    "record_with_critic",
]
__version__ = "0.1.0"
