"""Ship a finished training run as the package's pretrained agent, and test it (for maintainers).

    python -m td3_lib.pretrained RUN_DIR ENV_ID [--videos videos] [--episodes 100]
    python -m td3_lib.pretrained --test ENV_ID [--episodes 100]
    python -m td3_lib.pretrained --clip ENV_ID [--videos videos]

The first copies the run's best-evaluated actor and its history into td3_lib/pretrained/,
tests it over noise-free episodes on seeds the training never used (10000, 10001, ...;
a run evaluates on seed + 100, seed + 101, ...), stores the test's result beside it
(ENV_ID.test.json: every episode's return and length), records a clip (from --clip-seed)
into --videos (mp4 and a small gif) and prints the README row. The second ships nothing:
it tests the agent already shipped for ENV_ID again and stores the result. The third ships
nothing either: it records the shipped agent's clip again (mp4 and gif, from --clip-seed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import TEST_EPISODES, TEST_SEED, export_pretrained, readme_row, record_clip, store_held_out_test
from ..arguments import OneLineParser, nonnegative_int, positive_int
from ..envs import RenderingUnavailable


def parse(argv=None) -> argparse.Namespace:
    p = OneLineParser(prog="python -m td3_lib.pretrained", description=__doc__.splitlines()[0])
    p.add_argument("run_dir", type=Path, nargs="?", help="the finished run to ship")
    p.add_argument("env_id", nargs="?", help="the environment it was trained on")
    p.add_argument("--test", metavar="ENV_ID", default=None,
                   help="ship nothing: test the agent already shipped for ENV_ID and store the result")
    p.add_argument("--clip", metavar="ENV_ID", default=None,
                   help="ship nothing: record the clip of the agent already shipped for ENV_ID again")
    p.add_argument("--videos", type=Path, default=Path("videos"))
    p.add_argument("--episodes", type=positive_int, default=TEST_EPISODES, help="test episodes (default 100)")
    p.add_argument("--gif-fps", type=positive_int, default=15, help="frames per second of the README gif")
    p.add_argument("--gif-seconds", type=positive_int, default=20, help="length of the README gif, at most, in seconds")
    p.add_argument("--gif-width", type=positive_int, default=240, help="width of the README gif in pixels")
    p.add_argument("--clip-seed", type=nonnegative_int, default=TEST_SEED, help="reset seed of the recorded episode")
    args = p.parse_args(argv)
    ship = args.run_dir is not None and args.env_id is not None
    alone = [name for name in ("test", "clip") if getattr(args, name) is not None]
    if ship + len(alone) != 1 or (alone and args.run_dir is not None):
        p.error("give either RUN_DIR ENV_ID (ship a run), --test ENV_ID alone (test a shipped agent) "
                "or --clip ENV_ID alone (record its clip again)")
    return args


def ship(args) -> None:
    export_pretrained(args.run_dir, args.env_id, best=True)
    result, line = store_held_out_test(args.env_id, args.episodes)
    print(line)
    mp4 = record_clip(args.env_id, args.videos, args.clip_seed, args.gif_fps, args.gif_seconds, args.gif_width)
    print(readme_row(args.run_dir, args.env_id, result, mp4.with_suffix(".gif")))


def main(argv=None) -> int:
    args = parse(argv)
    try:
        if args.test is not None:
            print(store_held_out_test(args.test, args.episodes)[1])
        elif args.clip is not None:
            mp4 = record_clip(args.clip, args.videos, args.clip_seed, args.gif_fps, args.gif_seconds, args.gif_width)
            print(f"{mp4} and {mp4.with_suffix('.gif')}")
        else:
            ship(args)
    except (ValueError, OSError, RenderingUnavailable) as e:  # bad input: one line, no traceback
        print(f"python -m td3_lib.pretrained: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
