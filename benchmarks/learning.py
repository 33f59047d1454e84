"""Learning curves of td3_lib and Stable-Baselines3's TD3: same environment, step budget and seeds.

Each library runs with its own recommended settings:

- td3_lib: ``preset(env_id)`` through ``td3_lib.train``, with ``total_steps``
  set to the shared budget (the Pendulum-v1 preset stops at 15k; here both run
  20k) and ``eval_freq`` set to the shared evaluation interval.
- SB3: RL Zoo's tuned TD3 hyperparameters (rl-baselines3-zoo ``hyperparams/td3.yml``,
  identical for Pendulum-v1 and LunarLanderContinuous): net_arch [400, 300],
  gamma 0.98, buffer 200k, learning_starts 10k, Gaussian action noise 0.1,
  learning_rate 1e-3, train_freq 1, gradient_steps 1, SB3's defaults otherwise
  (batch 256, tau 0.005, policy_delay 2, target noise 0.2 clipped to 0.5).

- td3_lib with RL Zoo's settings (``td3_lib_zoo``): SB3's settings above in
  ``TD3Config`` terms, so that implementation speed and the choice of preset
  are measured apart.

Every library's clock starts at the same point: before its environment and
agent are built. All are evaluated by the same function: every ``--eval-freq`` env steps, 10
noise-free episodes on a separate environment whose episode i is reset with
seed + 100 + i. Wall-clock seconds are training time: the time spent in these
shared evaluations is left out for all (td3_lib's own built-in evaluation is
cut to one episode and stays counted against it). For each seed the table gives
the first evaluation at ``--threshold`` or better (LunarLanderContinuous's
"solved" 200; -200 for Pendulum-v1), in env steps and in training seconds.

A td3_lib contender whose settings equal another's on the environment runs once
(on LunarLanderContinuous-v3 the preset is RL Zoo's settings, so ``td3_lib`` and
``td3_lib_zoo`` are one run). Each library x seed is one job; with ``--jobs 2``
two run side by side, and the order alternates per seed, so that each library
runs beside each other one. Every finished run is saved at once; ``--resume``
keeps them and runs the rest.

    python benchmarks/learning.py                          # Pendulum-v1, 20k steps, seeds 0-4, all three
    python benchmarks/learning.py --jobs 2                 # the same, two runs side by side
    python benchmarks/learning.py --libs td3_lib td3_lib_256 sb3   # plus the preset with 256-256 networks
    python benchmarks/learning.py --lunar --seeds 0 1 --jobs 2     # LunarLanderContinuous-v3, 300k steps (hours)
    python benchmarks/learning.py --lunar --seeds 0 1 --jobs 2 --resume   # after an interruption
    python benchmarks/learning.py --plot-only              # redraw from the saved JSON
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import os
import time
from pathlib import Path

import numpy as np
import torch

from td3_lib import make_env, preset, rollout, train
from td3_lib.checkpoint import atomic_write_text
from td3_lib.sweep import final_score, mean_and_std

RESULTS = Path(__file__).resolve().parent / "results"

# rl-baselines3-zoo hyperparams/td3.yml, Pendulum-v1 and LunarLanderContinuous.
ZOO_TD3 = dict(gamma=0.98, buffer_size=200_000, learning_starts=10_000, learning_rate=1e-3,
               train_freq=1, gradient_steps=1, policy_kwargs=dict(net_arch=[400, 300]))
ZOO_NOISE_STD = 0.1
# td3_lib contenders: overrides of the preset, and their label in the plot.
# RL Zoo's settings in td3_lib's terms: the same networks, random steps, updates per step (1),
# batch, buffer, learning rates, discount and noises (td3_lib's noises are in half-ranges, SB3's in
# its [-1, 1] action units: the same noise). Beside SB3 it measures the implementations alone.
ZOO_AS_TD3LIB = dict(hidden_sizes=(400, 300), discount=0.98, buffer_size=200_000, start_timesteps=10_000,
                     actor_lr=1e-3, critic_lr=1e-3, expl_noise=ZOO_NOISE_STD, batch_size=256, tau=0.005,
                     policy_freq=2, policy_noise=0.2, noise_clip=0.5)
TD3LIB_VARIANTS = {"td3_lib": ({}, "td3_lib, preset"),
                   "td3_lib_zoo": (ZOO_AS_TD3LIB, "td3_lib, RL Zoo's settings (as SB3)"),
                   "td3_lib_256": (dict(hidden_sizes=(256, 256)), "td3_lib, preset with 256-256"),
                   "td3_lib_bf16": (dict(bf16=True), "td3_lib, preset with bf16")}
LABELS = {name: label for name, (_, label) in TD3LIB_VARIANTS.items()} | {"sb3": "SB3, RL Zoo settings"}


def evaluate_policy(policy, env, episodes: int, seed: int) -> float:
    """Mean return of ``episodes`` episodes of ``policy(obs) -> action`` (td3_lib's one episode
    loop, for every contender); episode i reset with seed + i."""
    return float(np.mean([rollout(env, policy, seed + i).total for i in range(episodes)]))


class Curve:
    """Evaluation points of one run; the clock excludes the evaluations themselves."""

    def __init__(self, env_id: str, seed: int, episodes: int):
        self.env = make_env(env_id)
        self.seed, self.episodes = seed, episodes
        self.steps, self.returns, self.wall = [], [], []
        self.eval_s = 0.0
        self.start = time.perf_counter()

    def record(self, step: int, policy) -> None:
        """Evaluate now; the training clock stops while doing so."""
        t = time.perf_counter()
        ret = evaluate_policy(policy, self.env, self.episodes, self.seed + 100)
        self.steps.append(int(step))
        self.returns.append(ret)
        self.wall.append(t - self.start - self.eval_s)
        self.eval_s += time.perf_counter() - t

    def to_dict(self) -> dict:
        return {"seed": self.seed, "steps": self.steps, "returns": self.returns, "wall_s": self.wall,
                "final_return": self.returns[-1], "train_s": self.wall[-1]}


def run_td3_lib(env_id: str, seed: int, args, lib: str) -> dict:
    """td3_lib.train with the env's preset, the contender's overrides, the shared budget and evaluation points."""
    cfg = td3_lib_config(lib, args)
    curve = Curve(env_id, seed, args.eval_episodes)
    train(env_id, cfg, seed=seed, device="cpu", progress=False,
          callback=lambda step, agent: curve.record(step, agent.act))
    return curve.to_dict() | {"config": cfg.to_dict()}


def run_sb3(env_id: str, seed: int, args) -> dict | None:
    """SB3's TD3 with RL Zoo's hyperparameters, evaluated by the same function."""
    try:
        from stable_baselines3 import TD3
        from stable_baselines3.common.callbacks import BaseCallback
        from stable_baselines3.common.noise import NormalActionNoise
    except ImportError:
        print("stable-baselines3 is not installed: skipping it (pip install -r benchmarks/requirements.txt).")
        return None
    curve = Curve(env_id, seed, args.eval_episodes)  # the clock starts here, before the env and agent are
    env = make_env(env_id)                             # built, as it does for td3_lib
    n = env.action_space.shape[0]
    model = TD3("MlpPolicy", env, seed=seed, device="cpu", verbose=0,
                action_noise=NormalActionNoise(np.zeros(n), ZOO_NOISE_STD * np.ones(n)), **ZOO_TD3)

    class Evaluate(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps % args.eval_freq == 0:
                curve.record(self.num_timesteps, lambda o: model.predict(o, deterministic=True)[0])
            return True

    model.learn(total_timesteps=args.steps, callback=Evaluate())
    env.close()
    return curve.to_dict() | {"config": {**ZOO_TD3, "noise_std": ZOO_NOISE_STD, "batch_size": model.batch_size}}


def summary(runs: list[dict]) -> dict:
    """Mean and std over seeds (td3_lib's one scoring: ``final_score``, ``mean_and_std``, std with
    ddof 1) of the final return, the mean of the last 3 evaluations and the training time; per seed,
    the first evaluation at the threshold (steps, seconds; None: never)."""
    histories = [[{"eval_mean": ret} for ret in r["returns"]] for r in runs]
    final_mean, final_std = mean_and_std([final_score(h, 1) for h in histories])
    last3_mean, last3_std = mean_and_std([final_score(h, 3) for h in histories])
    train_s_mean, train_s_std = mean_and_std([r["train_s"] for r in runs])
    return {"final_mean": final_mean, "final_std": final_std, "last3_mean": last3_mean, "last3_std": last3_std,
            "train_s_mean": train_s_mean, "train_s_std": train_s_std, "seeds": len(runs),
            "threshold_steps": [r.get("threshold_step") for r in runs],
            "threshold_s": [r.get("threshold_s") for r in runs]}


def plot(result: dict, path: Path) -> None:
    """Evaluation return over env steps and over training seconds, mean and spread over seeds."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for i, (name, runs) in enumerate(result["runs"].items()):
        color = f"C{i}"
        if not runs:
            continue
        n = min(len(r["returns"]) for r in runs)
        ret = np.array([r["returns"][:n] for r in runs])
        steps = np.array(runs[0]["steps"][:n])
        wall = np.array([r["wall_s"][:n] for r in runs]).mean(0)
        mean, std = ret.mean(0), ret.std(0)
        for ax, x in zip(axes, (steps, wall)):
            ax.plot(x, mean, color=color, label=f"{label(result, name)} ({len(runs)} seeds)")
            ax.fill_between(x, mean - std, mean + std, color=color, alpha=0.2)
    axes[0].set_xlabel("env steps")
    axes[1].set_xlabel("training wall-clock (s, evaluation excluded)")
    for ax in axes:
        if result.get("threshold") is not None:
            ax.axhline(result["threshold"], color="gray", ls="--", lw=1, label=f"threshold {result['threshold']:g}")
        ax.set_ylabel(f"evaluation return (mean of {result['eval_episodes']} episodes)")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    contenders = "td3_lib vs Stable-Baselines3" if "sb3" in result["runs"] else "td3_lib's settings compared"
    fig.suptitle(f"TD3 on {result['env_id']}: {contenders} (mean ± std over seeds)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def label(result: dict, name: str) -> str:
    """The plot's and table's name of a contender (with those that share its settings)."""
    twins = [LABELS[d] for d, lib in result.get("same_as", {}).items() if lib == name]
    return " = ".join([LABELS.get(name, name), *twins])


def print_table(result: dict) -> None:
    threshold = result.get("threshold")
    print(f"\n{result['env_id']}, {result['steps']} env steps, {result['threads']} torch thread(s); "
          f"mean ± std over seeds; first evaluation >= {threshold}: env steps / training s per seed")
    print(f"{'library':<14}{'final return':>18}{'last 3 evals':>18}{'training time (s)':>20}   to threshold")
    for name, s in result["summary"].items():
        reached = ", ".join("never" if st is None else f"{st // 1000}k/{sec:.0f}"
                            for st, sec in zip(s["threshold_steps"], s["threshold_s"]))
        print(f"{name:<14}{s['final_mean']:>9.1f} ± {s['final_std']:<6.1f}{s['last3_mean']:>9.1f} ± "
              f"{s['last3_std']:<6.1f}{s['train_s_mean']:>11.1f} ± {s['train_s_std']:<6.1f}   {reached}")
    for dup, lib in result.get("same_as", {}).items():
        print(f"({dup}: the same settings as {lib}, run once)")


def td3_lib_config(lib: str, args):
    """The TD3Config a td3_lib contender trains with: the env's preset, its overrides, the shared budget."""
    return dataclasses.replace(preset(args.env), total_steps=args.steps, eval_freq=args.eval_freq,
                               eval_episodes=1, **TD3LIB_VARIANTS[lib][0])


def same_settings(libs: list[str], args) -> dict:
    """td3_lib contenders whose config equals an earlier one's on this env (e.g. the
    LunarLanderContinuous-v3 preset is RL Zoo's settings): {duplicate: the one it equals}."""
    same, seen = {}, {}
    for lib in libs:
        if lib in TD3LIB_VARIANTS:
            key = json.dumps(td3_lib_config(lib, args).to_dict(), sort_keys=True)
            if key in seen:
                same[lib] = seen[key]
            seen.setdefault(key, lib)
    return same


def _run_job(job) -> tuple[str, int, dict | None]:
    """One library on one seed, in a process of its own (``--jobs``) or in this one."""
    lib, seed, args = job
    torch.set_num_threads(args.threads)
    run = run_td3_lib(args.env, seed, args, lib) if lib in TD3LIB_VARIANTS else run_sb3(args.env, seed, args)
    if run is not None:
        run["loadavg"] = os.getloadavg()
        run["threshold_step"], run["threshold_s"] = time_to(args.threshold, run)
    return lib, seed, run


def time_to(threshold: float | None, run: dict) -> tuple[int | None, float | None]:
    """Env steps and training seconds at the first evaluation at ``threshold`` or better (None: never)."""
    if threshold is None:
        return None, None
    for step, ret, wall in zip(run["steps"], run["returns"], run["wall_s"]):
        if ret >= threshold:
            return step, wall
    return None, None


def job_order(libs: list[str], seeds: list[int]) -> list[tuple[str, int]]:
    """Every (library, seed), seed by seed, the libraries' order reversed on every other seed
    (so with two jobs at once, each library runs beside each other one)."""
    return [(lib, seed) for i, seed in enumerate(seeds) for lib in (libs if i % 2 == 0 else libs[::-1])]


def _collect(result: dict, lib: str, seed: int, run: dict, out: Path) -> None:
    """Add one run to the result and save it (finished runs survive an interruption: ``--resume``)."""
    result["runs"][lib].append(run)
    print(f"seed {seed} {lib}: final return {run['final_return']:.1f}, "
          f"training {run['train_s']:.1f} s", flush=True)
    result["loadavg"].append(os.getloadavg())
    result["summary"] = {k: summary(v) for k, v in result["runs"].items() if v}
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(json.dumps(result, indent=1), out)


SETTINGS = ("env_id", "steps", "eval_freq", "eval_episodes", "threads", "threshold")


def start_result(args, out: Path) -> dict:
    """A new result, or with ``--resume`` the saved one (refused if its settings differ)."""
    result = {"env_id": args.env, "steps": args.steps, "eval_freq": args.eval_freq,
              "eval_episodes": args.eval_episodes, "threads": args.threads, "threshold": args.threshold,
              "jobs": args.jobs, "torch": torch.__version__, "runs": {}, "loadavg": [os.getloadavg()]}
    if args.resume and out.exists():
        saved = json.loads(out.read_text())
        for key in SETTINGS:
            if saved.get(key) != result[key]:
                raise SystemExit(f"--resume: {out} has {key}={saved.get(key)!r}, this run {result[key]!r}")
        result = saved | {"jobs": args.jobs}
    result["same_as"] = same_settings(args.libs, args)
    for lib in args.libs:
        result["runs"].setdefault(lib, [])
    return result


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="Pendulum-v1")
    p.add_argument("--lunar", action="store_true",
                   help="LunarLanderContinuous-v3, 300k steps, eval every 10k, threshold 200")
    p.add_argument("--steps", type=int, help="env steps per run (default 20k; 300k with --lunar)")
    p.add_argument("--eval-freq", type=int, help="env steps between evaluations (default 2k; 10k with --lunar)")
    p.add_argument("--eval-episodes", type=int, default=10)
    p.add_argument("--threshold", type=float,
                   help="report the first evaluation at this return or better (default -200; 200 with --lunar)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    p.add_argument("--libs", nargs="+", default=["td3_lib", "td3_lib_zoo", "sb3"],
                   choices=[*TD3LIB_VARIANTS, "sb3"])
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads, the same for every library (1: steady on a shared machine)")
    p.add_argument("--jobs", type=int, default=1, help="runs side by side, one process each")
    p.add_argument("--resume", action="store_true",
                   help="keep the finished runs saved in --out (same settings) and run only the others")
    p.add_argument("--out", help="JSON path (default benchmarks/results/learning_<env>.json)")
    p.add_argument("--plot-only", action="store_true", help="redraw the plot and table from --out")
    args = p.parse_args(argv)
    if args.lunar:
        args.env = "LunarLanderContinuous-v3"
    args.steps = args.steps or (300_000 if args.lunar else 20_000)
    args.eval_freq = args.eval_freq or (10_000 if args.lunar else 2_000)
    if args.threshold is None:
        args.threshold = 200.0 if args.lunar else -200.0
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    out = Path(args.out or RESULTS / f"learning_{args.env}.json")
    png = out.with_suffix(".png")
    if args.plot_only:
        result = json.loads(out.read_text())
        plot(result, png)
        print_table(result)
        return result
    torch.set_num_threads(args.threads)
    result = start_result(args, out)
    for dup, lib in result["same_as"].items():
        print(f"{dup} has the same settings as {lib} on {args.env}: it runs once, as {lib}")
    done = {(lib, run["seed"]) for lib, runs in result["runs"].items() for run in runs}
    todo = [(lib, seed, args) for lib, seed in job_order(args.libs, args.seeds)
            if lib not in result["same_as"] and (lib, seed) not in done]
    if args.jobs > 1:
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(args.jobs, maxtasksperchild=1) as pool:
            for lib, seed, run in pool.imap_unordered(_run_job, todo):
                if run is not None:
                    _collect(result, lib, seed, run, out)
    else:
        for job in todo:
            lib, seed, run = _run_job(job)
            if run is not None:
                _collect(result, lib, seed, run, out)
    plot(result, png)
    print_table(result)
    print(f"wrote {out} and {png}")
    return result


if __name__ == "__main__":
    main()
