"""Where the names that left the library went: importing an old path fails with one line naming the new one.

Version 0.2.0 moved the course (its runner, figures, panels and the code written for one teaching unit) out of
``dro_lab`` into its own import package, ``dro_course``, installed by the ``course`` extra. The library cannot
import the course, so the old paths do not keep working; they fail with a message instead of a bare
``ModuleNotFoundError``. The table of old paths and new homes is data (``_moved.json``), read on the first miss.
"""

from __future__ import annotations

import functools
import importlib.abc
import json
import sys
from pathlib import Path

__all__ = ["install_finder", "moved_attribute"]

_INSTALL = "pip install 'dro-lab[course]'"


@functools.cache
def _table() -> dict[str, dict[str, str]]:
    return json.loads((Path(__file__).with_name("_moved.json")).read_text(encoding="utf-8"))


def _new_module(old: str) -> str | None:
    """The new home of module ``old``: its own entry, else its nearest moved parent's (a submodule of a moved
    package moved with it)."""
    modules = _table()["modules"]
    parts = old.split(".")
    for end in range(len(parts), 1, -1):
        new = modules.get(".".join(parts[:end]))
        if new is not None:
            return ".".join([new, *parts[end:]])
    return None


class _MovedFinder(importlib.abc.MetaPathFinder):
    """Last on ``sys.meta_path``: asked only after every real finder failed to find a ``dro_lab`` module."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("dro_lab."):
            return None
        new = _new_module(fullname)
        if new is None:
            return None
        raise ModuleNotFoundError(f"{fullname} moved out of the library: import {new} ({_INSTALL})", name=fullname)


def install_finder() -> None:
    """Put the finder of moved modules at the end of ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())


def moved_attribute(package: str, name: str):
    """For a package's ``__getattr__``: a name that moved raises ImportError naming its new module; any other
    missing name is the usual AttributeError."""
    new = _table()["names"].get(f"{package}.{name}")
    if new is not None:
        raise ImportError(f"{package}.{name} moved out of the library: from {new} import {name} ({_INSTALL})")
    raise AttributeError(f"module {package!r} has no attribute {name!r}")
