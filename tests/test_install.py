"""The package as a stranger gets it (``make test-env``): built from a copy of the clone, installed in a fresh
virtual environment outside it.

1. ``python -m build`` makes the sdist and, from the sdist alone, the wheel: the sdist carries everything the build
   needs, and the whole test suite (every file git has under ``tests/``);
2. a fresh venv in a temporary folder installs the wheel with its ``course`` extra (the pinned versions of
   requirements/constraints.txt);
3. there, away from the clone: ``import dro_lab`` loads neither the course nor the notebook stack;
   ``dro-course list`` shows the eight lessons; ``dro-course run --only 00_welcome --preset smoke --out DIR`` writes
   the executed notebook; ``dro-course fetch DIR`` copies the eight student notebooks; ``dro-lab course`` names
   ``dro-course`` in one line.

Everything happens in a temporary folder deleted afterwards; pip uses its normal cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from _clone import REPO, copy_repository, repository_files  # tests/_clone.py

pytestmark = pytest.mark.freshenv
LESSONS = sorted(p.name for p in (REPO / "notebooks").glob("0*.ipynb"))


def _run(command: list[str], cwd: Path, timeout: float, env: dict | None = None) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, f"{' '.join(map(str, command))} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the venv's bin folder, the folder the sdist and the wheel were built into, a folder outside the clone)."""
    root = tmp_path_factory.mktemp("install")
    source, dist, away = root / "source", root / "dist", root / "elsewhere"
    copy_repository(source)
    away.mkdir()
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=root, timeout=300)
    bin_ = venv / "bin"
    _run([str(bin_ / "python"), "-m", "pip", "install", "-q", "--upgrade", "pip", "build"], cwd=root, timeout=600)
    _run([str(bin_ / "python"), "-m", "build", "--outdir", str(dist), str(source)], cwd=root, timeout=900)
    wheel = next(dist.glob("*.whl"))
    constraints = str(REPO / "requirements" / "constraints.txt")
    _run([str(bin_ / "pip"), "install", "-q", "--constraint", constraints, f"{wheel}[course]"], cwd=away, timeout=1500)
    return bin_, dist, away


def test_the_sdist_carries_the_whole_test_suite(installed):
    _, dist, _ = installed
    sdist = next(dist.glob("*.tar.gz"))
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    tests = {p.as_posix() for p in repository_files() if p.parts[0] == "tests"}
    assert tests and not tests - names, f"missing from the sdist: {sorted(tests - names)[:20]}"
    assert {"LICENSE", "README.md", "pyproject.toml", "setup.py", "tests/conftest.py"} <= names


def test_the_library_imports_alone_outside_the_clone(installed):
    bin_, _, away = installed
    code = (
        "import sys, dro_lab, dro_lab.experiments, dro_lab.samplers\n"
        "print(dro_lab.__file__)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'dro_course', 'plotly', 'ipywidgets', 'papermill', "
        "'nbformat', 'dask', 'sphinx'}))\n"
    )
    where, loaded = _run([str(bin_ / "python"), "-c", code], cwd=away, timeout=300).splitlines()
    assert "site-packages" in where and str(REPO) not in where
    assert loaded == "[]"


def test_the_course_lists_runs_and_fetches_outside_the_clone(installed):
    bin_, _, away = installed
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    listed = _run([str(bin_ / "dro-course"), "list"], cwd=away, timeout=120, env=env)
    assert "site-packages" in listed.splitlines()[0]  # the syllabus shipped with the package
    for name in LESSONS:
        assert Path(name).stem in listed
    out = away / "run"
    _run(
        [str(bin_ / "dro-course"), "run", "--only", "00_welcome", "--preset", "smoke", "--out", str(out)],
        away,
        600,
        env,
    )
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    statuses = {r["id"]: r["status"] for r in summary["lessons"]} if "lessons" in summary else None
    assert (out / "00_welcome.ipynb").is_file() and (statuses is None or statuses["00_welcome"] == "ok"), summary
    # the site's own assets came with the wheel: KaTeX with its fonts, the plotly.js bundle, the icon font
    static = out / "site" / "_static"
    for shipped in ("katex/katex-typeset.js", "katex/fonts/KaTeX_Main-Regular.woff2", "plotly-course.min.js"):
        assert (static / shipped).is_file(), shipped
    assert (static / "vendor" / "fontawesome" / "webfonts" / "fa-solid-900.woff2").stat().st_size < 10_000
    _run([str(bin_ / "dro-course"), "fetch", str(away / "work")], cwd=away, timeout=120, env=env)
    assert sorted(p.name for p in (away / "work").glob("*.ipynb")) == LESSONS
    moved = subprocess.run([str(bin_ / "dro-lab"), "course", "list"], cwd=away, capture_output=True, text=True)
    assert moved.returncode == 2 and "dro-course" in moved.stderr and moved.stderr.count("\n") == 1
