"""The grid of a sweep: environments x variants x seeds, each run's config, and the sweep directory."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from ..checkpoint import atomic_write_text
from ..config import TD3Config, parse_set, preset
from ..envs import env_file_name
from .variants import SWITCHES, VARIANTS, get_probe, get_variant, qualified_name

SWEEP_FORMAT = "td3_lib.sweep/1"
SPEC_NAME = "sweep.json"
DONE_NAME = "done.json"
ERROR_NAME = "error.txt"


def check_overrides(overrides: dict) -> None:
    """Overrides name TD3Config fields; the switches belong to the variant, the budget to ``steps``."""
    known = [f.name for f in dataclasses.fields(TD3Config)]
    allowed = [k for k in known if k not in SWITCHES and k != "total_steps"]
    for name in overrides:
        if name not in known:
            raise ValueError(f"Unknown TD3Config field {name!r}; allowed: {', '.join(allowed)}.")
        if name in SWITCHES:
            raise ValueError(f"{name} is set by the variant, not by an override: choose variants "
                             f"such as {', '.join(VARIANTS)}.")
        if name == "total_steps":
            raise ValueError("total_steps is the sweep's budget: set it with steps= (--steps), "
                             "not as an override.")


def variant_config(env_id: str, variant: str, overrides: dict | None = None,
                   steps: int | None = None, settings: str = "course") -> TD3Config:
    """The config of one sweep run: ``preset(env_id, settings)``, then ``overrides``, the budget ``steps``
    and the variant's switches (``get_variant(variant).switches``)."""
    switches = get_variant(variant).switches
    overrides = dict(overrides or {})
    check_overrides(overrides)
    if steps is not None:
        overrides["total_steps"] = steps
    return dataclasses.replace(preset(env_id, settings), **overrides, **switches)


def parse_overrides(texts) -> dict:
    """``--set FIELD=VALUE`` texts as overrides for every run of a sweep (``config.parse_set``), checked:
    the switches belong to the variants, the budget to ``--steps``."""
    overrides = parse_set(texts)
    check_overrides(overrides)
    return overrides


def parse_seeds(text: str) -> list[int]:
    """``"0,1,2"`` or ``"0-4"`` (both ends included) -> a list of seeds >= 0."""
    seeds = []
    for part in text.split(","):
        lo, dash, hi = part.strip().partition("-")
        try:
            seeds += list(range(int(lo), int(hi) + 1)) if dash else [int(lo)]
        except ValueError:
            raise ValueError(f"Seeds {text!r}: use integers >= 0 such as 0,1,2 or 0-4.") from None
        if dash and int(hi) < int(lo):
            raise ValueError(f"Seeds {text!r}: {part.strip()!r} is no range; a range is low-high with "
                             "low <= high, such as 0-4.")
    return seeds


@dataclass(frozen=True)
class SweepRun:
    """One cell of the grid: an environment, a variant and a seed."""

    env_id: str
    variant: str
    seed: int

    def path(self, out_dir) -> Path:
        return Path(out_dir) / env_file_name(self.env_id) / self.variant / f"seed{self.seed}"


def config_key(env_id: str, variant: str) -> str:
    """Where a sweep spec's ``configs`` holds the config of ``variant``'s runs on ``env_id``."""
    return f"{env_id}/{variant}"


def run_config(spec: dict, env_id: str, variant: str) -> dict:
    """The config (``TD3Config.to_dict()``, as sweep.json holds it) of ``variant``'s runs on ``env_id``."""
    return spec["configs"][config_key(env_id, variant)]


def sweep_spec(envs, variants, seeds, overrides: dict | None = None, steps: int | None = None,
               settings: str = "course", probes=()) -> dict:
    """The sweep's settings as saved in ``sweep.json``, checked: the resolved config of every
    environment x variant included, so a restart with other presets is refused too, and what each
    variant and probe is (its agent class, environment factory and probes, by qualified name)."""
    envs = [envs] if isinstance(envs, str) else list(envs)
    variants = variants.split(",") if isinstance(variants, str) else list(variants)
    seeds = [seeds] if isinstance(seeds, int) else list(seeds)
    for name, values in (("environment", envs), ("variant", variants), ("seed", seeds)):
        if not values:
            raise ValueError(f"A sweep needs at least one {name}.")
        if len(set(values)) != len(values):
            raise ValueError(f"The {name}s {values} repeat one; give each once.")
    if any(not isinstance(s, int) or isinstance(s, bool) or s < 0 for s in seeds):
        raise ValueError(f"Seeds {seeds}: each must be an integer >= 0.")
    if steps is not None and (not isinstance(steps, int) or steps < 1):
        raise ValueError(f"steps={steps!r}: it must be a positive integer.")
    configs = {config_key(e, v): variant_config(e, v, overrides, steps, settings).to_dict()
               for e in envs for v in variants}
    spec = {"format": SWEEP_FORMAT, "envs": envs, "variants": variants, "seeds": seeds,
            "steps": steps, "overrides": dict(overrides or {}), "configs": configs, "settings": settings,
            "definitions": {v: get_variant(v).describe() for v in variants},
            "probes": [qualified_name(get_probe(p)) for p in probes]}
    return json.loads(json.dumps(spec))  # tuples as lists: as it reads back from sweep.json


