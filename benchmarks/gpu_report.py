"""The report of benchmarks/gpu_check.py: the check's clock, the machine, and what it measured as
gpu_check.json and a short summary.txt."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import torch


class Clock:
    """The check's time budget, shared by its parts."""

    def __init__(self, budget_s: float):
        self.started, self.budget_s = time.perf_counter(), budget_s

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def until(self, share: float) -> float:
        """Seconds left before ``share`` of the budget is spent."""
        return share * self.budget_s - self.elapsed()


def machine(device: str) -> dict:
    info = {"python": platform.python_version(), "torch": torch.__version__, "cpus": os.cpu_count(),
            "platform": platform.platform(), "device": device}
    if device == "cuda":
        info.update(gpu=torch.cuda.get_device_name(), cuda=torch.version.cuda,
                    gpu_memory_gib=round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1))
    return info


def throughput_lines(throughput: dict) -> list[str]:
    lines = [f"update throughput, batch {throughput['batch']}: updates/s (x eager, median over rounds)"]
    for size, rows in throughput["sizes"].items():
        cells = []
        for name, row in rows.items():
            if "updates_per_s" in row:
                x = f" ({row['x_eager']:.2f}x)" if "x_eager" in row else ""
                cells.append(f"{name} {row['updates_per_s']:.0f}{x}, setup {row['setup_s']:.0f} s")
            else:
                cells.append(f"{name}: {row.get('error') or row.get('skipped')}")
        lines.append(f"  {size}: " + " | ".join(cells))
    return lines


def training_lines(runs: dict) -> list[str]:
    lines = []
    for name, run in runs.items():
        if "learning_steps_per_s" not in run:
            lines.append(f"training, {name}: {run.get('error') or run.get('skipped')}")
            continue
        budget = run["preset_budget"]
        lines += [f"training {run['env_id']} ({name}, {'-'.join(map(str, run['hidden_sizes']))}): "
                  f"random phase {run['random_steps_per_s']:.0f} steps/s, learning phase "
                  f"{run['learning_steps_per_s']:.0f} steps/s (acting included), evaluation "
                  f"{run['evaluation_steps_per_s'] or float('nan'):.0f} steps/s",
                  f"  the preset's {budget['budget_steps']:,} steps: about {duration(budget['total_s'])} "
                  f"({budget['how']})"]
    return lines


def duration(seconds: float) -> str:
    """Seconds as hours, minutes or seconds, whichever reads best."""
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"


def summary_text(report: dict) -> str:
    m = report["machine"]
    lines = [f"td3_lib GPU check{' (smoke, on the CPU)' if report['smoke'] else ''}: "
             f"{m.get('gpu', 'no GPU')}, torch {m['torch']}, {report['wall_s']:.0f} s in all"]
    if "tests" in report:
        t = report["tests"]
        lines.append(f"tests ({', '.join(t['files'])}): {t['summary']}, exit status {t['returncode']}")
    if "throughput" in report:
        lines += throughput_lines(report["throughput"])
    lines += training_lines(report.get("training", {}))
    lines += [f"skipped: {s}" for s in report["skipped"]]
    lines += [f"error in {part}: {e}" for part, e in report["errors"].items()]
    return "\n".join(lines) + "\n"


def write(report: dict, out: Path, clock: Clock) -> None:
    report["wall_s"] = round(clock.elapsed(), 1)
    (out / "gpu_check.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    (out / "summary.txt").write_text(summary_text(report))


def broken(report: dict) -> bool:
    """Whether a part broke, a test failed, or a contender or training run raised."""
    rows = [row for rows in report.get("throughput", {}).get("sizes", {}).values() for row in rows.values()]
    rows += list(report.get("training", {}).values())
    return bool(report["errors"]) or report.get("tests", {}).get("returncode") != 0 or \
        any("error" in row for row in rows)
