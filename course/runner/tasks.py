"""What both executors of a course run share: which tasks an earlier run already did, how the cores are shared, and
the result of a lesson that never started."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dro_course.results import LessonResult
from dro_course.runner.execute import _cached_result

__all__ = ["_not_started", "_report_cached", "_share_cores"]


def _not_started(task: Mapping[str, Any]) -> LessonResult:
    return LessonResult(
        id=task["id"],
        title=task["title"],
        status="skipped",
        parameters=dict(task["parameters"]),
        error="not started: the run was interrupted",
    )


def _share_cores(tasks: Sequence[dict[str, Any]], pending: Sequence[int], workers: int) -> None:
    """Several torch kernels on few cores fight for them; share the cores unless the user chose."""
    if workers > 1:
        threads = str(max(1, (os.cpu_count() or 1) // workers))
        env = {k: os.environ.get(k, threads) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
        for position in pending:
            tasks[position]["env"] = env


def _report_cached(
    tasks: Sequence[Mapping[str, Any]], force: bool, report: Callable[[int, LessonResult], None]
) -> list[int]:
    """Report every task whose earlier run can be reused (resume; none with ``force``); the positions left to run."""
    pending = []
    for position, task in enumerate(tasks):
        cached = None if force else _cached_result(task)
        if cached is None:
            pending.append(position)
        else:
            report(position, cached)
    return pending
