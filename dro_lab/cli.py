"""The ``dro-lab`` command: the papers' experiments, their reference runs and the speed measurements.

::

    dro-lab experiment NAME [--dataset D] [--seeds 0-4] [--preset P] [--out DIR] [--set KEY=VALUE ...] [--restart]
    dro-lab experiment --list
    dro-lab reference NAME|all [--regenerate | --bundle] [--runs DIR] [--ship]
    dro-lab reference --list
    dro-lab bench [ARGS ...]          # forwarded to dro_lab.bench.main
    dro-lab --version

Exit status: 0 on success, 2 for a usage error or any other expected failure (a missing name, an output path that
is a file, a file of an earlier run that cannot be read, a device that is not available: one line on stderr, no
traceback), 130 when interrupted (the next run resumes). Torch and the training stack are imported only by the
subcommand that needs them, so ``dro-lab --help`` stays fast. The course has its own command, ``dro-course``.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
from collections.abc import Sequence
from typing import Any

from . import __version__

__all__ = ["build_parser", "main"]


def _version() -> str:
    return __version__


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``dro-lab`` (exposed for documentation and tests)."""
    parser = argparse.ArgumentParser(
        prog="dro-lab",
        description="dro_lab: the papers' experiments, their reference runs, speed measurements.",
    )
    parser.add_argument("--version", action="version", version=f"dro-lab {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    _add_experiment(commands)
    _add_reference(commands)

    # Registered for --help only: main() forwards everything after "bench" untouched.
    commands.add_parser("bench", help="speed measurements (arguments go to dro_lab.bench)", add_help=False)
    commands.add_parser("course", help="moved: the course has its own command, dro-course", add_help=False)
    return parser


def _add_experiment(commands: Any) -> None:
    experiment = commands.add_parser(
        "experiment",
        help="run a paper's headline experiment (tune alike, paired seeds, verdicts)",
        description=(
            "Run a paper's experiment with the course's fair protocol: every method gets the same tuning trials on "
            "a validation split of the first seed, then runs on every seed; each claim is judged from the paired "
            "seeds (a 95 %% t-interval). OUT/result.json holds the result; OUT/runs and OUT/checkpoints let the "
            "same command resume an interrupted run (--restart discards them and starts over). Exit status 2, with "
            "one line on stderr, for a missing or unknown name, an OUT that is a file, a run record or checkpoint "
            "in OUT that cannot be read (the line names it and says what to do), or a device that is not available."
        ),
    )
    experiment.add_argument("name", nargs="?", help="the experiment (required unless --list; see --list)")
    experiment.add_argument("--list", action="store_true", help="list the experiments and exit")
    experiment.add_argument("--dataset", default="digits", help="digits (embedded) or fashion-mnist (default: digits)")
    experiment.add_argument("--seeds", default="0-2", help="paired seeds, e.g. 0-4 or 0,2,5 (default: 0-2)")
    experiment.add_argument("--preset", default="full", help="smoke, full or gpu (default: full)")
    experiment.add_argument("--trials", type=int, default=None, help="tuning trials per method (default: preset's)")
    experiment.add_argument("--methods", nargs="+", default=None, help="run only these methods")
    experiment.add_argument("--out", default=None, help="output folder (default: build/experiments/NAME-DATASET)")
    experiment.add_argument("--device", default="auto", help="auto, cpu, cuda ... (default: auto)")
    experiment.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="change a preset setting, e.g. --set epochs=5 (Python literals; repeatable)",
    )
    experiment.add_argument("--no-progress", action="store_true", help="no progress bar")
    experiment.add_argument("--jobs", type=int, default=1, help="training runs at once, one process each (default: 1)")
    experiment.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads per run, deterministic algorithms on (default: torch's)",
    )
    experiment.add_argument(
        "--restart",
        action="store_true",
        help="discard the runs, checkpoints and result an earlier run left in OUT and start over (it says what it "
        "discarded); without it the same command resumes",
    )


