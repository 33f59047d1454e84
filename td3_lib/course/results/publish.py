"""Writing a result, and publishing it into the package: two steps, so an experiment never edits
the installed package.

``write_result`` puts ``NAME.csv`` and its manifest entry ``NAME.csv.json`` in an output folder.
``publish`` checks both and copies them into ``td3_lib/course/results/`` and its ``manifest.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

from ...checkpoint import atomic_write, atomic_write_text
from ...run import csv_text
from . import MANIFEST_FIELDS, results_dir


def entry_path(csv_path: Path) -> Path:
    """Where a written result keeps its manifest entry: beside it, ``NAME.csv.json``."""
    return csv_path.with_name(csv_path.name + ".json")


def write_rows(rows: list[dict], path: Path, fields) -> None:
    """``rows`` as a CSV with the columns ``fields``, written atomically (parent folders made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(csv_text(rows, fields), path)


def check_entry(entry: dict) -> None:
    missing = [k for k in MANIFEST_FIELDS if k not in entry]
    if missing:
        raise ValueError(f"Manifest entry for {entry.get('file')!r} lacks {', '.join(missing)}; "
                         f"an entry has {', '.join(MANIFEST_FIELDS)}.")


def write_result(rows: list[dict], fields, entry: dict, out_dir: Path) -> Path:
    """Write ``out_dir/<entry['file']>`` and its entry beside it; return the CSV's path."""
    check_entry(entry)
    path = Path(out_dir) / entry["file"]
    write_rows(rows, path, fields)
    atomic_write_text(json.dumps(entry, indent=1) + "\n", entry_path(path))
    return path


def publish(csv_path, package_dir: Path | None = None) -> Path:
    """Copy a written result and its entry into the package (or ``package_dir``), replacing any
    entry of the same file in ``manifest.json``; return the copy's path."""
    csv_path = Path(csv_path)
    if not csv_path.is_file() or not entry_path(csv_path).is_file():
        raise ValueError(f"{csv_path} is not a written result: publish needs the CSV and its entry "
                         f"{entry_path(csv_path).name} beside it (both written by an experiment script).")
    entry = json.loads(entry_path(csv_path).read_text())
    check_entry(entry)
    if entry["file"] != csv_path.name:
        raise ValueError(f"{entry_path(csv_path)} describes {entry['file']!r}, not {csv_path.name!r}.")
    package_dir = Path(package_dir) if package_dir is not None else results_dir()
    manifest_path = package_dir / "manifest.json"
    entries = json.loads(manifest_path.read_text()) if manifest_path.is_file() else []
    entries = [e for e in entries if e["file"] != entry["file"]] + [entry]
    data = csv_path.read_bytes()
    atomic_write(package_dir / csv_path.name, lambda f: f.write(data))
    atomic_write_text(json.dumps(sorted(entries, key=lambda e: e["file"]), indent=1) + "\n", manifest_path)
    return package_dir / csv_path.name