RECORDED_LATER = {"settings": "course"}
"""Keys sweep.json gained later, with what their absence means (a sweep saved before them)."""
DESCRIBED_LATER = ("definitions", "probes")
"""Keys sweep.json gained later that describe the runs; compared only where a saved sweep has them."""


def spec_difference(saved: dict, spec: dict) -> str | None:
    """The first difference between two sweep specs, in words; None if they are the same.

    A TD3Config field that a saved config lacks (one added to td3_lib after the sweep
    started) counts as that field's default: a sweep saved before it resumes as long as
    the field keeps its default, and only then. So are the keys sweep.json gained later
    (``RECORDED_LATER``, ``DESCRIBED_LATER``): a sweep saved before them resumes.
    """
    for key in ("envs", "variants", "seeds", "steps", "overrides"):
        if saved.get(key) != spec[key]:
            return f"{key} is {saved.get(key)!r} there, {spec[key]!r} now"
    for key, absent in RECORDED_LATER.items():
        if saved.get(key, absent) != spec.get(key, absent):
            return f"{key} is {saved.get(key, absent)!r} there, {spec.get(key, absent)!r} now"
    for key in DESCRIBED_LATER:
        if key in saved and saved[key] != spec.get(key):
            return f"{key} is {saved[key]!r} there, {spec.get(key)!r} now"
    defaults = json.loads(json.dumps(TD3Config().to_dict()))  # as sweep.json holds them
    for name, config in spec["configs"].items():
        old = saved.get("configs", {}).get(name, {})
        for key, value in config.items():
            was = old.get(key)
            if key not in old and old:  # a field absent from a saved config stands for its default
                was = defaults.get(key)
            if was != value:
                return f"the {name} config has {key}={was!r} there, {value!r} now"
    return None


def check_sweep_dir(out_dir, spec: dict) -> bool:
    """Refuse an ``out_dir`` that holds another sweep, or other files and no ``sweep.json``; whether
    ``sweep.json`` is still to be written there (a new or empty directory). Writes nothing."""
    out_dir = Path(out_dir)
    spec_path = out_dir / SPEC_NAME
    if spec_path.exists():
        saved = json.loads(spec_path.read_text())
        if saved.get("format") != SWEEP_FORMAT:
            raise ValueError(f"{spec_path} is not a td3_lib sweep file.")
        diff = spec_difference(saved, spec)
        if diff:
            raise ValueError(f"{out_dir} holds another sweep ({diff}): start it again with the same "
                             "settings, or choose another --out.")
        return False
    if out_dir.exists() and any(out_dir.iterdir()):
        raise ValueError(f"{out_dir} is not empty and holds no {SPEC_NAME}: choose a new or empty "
                         "directory for a sweep.")
    return True


def open_sweep_dir(out_dir, spec: dict) -> None:
    """Write ``sweep.json`` into a new or empty ``out_dir``, or check that it holds this same sweep."""
    if check_sweep_dir(out_dir, spec):
        atomic_write_text(json.dumps(spec, indent=1) + "\n", Path(out_dir) / SPEC_NAME)


def submission_order(runs: list[SweepRun], spec: dict) -> list[SweepRun]:
    """Seed by seed: every variant's first seed, then every variant's second, ... (variants in the
    order given). Runs start in this order, so a sweep stopped part-way leaves every variant with
    as many seeds as the time allowed, and the variants named first get the extra one."""
    variants = spec["variants"]
    return sorted(runs, key=lambda r: (spec["seeds"].index(r.seed), variants.index(r.variant),
                                       spec["envs"].index(r.env_id)))


def grid(spec: dict) -> list[SweepRun]:
    return [SweepRun(e, v, s) for e in spec["envs"] for v in spec["variants"] for s in spec["seeds"]]