def _add_reference(commands: Any) -> None:
    reference = commands.add_parser(
        "reference",
        help="show or regenerate the reference runs shipped with the package",
        description=(
            "The reference runs: each paper's experiment at full size on Fashion-MNIST, 5 paired seeds, shipped in "
            "the package to show beside a live run. NAME alone prints its tables and verdicts; --regenerate runs "
            "(or resumes) its commands under RUNS and writes RUNS/NAME.json (with --ship, the package's own file "
            "in a source checkout); --bundle does the same from runs already finished. A NAME is required unless "
            "--list: without one the command says so and exits with status 2."
        ),
    )
    reference.add_argument(
        "name", nargs="?", help="hws, importance, also, done, gils or all (required unless --list; see --list)"
    )
    reference.add_argument("--list", action="store_true", help="list the references and their commands")
    action = reference.add_mutually_exclusive_group()
    action.add_argument("--regenerate", action="store_true", help="run (or resume) the commands, then bundle")
    action.add_argument("--bundle", action="store_true", help="bundle results already run under RUNS")
    reference.add_argument("--runs", default=os.path.join("build", "reference"), help="run folders (build/reference)")
    reference.add_argument("--ship", action="store_true", help="write the package's file, not RUNS/NAME.json")
    reference.add_argument("--preset", default=None, help="another preset than full (a smoke regeneration)")
    reference.add_argument("--seeds", default=None, help="other seeds than the plan's (a smoke regeneration)")
    reference.add_argument("--device", default="auto", help="auto, cpu, cuda ... (default: auto)")
    reference.add_argument("--no-progress", action="store_true", help="no progress bar")


def _reference(args) -> int:
    from .experiments import reference  # the whole training stack: loaded for this command only

    if args.list:
        for name, plan in reference.REFERENCES.items():
            print(f"{name}:")
            print("".join(f"    {command}\n" for command in plan.commands(args.runs)), end="")
        return 0
    if not args.name:
        raise ValueError(f"name a reference: {', '.join(reference.REFERENCES)} or all (--list shows their commands)")
    names = reference.available_references() if args.name == "all" else [args.name]
    for name in names:
        if not (args.regenerate or args.bundle):
            print(reference.load_reference(name).markdown())
            continue
        if args.regenerate:
            made = reference.regenerate_reference(
                name, args.runs, preset=args.preset, seeds=args.seeds, device=args.device, progress=not args.no_progress
            )
        else:
            made = reference.bundle_reference(name, args.runs, preset=args.preset, seeds=args.seeds)
        path = reference.shipped_path(name) if args.ship else os.path.join(args.runs, f"{made.name}.json")
        print(made.markdown())
        print(f"reference: {made.save(path)}")
    return 0


def _experiment(args) -> int:
    from . import experiments  # the whole training stack: loaded for this command only

    if args.list:
        for name, e in experiments.EXPERIMENTS.items():
            print(f"{name:12s} {e.title} — {e.paper}")
        return 0
    if not args.name:
        raise ValueError(f"name an experiment: {', '.join(experiments.EXPERIMENTS)} (--list describes them)")
    overrides = {}
    for item in args.overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--set expects KEY=VALUE, got {item!r}")
        overrides[key.strip()] = _literal(value.strip())
    out = args.out or os.path.join("build", "experiments", f"{args.name}-{args.dataset}")
    result = experiments.run_experiment(
        args.name,
        dataset=args.dataset,
        seeds=args.seeds,
        preset=args.preset,
        trials=args.trials,
        methods=args.methods,
        out=out,
        device=args.device,
        progress=not args.no_progress,
        restart=args.restart,
        jobs=args.jobs,
        threads=args.threads,
        **overrides,
    )
    print(result.markdown())
    print(f"\nresult: {os.path.join(out, 'result.json')}")
    return 0


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _bench(argv: Sequence[str]) -> int:
    try:
        from . import bench  # torch and the whole library: loaded for this subcommand only
    except ModuleNotFoundError as exc:
        if exc.name != f"{__package__}.bench":
            raise
        print("dro-lab bench: dro_lab.bench is not available in this installation", file=sys.stderr)
        return 2
    status = bench.main(list(argv))
    return int(status or 0)


def _error_text(exc: BaseException) -> str:
    """One line for an expected failure: an OS error as ``PATH: what`` (not ``[Errno 20] ...``), else its message."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``dro-lab`` with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "bench":
        # Forward verbatim (including --help) so dro_lab.bench owns its own options.
        return _bench(argv[1:])
    if argv and argv[0] == "course":
        rest = " ".join(argv[1:]) or "list"
        print(f"dro-lab course: the course has its own command now: dro-course {rest}", file=sys.stderr)
        return 2

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    if args.command in ("experiment", "reference"):
        try:
            return {"experiment": _experiment, "reference": _reference}[args.command](args)
        except (ValueError, TypeError, OSError) as exc:  # a file that cannot be written or read: said, not raised
            print(f"dro-lab {args.command}: error: {_error_text(exc)}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print(f"dro-lab {args.command}: interrupted; the same command resumes", file=sys.stderr)
            return 130
    return 2  # unreachable: argparse rejects unknown commands


if __name__ == "__main__":  # python -m dro_lab.cli
    sys.exit(main())
