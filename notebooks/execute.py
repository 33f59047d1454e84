"""Execute lessons in place, so that their stored outputs are what a learner should see first (for maintainers).

    python notebooks/execute.py notebooks/01_bellman_target.ipynb [more lessons ...] [--quick]

Each lesson runs top to bottom in a fresh kernel, in the notebooks folder (its runs go to
notebooks/runs/, which git ignores), with this checkout's td3_lib first on the path, at the full
budgets (TD3_QUICK unset) and with one torch thread (OMP_NUM_THREADS=1, MKL_NUM_THREADS=1). The
outputs and the progress bars' widget state are written back into the notebook. COLUMNS and LINES
are unset, so that no progress bar's stored text is cut to a terminal's width.

Lesson 06's full budget is a 300,000-step Hopper-v5 run, about an hour on one CPU core. It is the run
of ``LESSON_06_COMMAND`` (the command, preset, budget, seed and thread the lesson's background run uses),
so the lesson starts from that run, finished: its checkpoint, history and best actor are copied into the
lesson's checkpoint folder, where the lesson's background run resumes it and returns at once
(``STARTS_FROM``; without the run, the lesson is not executed at the full budget). ``--quick`` runs every lesson in quick mode (a
check that it runs, not outputs to commit).

After each lesson the stored outputs are checked with the rules of tests/test_notebook_outputs.py
(widget state, machine paths, cut progress text, the budget's mode); the script exits non-zero if
any lesson failed to run or broke a rule.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import sys
import time
from pathlib import Path

from td3_lib.run import BEST_NAME, CHECKPOINT_NAME, HISTORY_NAME, read_history

ROOT = Path(__file__).resolve().parent.parent
LESSON_06_RUN, LESSON_06_STEPS = "runs/lesson_runs/Hopper-v5-seed0", 300_000
LESSON_06_COMMAND = (f"OMP_NUM_THREADS=1 python -m td3_lib train --env Hopper-v5 --steps {LESSON_06_STEPS} "
                     f"--save-buffer --out {LESSON_06_RUN}")
STARTS_FROM = {"06_td3_assembled.ipynb": (ROOT / LESSON_06_RUN, ROOT / "notebooks/runs/Hopper-v5-seed0", LESSON_06_COMMAND,
                                          LESSON_06_STEPS)}
"""A lesson whose full-budget run is made beforehand: (that run, the lesson's checkpoint folder, the command
that makes the run, the steps it has when finished)."""
RUN_FILES = (CHECKPOINT_NAME, HISTORY_NAME, BEST_NAME)


def kernel_environment(quick: bool) -> None:
    """The environment every kernel started from here inherits."""
    os.environ.pop("TD3_QUICK", None)
    if quick:
        os.environ["TD3_QUICK"] = "1"
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"
    for name in ("COLUMNS", "LINES"):  # tqdm cuts its text to these when they are set
        os.environ.pop(name, None)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))


def output_rules():
    """tests/test_notebook_outputs.py, for its ``output_problems``."""
    spec = importlib.util.spec_from_file_location("notebook_output_rules", ROOT / "tests" / "test_notebook_outputs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def execute(path: Path, quick: bool) -> None:
    """Run ``path`` top to bottom and write its outputs into it."""
    import nbformat
    from nbclient import NotebookClient

    kernel_environment(quick)
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=None, kernel_name="python3", store_widget_state=True,
                            record_timing=False, resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    nbformat.write(notebook, path)


def fresh_runs(path: Path) -> None:
    """Remove the lesson's own run folders (notebooks/runs/NN_*, NN its number), so that its stored outputs
    are what a learner's first run gives, not a resumed earlier execution's."""
    for folder in (path.parent / "runs").glob(f"{path.name[:2]}_*"):
        shutil.rmtree(folder)


def start_from_finished_run(path: Path) -> None:
    """Copy the finished run a lesson starts from into its checkpoint folder (unless that holds a run)."""
    source, folder, command, steps = STARTS_FROM[path.name]
    if (folder / CHECKPOINT_NAME).exists():
        return
    if not all((source / name).exists() for name in RUN_FILES) or read_history(source / HISTORY_NAME)[-1]["step"] < steps:
        raise FileNotFoundError(f"{path.name} starts from the finished run {source}, which is not there: "
                                f"make it with {command} (an hour), or execute the lesson with --quick.")
    folder.mkdir(parents=True, exist_ok=True)
    for name in RUN_FILES:
        shutil.copy2(source / name, folder / name)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--quick", action="store_true", help="run in quick mode (TD3_QUICK=1): a check, not outputs to commit")
    args = parser.parse_args(argv)
    rules, failed = output_rules(), []
    for path in args.notebooks:
        path = path.resolve()
        print(f"{path.name}: executing, {'quick mode' if args.quick else 'full budgets'} ...", flush=True)
        started = time.perf_counter()
        try:
            fresh_runs(path)
            if path.name in STARTS_FROM and not args.quick:
                start_from_finished_run(path)
            execute(path, args.quick)
        except Exception as error:  # a cell raised: nbclient names it; the notebook file is left as it was
            text = re.sub(r"\x1b\[[0-9;]*m", "", str(error)).strip()  # nbclient's traceback, without its colours
            print(f"{path.name}: FAILED after {time.perf_counter() - started:.0f} s:\n{text[-1500:]}")
            failed.append(path.name)
            continue
        problems = rules.output_problems(path)
        print(f"{path.name}: done in {(time.perf_counter() - started) / 60:.1f} min"
              + ("".join(f"\n  output rule broken: {p}" for p in problems) if problems else "; stored outputs clean"))
        if problems:
            failed.append(path.name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
