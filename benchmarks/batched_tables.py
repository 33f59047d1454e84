"""The markdown tables of benchmarks/batched_speed.py, from its report."""

from __future__ import annotations

CONTENDERS = ("batched", "sequential", "processes")


def rate(value: float, threads: int) -> str:
    return f"{value:,.0f} ({threads})"


def update_table(updates: dict, rounds: int) -> list[str]:
    lines = [f"Updates: member-updates/s, median over {rounds} interleaved rounds (torch threads of each "
             "contender's fastest setting); ratios: median over rounds of the ratio within a round, each "
             "contender at its fastest setting.", "",
             "| networks | K | batched | sequential | K processes | batched / sequential | batched / processes |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for size, result in updates.items():
        for k, cell in result["cells"].items():
            c = cell["contenders"]
            cells = [rate(c[name]["member_updates_per_s"], c[name]["best_threads"]) for name in CONTENDERS]
            ratios = [f"{cell['ratios'][key]:.2f}x" for key in ("batched / sequential", "batched / processes")]
            lines.append(f"| {size} | {k} | " + " | ".join(cells + ratios) + " |")
    return lines


def training_table(training: dict, rounds: int) -> list[str]:
    lines = [f"Training: environment steps/s of all K runs together, whole run / learning phase, median over "
             f"{rounds} rounds (torch threads); ratios: median over rounds of the ratio within a round.", "",
             "| environment | K | batched | sequential | K processes | batched / sequential | batched / processes |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for env_id, result in training.items():
        for k, cell in result["cells"].items():
            c = cell["contenders"]
            cells = [f"{c[n]['steps_per_s']:,.0f} / {c[n]['learning_steps_per_s']:,.0f} ({c[n]['threads']})"
                     for n in CONTENDERS]
            ratios = [f"{r['steps_per_s']:.2f}x / {r['learning_steps_per_s']:.2f}x"
                      for r in (cell["ratios"]["batched / sequential"], cell["ratios"]["batched / processes"])]
            lines.append(f"| {env_id} | {k} | " + " | ".join(cells + ratios) + " |")
    return lines


def markdown(report: dict) -> str:
    """The report's tables, with the machine and the load average through the run."""
    m, plan, loads = report["machine"], report["plan"], report["loadavg"]
    lines = [f"# batched_speed{' (smoke)' if report['smoke'] else ''}: {m.get('cpu', m['platform'])}, "
             f"{m['cpus']} CPUs, torch {m['torch']}, OMP_WAIT_POLICY={m.get('omp_wait_policy')}, "
             f"load average (1 min) {min(l[0] for l in loads):.1f} to {max(l[0] for l in loads):.1f}", ""]
    if "updates" in report:
        lines += update_table(report["updates"], plan["rounds"]) + [""]
    if "training" in report:
        lines += training_table(report["training"], plan["train_rounds"]) + [""]
        steps = ", ".join(f"{env} {n:,}" for env, n in plan["learning_steps"].items())
        lines += [f"Each run: {plan['random_steps']:,} random steps, then learning steps ({steps}); one "
                  f"evaluation episode every {plan['random_steps']:,} steps and at the end.", ""]
    if "wall_s" in report:
        lines.append(f"Wall clock of the benchmark: {report['wall_s'] / 60:.1f} min.")
    return "\n".join(lines) + "\n"
