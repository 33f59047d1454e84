"""Full-budget results over seeds, shipped with the package so each lesson can plot them.

Each result is a small CSV (one row per seed and evaluation, or per seed and
measurement) listed in ``manifest.json`` with what made it: ``file``,
``lesson``, ``env``, ``command`` (the exact command that regenerates it),
``seeds``, ``steps``, ``wall_s``, ``version`` (td3_lib's version), ``runs``
(each variant's seeds), and the ``commit``, ``versions`` and ``machine`` that made
its runs (per group of runs in ``provenance`` where they differ; see ``publish``).

The scripts under ``experiments/`` (``td3_lib.course.experiments``) write a result to an output
folder (``runs/results`` by default) beside its entry; ``publish`` (``python -m
td3_lib.course.results publish FILE``) is the separate step that copies it into this package and
its manifest.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import numpy as np

from ...stats import final_score, mean_and_std
from ...tables import read_rows

MANIFEST_FIELDS = ("file", "lesson", "env", "command", "seeds", "steps", "wall_s", "version", "commit", "versions",
                   "machine")


def results_dir() -> Path:
    """The folder of the shipped results (this package's data files), installed or not."""
    return Path(str(resources.files(__package__)))


def manifest() -> list[dict]:
    """Every shipped result's manifest entry."""
    path = results_dir() / "manifest.json"
    return json.loads(path.read_text()) if path.is_file() else []


def entry(file: str) -> dict:
    """The manifest entry of one shipped result."""
    for e in manifest():
        if e["file"] == file:
            return e
    have = ", ".join(e["file"] for e in manifest()) or "none yet"
    raise ValueError(f"No shipped result {file!r}; available: {have}.")


def made_on(entry: dict) -> str:
    """The CPUs that made a result, as its manifest entry records them, each with its torch threads per
    run ("Intel(R) Xeon(R) Processor, 1 torch thread per run"); several are joined with "and"."""
    machines = entry.get("machine")
    named = [f"{m.get('cpu') or 'a CPU not recorded'}, {m['torch_threads']} torch "
             f"thread{'' if m['torch_threads'] == 1 else 's'} per run"
             for m in (machines if isinstance(machines, list) else [machines]) if m]
    return " and ".join(named) or "a machine not recorded"


def load(file: str) -> list[dict]:
    """The rows of a shipped result, numbers parsed (ints where the text is an integer)."""
    entry(file)
    return read_rows(results_dir() / file)


def histories(rows: list[dict], variant: str) -> list[list[dict]]:
    """The rows of one variant split into one history per seed (each in step order)."""
    seeds = sorted({r["seed"] for r in rows if r["variant"] == variant})
    if not seeds:
        have = ", ".join(sorted({r["variant"] for r in rows}))
        raise ValueError(f"No rows for variant {variant!r}; the result has: {have}.")
    return [sorted((r for r in rows if r["variant"] == variant and r["seed"] == s), key=lambda r: r["step"])
            for s in seeds]


def bias(row: dict) -> float:
    """The critic's value error at one evaluation (lesson 02): its estimate Q1(s, pi(s)) minus the true
    discounted return, both averaged over the probe's states; above 0 is overestimation."""
    return row["q_estimate"] - row["q_true"]


def finals(rows: list[dict], variant: str, column="eval_mean", last_k: int = 1) -> np.ndarray:
    """Per seed, the mean of ``column`` (a name, or a function of a row) over the last ``last_k`` evaluations."""
    return np.array([final_score(history, last_k, column) for history in histories(rows, variant)])


def score_line(rows: list[dict], variant: str, column="eval_mean", last_k: int = 3, fmt: str = "8.1f") -> str:
    """``variant``, then ``finals`` as mean ± std over seeds (std with ddof 1; "(1 seed)" where there
    is one), then per seed: one table row."""
    x = finals(rows, variant, column, last_k)
    mean, std = mean_and_std(x)
    spread = f"± {std:{fmt}}" if len(x) > 1 else f"{'(1 seed)':>{len(f'± {0.0:{fmt}}')}}"
    return f"{variant:26s} {mean:{fmt}} {spread}   " + "  ".join(f"{v:{fmt}}" for v in x)
