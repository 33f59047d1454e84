"""Ship a finished training run as the package's pretrained agent (for maintainers).

    python -m td3_lib.pretrained RUN_DIR ENV_ID [--videos videos] [--episodes 100]

Copies the run's best-evaluated actor and its history into td3_lib/pretrained/,
evaluates it over noise-free episodes on seeds the training never used
(10000, 10001, ...; a run evaluates on seed + 100, seed + 101, ...), records a
clip (from --clip-seed) into --videos (mp4 and a small gif) and prints the README row.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import gymnasium as gym

from . import export_pretrained, load_pretrained
from ..rollout import evaluate
from ..run import HISTORY_NAME, best_evaluation, read_history

TEST_SEED = 10_000


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m td3_lib.pretrained", description=__doc__.splitlines()[0])
    p.add_argument("run_dir", type=Path)
    p.add_argument("env_id")
    p.add_argument("--videos", type=Path, default=Path("videos"))
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--gif-fps", type=int, default=15, help="frames per second of the README gif")
    p.add_argument("--gif-seconds", type=float, default=20.0, help="length of the README gif, at most")
    p.add_argument("--clip-seed", type=int, default=TEST_SEED, help="reset seed of the recorded episode")
    args = p.parse_args(argv)

    from ..video import record, to_gif

    export_pretrained(args.run_dir, args.env_id, best=True)
    agent = load_pretrained(args.env_id)
    start = time.perf_counter()
    returns = evaluate(agent, args.env_id, args.episodes, seed=TEST_SEED)
    print(f"{args.env_id}: {returns.mean():.1f} +- {returns.std():.1f} over {args.episodes} episodes "
          f"(seeds {TEST_SEED}-{TEST_SEED + args.episodes - 1}; min {returns.min():.1f}, "
          f"max {returns.max():.1f}; {time.perf_counter() - start:.0f} s)")

    clips = record(agent, args.env_id, args.videos / f".{args.env_id}", episodes=1, seed=args.clip_seed)
    mp4 = args.videos / f"{args.env_id}.mp4"
    clips[0].replace(mp4)
    to_gif(mp4, mp4.with_suffix(".gif"), fps=args.gif_fps, seconds=args.gif_seconds)
    (args.videos / f".{args.env_id}").rmdir()

    history = read_history(args.run_dir / HISTORY_NAME)
    best = best_evaluation(history)
    solved = gym.spec(args.env_id).reward_threshold  # registered by make_env during the evaluation
    print(f"| {args.env_id} | {history[-1]['step']:,} (best evaluation at {best['step']:,}; "
          f"{history[-1]['wall_s'] / 3600:.1f} h) | {returns.mean():.1f} ± {returns.std():.1f} | "
          f"{'none registered' if solved is None else f'{solved:g}'} | "
          f"![{args.env_id}]({mp4.with_suffix('.gif').as_posix()}) |")


if __name__ == "__main__":
    main()
