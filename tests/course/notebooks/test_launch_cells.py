"""Every lesson opens in Colab and Binder from its own page, and installs the course on Colab only.

* Under each lesson's title: ``Open in [Colab](…) · [Binder](…)``, text links (no remote image: the course website
  fetches nothing from the network) to this very notebook on the repository of the README's Binder badge.
* The first code cell is tagged ``install``: where the course (``dro_course``) is importable (JupyterLab, Binder,
  papermill) it does nothing, which is checked by running it with IPython's ``get_ipython`` stubbed so that any magic
  or shell command fails the test; where it is missing (Colab, also after an earlier ``pip install`` of a library
  without the course) it installs the package from the repository with the lessons' extras, and torchattacks without
  its dependencies (recorded, not run).
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import tomllib
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

REPO = Path(__file__).resolve().parents[3]
LESSONS = sorted((REPO / "notebooks").glob("0*.ipynb"))
INSTALL_TAG = "install"
LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")


def _github_repository() -> str:
    """``owner/name`` of the repository, as the README's Binder badge names it."""
    found = re.search(r"https://mybinder\.org/v2/gh/([\w.-]+/[\w.-]+)/", (REPO / "README.md").read_text("utf-8"))
    assert found, "README.md has no Binder badge (https://mybinder.org/v2/gh/OWNER/NAME/...)"
    return found.group(1)


def _read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(str(path), as_version=4)


def _install_cell(nb) -> nbformat.NotebookNode:
    return next(c for c in nb.cells if c.cell_type == "code")


class _NoShell:
    """``get_ipython()`` for a kernel where any magic or shell command is a failure."""

    def _fail(self, *args, **kwargs):
        pytest.fail(f"the install cell ran a command where dro_lab is installed: {args}")

    run_line_magic = run_cell_magic = system = getoutput = _fail


class _Recorder:
    """``get_ipython()`` that records the magics and shell commands instead of running them."""

    def __init__(self):
        self.calls: list[tuple[str, ...]] = []

    def run_line_magic(self, name, line, *args):
        self.calls.append(("%" + name, line))

    def system(self, command):
        self.calls.append(("!", command))


def _run_install_cell(source: str, shell) -> None:
    code = TransformerManager().transform_cell(source)  # what IPython runs: magics become get_ipython() calls
    exec(compile(code, "<install cell>", "exec"), {"get_ipython": lambda: shell, "__name__": "__main__"})


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_the_launch_line_under_the_title_opens_this_notebook(path):
    title = _read(path).cells[0]
    assert title.cell_type == "markdown" and title.source.startswith("# "), f"{path.name}: no title first"
    under_title = [line for line in title.source.splitlines()[1:] if line.strip()][0]
    links = dict(LINK.findall(under_title))
    assert under_title.startswith("Open in ") and set(links) == {"Colab", "Binder"}, under_title
    assert not re.search(r"!\[|<img", title.source), f"{path.name}: an image in the title cell (fetched remotely)"
    owner, name = _github_repository().split("/")

    colab = urlsplit(links["Colab"])
    assert (colab.scheme, colab.netloc) == ("https", "colab.research.google.com")
    assert colab.path.split("/")[1:] == ["github", owner, name, "blob", "main", "notebooks", path.name], colab.path

    binder = urlsplit(links["Binder"])
    assert (binder.scheme, binder.netloc) == ("https", "mybinder.org")
    assert binder.path.split("/")[1:] == ["v2", "gh", owner, name, "main"], binder.path
    assert parse_qs(binder.query) == {"urlpath": [f"lab/tree/notebooks/{path.name}"]}, binder.query


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_the_first_code_cell_is_the_install_cell(path):
    nb = _read(path)
    tagged = [i for i, c in enumerate(nb.cells) if INSTALL_TAG in c.metadata.get("tags", [])]
    first_code = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    assert tagged == [first_code], f"{path.name}: cells tagged {INSTALL_TAG!r}: {tagged}; first code cell {first_code}"


def test_every_lesson_has_the_same_install_cell():
    sources = {_install_cell(_read(path)).source for path in LESSONS}
    assert len(sources) == 1, "the install cells differ between lessons"


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_the_install_cell_does_nothing_where_the_course_is_installed(path, monkeypatch):
    assert importlib.util.find_spec("dro_course") is not None
    monkeypatch.setattr(sys, "path", sys.path.copy())
    before = sys.path.copy()
    _run_install_cell(_install_cell(_read(path)).source, _NoShell())
    assert sys.path == before


@pytest.mark.parametrize("missing", [{"dro_lab", "dro_course"}, {"dro_course"}], ids=["nothing", "library-only"])
def test_without_the_course_the_install_cell_installs_it_from_the_repository(monkeypatch, missing):
    """On a fresh Colab, and where an older dro_lab without the course was pip-installed first: the cell installs
    the package (library and course) from the repository, with the lessons' extras, then torchattacks."""
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in missing else real_find_spec(name, *a)
    )
    shell = _Recorder()
    _run_install_cell(_install_cell(_read(LESSONS[0])).source, shell)

    install, attacks = shell.calls
    assert install[0] == "%pip", install
    found = re.fullmatch(r'install --quiet\s+"dro-lab\[([\w,]+)\] @ git\+https://github\.com/([\w.-]+/[\w.-]+)"', install[1])
    assert found and found.group(2) == _github_repository(), install
    extras = _pyproject()["project"]["optional-dependencies"]
    assert set(found.group(1).split(",")) == {"viz", "vision", "bo"} and {"viz", "vision", "bo"} <= set(extras)
    assert attacks == ("%pip", f"install --quiet --no-deps torchattacks=={_constraint('torchattacks')}"), attacks


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))


def _constraint(name: str) -> str:
    for line in (REPO / "requirements" / "constraints.txt").read_text("utf-8").splitlines():
        if line.lower().startswith(name.lower() + "=="):
            return line.split("==", 1)[1].strip()
    raise AssertionError(f"{name} is not pinned in requirements/constraints.txt")
