"""Ship a finished training run as the package's pretrained agent, and test it (for maintainers).

    python -m td3_lib.pretrained RUN_DIR ENV_ID [--videos videos] [--episodes 100]
    python -m td3_lib.pretrained --test ENV_ID [--episodes 100]

The first copies the run's best-evaluated actor and its history into td3_lib/pretrained/,
tests it over noise-free episodes on seeds the training never used (10000, 10001, ...;
a run evaluates on seed + 100, seed + 101, ...), stores the test's result beside it
(ENV_ID.test.json: every episode's return and length), records a clip (from --clip-seed)
into --videos (mp4 and a small gif) and prints the README row. The second ships nothing:
it tests the agent already shipped for ENV_ID again and stores the result.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import gymnasium as gym

from . import (TEST_EPISODES, TEST_SEED, export_pretrained, held_out_test, load_pretrained,
               write_test_result)
from ..run import HISTORY_NAME, best_evaluation, read_history


def parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m td3_lib.pretrained", description=__doc__.splitlines()[0])
    p.add_argument("run_dir", type=Path, nargs="?", help="the finished run to ship")
    p.add_argument("env_id", nargs="?", help="the environment it was trained on")
    p.add_argument("--test", metavar="ENV_ID", default=None,
                   help="ship nothing: test the agent already shipped for ENV_ID and store the result")
    p.add_argument("--videos", type=Path, default=Path("videos"))
    p.add_argument("--episodes", type=int, default=TEST_EPISODES, help="test episodes (default 100)")
    p.add_argument("--gif-fps", type=int, default=15, help="frames per second of the README gif")
    p.add_argument("--gif-seconds", type=float, default=20.0, help="length of the README gif, at most")
    p.add_argument("--clip-seed", type=int, default=TEST_SEED, help="reset seed of the recorded episode")
    args = p.parse_args(argv)
    ship, test = args.run_dir is not None and args.env_id is not None, args.test is not None
    if ship == test or (test and args.run_dir is not None):
        p.error("give either RUN_DIR ENV_ID (ship a run) or --test ENV_ID alone (test a shipped agent)")
    return args


def store_held_out_test(env_id: str, episodes: int) -> dict:
    """The shipped agent's held-out test, stored beside it and printed in one line."""
    start = time.perf_counter()
    result = held_out_test(load_pretrained(env_id), env_id, episodes)
    path = write_test_result(result)
    print(f"{env_id}: {result['mean']:.1f} +- {result['std']:.1f} over {episodes} episodes "
          f"(seeds {TEST_SEED}-{TEST_SEED + episodes - 1}; min {result['min']:.1f}, max {result['max']:.1f}, "
          f"lengths {min(result['lengths'])}-{max(result['lengths'])}; "
          f"{time.perf_counter() - start:.0f} s), stored in {path}")
    return result


def record_clip(env_id: str, videos: Path, clip_seed: int, fps: int, seconds: float) -> Path:
    """One episode of the shipped agent as ``videos/ENV_ID.mp4`` and a short gif beside it."""
    from ..video import record, to_gif

    clips = record(load_pretrained(env_id), env_id, videos / f".{env_id}", episodes=1, seed=clip_seed)
    mp4 = videos / f"{env_id}.mp4"
    clips[0].replace(mp4)
    to_gif(mp4, mp4.with_suffix(".gif"), fps=fps, seconds=seconds)
    (videos / f".{env_id}").rmdir()
    return mp4


def main(argv=None) -> None:
    args = parse(argv)
    if args.test is not None:
        store_held_out_test(args.test, args.episodes)
        return
    export_pretrained(args.run_dir, args.env_id, best=True)
    result = store_held_out_test(args.env_id, args.episodes)
    mp4 = record_clip(args.env_id, args.videos, args.clip_seed, args.gif_fps, args.gif_seconds)
    history = read_history(args.run_dir / HISTORY_NAME)
    best = best_evaluation(history)
    solved = gym.spec(args.env_id).reward_threshold  # registered by make_env during the test
    print(f"| {args.env_id} | {history[-1]['step']:,} (best evaluation at {best['step']:,}; "
          f"{history[-1]['wall_s'] / 3600:.1f} h) | {result['mean']:.1f} ± {result['std']:.1f} | "
          f"{'none registered' if solved is None else f'{solved:g}'} | "
          f"![{args.env_id}]({mp4.with_suffix('.gif').as_posix()}) |")


if __name__ == "__main__":
    main()
