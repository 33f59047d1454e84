"""``python -m td3_lib.course.results publish runs/results/NAME.csv ...``: ship written results."""

from __future__ import annotations

import sys

from ...arguments import OneLineParser
from .publish import publish


def main(argv=None) -> int:
    parser = OneLineParser(prog="python -m td3_lib.course.results",
                                     description="Copy results written by experiments/ into the package.")
    commands = parser.add_subparsers(dest="command", required=True)
    publish_cmd = commands.add_parser("publish", help="copy each CSV and its entry into td3_lib/course/results/")
    publish_cmd.add_argument("files", nargs="+", help="CSV files written by an experiment script")
    args = parser.parse_args(argv)
    for file in args.files:
        try:
            print(f"published {publish(file)}")
        except (ValueError, OSError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
