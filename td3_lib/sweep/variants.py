"""Variants and probes by name: what a sweep's run trains, and what its history records.

A variant is a registered name for one way of training: the three TD3Config switches, the agent
class (``TD3`` or a subclass that changes one step of the update), the environment (the grid's
environment id as it is, or a factory that builds it from the id, e.g. with a wrapper) and
probes recorded at each of its evaluations. The paper's Table 2 (``VARIANTS``) is registered
here; the course registers its own (``td3_lib.course.tasks``), and so can anyone::

    register(Variant("TD3+my-loss", VARIANTS["TD3"], agent=MyLossTD3))
    sweep("Hopper-v5", ["TD3", "TD3+my-loss"], [0, 1, 2], out_dir="runs/mine")

A probe (``train(probes=...)``: ``probe(agent, episodes) -> {column: number}``) may be
registered by name too, so that a sweep, an experiment or the command line can name it. A probe
with an ``every`` attribute is recorded only at the evaluations whose step is a multiple of it.

Everything a run uses is sent to Ray's workers, so agents, factories and probes are module-level
classes and functions (or instances of them), which the workers import by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..agent import TD3

SWITCHES = ("clipped_double_q", "target_policy_smoothing", "delayed_policy_updates")

# The paper's Table 2: TD3; "our DDPG" (AHE: TD3's architecture, hyperparameters
# and exploration, all three tricks off); AHE plus one trick; TD3 minus one
# trick. CDQ: clipped double Q-learning, TPS: target policy smoothing,
# DP: delayed policy updates. The paper's other "DDPG" row (the original
# architecture) is not reproduced.
VARIANTS: dict[str, dict[str, bool]] = {
    "TD3": dict(clipped_double_q=True, target_policy_smoothing=True, delayed_policy_updates=True),
    "DDPG": dict(clipped_double_q=False, target_policy_smoothing=False, delayed_policy_updates=False),
    "DDPG+DP": dict(clipped_double_q=False, target_policy_smoothing=False, delayed_policy_updates=True),
    "DDPG+TPS": dict(clipped_double_q=False, target_policy_smoothing=True, delayed_policy_updates=False),
    "DDPG+CDQ": dict(clipped_double_q=True, target_policy_smoothing=False, delayed_policy_updates=False),
    "TD3-DP": dict(clipped_double_q=True, target_policy_smoothing=True, delayed_policy_updates=False),
    "TD3-TPS": dict(clipped_double_q=True, target_policy_smoothing=False, delayed_policy_updates=True),
    "TD3-CDQ": dict(clipped_double_q=False, target_policy_smoothing=True, delayed_policy_updates=True),
}
"""The paper's ablations: variant name -> the three TD3Config switches (each registered as a ``Variant``)."""


def qualified_name(thing) -> str | None:
    """``module.QualName`` of a class or function (of an instance: of its class); None for None."""
    if thing is None:
        return None
    named = thing if hasattr(thing, "__qualname__") else type(thing)
    return f"{named.__module__}.{named.__qualname__}"


@dataclass(frozen=True)
class Variant:
    """A registered way to train: ``switches`` (the three TD3Config switches), the ``agent`` class,
    ``env`` (None: the environment id as it is; else ``env(env_id) -> gymnasium.Env``) and ``probes``
    recorded in each run's history beside the sweep's own."""

    name: str
    """What sweeps, results and lessons call it ("TD3", "TD3-CDQ", "DDPG", ...)."""
    switches: Mapping[str, bool]
    """The values of the three TD3Config switches it trains with."""
    agent: type[TD3] = TD3
    """The agent class it trains (TD3, or a subclass that measures or changes one thing)."""
    env: Callable[[str], Any] | None = None
    """None: train on the environment id as it is; else a factory ``env(env_id) -> gymnasium.Env``."""
    probes: tuple = field(default=())
    """Measurements recorded in each run's history, beside the sweep's own."""

    def environment(self, env_id: str):
        """What ``train`` gets: the id itself, or the environment the variant's factory builds from it."""
        return env_id if self.env is None else self.env(env_id)

    def describe(self) -> dict:
        """The variant in plain types, as a sweep's ``sweep.json`` records it (classes and functions by
        their qualified names, which do not depend on what is registered)."""
        return {"switches": dict(self.switches), "agent": qualified_name(self.agent),
                "env": qualified_name(self.env), "probes": [qualified_name(p) for p in self.probes]}


REGISTRY: dict[str, Variant] = {}
"""Every registered variant by name: the paper's first, then those registered later."""
PROBES: dict[str, Callable] = {}
"""Every registered probe by name."""


def register(variant: Variant) -> Variant:
    """Register ``variant`` under its name. Registering the same definition again is allowed
    (a module imported twice); another definition under a taken name is refused."""
    if set(variant.switches) != set(SWITCHES):
        raise ValueError(f"Variant {variant.name!r} sets {sorted(variant.switches)}; a variant sets exactly "
                         f"the switches {', '.join(SWITCHES)}.")
    if not (isinstance(variant.agent, type) and issubclass(variant.agent, TD3)):
        raise ValueError(f"Variant {variant.name!r}: agent {variant.agent!r} is not TD3 or a subclass of it.")
    known = REGISTRY.get(variant.name)
    if known is not None and known.describe() != variant.describe():
        raise ValueError(f"A variant named {variant.name!r} is registered already ({known.describe()}); "
                         "give the new one another name.")
    REGISTRY[variant.name] = variant
    return variant


def get_variant(name: str) -> Variant:
    """The registered variant ``name``."""
    if name not in REGISTRY:
        raise ValueError(f"Unknown variant {name!r}; allowed: {', '.join(REGISTRY)}.")
    return REGISTRY[name]


def register_probe(name: str, probe: Callable) -> Callable:
    """Register ``probe`` under ``name`` (the same probe again is allowed; another one is refused)."""
    known = PROBES.get(name)
    if known is not None and qualified_name(known) != qualified_name(probe):
        raise ValueError(f"A probe named {name!r} is registered already ({qualified_name(known)}).")
    PROBES[name] = probe
    return probe


def get_probe(probe):
    """A probe given by its registered name, or the probe itself."""
    if not isinstance(probe, str):
        return probe
    if probe not in PROBES:
        raise ValueError(f"Unknown probe {probe!r}; allowed: {', '.join(PROBES) or 'none registered'}.")
    return PROBES[probe]


for _name, _switches in VARIANTS.items():
    register(Variant(_name, _switches))
