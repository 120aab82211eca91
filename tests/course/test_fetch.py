"""``dro-course fetch DIR``: the student notebooks copied into a working folder, never over a student's edits."""

from __future__ import annotations

import json

import pytest

from dro_course import load_syllabus
from dro_course.cli import main
from dro_course.fetch import FETCH_RECORD, fetch_notebooks

SYLLABUS = load_syllabus()


def _names() -> list[str]:
    return [lesson.notebook.name for lesson in SYLLABUS.lessons]


def test_fetch_copies_every_student_notebook_byte_for_byte(tmp_path, capsys):
    assert main(["fetch", str(tmp_path / "work")]) == 0
    for lesson in SYLLABUS.lessons:
        copy = tmp_path / "work" / lesson.notebook.name
        assert copy.read_bytes() == lesson.notebook.read_bytes()
        assert not json.loads(copy.read_text(encoding="utf-8")).get("metadata", {}).get("widgets")
    assert sorted(p.name for p in (tmp_path / "work").glob("*.ipynb")) == sorted(_names())
    assert "copied" in capsys.readouterr().out


def test_an_edited_notebook_is_kept_and_force_keeps_a_backup(tmp_path):
    work = tmp_path / "work"
    fetch_notebooks(SYLLABUS, work)
    edited = work / _names()[0]
    mine = edited.read_bytes() + b"\n"
    edited.write_bytes(mine)
    again = fetch_notebooks(SYLLABUS, work)
    assert again.kept_edited == [edited] and edited.read_bytes() == mine
    assert len(again.unchanged) == len(_names()) - 1
    forced = fetch_notebooks(SYLLABUS, work, force=True)
    assert forced.replaced == [edited] and forced.backups[0].read_bytes() == mine
    assert edited.read_bytes() == SYLLABUS.lessons[0].notebook.read_bytes()
    edited.write_bytes(mine)  # a second forced fetch keeps the first backup too
    second = fetch_notebooks(SYLLABUS, work, force=True)
    assert second.backups[0] != forced.backups[0] and forced.backups[0].exists()


def test_an_untouched_old_copy_is_updated(tmp_path):
    """The course changed since the last fetch, the student did not touch the copy: it is replaced."""
    work = tmp_path / "work"
    fetch_notebooks(SYLLABUS, work, only=["00"])
    old = work / _names()[0]
    old.write_bytes(b'{"cells": []}\n')  # what an older course shipped, as the record says
    record = json.loads((work / FETCH_RECORD).read_text(encoding="utf-8"))
    import hashlib

    record[old.name] = hashlib.sha256(old.read_bytes()).hexdigest()
    (work / FETCH_RECORD).write_text(json.dumps(record), encoding="utf-8")
    report = fetch_notebooks(SYLLABUS, work, only=["00"])
    assert report.updated == [old] and old.read_bytes() == SYLLABUS.lessons[0].notebook.read_bytes()


def test_a_notebook_there_before_any_fetch_counts_as_edited(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / _names()[1]).write_text("my own notes", encoding="utf-8")
    report = fetch_notebooks(SYLLABUS, work, only=["01"])
    assert report.kept_edited == [work / _names()[1]]
    assert (work / _names()[1]).read_text(encoding="utf-8") == "my own notes"


def test_a_folder_that_is_a_file_is_one_line(tmp_path, capsys):
    target = tmp_path / "notes.txt"
    target.write_text("")
    assert main(["fetch", str(target)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dro-course fetch: error: ") and "is a file" in err and "\n" not in err
    with pytest.raises(ValueError, match="Invalid lesson .nope.: it is not a lesson"):
        fetch_notebooks(SYLLABUS, tmp_path / "w", only=["nope"])
