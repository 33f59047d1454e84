"""A sweep's results: each run's status and final score, one row per environment x variant (mean,
std and a bootstrap interval over seeds), summary.csv and the paper's Table 2 layout.

``final_score`` and ``score_row`` are the one way a final score and its spread over seeds are
computed, for sweeps, the course's shipped results and the benchmarks alike."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..checkpoint import atomic_write_text
from ..course.plots import plot_curves, value_of
from ..run import CHECKPOINT_NAME, HISTORY_NAME, read_history, read_rows
from .grid import DONE_NAME, ERROR_NAME, SPEC_NAME, SweepRun, grid
from .tasks import is_running

SUMMARY_NAME = "summary.csv"
TABLE_NAME = "summary.md"
SUMMARY_FIELDS = ("env", "variant", "n_seeds", "mean", "std", "ci_low", "ci_high")
LAST_K = 3
"""Final score of a run: the mean of its last LAST_K evaluations (the paper: the last 10 of 200)."""


@dataclass
class RunRecord:
    """One run of a sweep as its directory holds it: status finished, failed, running,
    unfinished (a checkpoint, not at the budget) or new."""

    env_id: str
    variant: str
    seed: int
    path: Path
    status: str
    history: list[dict] = field(default_factory=list)
    done: dict | None = None
    error: str | None = None


@dataclass
class SweepResult:
    """A sweep's runs and its summary (one row per environment x variant)."""

    out_dir: Path
    spec: dict
    runs: list[RunRecord]
    summary: list[dict]
    last_k: int = LAST_K
    wall_s: float = 0.0
    ray_start_s: float = 0.0

    @property
    def finished(self) -> list[RunRecord]:
        return [r for r in self.runs if r.status == "finished"]

    @property
    def failed(self) -> list[RunRecord]:
        return [r for r in self.runs if r.status == "failed"]

    def report(self) -> str:
        """What a person reads at the end: counts, files, and each failure with its traceback file."""
        lines = [f"sweep {self.out_dir}: {len(self.finished)} of {len(self.runs)} runs finished, "
                 f"{len(self.failed)} failed; {self.wall_s:.0f} s (Ray start-up {self.ray_start_s:.1f} s)",
                 f"summary {self.out_dir / SUMMARY_NAME}, table {self.out_dir / TABLE_NAME}, "
                 "curves " + ", ".join(str(self.out_dir / f"curves-{e}.png") for e in self.spec["envs"])]
        lines += [f"FAILED {r.path}: {r.error} (traceback in {r.path / ERROR_NAME})" for r in self.failed]
        return "\n".join(lines)


def run_record(run: SweepRun, out_dir: Path) -> RunRecord:
    """What a run's directory says about it."""
    path = run.path(out_dir)
    history = read_history(path / HISTORY_NAME) if (path / HISTORY_NAME).exists() else []
    done = json.loads((path / DONE_NAME).read_text()) if (path / DONE_NAME).exists() else None
    error = None
    if done is not None:
        status = "finished"
    elif is_running(path):
        status = "running"
    elif (path / ERROR_NAME).exists():
        status = "failed"
        lines = (path / ERROR_NAME).read_text().strip().splitlines()
        error = lines[-1] if lines else "unknown error"
    else:
        status = "unfinished" if (path / CHECKPOINT_NAME).exists() else "new"
    return RunRecord(run.env_id, run.variant, run.seed, path, status, history, done, error)


def load_sweep(out_dir, last_k: int = LAST_K) -> SweepResult:
    """A sweep directory read back: its settings, every run's status and history, the summary."""
    out_dir = Path(out_dir)
    spec_path = out_dir / SPEC_NAME
    if not spec_path.exists():
        raise FileNotFoundError(f"{out_dir} holds no sweep ({SPEC_NAME} is missing).")
    spec = json.loads(spec_path.read_text())
    runs = [run_record(r, out_dir) for r in grid(spec)]
    return SweepResult(out_dir, spec, runs, summary_rows(spec, runs, last_k), last_k)


def final_score(history: list[dict], last_k: int = LAST_K, column="eval_mean") -> float:
    """A run's final score: the mean of ``column`` (the evaluation return, or another column, or a
    function of a row) over its last ``last_k`` evaluations."""
    if last_k < 1:
        raise ValueError(f"last_k={last_k!r}: it must be an integer >= 1.")
    return float(np.mean([value_of(h, column) for h in history[-last_k:]]))


def mean_and_std(scores) -> tuple[float, float]:
    """Mean and std over seeds (ddof 1: the spread of the seeds as a sample); std is nan below 2 seeds."""
    scores = np.asarray(scores, dtype=float)
    mean = float(scores.mean()) if scores.size else float("nan")
    return mean, float(scores.std(ddof=1)) if scores.size > 1 else float("nan")


