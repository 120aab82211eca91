"""What the runner writes, written safely: atomic text files, hashes, JSON-ready values, Markdown cells."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and :func:`os.replace`,
    so that a reader (or a run interrupted mid-write) never sees half a file."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, in hex (the key by which a lesson's earlier run is reused)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def jsonable(value: Any) -> Any:
    """Plain-Python version of ``value`` (tensors and numpy values via ``tolist``)."""
    if hasattr(value, "tolist") and callable(value.tolist):
        value = value.tolist()  # torch.Tensor, numpy array or numpy scalar
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def canonical(value: Any) -> str:
    """A stable text form of a JSON value, for comparing parameters across runs."""
    return json.dumps(jsonable(value), sort_keys=True, default=str)


def md_cell(text: str) -> str:
    """``text`` made safe for one cell of a Markdown table."""
    return text.replace("|", "\\|").replace("\n", " ")


def relative_posix(path: Path | str, start: Path) -> str:
    """``path`` relative to ``start``, with forward slashes (links in the summary pages)."""
    return Path(os.path.relpath(path, start)).as_posix()
