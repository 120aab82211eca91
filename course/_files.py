"""What the runner writes, written safely: atomic text files, hashes, JSON-ready values, Markdown cells."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dro_lab
from dro_lab._files import atomic_write, atomic_write_text


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader (or a run interrupted mid-write) never sees half a file: the
    course's name for :func:`dro_lab._files.atomic_write_text`, the library's one atomic write."""
    atomic_write_text(path, text)


def copy_file_atomic(source: Path, target: Path) -> None:
    """Copy ``source`` to ``target`` whole (the library's atomic write), making ``target``'s folder if needed."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(source, "rb") as handle:
        atomic_write(target, lambda out: shutil.copyfileobj(handle, out))


def sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, in hex (the key by which a lesson's earlier run is reused)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def code_sha256(path: Path) -> str:
    """The SHA-256 of what a notebook *runs*: its kernel and, in order, every code cell's source and tags. A change
    to the prose (markdown cells) leaves it as it is, so the runner re-renders such a lesson without re-running it."""
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    kernel = nb.get("metadata", {}).get("kernelspec", {}).get("name", "")
    digest = hashlib.sha256(kernel.encode() + b"\0")
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            source = cell.get("source", "")
            source = "".join(source) if isinstance(source, list) else source
            tags = ",".join(cell.get("metadata", {}).get("tags", []))
            digest.update(source.encode() + b"\0" + tags.encode() + b"\0")
    return digest.hexdigest()


@functools.lru_cache(maxsize=1)
def library_sha256() -> str:
    """The SHA-256 of the code a lesson runs: every ``.py`` file of the installed ``dro_lab`` and ``dro_course``
    packages with its path, in path order, but the website builder's (``site/``: it never runs inside a lesson) and
    the solutions' (their own hash is part of the key). Part of a lesson run's resume key, so that a change to the
    library or the course re-runs the lessons (computed once a process: a run does not edit the code under itself)."""
    digest = hashlib.sha256()
    for package, root in (("dro_lab", Path(dro_lab.__file__).parent), ("dro_course", Path(__file__).parent)):
        for path in sorted(root.rglob("*.py")):
            relative = path.relative_to(root)
            if package == "dro_course" and relative.parts[0] in ("site", "solutions"):
                continue
            digest.update(f"{package}/{relative.as_posix()}".encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


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


def cell_tags(cell: Any) -> list[str]:
    """A notebook cell's tags (an nbformat node or a plain dict), a new list."""
    return list(cell.get("metadata", {}).get("tags", []))


def md_cell(text: str) -> str:
    """``text`` made safe for one cell of a Markdown table."""
    return text.replace("|", "\\|").replace("\n", " ")


def relative_posix(path: Path | str, start: Path) -> str:
    """``path`` relative to ``start``, with forward slashes (links in the summary pages)."""
    return Path(os.path.relpath(path, start)).as_posix()
