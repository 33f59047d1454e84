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


def batched_lines(batched: dict) -> list[str]:
    """The batched part: the equality checks, member-updates/s and member-steps/s for each mode and K."""
    lines = [f"batched TD3 on {batched['env_id']} ({'-'.join(map(str, batched['spec']['hidden']))}, batch "
             f"{batched['spec']['batch']}):"]
    for name, check in batched.get("equality", {}).items():
        if "within_tolerance" in check:
            verdict = "equal" if check["within_tolerance"] else "NOT equal"
            name += " (both eager: no CUDA graphs here)" if check.get("cuda_graph") is False else ""
            lines.append(f"  {name}: {verdict} within rtol {check['tolerance']['rtol']:g}, atol "
                         f"{check['tolerance']['atol']:g} after {check['updates']} updates of {check['members']} "
                         f"members (largest difference {check['max_abs_diff']:.2e})")
        else:
            lines.append(f"  {name}: {check.get('error') or check.get('skipped')}")
    for name, row in batched.get("updates", {}).items():
        ratios = "".join(f", {label} {row[key]:.2f}" for key, label in (("x_eager", "x eager"), ("x_k1", "x K=1"))
                         if key in row)
        lines.append(f"  updates, {name}: {row['member_updates_per_s']:,.0f} member-updates/s{ratios}"
                     if "member_updates_per_s" in row else f"  updates, {name}: {row.get('error') or row.get('skipped')}")
    for name, run in batched.get("training", {}).items():
        if "learning_member_steps_per_s" not in run:
            lines.append(f"  training, {name}: {run.get('error') or run.get('skipped')}")
            continue
        x = f" (x K=1: {run['x_k1']:.2f})" if "x_k1" in run else ""
        lines.append(f"  training, {name}: random phase {run['random_member_steps_per_s']:,.0f}, learning phase "
                     f"{run['learning_member_steps_per_s']:,.0f} member-steps/s{x}, evaluation apart")
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
    if "batched" in report:
        lines += batched_lines(report["batched"])
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
    batched = report.get("batched", {})
    rows += [*batched.get("updates", {}).values(), *batched.get("training", {}).values()]
    checks = batched.get("equality", {}).values()
    return bool(report["errors"]) or report.get("tests", {}).get("returncode") != 0 or \
        any("error" in row for row in rows) or any("error" in c or c.get("within_tolerance") is False for c in checks)
