"""What the course tests share: the fixture notebooks (tests/fixtures/) copied into a course folder with
its syllabus, and file snapshots to check that a run writes only under its output folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

FIXTURE_SYLLABUS = """\
title: Fixture course
presets: [smoke, full]
lessons:
  - id: passing
    title: A passing lesson
    notebook: src/passing.ipynb
    goals: [print a parameter]
    minutes: {smoke: 0.1}
    presets:
      smoke: {preset: smoke, greeting: from-preset}
  - id: failing
    title: A failing lesson
    notebook: src/failing.ipynb
    prerequisites: [passing]
"""


def make_course(root: Path, text: str = FIXTURE_SYLLABUS) -> Path:
    """A course folder: ``root/src/*.ipynb`` (fixture copies) and ``root/course/syllabus.yaml``."""
    (root / "src").mkdir(parents=True, exist_ok=True)
    for notebook in FIXTURES.glob("*.ipynb"):
        shutil.copy(notebook, root / "src" / notebook.name)
    (root / "course").mkdir(exist_ok=True)
    path = root / "course" / "syllabus.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def snapshot(root: Path, exclude: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` except under ``exclude``: path -> (size, mtime_ns)."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file() and exclude not in p.parents
    }


def stream_text(nb: nbformat.NotebookNode) -> str:
    return "".join(
        out.get("text", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "stream"
    )


def file_state(path: Path) -> tuple[int, int]:
    return path.stat().st_size, path.stat().st_mtime_ns
