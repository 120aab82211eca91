"""dro_lab._files: every file the library writes goes through a temporary file renamed into place, and a JSON record
read back that is missing, truncated or malformed gives one line naming the file and what to do."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from _util import IN_PLACE  # tests/_util.py: what writes a file in place

import dro_lab
from dro_lab import _files
from dro_lab._files import RecordError, atomic_write, atomic_write_bytes, atomic_write_text, read_json_record


class Killed(Exception):
    """Stands in for a crash (a signal, a full disk) in the middle of a write."""


def _left(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_write_lands_whole_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "record.json"
    assert atomic_write_text(path, '{"a": "é"}\n') == path
    assert path.read_text(encoding="utf-8") == '{"a": "é"}\n'
    atomic_write_bytes(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01" and _left(tmp_path) == ["record.json"]


def test_a_write_interrupted_midway_leaves_the_old_file_intact(tmp_path):
    path = tmp_path / "record.json"
    path.write_text('{"old": true}\n')

    def half_then_crash(handle):
        handle.write(b'{"new": tr')
        raise Killed("killed while writing")

    with pytest.raises(Killed):
        atomic_write(path, half_then_crash)
    assert path.read_text() == '{"old": true}\n' and _left(tmp_path) == ["record.json"]


@pytest.mark.parametrize("step", ["fsync", "replace"])
def test_a_failure_at_the_sync_or_the_rename_leaves_the_old_file_intact(tmp_path, monkeypatch, step):
    path = tmp_path / "record.json"
    path.write_text("old")

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_files.os, step, fail)
    with pytest.raises(OSError, match="No space left"):
        atomic_write_text(path, "new")
    monkeypatch.undo()
    assert path.read_text() == "old" and _left(tmp_path) == ["record.json"]


def test_a_folder_or_a_missing_folder_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(IsADirectoryError, match="is a folder, not a file"):
        atomic_write_text(tmp_path, "x")
    with pytest.raises(FileNotFoundError, match="its folder does not exist"):
        atomic_write_text(tmp_path / "missing" / "x.json", "x")
    (tmp_path / "file").write_text("")
    with pytest.raises(NotADirectoryError):
        atomic_write_text(tmp_path / "file" / "x.json", "x")
    with pytest.raises(TypeError, match="text must be a str"):
        atomic_write_text(tmp_path / "x", b"x")
    with pytest.raises(TypeError, match="data must be bytes"):
        atomic_write_bytes(tmp_path / "x", "x")
    assert _left(tmp_path) == ["file"]


def test_the_new_file_gets_the_umasks_mode_not_a_private_one(tmp_path):
    path = atomic_write_text(tmp_path / "shared.md", "x")
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


FIX = "delete it and run the same command again"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "does not exist"),
        ('{"seed": 0, "method": "ER', r"is not valid JSON, truncated or corrupt \(Unterminated string"),
        ("", r"is not valid JSON, truncated or corrupt \(Expecting value: line 1, column 1\)"),
        ("[1, 2]", "holds a JSON list, not an object"),
        ('{"seed": 0}', "lacks the fields method, final"),
        ('{"seed": 0, "final": {}}', "lacks the field method"),
    ],
)
def test_a_bad_record_is_one_line_naming_the_file_and_the_fix(tmp_path, content, problem):
    path = tmp_path / "run-ERM-0.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(RecordError, match=problem) as raised:
        read_json_record(path, what="run record", fix=FIX, required=("seed", "method", "final"))
    message = str(raised.value)
    assert isinstance(raised.value, ValueError) and "\n" not in message
    assert message.startswith(f"run record {str(path)!r} ") and message.endswith(f"; {FIX}")
    assert raised.value.path == path and raised.value.with_fix("x").fix == "x"


def test_a_good_record_reads_back(tmp_path):
    path = atomic_write_text(tmp_path / "r.json", json.dumps({"seed": 0, "method": "ERM"}))
    assert read_json_record(path, what="run record", fix=FIX, required=("seed",)) == {"seed": 0, "method": "ERM"}


# --------------------------------------------------------------------------- no other way to write a file
#: (file, a piece of the line) → why that write may stay as it is.
ALLOWED = {
    ("engine/checkpoint.py", "atomic_write(path, lambda handle: torch.save"): "torch.save into atomic_write's file",
}


def test_every_write_of_the_library_goes_through_the_atomic_helper():
    root = Path(dro_lab.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        if name == "_files.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if IN_PLACE.search(line) and not any(f == name and piece in line for f, piece in ALLOWED):
                found.append(f"dro_lab/{name}:{number}: {line.strip()}")
    assert not found, "writes in place (use dro_lab._files.atomic_write_text / atomic_write):\n" + "\n".join(found)
