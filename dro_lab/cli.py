"""The ``dro-lab`` command.

::

    dro-lab course list [--syllabus PATH] [--preset NAME] [--markdown]
    dro-lab course run  [--preset smoke|full|gpu] [--jobs N] [--out DIR] [--only LESSON ...]
                        [-p NAME VALUE ...] [--sweep PARAM=v1,v2,...] [--force | --resume]
                        [--no-html] [--timeout S] [--syllabus PATH]
                        [--executor local|dask] [--scheduler ADDRESS]
    dro-lab experiment NAME [--dataset D] [--seeds 0-4] [--preset P] [--out DIR] [--set KEY=VALUE ...] [--restart]
    dro-lab experiment --list
    dro-lab reference NAME|all [--regenerate | --bundle] [--runs DIR] [--ship]
    dro-lab reference --list
    dro-lab bench [ARGS ...]          # forwarded to dro_lab.bench.main
    dro-lab --version

Exit status: 0 on success, 1 when a lesson failed, 2 for a usage or syllabus error or any other expected failure
(a missing name, an output path that is a file, a file of an earlier run that cannot be read, a device that is not
available: one line on stderr, no traceback), 128 + the
signal's number when ``course run`` was interrupted (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP):
the finished lessons are kept and the next run resumes.
Heavy modules (papermill, nbconvert, torch) are imported only by the subcommand that needs them
(:mod:`dro_lab.course` imports them when a course runs), so ``dro-lab --help`` stays fast.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from . import __version__, course
from ._validation import check_folder

__all__ = ["build_parser", "main"]


def _version() -> str:
    return __version__


def _sweep_argument(text: str) -> tuple[str, list[Any]]:
    try:
        return course.parse_sweep(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class _OneSweep(argparse.Action):
    """``--sweep`` may be given once: a second one is a usage error, not a silent override."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest, None) is not None:
            raise argparse.ArgumentError(self, "given twice; one sweep per run (run the second sweep separately)")
        setattr(namespace, self.dest, values)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``dro-lab`` (exposed for documentation and tests)."""
    parser = argparse.ArgumentParser(
        prog="dro-lab",
        description="dro_lab: a course and a PyTorch library on distributionally robust optimisation.",
    )
    parser.add_argument("--version", action="version", version=f"dro-lab {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    course_parser = commands.add_parser("course", help="list or run the course's lessons")
    course_commands = course_parser.add_subparsers(dest="course_command", metavar="ACTION")
    course_parser.set_defaults(course_parser=course_parser)

    _add_course_list(course_commands)
    _add_course_run(course_commands)
    _add_experiment(commands)
    _add_reference(commands)

    # Registered for --help only: main() forwards everything after "bench" untouched.
    commands.add_parser("bench", help="speed measurements (arguments go to dro_lab.bench)", add_help=False)
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
            "the package for the lessons to show. NAME alone prints its tables and verdicts; --regenerate runs "
            "(or resumes) its commands under RUNS and writes RUNS/NAME.json (with --ship, the package's own file "
            "in a source checkout); --bundle does the same from runs already finished. A NAME is required unless "
            "--list: without one the command says so and exits with status 2."
        ),
    )
    reference.add_argument(
        "name", nargs="?", help="hws, importance, also, done, gils or all (required unless --list; see --list)"
    )
    reference.add_argument("--list", action="store_true", help="list the references, their lessons and commands")
    action = reference.add_mutually_exclusive_group()
    action.add_argument("--regenerate", action="store_true", help="run (or resume) the commands, then bundle")
    action.add_argument("--bundle", action="store_true", help="bundle results already run under RUNS")
    reference.add_argument("--runs", default=os.path.join("build", "reference"), help="run folders (build/reference)")
    reference.add_argument("--ship", action="store_true", help="write the package's file, not RUNS/NAME.json")
    reference.add_argument("--preset", default=None, help="another preset than full (a smoke regeneration)")
    reference.add_argument("--seeds", default=None, help="other seeds than 0-4")
    reference.add_argument("--device", default="auto", help="auto, cpu, cuda ... (default: auto)")
    reference.add_argument("--no-progress", action="store_true", help="no progress bar")


def _reference(args) -> int:
    from .experiments import reference  # the whole training stack: loaded for this command only

    if args.list:
        for name, plan in reference.REFERENCES.items():
            print(f"{name} (lesson {plan.lesson}):")
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


def _add_course_list(course_commands: Any) -> None:
    listing = course_commands.add_parser("list", help="print the syllabus: lessons in order, goals, presets")
    listing.add_argument("--syllabus", metavar="PATH", help="syllabus file (default: course/syllabus.yaml)")
    listing.add_argument("--preset", metavar="NAME", help="also show each lesson's parameters for this preset")
    listing.add_argument(
        "--markdown",
        action="store_true",
        help="print the syllabus as Markdown (order, titles, goals, prerequisites, papers, minutes)",
    )


def _add_course_run(course_commands: Any) -> None:
    run = course_commands.add_parser(
        "run",
        help="execute lessons with papermill; write notebooks, the course website and a summary",
        description="Execute the lessons (each in its own kernel) into OUT/<id>.ipynb, build the course website "
        "into OUT/site/ (open OUT/site/index.html: it works offline, from disk or served), "
        "and write OUT/summary.md, OUT/summary.json and OUT/index.html. Lessons already executed into OUT "
        "with the same preset, parameters, code and library are reused (status 'cached'; a lesson whose prose "
        "alone changed is re-rendered without running) unless --force. "
        "With --sweep PARAM=v1,v2,... the lessons run once per value into OUT/sweep-PARAM/PARAM=v/ and "
        "OUT/sweep-PARAM/index.html shows every recorded number against the value. "
        "Exit status 1 if any lesson failed (the summary names the failure: raised, timed out, kernel died, "
        "killed; the cell; the message), 2 for a usage error, 130 when interrupted (Ctrl-C; 143 for SIGTERM): "
        "running lessons are stopped and recorded, finished ones kept, and the same command resumes.",
    )
    run.add_argument("--preset", default="smoke", help="preset from the syllabus (default: smoke)")
    run.add_argument("--jobs", "-j", type=int, default=1, metavar="N", help="lessons run at once (default: 1)")
    run.add_argument("--out", default="build/course", metavar="DIR", help="output folder (default: build/course)")
    run.add_argument("--only", nargs="+", metavar="LESSON", help="run only these lessons (ids or unique prefixes)")
    run.add_argument(
        "-p",
        "--parameter",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="override a notebook parameter, e.g. -p beta 10 (Python literals are parsed; "
        "passed only to lessons that declare NAME)",
    )
    run.add_argument(
        "--sweep",
        type=_sweep_argument,
        action=_OneSweep,
        metavar="PARAM=v1,v2,...",
        help="run the selected lessons once per value of PARAM (split on top-level commas: "
        "betas=[0.1,1],[10,100] is two lists) and write a cross-value figure and table to OUT/sweep-PARAM/",
    )
    again = run.add_mutually_exclusive_group()
    again.add_argument(
        "--resume",
        dest="force",
        action="store_false",
        help="reuse lessons already executed into OUT with the same parameters (the default)",
    )
    again.add_argument("--force", dest="force", action="store_true", help="execute every lesson again")
    run.set_defaults(force=False)
    run.add_argument("--no-html", dest="html", action="store_false", help="do not build the course website")
    run.add_argument(
        "--timeout", type=float, default=None, metavar="S", help="per-cell execution timeout in seconds (default: 600)"
    )
    run.add_argument("--kernel", dest="kernel_name", metavar="NAME", help="Jupyter kernel (default: the notebook's)")
    run.add_argument(
        "--executor",
        choices=("local", "dask"),
        default="local",
        help="where the lessons run: 'local' (default: --jobs at once on this machine) or 'dask' (each lesson, and "
        'each sweep value, a task on a Dask cluster; pip install "dro-lab[dask]"); notebooks and records come back '
        "to OUT",
    )
    run.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="with --executor dask: a running Dask scheduler, e.g. tcp://host:8786 (default: a local cluster of --jobs "
        "worker processes, started and closed by the run)",
    )
    run.add_argument("--syllabus", metavar="PATH", help="syllabus file (default: course/syllabus.yaml)")


def _course_list(args: argparse.Namespace) -> int:
    syllabus = course.load_syllabus(args.syllabus, check_notebooks=False)
    if args.preset is not None and args.preset not in syllabus.presets:
        raise ValueError(f"Invalid preset: {args.preset!r}; the syllabus has {', '.join(syllabus.presets)}")
    if args.markdown:
        print(course.syllabus_markdown(syllabus))
        return 0
    print(f"{syllabus.title}  ({syllabus.path})")
    if syllabus.description:
        print(syllabus.description.strip())
    print("presets:")
    for name, about in syllabus.presets.items():
        print(f"  {name:<8} {about}")
    print()
    for number, lesson in enumerate(syllabus.lessons, start=1):
        missing = "" if lesson.notebook.is_file() else "  [notebook missing]"
        print(f"{number:>2}. {lesson.id} - {lesson.title}")
        print(f"    notebook: {lesson.notebook_relpath}{missing}")
        if lesson.minutes:
            print("    minutes:  " + ", ".join(f"{k} {v:g}" for k, v in lesson.minutes.items()))
        if lesson.prerequisites:
            print(f"    after:    {', '.join(lesson.prerequisites)}")
        for paper in lesson.paper:
            print(f"    paper:    {paper}")
        if args.preset is not None:
            print(f"    parameters ({args.preset}): {lesson.parameters(args.preset)}")
            if lesson.defaults.get(args.preset):
                print(f"    sizes ({args.preset}):      {dict(lesson.defaults[args.preset])}")
        for goal in lesson.goals:
            print(f"    - {goal}")
    return 0


def _course_run(args: argparse.Namespace) -> int:
    from pathlib import Path

    check_folder(args.out, "--out")  # before the syllabus and the lessons: a file there is a usage error
    syllabus = course.load_syllabus(args.syllabus)
    parameters = {name: course.parse_parameter_value(value) for name, value in args.parameter}
    swept = args.sweep[0] if args.sweep else None

    def progress(result) -> None:
        value = f" ({swept}={result.parameters[swept]!r})" if swept and swept in result.parameters else ""
        if result.status == "cached":
            print(
                f"[cached] {result.id}{value}: reused the run of {result.seconds:.1f} s (--force re-runs)",
                file=sys.stderr,
                flush=True,
            )
            return
        if result.status == "skipped":
            print(f"[skipped] {result.id}{value}: {result.error or 'not selected'}", file=sys.stderr, flush=True)
            return
        problem = f": {result.problem}" if result.status == "failed" else ""
        retry = f" ({result.retry_note})" if result.retry_note else ""
        print(
            f"[{result.status}] {result.id}{value} in {result.seconds:.1f} s{retry}{problem}",
            file=sys.stderr,
            flush=True,
        )

    common = dict(
        preset=args.preset,
        out=args.out,
        jobs=args.jobs,
        only=args.only,
        parameters=parameters,
        timeout=course.DEFAULT_TIMEOUT if args.timeout is None else args.timeout,
        html=args.html,
        force=args.force,
        kernel_name=args.kernel_name,
        executor=args.executor,
        scheduler=args.scheduler,
        on_result=progress,
    )
    try:
        with _signals_interrupt():
            return _course_run_body(args, syllabus, common)
    except course.RunInterrupted as stop:
        if not args.sweep:
            print(course.summary_table(stop.results))
        where = Path(args.out) / (f"sweep-{args.sweep[0]}" if args.sweep else "")
        print(
            f"\ndro-lab course run: interrupted by {signal.Signals(stop.signum).name}; finished lessons are kept "
            f"in {where}, lessons that were running are marked failed (interrupted); run the same command again "
            "to resume",
            file=sys.stderr,
        )
        return 128 + stop.signum


def _course_run_body(args: argparse.Namespace, syllabus: Any, common: dict[str, Any]) -> int:
    from pathlib import Path

    if args.sweep:
        param, values = args.sweep
        sweep = course.run_sweep(syllabus, param, values, **common)
        print(course.sweep_table(sweep))
        print(f"\nsweep: {sweep.out / 'sweep.md'}   figure and links: {sweep.out / 'index.html'}")
        return 0 if sweep.ok else 1

    results = course.run_course(syllabus, **common)
    print(course.summary_table(results))
    out = Path(args.out)
    site = f"   course website: {out / 'site' / 'index.html'}" if args.html else ""
    print(f"\nsummary: {out / 'summary.md'}{site}")
    failed = [r for r in results if r.status == "failed"]
    for r in failed:  # where to look first: the lesson's log, its executed notebook (its last cell is the failing one)
        files = ", ".join(str(p) for p in (r.log, r.notebook) if p is not None)
        print(f"FAILED {r.id}: {r.problem}" + (f"\n    see {files}" if files else ""), file=sys.stderr)
    return 1 if failed else 0


class _Signalled(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised like a Ctrl-C so that a run stops the same way (and records it)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def _signals_interrupt():
    """While a run lasts, SIGTERM and SIGHUP stop it like Ctrl-C (the default would kill the runner
    without stopping the lessons or writing the summary). Only in the main thread."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise _Signalled(signum)

    previous = {}
    for name in ("SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is not None:
            previous[number] = signal.signal(number, handler)
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)


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
    if args.command == "course":
        if args.course_command is None:
            args.course_parser.print_help()
            return 2
        handler = {"list": _course_list, "run": _course_run}[args.course_command]
        try:
            return handler(args)
        except (ValueError, FileNotFoundError, ConnectionError) as exc:  # SyllabusError is a ValueError
            print(f"dro-lab course {args.course_command}: error: {exc}", file=sys.stderr)
            return 2
        except ModuleNotFoundError as exc:  # --executor dask without the extra (the message says what to install)
            if exc.name != "distributed":
                raise
            print(f"dro-lab course {args.course_command}: error: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt as exc:  # before or after the run itself (that one is handled)
            print(f"dro-lab course {args.course_command}: interrupted", file=sys.stderr)
            return 128 + getattr(exc, "signum", signal.SIGINT)
    return 2  # unreachable: argparse rejects unknown commands


if __name__ == "__main__":  # python -m dro_lab.cli
    sys.exit(main())
