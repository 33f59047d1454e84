"""Writing a result, and publishing it into the package: two steps, so an experiment never edits
the installed package.

``write_result`` puts ``NAME.csv`` and its manifest entry ``NAME.csv.json`` in an output folder.
``publish`` checks both and copies them into ``td3_lib/course/results/`` and its ``manifest.json``.

An entry says what made its runs (``provenance_fields``, from what each run's directory recorded):
``commit``, ``versions`` and ``machine`` when every run was made alike; otherwise each of them lists
the values found, and ``provenance`` gives them per group of runs (``runs``: name -> seeds, a name being
the run's label, or ``LABEL @ SWEEP`` where two takes share a label), so a result whose runs came
from several commits or machines says which run came from which. A value nobody recorded is null, with
a ``note`` (or, for the results shipped before provenance was recorded, ``recorded_afterwards`` and
``shipped_in``: the commit that first shipped the runs).
"""

from __future__ import annotations

import json
from pathlib import Path

from ...checkpoint import atomic_write, atomic_write_text
from ...tables import write_rows
from . import MANIFEST_FIELDS, manifest, results_dir

PROVENANCE_KEYS = ("commit", "versions", "machine")
MADE_KEYS = PROVENANCE_KEYS + ("note", "recorded_afterwards", "shipped_in")
"""What says how a run was made; a run's record may also hold ``from_step`` and ``restored_from``, which do not.
A run made in several segments keeps each one's ``from_step`` (``made_by``)."""

IN_SWEEP = " @ "
"""What joins a run name's label to its sweep's directory (``LABEL @ SWEEP``) in a provenance group."""


def run_label(name: str) -> str:
    """The label in a provenance group's run name (the name itself, or the part before its sweep)."""
    return name.split(IN_SWEEP)[0]


def entry_path(csv_path: Path) -> Path:
    """Where a written result keeps its manifest entry: beside it, ``NAME.csv.json``."""
    return csv_path.with_name(csv_path.name + ".json")


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


def distinct(values: list) -> list:
    """The values, each once, in the order they first appear (dicts compared by content)."""
    seen = {}
    for value in values:
        seen.setdefault(json.dumps(value, sort_keys=True), value)
    return list(seen.values())


def made_by(segments: list[dict]) -> list[dict]:
    """What made a run, segment by segment (MADE_KEYS); where there are several, also the step each starts
    at, so that a result holding the run's first steps keeps only the segments that made them."""
    keys = MADE_KEYS + (("from_step",) if len(segments) > 1 else ())
    return [{k: v for k, v in s.items() if k in keys} for s in segments]


def provenance_fields(runs) -> dict:
    """An entry's provenance from its runs' records: ``runs`` is (name, seed, segments) per run, where
    segments are what ``td3_lib.provenance`` recorded (one per change of code, versions or machine)."""
    groups: dict[str, dict] = {}
    for name, seed, segments in runs:
        made = made_by(segments)
        group = groups.setdefault(json.dumps(made, sort_keys=True), {"runs": {}, "made": made})
        group["runs"].setdefault(name, []).append(seed)
    if not groups:
        return {"commit": None, "versions": None, "machine": None, "note": "no finished runs"}
    first = next(iter(groups.values()))["made"]
    if len(groups) == 1 and len(first) == 1:
        return first[0]
    every = [m for g in groups.values() for m in g["made"]]
    return {**{k: distinct([m.get(k) for m in every]) for k in PROVENANCE_KEYS},
            "provenance": [{"runs": g["runs"], **(g["made"][0] if len(g["made"]) == 1 else {"segments": g["made"]})}
                           for g in groups.values()]}


def run_provenance_in_entry(entry: dict, name: str, seed: int) -> list[dict]:
    """What an entry says made its run ``name``, ``seed`` (a list of segments, as a run records it)."""
    notes = {k: entry[k] for k in ("note", "recorded_afterwards") if k in entry}  # said once for every group
    for group in entry.get("provenance", []):
        if seed in group["runs"].get(name, []):
            return group.get("segments") or [{**notes, **{k: v for k, v in group.items() if k in MADE_KEYS}}]
    return [{k: v for k, v in entry.items() if k in MADE_KEYS}]


def entry_of_file(csv_path) -> dict | None:
    """The entry of a result: the one written beside it, else the shipped one of the same file name."""
    csv_path = Path(csv_path)
    if entry_path(csv_path).is_file():
        return json.loads(entry_path(csv_path).read_text())
    return next((e for e in manifest() if e["file"] == csv_path.name), None)
