"""The one way dro_lab writes a file and reads a JSON record back.

* :func:`atomic_write` (and :func:`atomic_write_text`, :func:`atomic_write_bytes`): the bytes go to a temporary
  file in the target's folder, are flushed and synced to disk, then :func:`os.replace` puts the file in place. A
  reader, or a resume after a crash mid-write, sees the old file or the new one, never half of one; the temporary
  file is removed when the write fails.
* :func:`read_json_record`: a JSON file that a resume or a loader depends on, read back. A missing, unreadable,
  truncated or malformed file, or one that lacks a field, raises one :class:`RecordError` (a ``ValueError``) whose
  message names the file, says what is wrong and what to do about it.

No torch and no other dro_lab module: the command line imports this without the training stack.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

__all__ = ["RecordError", "atomic_write", "atomic_write_bytes", "atomic_write_text", "read_json_record"]


class RecordError(ValueError):
    """A file dro_lab wrote earlier cannot be used: ``str()`` is one line naming the file, what is wrong with it and
    what to do (``fix``). :meth:`with_fix` gives the same error with the advice of a caller that knows more."""

    def __init__(self, path: str | os.PathLike, what: str, problem: str, fix: str):
        self.path, self.what, self.problem, self.fix = Path(path), what, problem, fix
        super().__init__(f"{what} {str(self.path)!r} {problem}; {fix}")

    def with_fix(self, fix: str) -> RecordError:
        """The same error with another piece of advice."""
        return RecordError(self.path, self.what, self.problem, fix)


def atomic_write(path: str | os.PathLike, write: Callable[[IO[bytes]], Any]) -> Path:
    """Call ``write(handle)`` on a temporary file beside ``path`` opened for binary writing, sync it, then rename it
    to ``path`` (:func:`os.replace`). On any failure (``write`` raising, a full disk, an interrupt) the temporary file
    is removed and ``path`` keeps what it held. Returns ``path`` as a :class:`~pathlib.Path`.

    Raises ``IsADirectoryError`` when ``path`` is a folder and ``FileNotFoundError`` / ``NotADirectoryError`` when
    its folder does not exist (or is a file); the folder is not made here.
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", str(path))
    if not path.parent.is_dir():
        code = errno.ENOTDIR if path.parent.exists() else errno.ENOENT
        raise (NotADirectoryError if code == errno.ENOTDIR else FileNotFoundError)(
            code, "cannot be written: its folder does not exist", str(path)
        )
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)  # mode: the umask's
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _sync_folder(path.parent)
    return path


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable where the platform allows it (POSIX); elsewhere nothing to do."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_text(path: str | os.PathLike, text: str, *, encoding: str = "utf-8") -> Path:
    """:func:`atomic_write` of ``text`` (UTF-8 by default)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    data = text.encode(encoding)
    return atomic_write(path, lambda handle: handle.write(data))


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """:func:`atomic_write` of ``data``."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    return atomic_write(path, lambda handle: handle.write(data))


def read_json_record(path: str | os.PathLike, *, what: str, fix: str, required: Iterable[str] = ()) -> dict[str, Any]:
    """The JSON object in ``path``, holding every key of ``required``.

    Args:
        path: the file.
        what: what the file is, for the message (``"run record"``, ``"configuration"`` …).
        fix: what the reader should do about a bad file (``"delete it and run the same command again"``).
        required: keys the object must have.

    Raises:
        RecordError: (a ``ValueError``) the file is missing or unreadable, is not JSON (a write cut short leaves a
            truncated file), is not an object, or lacks a key of ``required``; one line naming the file and ``fix``.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RecordError(path, what, "does not exist", fix) from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise RecordError(path, what, f"cannot be read ({reason})", fix) from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        problem = f"is not valid JSON, truncated or corrupt ({exc.msg}: line {exc.lineno}, column {exc.colno})"
        raise RecordError(path, what, problem, fix) from None
    if not isinstance(value, dict):
        raise RecordError(path, what, f"holds a JSON {type(value).__name__}, not an object", fix)
    missing = [k for k in required if k not in value]
    if missing:
        raise RecordError(path, what, f"lacks the field{'s' if len(missing) > 1 else ''} {', '.join(missing)}", fix)
    return value
