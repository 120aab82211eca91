"""The API reference of ``dro_lab`` on the course website, generated from the docstrings at every build.

:func:`write_api_sources` writes one reStructuredText page per public module of :data:`API_MODULES` into the Sphinx
source folder; Sphinx's autodoc, autosummary and napoleon (Google-style ``Args:`` / ``Returns:``) turn them into
pages when the site is built. The pages hold directives, not text: a docstring edited in ``dro_lab/`` is on the
next site, and a name added to a module's ``__all__`` gets its entry without anyone touching this file.

Each public object is documented once, on the page of the lowest module that exports it (the layers of
``pyproject.toml``'s import contract, bottom up); every other page that exports it lists it in its table of
contents with a link there. The top-level page lists every name of ``import dro_lab`` the same way.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

#: The public modules with a page, from the bottom of the library up (the order of the import layers).
API_MODULES = (
    "dro_lab.utils",
    "dro_lab.robust",
    "dro_lab.losses",
    "dro_lab.reweighting",
    "dro_lab.oracles",
    "dro_lab.data",
    "dro_lab.models",
    "dro_lab.metrics",
    "dro_lab.samplers",
    "dro_lab.optim",
    "dro_lab.attacks",
    "dro_lab.pergrad",
    "dro_lab.engine",
    "dro_lab.strategies",
    "dro_lab.experiments",
    "dro_lab.bench",
)
#: The top-level module: its page lists every name of ``import dro_lab`` and links each to its entry.
TOP = "dro_lab"
#: Where the pages go in the site's source folder.
API_FOLDER = "api"
#: A constant whose ``repr`` is longer than this is shown without its value.
_SHORT_VALUE = 100


def page_name(module: str) -> str:
    """A module's page, relative to the API folder: ``dro_lab.robust`` -> ``robust``, ``dro_lab`` -> ``dro_lab``."""
    return module if module == TOP else module.removeprefix(TOP + ".")


def public_names(module: str) -> list[str]:
    """A module's public names: its ``__all__`` (the top level's without ``__version__``)."""
    names = list(getattr(importlib.import_module(module), "__all__", ()))
    return [n for n in names if not n.startswith("_")]


def homes() -> dict[tuple[str, int], str]:
    """(name, id of the object) -> the first module of :data:`API_MODULES` that exports it: where it is documented."""
    found: dict[tuple[str, int], str] = {}
    for module in API_MODULES:
        mod = importlib.import_module(module)
        for name in public_names(module):
            found.setdefault((name, id(getattr(mod, name))), module)
    return found


def _home(module: str, name: str, where: dict[tuple[str, int], str]) -> str:
    return where.get((name, id(getattr(importlib.import_module(module), name))), module)


def _kind(obj: Any) -> str:
    if inspect.isclass(obj):
        return "autoexception" if issubclass(obj, BaseException) else "autoclass"
    if callable(obj):
        return "autofunction"
    return "data"


@functools.cache
def _attribute_docs(module: str) -> dict[str, list[str]]:
    """The ``#:`` comments of a module's top-level names (as Sphinx reads them from its source)."""
    from sphinx.pycode import ModuleAnalyzer, PycodeError  # here: Sphinx loads only when a site is built

    try:
        found = ModuleAnalyzer.for_module(module).find_attr_docs()
    except PycodeError:
        return {}
    return {name: list(lines) for (namespace, name), lines in found.items() if namespace == ""}


def constant_doc(module: str, name: str) -> list[str]:
    """The ``#:`` comment of a constant, read in the library module that defines it (a package re-exports its
    constants, and a value has no ``__module__`` to say where it came from)."""
    obj = getattr(importlib.import_module(module), name)
    candidates = sorted(m for m in sys.modules if m == module or m.startswith(TOP + "."))
    for candidate in candidates:  # a module's own names only: a package's __getattr__ may raise for a moved name
        if vars(sys.modules[candidate]).get(name) is obj and name in _attribute_docs(candidate):
            return [line for line in _attribute_docs(candidate)[name] if line.strip() or line == ""]
    return []


def first_sentence(lines: list[str]) -> str:
    """The first sentence of a comment's first paragraph, on one line."""
    first = []
    for line in lines:
        if not line.strip():
            break
        first.append(line.strip())
    paragraph = " ".join(first)
    end = paragraph.find(". ")
    return paragraph if end < 0 else paragraph[: end + 1]


def _entry(module: str, name: str) -> list[str]:
    """The directive that documents ``module.name``: autodoc's for a class or a function; for a constant, its
    value (when short) and its ``#:`` comment (autodoc would show the docstring of the value's type)."""
    obj = getattr(importlib.import_module(module), name)
    kind = _kind(obj)
    if kind == "data":
        value = repr(obj)
        lines = [f".. py:currentmodule:: {module}", "", f".. py:data:: {name}"]
        if len(value) <= _SHORT_VALUE and "\n" not in value:
            lines.append(f"   :value: {value}")
        return [*lines, "", *(f"   {line}" if line else "" for line in constant_doc(module, name)), ""]
    lines = [f".. {kind}:: {module}.{name}"]
    if kind in ("autoclass", "autoexception"):
        lines += ["   :members:", "   :show-inheritance:"]
    return [*lines, ""]


