"""dro_lab is a library a researcher imports into their own script: it knows nothing of the course.

* Every module of ``dro_lab``, and every name of its top level, imports in a fresh interpreter without loading the
  course or the notebook stack (in-process would prove nothing: nbval's pytest plugin imports nbformat into pytest).
* No Python file of ``dro_lab`` mentions a lesson, and the library's Python files hold at most 18,000 lines.
* Every import path that moved to the course package fails with one line naming its new home.
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _util import library_modules  # tests/_util.py

import dro_lab

LIBRARY = Path(dro_lab.__file__).resolve().parent
#: What a researcher's script must not pay for: the course, its figures and panels, the notebook stack, Dask, Sphinx.
NOT_LOADED = (
    "dro_course", "plotly", "ipywidgets", "anywidget", "papermill", "nbformat", "nbconvert", "dask", "distributed",
    "sphinx",
)  # fmt: skip
MOVED = json.loads((LIBRARY / "_moved.json").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_every_module_imports_without_the_course_or_the_notebook_stack():
    code = (
        "import importlib, sys, dro_lab\n"
        f"for name in {library_modules()!r}:\n"
        "    importlib.import_module(name)\n"
        "[getattr(dro_lab, n) for n in dro_lab.__all__]\n"
        f"print(' '.join(sorted({{k.split('.')[0] for k in sys.modules}} & {set(NOT_LOADED)!r})))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"importing dro_lab loaded {done.stdout.strip()}"


def test_no_python_file_of_the_library_mentions_a_lesson():
    mentions = [
        f"{path.relative_to(LIBRARY)}:{number}"
        for path in sorted(LIBRARY.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if re.search("lesson", line, re.IGNORECASE)
    ]
    assert not mentions, f"the library speaks of lessons (they belong to dro_course): {mentions}"


def test_the_library_is_small():
    lines = sum(len(path.read_text(encoding="utf-8").splitlines()) for path in LIBRARY.rglob("*.py"))
    assert lines <= 18_000, f"dro_lab's Python files hold {lines} lines (at most 18,000)"


@pytest.mark.parametrize(("old", "new"), sorted(MOVED["modules"].items()))
def test_a_moved_module_fails_naming_its_new_home(old, new):
    """Python imports a module's parents first: a module of a moved package fails at the package, naming the
    package's new home (where its modules are)."""
    parts = old.split(".")
    first = next(".".join(parts[:end]) for end in range(2, len(parts) + 1) if ".".join(parts[:end]) in MOVED["modules"])
    expected = f"{first} moved out of the library: import {MOVED['modules'][first]} "
    with pytest.raises(ModuleNotFoundError, match=re.escape(expected)):
        importlib.import_module(old)
    importlib.import_module(new)  # and the new home exists


@pytest.mark.parametrize(("old", "new"), sorted(MOVED["names"].items()))
def test_a_moved_name_fails_naming_its_new_home(old, new):
    package, name = old.rsplit(".", 1)
    with pytest.raises(ImportError, match=re.escape(f"from {new} import {name} ")):
        exec(f"from {package} import {name}", {})
    assert hasattr(importlib.import_module(new), name)


def test_a_name_that_never_existed_is_a_plain_attribute_error():
    import dro_lab.samplers

    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        dro_lab.samplers.nonsense  # noqa: B018
    assert not hasattr(dro_lab.samplers, "nonsense")
