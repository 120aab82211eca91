"""The student notebooks copied into a working folder (``dro-course fetch DIR``), never over a student's work.

A notebook is copied when the folder lacks it, and updated when the copy there is still the one an earlier fetch
wrote (the course changed, the student did not). A copy the student edited is left alone; ``force=True`` replaces it
and keeps the student's version beside it as ``NAME.ipynb.bak``. What each fetch wrote is remembered in
``.dro-course-fetch.json`` in the folder (the SHA-256 of each notebook as copied), which is how an edit is told from
an old copy; a notebook the folder had before any fetch counts as edited.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from dro_course.syllabus import Syllabus
from dro_lab._files import atomic_write_bytes, atomic_write_text
from dro_lab._validation import check_folder

__all__ = ["FETCH_RECORD", "FetchReport", "fetch_notebooks"]

#: The file in the working folder that remembers what each fetch copied.
FETCH_RECORD = ".dro-course-fetch.json"


@dataclass
class FetchReport:
    """What :func:`fetch_notebooks` did, notebook by notebook (paths in the working folder)."""

    folder: Path
    copied: list[Path] = field(default_factory=list)  # new in the folder
    updated: list[Path] = field(default_factory=list)  # an untouched earlier copy, replaced by the course's
    unchanged: list[Path] = field(default_factory=list)  # already the course's notebook
    kept_edited: list[Path] = field(default_factory=list)  # edited there: left alone (no force)
    replaced: list[Path] = field(default_factory=list)  # edited there and replaced (force)
    backups: list[Path] = field(default_factory=list)  # the edited versions of ``replaced``, in the same order

    def lines(self) -> list[str]:
        """One line per notebook, then where to start."""
        words = [
            (self.copied, "copied"),
            (self.updated, "updated (your copy was unchanged)"),
            (self.unchanged, "up to date"),
            (self.kept_edited, "kept: you edited it (--force replaces it, keeping a .bak)"),
        ]
        out = [f"{path.name}: {word}" for paths, word in words for path in paths]
        out += [
            f"{path.name}: replaced; your edited version is {bak.name}"
            for path, bak in zip(self.replaced, self.backups)
        ]
        out.append(f"open them with: jupyter lab {self.folder}")
        return out


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _backup(path: Path) -> Path:
    """Copy ``path`` to ``NAME.bak`` (``NAME.bak1``, … when an earlier backup is there: none is overwritten)."""
    backup, n = path.with_name(path.name + ".bak"), 0
    while backup.exists():
        n += 1
        backup = path.with_name(f"{path.name}.bak{n}")
    atomic_write_bytes(backup, path.read_bytes())
    return backup


def _read_record(path: Path) -> dict[str, str]:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # no record (or not ours): every notebook already there counts as edited, the safe side
    return {str(k): str(v) for k, v in record.items()} if isinstance(record, dict) else {}


def fetch_notebooks(
    syllabus: Syllabus,
    folder: str | os.PathLike[str],
    *,
    only: Iterable[str] | None = None,
    force: bool = False,
) -> FetchReport:
    """Copy the student notebooks of ``syllabus`` (those named in ``only``, ids or unique prefixes; all if None) into
    ``folder``, created if missing. Returns a :class:`FetchReport`; raises FileNotFoundError when a lesson's notebook
    is missing from the course and ValueError when ``folder`` is a file."""
    folder = Path(check_folder(folder, "DIR"))
    lessons = syllabus.select(only)
    for lesson in lessons:
        if not lesson.notebook.is_file():
            raise FileNotFoundError(f"{lesson.id}: the course's notebook {lesson.notebook} is missing")
    folder.mkdir(parents=True, exist_ok=True)
    record_path = folder / FETCH_RECORD
    record = _read_record(record_path)
    report = FetchReport(folder=folder)
    for lesson in lessons:
        data = lesson.notebook.read_bytes()
        target = folder / lesson.notebook.name
        new = _sha256(data)
        if target.is_file():
            here = _sha256(target.read_bytes())
            if here == new:
                report.unchanged.append(target)
                record[target.name] = new
                continue
            if here != record.get(target.name):  # not what a fetch wrote: the student's work
                if not force:
                    report.kept_edited.append(target)
                    continue
                report.backups.append(_backup(target))
                report.replaced.append(target)
            else:
                report.updated.append(target)
        else:
            report.copied.append(target)
        atomic_write_bytes(target, data)
        record[target.name] = new
    atomic_write_text(record_path, json.dumps(record, indent=1, sort_keys=True) + "\n")
    return report
