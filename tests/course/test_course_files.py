"""Every file the course writes goes through the library's atomic write (a temporary file renamed into place): a
crash never leaves half a summary, report or notebook."""

from __future__ import annotations

from pathlib import Path

import pytest
from _util import IN_PLACE  # tests/_util.py: what writes a file in place

import dro_course
from dro_course._files import write_text_atomic
from dro_lab import _files

#: (file, a piece of the line) → why that write may stay as it is.
ALLOWED = {
    ("runner/execute.py", '.log", "w"'): "a running lesson's log, streamed as it runs (a partial log is the point)",
    ("site/build.py", 'open(log, "w"'): "sphinx's log, streamed as it builds",
    ("runner/dask_executor.py", 'notebook.write_bytes(job["notebook"])'): "into a worker's fresh scratch folder",
    ("runner/dask_executor.py", '.write_bytes(job["syllabus"])'): "into a worker's fresh scratch folder",
}


class Killed(Exception):
    """Stands in for a crash (a signal, a full disk) in the middle of a write."""


def test_the_course_writer_is_the_libraries_atomic_write(tmp_path, monkeypatch):
    path = tmp_path / "summary.md"
    path.write_text("old")
    monkeypatch.setattr(_files.os, "replace", lambda *a: (_ for _ in ()).throw(Killed("killed before the rename")))
    with pytest.raises(Killed):
        write_text_atomic(path, "new")
    monkeypatch.undo()
    assert path.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["summary.md"]
    write_text_atomic(path, "new")
    assert path.read_text() == "new"


def test_every_write_of_the_course_goes_through_the_atomic_helper():
    root = Path(dro_course.__file__).parent
    found, used = [], set()
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        if name.startswith("solutions/"):
            continue  # the exercises' answers: a student's code, not the course's
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not IN_PLACE.search(line):
                continue
            allowed = [(f, piece) for f, piece in ALLOWED if f == name and piece in line]
            used.update(allowed)
            if not allowed:
                found.append(f"course/{name}:{number}: {line.strip()}")
    assert not found, "writes in place (use dro_course._files.write_text_atomic or dro_lab._files):\n" + "\n".join(
        found
    )
    assert used == set(ALLOWED), f"allowed writes that no longer exist: {sorted(set(ALLOWED) - used)}"
