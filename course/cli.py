"""The ``dro-course`` command: the course's lessons, listed, run and handed to students.

::

    dro-course list  [--syllabus FILE] [--preset NAME] [--markdown]
    dro-course run   [--preset smoke|full|gpu] [--jobs N] [--out DIR] [--only LESSON ...]
                     [-p NAME VALUE ...] [--sweep PARAM=v1,v2,...] [--force | --resume]
                     [--no-html] [--timeout S] [--syllabus FILE]
                     [--executor local|dask] [--scheduler ADDRESS]
    dro-course fetch DIR [--force] [--only LESSON ...]
    dro-course --version

Exit status: 0 on success, 1 when a lesson failed, 2 for a usage or syllabus error or any other expected failure
(a missing name, an output path that is a file, a device that is not available: one line on stderr, no traceback),
128 + the signal's number when ``run`` was interrupted (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP): the
finished lessons are kept and the next run resumes. Heavy modules (papermill, nbconvert, torch) are imported only
when a course runs, so ``dro-course --help`` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dro_course as course
from dro_course.fetch import fetch_notebooks
from dro_lab import __version__
from dro_lab._validation import check_folder

__all__ = ["build_parser", "main"]


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
    """The argument parser of ``dro-course`` (exposed for documentation and tests)."""
    parser = argparse.ArgumentParser(
        prog="dro-course",
        description="The dro_lab course: list its lessons, run them into notebooks and a website, hand them out.",
    )
    parser.add_argument("--version", action="version", version=f"dro-course {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_list(commands)
    _add_run(commands)
    _add_fetch(commands)
    return parser


def _add_list(commands: Any) -> None:
    listing = commands.add_parser("list", help="print the syllabus: lessons in order, goals, presets")
    listing.add_argument("--syllabus", metavar="PATH", help="syllabus file (default: course/syllabus.yaml)")
    listing.add_argument("--preset", metavar="NAME", help="also show each lesson's parameters for this preset")
    listing.add_argument(
        "--markdown",
        action="store_true",
        help="print the syllabus as Markdown (order, titles, goals, prerequisites, papers, minutes)",
    )


def _add_run(commands: Any) -> None:
    run = commands.add_parser(
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
        "kl_betas=[0.5,10],[50,100] is two lists) and write a cross-value figure and table to OUT/sweep-PARAM/",
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
        "--instructor",
        action="store_true",
        help="also build the instructor's website into OUT/instructor-site/: the lessons with their exercises' "
        "solutions and the written answers, the instructor copies to download, the instructor guide and the run log "
        "(OUT/site/ is the student's, with none of them)",
    )
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


def _list(args: argparse.Namespace) -> int:
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


def _run(args: argparse.Namespace) -> int:
    check_folder(args.out, "--out")  # before the syllabus and the lessons: a file there is a usage error
    if args.instructor and (not args.html or args.sweep):
        raise ValueError("--instructor builds the instructor's website of a run: not with --no-html or --sweep")
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
            return _run_body(args, syllabus, common)
    except course.RunInterrupted as stop:
        if not args.sweep:
            print(course.summary_table(stop.results))
        where = Path(args.out) / (f"sweep-{args.sweep[0]}" if args.sweep else "")
        print(
            f"\ndro-course run: interrupted by {signal.Signals(stop.signum).name}; finished lessons are kept "
            f"in {where}, lessons that were running are marked failed (interrupted); run the same command again "
            "to resume",
            file=sys.stderr,
        )
        return 128 + stop.signum


def _run_body(args: argparse.Namespace, syllabus: Any, common: dict[str, Any]) -> int:
    if args.sweep:
        param, values = args.sweep
        sweep = course.run_sweep(syllabus, param, values, **common)
        print(course.sweep_table(sweep))
        print(f"\nsweep: {sweep.out / 'sweep.md'}   figure and links: {sweep.out / 'index.html'}")
        return 0 if sweep.ok else 1

    results = course.run_course(syllabus, instructor=args.instructor, **common)
    print(course.summary_table(results))
    out = Path(args.out)
    site = f"   course website: {out / 'site' / 'index.html'}" if args.html else ""
    if args.instructor and args.html:
        site += f"\ninstructor's website: {out / 'instructor-site' / 'index.html'}"
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


def _add_fetch(commands: Any) -> None:
    fetch = commands.add_parser(
        "fetch",
        help="copy the student notebooks into a working folder",
        description="Copy the lessons' student notebooks (no outputs, no solutions) into DIR, to open in JupyterLab. "
        "A notebook already in DIR is left alone when it is the same as the course's or when it was edited there; "
        "--force replaces edited ones (their old version is kept beside them as NAME.ipynb.bak).",
    )
    fetch.add_argument("dir", metavar="DIR", help="the working folder (created if missing)")
    fetch.add_argument("--only", nargs="+", metavar="LESSON", help="copy only these lessons (ids or unique prefixes)")
    fetch.add_argument("--force", action="store_true", help="replace notebooks edited in DIR (a .bak copy is kept)")
    fetch.add_argument("--syllabus", metavar="FILE", help="syllabus file (default: the course's own)")


def _fetch(args: argparse.Namespace) -> int:
    syllabus = course.load_syllabus(args.syllabus)
    report = fetch_notebooks(syllabus, args.dir, only=args.only, force=args.force)
    for line in report.lines():
        print(line)
    if report.kept_edited and not args.force:
        print(
            f"dro-course fetch: {len(report.kept_edited)} notebook(s) edited in {args.dir} were left as they are; "
            "--force replaces them (keeping a .bak copy)",
            file=sys.stderr,
        )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``dro-course`` with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.command is None:
        parser.print_help()
        return 2
    handler = {"list": _list, "run": _run, "fetch": _fetch}[args.command]
    try:
        return handler(args)
    except (ValueError, OSError, ConnectionError) as exc:  # SyllabusError is a ValueError
        print(f"dro-course {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:  # --executor dask without the extra (the message says what to install)
        if exc.name != "distributed":
            raise
        print(f"dro-course {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # before or after the run itself (that one is handled)
        print(f"dro-course {args.command}: interrupted", file=sys.stderr)
        return 128 + getattr(exc, "signum", signal.SIGINT)


if __name__ == "__main__":  # python -m dro_course.cli
    sys.exit(main())
