"""A sweep's results: each run's status and final score, one row per environment x variant (mean,
std and a bootstrap interval over seeds), summary.csv, the paper's Table 2 layout, and each variant
against the baseline (TD3 where the sweep has it): the difference, its interval, p, and whether it
separates.

The scores and statistics are ``td3_lib.stats``'s (``final_score``, ``score_row``, ``difference``),
the figure ``td3_lib.plots``'s, the CSV ``td3_lib.tables``'s."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..checkpoint import atomic_write_text
from ..plots import plot_curves
from ..envs import env_file_name
from ..run import CHECKPOINT_NAME, HISTORY_NAME, read_history
from ..stats import LAST_K, countable, difference, final_score, score_row
from ..tables import read_rows, write_rows
from .grid import DONE_NAME, ERROR_NAME, SPEC_NAME, SweepRun, grid
from .tasks import is_running

SUMMARY_NAME = "summary.csv"
TABLE_NAME = "summary.md"
SUMMARY_FIELDS = ("env", "variant", "n_seeds", "mean", "std", "ci_low", "ci_high")


@dataclass
class RunRecord:
    """One run of a sweep as its directory holds it: its grid cell, where it is, and its status:
    finished, failed, running, unfinished (a checkpoint, not at the budget) or new."""

    cell: SweepRun
    path: Path
    status: str
    history: list[dict] = field(default_factory=list)
    done: dict | None = None
    error: str | None = None

    @property
    def env_id(self) -> str:
        return self.cell.env_id

    @property
    def variant(self) -> str:
        return self.cell.variant

    @property
    def seed(self) -> int:
        return self.cell.seed


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
                 "curves " + ", ".join(str(curves_path(self.out_dir, e)) for e in self.spec["envs"])]
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
    return RunRecord(run, path, status, history, done, error)


def load_sweep(out_dir, last_k: int = LAST_K) -> SweepResult:
    """A sweep directory read back: its settings, every run's status and history, the summary."""
    out_dir = Path(out_dir)
    spec_path = out_dir / SPEC_NAME
    if not spec_path.exists():
        raise FileNotFoundError(f"{out_dir} holds no sweep ({SPEC_NAME} is missing).")
    spec = json.loads(spec_path.read_text())
    runs = [run_record(r, out_dir) for r in grid(spec)]
    return SweepResult(out_dir, spec, runs, summary_rows(spec, runs, last_k), last_k)


def finished_scores(runs: list[RunRecord], env_id: str, variant: str, last_k: int = LAST_K) -> list[float]:
    """The final scores of one environment x variant's finished runs, seed by seed."""
    return [final_score(r.history, last_k) for r in runs
            if r.env_id == env_id and r.variant == variant and r.status == "finished"]


def summary_rows(spec: dict, runs: list[RunRecord], last_k: int = LAST_K) -> list[dict]:
    """One row per environment x variant over its finished runs."""
    return [score_row(e, v, finished_scores(runs, e, v, last_k)) for e in spec["envs"] for v in spec["variants"]]


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
    one_seed = row["n_seeds"] == 1  # one seed has a score and no spread
    text = f"{row['mean']:.1f}" if one_seed else f"{row['mean']:.1f} ± {row['std']:.1f}"
    text = f"**{text}**" if row["mean"] == best else text
    return text if row["n_seeds"] == n_seeds else f"{text} (n={row['n_seeds']})"


def baseline_of(variants) -> str:
    """The variant the others are set against: TD3 where the sweep has it, else its first."""
    return "TD3" if "TD3" in variants else variants[0]


def difference_cell(a: list[float], b: list[float]) -> str:
    """mean(a) - mean(b), its 95% bootstrap interval, p and the verdict (``Difference.text``); a dash where
    a side has fewer than 2 seeds (no spread to resample) or more than the exact permutation test counts."""
    if min(len(a), len(b)) < 2 or not countable(len(a), len(b)):
        return "—"
    return difference(a, b).text()


def differences_markdown(spec: dict, runs: list[RunRecord], last_k: int = LAST_K) -> str:
    """Each variant against the baseline on each environment (``td3_lib.stats.difference`` of their
    final scores over seeds); empty for a sweep of one variant."""
    envs, variants = spec["envs"], spec["variants"]
    base = baseline_of(variants)
    others = [v for v in variants if v != base]
    if not others:
        return ""
    lines = [f"Each variant minus {base}: the difference of the mean final returns, its 95% bootstrap "
             "interval, the exact permutation test's p and the seeds on each side. A difference "
             "*separates* when the interval excludes 0 and p < 0.05; one that does not, these seeds "
             "cannot tell from no difference "
             "(—: fewer than 2 seeds on a side, or more than the exact test counts).", "",
             "| Method | " + " | ".join(envs) + " |", "| --- |" + " --- |" * len(envs)]
    for v in others:
        cells = [difference_cell(finished_scores(runs, e, v, last_k), finished_scores(runs, e, base, last_k))
                 for e in envs]
        lines.append(f"| {v} − {base} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def curves_path(out_dir, env_id: str) -> Path:
    """``OUT/curves-ENV.png``, the id as ``env_file_name`` writes it."""
    return Path(out_dir) / f"curves-{env_file_name(env_id)}.png"


def summarize(out_dir, last_k: int = LAST_K) -> SweepResult:
    """Read a sweep directory and write its results: summary.csv (one row per environment x
    variant, final score = mean of the last ``last_k`` evaluations, a 95% bootstrap interval
    over seeds), summary.md (the paper's Table 2 shape, then each variant against the baseline) and
    curves-ENV.png per environment."""
    result = load_sweep(out_dir, last_k)
    write_rows(result.summary, result.out_dir / SUMMARY_NAME, SUMMARY_FIELDS)
    tables = [table2_markdown(result.spec, result.summary, last_k),
              differences_markdown(result.spec, result.runs, last_k)]
    atomic_write_text("\n".join(t for t in tables if t), result.out_dir / TABLE_NAME)
    for env_id in result.spec["envs"]:
        curves = {v: [r.history for r in result.finished if r.env_id == env_id and r.variant == v]
                  for v in result.spec["variants"]}
        plot_curves(curves, env_id, curves_path(result.out_dir, env_id))
    return result
