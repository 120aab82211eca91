"""Numbers a lesson records for whoever runs it in batch: :func:`record` and :func:`read_records`."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from dro_course._files import jsonable, write_text_atomic

#: Environment variable naming the JSON file that :func:`record` writes to.
RECORD_ENV = "DRO_LAB_RECORD"


def record(name: str, value: Any) -> None:
    """Record ``value`` under ``name`` for whoever runs this notebook in batch.

    When the environment variable ``DRO_LAB_RECORD`` names a file (the course runner sets it to
    ``<out>/<lesson id>.record.json``), the file holds a JSON object and ``name`` is set in it;
    recording a name twice keeps the last value. Otherwise (a student in JupyterLab) this does
    nothing. Displays nothing and returns None.

    Args:
        name: a non-empty string.
        value: anything JSON can hold; tensors and numpy values are converted with ``tolist()``.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"Invalid record name: {name!r} (expected a non-empty string)")
    target = os.environ.get(RECORD_ENV)
    if not target:
        return None
    plain = jsonable(value)
    try:
        json.dumps(plain)
    except (TypeError, ValueError) as exc:
        kind = type(value).__name__
        raise TypeError(f"record({name!r}, ...): value of type {kind} is not JSON-serialisable") from exc
    path = Path(target)
    data = read_records(path)
    data[name] = plain
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(data, indent=2, sort_keys=True))  # a reader never sees half a file
    return None


def read_records(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The records in ``path`` written by :func:`record`; ``{}`` if the file does not exist."""
    path = Path(path)
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8") or "{}")
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object of records")
    return data
