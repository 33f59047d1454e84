"""Command line: python -m td3_lib train|evaluate|play|sweep."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from .arguments import OneLineParser, nonnegative_int, positive_int
from .config import PRESET_SETTINGS
from .envs import RenderingUnavailable, UnknownEnvironment, env_spec
from .plots import plot_history
from .run import load_agent
from .training import TrainingDiverged
from .video import record

PROBES = ("critic",)
"""What ``--probe`` may record at each evaluation: ``critic``, the course's critic probe (the value
estimate against the true discounted return, the value at the start states, roughness and peak
height along the action: ``td3_lib.course.analysis.critic_probe``)."""


def prog() -> str:
    """How this command was called, for its messages: ``td3`` (the installed script) or ``python -m td3_lib``."""
    return "td3" if Path(sys.argv[0]).stem == "td3" else "python -m td3_lib"


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog=prog(), description="Train, evaluate and watch TD3 agents.",
                           epilog=f"Example: {prog()} train --env Pendulum-v1")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for add in (add_train_parser, add_play_parser, add_evaluate_parser, add_sweep_parser):
        add(sub)
    return parser


def add_train_parser(sub) -> None:
    t = sub.add_parser("train", help="train an agent, then save its checkpoint, curve and a video",
                       description="Train TD3 with the environment's preset; save checkpoint.pt, "
                                   "best_actor.pt (the best evaluation's actor), history.csv, "
                                   "curve.png and a video in --out.")
    t.add_argument("--env", required=True, help="environment id, e.g. Pendulum-v1, BipedalWalker-v3")
    t.add_argument("--steps", type=positive_int,
                   help="environment steps in all (default: the preset's; with --resume, the saved run's)")
    t.add_argument("--preset", default="course", choices=tuple(PRESET_SETTINGS), metavar="NAME",
                   help="course (default: the course's settings) or paper (the paper's hyper-parameters)")
    t.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override a TD3Config field, e.g. --set hidden_sizes=64,64 --set actor_lr=1e-3")
    t.add_argument("--seed", type=nonnegative_int, default=0, help="random seed (default 0)")
    t.add_argument("--device", default="auto", help="auto (GPU if there is one), cpu, cuda or cuda:N")
    t.add_argument("--out", type=Path, help="run directory (default runs/ENV-seedS)")
    t.add_argument("--resume", action="store_true",
                   help="continue the run saved in --out, or start it there when there is none")
    t.add_argument("--save-buffer", action="store_true",
                   help="keep the replay buffer in checkpoints, so a resumed run matches an uninterrupted one "
                        "(a run started with it keeps it when resumed)")
    t.add_argument("--no-video", action="store_true", help="skip recording the video at the end")
    add_probe_option(t)
    t.add_argument("--quiet", action="store_true", help="no progress bar")


def add_probe_option(parser) -> None:
    parser.add_argument("--probe", action="append", default=[], choices=PROBES,
                        help="also record this measurement in the history at each evaluation: critic, the "
                             "critic's value estimate against the true return, its roughness and peak "
                             "height (the course's lessons 02 to 05); off by default")


def add_play_parser(sub) -> None:
    p = sub.add_parser("play", help="record (and show) a video of a trained agent",
                       description="Record episodes of a trained agent to mp4.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("checkpoint", nargs="?", type=Path, help="checkpoint file written by train")
    src.add_argument("--pretrained", metavar="ENV_ID", help="use the agent shipped for this environment")
    p.add_argument("--episodes", type=positive_int, default=1, help="episodes to record (default 1)")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="reset seed of the first episode")
    p.add_argument("--out", type=Path,
                   help="video directory (default: videos/ beside the checkpoint; runs/pretrained with --pretrained)")


def add_evaluate_parser(sub) -> None:
    e = sub.add_parser("evaluate", help="print the mean and std return of a trained agent",
                       description="Evaluate a checkpoint over noise-free episodes.")
    e.add_argument("checkpoint", type=Path, help="checkpoint file written by train")
    e.add_argument("--episodes", type=positive_int, default=10, help="episodes (default 10)")
    e.add_argument("--seed", type=nonnegative_int, default=1000,
                   help="reset seed of the first episode (default 1000, unused in training)")


def add_sweep_parser(sub) -> None:
    from .stats import LAST_K
    from .sweep import VARIANTS  # the one table of variants (Ray is imported only by a sweep)
    s = sub.add_parser("sweep", help="train environments x variants x seeds as Ray tasks; summarize them",
                       description="Train every environment x variant x seed (each an ordinary train run "
                                   "in OUT/ENV/VARIANT/seedS/) as Ray tasks, then write summary.csv, "
                                   "summary.md (the paper's Table 2, then each variant minus TD3) and curves-ENV.png in --out. "
                                   "Started again with the same --out, it skips finished runs and "
                                   "resumes the others.")
    s.add_argument("--env", action="append", required=True, help="environment id; repeat for several")
    s.add_argument("--variants", default="TD3",
                   help=f"comma-separated, of {', '.join(VARIANTS)} (default TD3)")
    s.add_argument("--seeds", default="0", help="e.g. 0,1,2 or 0-4 (default 0)")
    s.add_argument("--steps", type=positive_int, help="environment steps per run (default: the preset's)")
    s.add_argument("--preset", default="course", choices=tuple(PRESET_SETTINGS), metavar="NAME",
                   help="course (default: the course's settings) or paper (the paper's hyper-parameters)")
    s.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override a TD3Config field for every run, e.g. --set hidden_sizes=64,64")
    s.add_argument("--out", type=Path, required=True, help="sweep directory")
    s.add_argument("--address", help="join a running Ray cluster (HOST:PORT or auto); default: a local Ray")
    s.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"),
                   help="auto: a GPU share per run when the cluster has GPUs (default)")
    s.add_argument("--gpus-per-run", type=float, default=0.25, help="share of a GPU per run (default 0.25)")
    s.add_argument("--batched", action="store_true",
                   help="train the runs that fit one process as batches (one update for all of them): one batch "
                        "per core on the CPU, one per GPU")
    s.add_argument("--last-k", type=positive_int, default=LAST_K,
                   help=f"final score = mean of each run's last K evaluations (default {LAST_K})")
    add_probe_option(s)
    s.add_argument("--quiet", action="store_true", help="no progress bar")


def probes(names) -> tuple:
    """The measurements ``--probe`` asked for. The course's critic probe is imported here, only when
    asked for: the command line otherwise never loads the course wing (td3_lib.course)."""
    if "critic" in names:
        from .course.analysis import critic_probe
        return (critic_probe,)
    return ()


def cmd_train(args) -> None:
    from .config import parse_set
    from .run import default_run_dir, run_summary, starting_config
    from .training import train

    out = args.out or default_run_dir(args.env, args.seed)
    overrides = parse_set(args.set) | ({} if args.steps is None else {"total_steps": args.steps})
    config = starting_config(args.env, args.preset, out, args.resume, overrides)
    result = train(args.env, config, seed=args.seed, device=args.device, checkpoint_dir=out,
                   progress=not args.quiet, resume=args.resume, save_buffer=args.save_buffer,
                   probes=probes(args.probe))
    # result.seed: a resumed run trains on with its saved seed, whatever --seed says
    plot_history(result.history, out / "curve.png", f"TD3 on {args.env}, seed {result.seed}")
    print(f"{args.env}: {run_summary(result, out)}")
    if not args.no_video:
        try:
            record(result.agent, args.env, out / "videos", episodes=1, seed=result.seed + 1000)
        except RenderingUnavailable as e:  # the run is saved; only its clip is missing
            print(f"no video: {e}", file=sys.stderr)


def cmd_play(args) -> None:
    if args.pretrained:
        from .pretrained import load_pretrained
        agent, env_id = load_pretrained(args.pretrained), args.pretrained
        out = args.out or Path("runs") / "pretrained"  # runs/: where every command writes
    else:
        agent = agent_to_run(args.checkpoint)
        env_id, out = agent.env_id, args.out or args.checkpoint.parent / "videos"
    record(agent, env_id, out, args.episodes, args.seed)


def agent_to_run(path: Path):
    """The agent of a checkpoint, refused in one line saying how to use it where this command cannot
    make its environment (an environment made in the user's own code, registered nowhere)."""
    agent = load_agent(path, need_env_id=True)
    try:
        env_spec(agent.env_id)
    except UnknownEnvironment:
        raise ValueError(f"{path} was trained on {agent.env_id!r}, which is not registered here: use it from "
                         f"Python, e.g. evaluate(load_agent({str(path)!r}), YourEnv()), with load_agent from "
                         "td3_lib.run and evaluate from td3_lib.") from None
    return agent


def cmd_evaluate(args) -> None:
    from .rollout import evaluate

    agent = agent_to_run(args.checkpoint)
    returns = evaluate(agent, agent.env_id, episodes=args.episodes, seed=args.seed)
    print(f"{agent.env_id}: mean {returns.mean():.1f} +- {returns.std():.1f} over {args.episodes} episodes")


def cmd_sweep(args) -> None:
    from .sweep import parse_overrides, parse_seeds, sweep
    from .sweep.summary import TABLE_NAME

    try:
        variants = [v.strip() for v in args.variants.split(",")]
        result = sweep(args.env, variants, parse_seeds(args.seeds), out_dir=args.out,
                       steps=args.steps, overrides=parse_overrides(args.set), address=args.address,
                       device=args.device, gpus_per_run=args.gpus_per_run, last_k=args.last_k,
                       progress=not args.quiet, probes=probes(args.probe), settings=args.preset,
                       batched=args.batched)
    except ImportError as e:  # Ray is an extra
        print(f"{prog()} sweep: error: {e}", file=sys.stderr)
        sys.exit(2)
    print((args.out / TABLE_NAME).read_text())
    print(result.report())
    if result.failed:
        sys.exit(1)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    warnings.formatwarning = lambda message, *_, **__: f"warning: {message}\n"
    try:
        {"train": cmd_train, "play": cmd_play, "evaluate": cmd_evaluate,
         "sweep": cmd_sweep}[args.command](args)
    except (ValueError, OSError, RenderingUnavailable) as e:  # bad input, or no way to draw: one line
        print(f"{prog()} {args.command}: error: {e}", file=sys.stderr)
        return 2
    except TrainingDiverged as e:
        print(f"{prog()} {args.command}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
