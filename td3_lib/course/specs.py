"""What a shipped result is made of: the sweeps whose runs it reads (``Sweep``), the runs of one variant
of one sweep that it holds (``Take``), the result file itself (``Experiment``) and one run as it is read
back (``FinishedRun``). ``td3_lib.course.experiments`` runs them; the scripts under ``experiments/`` are
written in these terms."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from ..run import HISTORY_NAME, read_history
from ..sweep import DONE_NAME


@dataclass(frozen=True)
class Sweep:
    """A sweep of an experiment, kept in ``ROOT/dir``: ``td3_lib.sweep.sweep`` with these settings."""

    dir: str
    """The sweep's folder under the experiments' root (``ROOT``), named for the sweep, never reused."""
    envs: tuple
    """Environment ids it trains on."""
    variants: tuple
    """Registered variant names it trains."""
    seeds: tuple
    """Seeds of every variant on every environment."""
    steps: int | None = None
    """Environment steps per run (None: each environment's preset)."""
    overrides: Mapping = field(default_factory=dict)
    """TD3Config fields set on every run's preset."""
    probes: tuple = ()
    """Registered probe names, recorded in every run's history."""


@dataclass(frozen=True)
class Take:
    """The runs of ``variant`` in ``sweep`` that a result holds, labelled ``label`` (default: the variant)."""

    sweep: Sweep
    """The sweep whose runs it reads."""
    variant: str
    """The variant of that sweep whose runs it reads."""
    label: str | None = None
    """The name the result's ``variant`` column gives them (None: the variant's)."""
    until: int | None = None
    """Only the runs' first ``until`` steps: a shorter result read from longer runs, which it holds once
    they have passed that step, finished or not (never restored into the longer runs)."""
    seeds: tuple | None = None
    """Only these of the sweep's seeds (None: all of them): a variant whose seeds come from two sweeps."""

    @property
    def name(self) -> str:
        return self.label or self.variant

    def of(self, seeds) -> list[int]:
        """Which of ``seeds`` (a sweep's) this take holds."""
        return [s for s in seeds if self.seeds is None or s in self.seeds]

    def budget(self, config: dict) -> int:
        """The steps of each run this take holds, for a run of ``config``."""
        return self.until or config["total_steps"]

    def holds(self, path: Path) -> bool:
        """Whether the run in ``path`` is far enough for this take: finished, or past ``until``."""
        return self.history(path) is not None

    def history(self, path: Path) -> list[dict] | None:
        """The history of the run in ``path`` once this take holds it (finished, or past ``until``), read
        once; None before."""
        finished = (path / DONE_NAME).exists()
        if not (path / HISTORY_NAME).exists() or not (finished or self.until is not None):
            return None
        history = read_history(path / HISTORY_NAME)
        return history if finished or any(row["step"] >= self.until for row in history) else None


@dataclass(frozen=True)
class Experiment:
    """A result file: the runs it holds (``takes``, in the CSV's order) and its columns."""

    file: str
    """The CSV's name in td3_lib/course/results/."""
    lesson: str
    """The lessons that read it, by number, space-separated ("03 07")."""
    env: str
    """The environment its runs train on, as the manifest lists it."""
    fields: tuple
    """The CSV's columns: ``variant`` (the take's label), ``seed``, TD3Config fields (from each run's
    config; ``policy_freq`` is the d the run used, 1 without delayed policy updates) and history columns."""
    takes: tuple
    """The ``Take`` s it holds, in the CSV's order."""
    digits: Mapping = field(default_factory=dict)
    """Decimals of a history column (4 where not named)."""
    seed_major: bool = False
    """Rows seed by seed (every take's first seed first), instead of take by take."""


@dataclass
class FinishedRun:
    """One run a take holds (finished, or past the take's ``until``), as its directory holds it: ``history``
    up to the take's budget."""

    take: Take
    """The take that holds it."""
    env_id: str
    """The environment it trained on."""
    seed: int
    """Its seed."""
    path: Path
    """Its run directory."""
    config: dict
    """Its TD3Config, as the sweep's ``sweep.json`` gives it."""
    history: list[dict]
    """Its evaluations, up to the take's budget."""
    name: str
    """What the result's provenance calls the take (``run_name``)."""


PENDULUM = Sweep("pendulum-0", ("Pendulum-v1",), ("TD3", "TD3-DP", "TD3-TPS", "TD3-CDQ", "DDPG", "DDPG+CDQ"),
                 (0, 1, 2, 3, 4), overrides={"eval_freq": 500}, probes=("critic",))
"""The Pendulum-v1 runs three results share: the preset, an evaluation every 500 steps, the critic's probe."""