def bootstrap_ci(scores, confidence: float = 0.95, n_resamples: int = 10_000,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean over seeds (seeds resampled with replacement)."""
    scores = np.asarray(scores, dtype=float)
    if scores.size == 0:
        return float("nan"), float("nan")
    idx = np.random.default_rng(seed).integers(0, scores.size, size=(n_resamples, scores.size))
    means = scores[idx].mean(axis=1)
    alpha = (1 - confidence) / 2
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))


def bootstrap_difference_ci(a, b, confidence: float = 0.95, n_resamples: int = 10_000,
                            seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of mean(a) - mean(b): each variant's seeds resampled with
    replacement, independently of the other's."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.size == 0 or b.size == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    diffs = (a[rng.integers(0, a.size, size=(n_resamples, a.size))].mean(axis=1)
             - b[rng.integers(0, b.size, size=(n_resamples, b.size))].mean(axis=1))
    alpha = (1 - confidence) / 2
    return float(np.quantile(diffs, alpha)), float(np.quantile(diffs, 1 - alpha))


def permutation_p_value(a, b) -> float:
    """Exact two-sided permutation test of mean(a) - mean(b): the share of all ways of splitting the
    pooled scores into groups of len(a) and len(b) whose difference of means is at least as large
    (in size) as the observed one. Equal variants would give a gap this large that often."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.size == 0 or b.size == 0:
        raise ValueError(f"A permutation test needs scores on both sides; got {a.size} and {b.size}.")
    pooled, n = np.concatenate([a, b]), a.size
    if math.comb(pooled.size, n) > 1_000_000:
        raise ValueError(f"{a.size} and {b.size} seeds: too many splits to count exactly (over a million).")
    observed, total, count = abs(a.mean() - b.mean()), pooled.sum(), 0
    for idx in itertools.combinations(range(pooled.size), n):
        in_a = pooled[list(idx)].sum()
        difference = in_a / n - (total - in_a) / b.size
        count += abs(difference) >= observed * (1 - 1e-12)  # the observed split counts, despite rounding
    return count / math.comb(pooled.size, n)


def score_row(env_id: str, variant: str, scores: list[float]) -> dict:
    """One summary row: final scores over seeds -> mean, std (over seeds, ddof 1) and 95% bootstrap CI."""
    mean, std = mean_and_std(scores)
    ci_low, ci_high = bootstrap_ci(scores)
    return {"env": env_id, "variant": variant, "n_seeds": len(scores), "mean": mean, "std": std,
            "ci_low": ci_low, "ci_high": ci_high}


def summary_rows(spec: dict, runs: list[RunRecord], last_k: int = LAST_K) -> list[dict]:
    """One row per environment x variant over its finished runs."""
    return [score_row(e, v, [final_score(r.history, last_k) for r in runs
                             if r.env_id == e and r.variant == v and r.status == "finished"])
            for e in spec["envs"] for v in spec["variants"]]


def write_summary_csv(rows: list[dict], path: Path) -> None:
    lines = [",".join(SUMMARY_FIELDS)]
    lines += [",".join(str(row[k]) for k in SUMMARY_FIELDS) for row in rows]
    atomic_write_text("\n".join(lines) + "\n", path)


def read_summary(path) -> list[dict]:
    """``summary.csv`` read back, numbers as numbers."""
    return read_rows(path)


def table2_markdown(spec: dict, rows: list[dict], last_k: int = LAST_K) -> str:
    """The summary in the shape of the paper's Table 2: a row per variant, a column per
    environment, mean +- std over seeds, the best mean of each environment in bold."""
    envs, variants = spec["envs"], spec["variants"]
    cell = {(r["env"], r["variant"]): r for r in rows}
    best = {e: max((cell[e, v]["mean"] for v in variants if cell[e, v]["n_seeds"]), default=None)
            for e in envs}
    n_seeds = len(spec["seeds"])
    lines = [f"Final return: mean of the last {last_k} evaluations of each run; mean ± std over "
             f"{n_seeds} seeds (n shown where runs are missing); bold: the best on each environment. "
             "DDPG is the paper's AHE (TD3 with all three tricks off); TD3-X is TD3 without X.", "",
             "| Method | " + " | ".join(envs) + " |", "| --- |" + " --- |" * len(envs)]
    for v in variants:
        cells = [format_cell(cell[e, v], best[e], n_seeds) for e in envs]
        lines.append(f"| {v} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def format_cell(row: dict, best: float | None, n_seeds: int) -> str:
    if not row["n_seeds"]:
        return "—"
    text = f"{row['mean']:.1f} ± {row['std']:.1f}"
    text = f"**{text}**" if row["mean"] == best else text
    return text if row["n_seeds"] == n_seeds else f"{text} (n={row['n_seeds']})"


def summarize(out_dir, last_k: int = LAST_K) -> SweepResult:
    """Read a sweep directory and write its results: summary.csv (one row per environment x
    variant, final score = mean of the last ``last_k`` evaluations, a 95% bootstrap interval
    over seeds), summary.md (the paper's Table 2 shape) and curves-ENV.png per environment."""
    result = load_sweep(out_dir, last_k)
    write_summary_csv(result.summary, result.out_dir / SUMMARY_NAME)
    atomic_write_text(table2_markdown(result.spec, result.summary, last_k), result.out_dir / TABLE_NAME)
    for env_id in result.spec["envs"]:
        runs = [r for r in result.finished if r.env_id == env_id]
        plot_curves(runs, result.spec["variants"], env_id, result.out_dir / f"curves-{env_id}.png")
    return result