def _title(text: str, underline: str = "=") -> list[str]:
    return [text, underline * len(text), ""]


def _summary(targets: list[str]) -> list[str]:
    """Tables of contents: classes and functions in an autosummary table (each with the first line of its
    docstring), constants in a table of their own with the first line of their ``#:`` comment; each linked to
    its entry."""
    objects, constants = [], []
    for target in targets:
        module, name = target.rsplit(".", 1)
        if _kind(getattr(importlib.import_module(module), name)) == "data":
            constants.append(f"   * - :py:data:`~{target}`\n     - {first_sentence(constant_doc(module, name))}")
        else:
            objects.append(f"   ~{target}")
    lines = [".. autosummary::", "   :nosignatures:", "", *objects, ""] if objects else []
    if constants:
        lines += [".. list-table::", "   :widths: 30 70", "", *constants, ""]
    return lines


def module_page(module: str, where: dict[tuple[str, int], str]) -> str:
    """The page of one module: its docstring, a table of its public names, and an entry for each name it is the
    home of (the others link to the page that documents them)."""
    names = public_names(module)
    targets = [f"{_home(module, n, where)}.{n}" for n in names]
    lines = [
        f".. Written by dro_course.site.api for each build from {module}'s __all__: edit the docstrings.",
        "",
        *_title(f"``{module}``"),
        f".. automodule:: {module}",
        "   :no-members:",
        "",
        # the entries below carry their full names: no current module (autosummary would warn about each)
        ".. py:currentmodule:: None",
        "",
    ]
    if names:
        lines += [".. rubric:: Contents", "", *_summary(targets)]
    for name, target in zip(names, targets):
        if target == f"{module}.{name}":
            lines += _entry(module, name)
    return "\n".join(lines).rstrip() + "\n"


def top_page(where: dict[tuple[str, int], str]) -> str:
    """The page of ``import dro_lab``: its docstring and every top-level name, grouped by the page documenting it."""
    groups: dict[str, list[str]] = {}
    undocumented = []
    for name in public_names(TOP):
        home = _home(TOP, name, where)
        if home == TOP:
            undocumented.append(name)
        else:
            groups.setdefault(home, []).append(f"{home}.{name}")
    lines = [
        ".. Written by dro_course.site.api for each build from dro_lab's __all__: edit the docstrings.",
        "",
        *_title(f"``{TOP}``: the top level"),
        f".. automodule:: {TOP}",
        "   :no-members:",
        "",
        ".. py:currentmodule:: None",
        "",
        "Every name below is importable as ``dro_lab.NAME``; each links to its entry on its module's page.",
        "",
    ]
    for home in API_MODULES:
        if home in groups:
            lines += [*_title(f":mod:`{home}`", "-"), *_summary(groups[home])]
    for name in undocumented:
        lines += _entry(TOP, name)
    return "\n".join(lines).rstrip() + "\n"


def _first_line(module: str) -> str:
    doc = inspect.getdoc(importlib.import_module(module)) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def index_page() -> str:
    """The API reference's front page: one row per module page, with the first line of its docstring."""
    rows = [f"   * - :doc:`{page_name(m)}`\n     - {_first_line(m)}" for m in (TOP, *API_MODULES)]
    toctree = "\n".join(f"   {page_name(m)}" for m in (TOP, *API_MODULES))
    return "\n".join(
        [
            ".. Written by dro_course.site.api for each build.",
            "",
            *_title("API reference"),
            "Generated from the docstrings of the installed ``dro_lab`` when this site was built. The modules",
            "are listed from the bottom of the library up: each imports only the ones above it in this list.",
            "",
            ".. list-table::",
            "   :header-rows: 1",
            "   :widths: 25 75",
            "",
            "   * - module",
            "     - what it holds",
            *rows,
            "",
            ".. toctree::",
            "   :hidden:",
            "",
            toctree,
            "",
        ]
    )


def api_pages() -> Iterator[tuple[str, str]]:
    """(file name, text) of every page of the API reference: the index, the top level, one per module."""
    where = homes()
    yield "index.rst", index_page()
    yield f"{page_name(TOP)}.rst", top_page(where)
    for module in API_MODULES:
        yield f"{page_name(module)}.rst", module_page(module, where)


def write_api_sources(src: Path, write: Callable[[Path, str], None]) -> str:
    """Write the API reference's pages under ``src/api`` with ``write(path, text)``, removing the pages of modules
    no longer listed; return its index's page name."""
    folder = src / API_FOLDER
    written = set()
    for name, text in api_pages():
        write(folder / name, text)
        written.add(name)
    for stale in folder.glob("*.rst"):
        if stale.name not in written:
            stale.unlink()
    return f"{API_FOLDER}/index"
