"""What every command line of the package shares: a parser that reports a bad argument in one line,
and the integer types its options take."""

from __future__ import annotations

import argparse


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a bad argument in one line (status 2), without the usage block."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def int_at_least(minimum: int):
    """An argparse type: an integer >= minimum, else a one-line error."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(
                f"{value} must be a positive integer" if minimum == 1 else f"{value} must be an integer >= {minimum}")
        return value
    return parse


positive_int, nonnegative_int = int_at_least(1), int_at_least(0)
