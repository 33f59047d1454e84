"""The project's tables as CSV: the one writer and the one reader of run histories, sweep
summaries and shipped results."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from .checkpoint import atomic_write_text


def csv_text(rows: list[dict], fields) -> str:
    """``rows`` as CSV text with the columns ``fields`` (a row's missing column is an empty cell)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(fields), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def write_rows(rows: list[dict], path, fields) -> None:
    """``rows`` as a CSV file with the columns ``fields``, written atomically (parent folders made)."""
    atomic_write_text(csv_text(rows, fields), path)


def read_rows(path) -> list[dict]:
    """A CSV file's rows, each value as a number where it is one (an int where the text is an
    integer) and as text otherwise; empty cells left out."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"No CSV file at {path}.")
    with open(path, newline="") as f:
        return [{k: number_or_text(v) for k, v in row.items() if v != ""} for row in csv.DictReader(f)]


def number_or_text(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text
