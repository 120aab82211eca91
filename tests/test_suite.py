"""The suite's own rules: it collects from any working directory, and every marker it uses is declared."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_suite_collects_from_any_working_directory(tmp_path):
    """``tests._util`` and the folder helpers (``_course_util``) import whatever the current folder is."""
    modules = ["tests/lab/optim/test_optim.py", "tests/course/test_course.py", "tests/test_suite.py"]
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*command, *(str(REPO / m) for m in modules)], cwd=tmp_path, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " collected" in done.stdout and "errors" not in done.stdout.splitlines()[-1], done.stdout[-2000:]


def test_every_marker_is_declared():
    """``--strict-markers`` is on, so a marker missing from pyproject.toml is a collection error, not a typo that
    silently keeps a slow test in ``make test-fast``."""
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert "--strict-markers" in text
    for marker in ("notebook", "browser", "freshenv", "ddp", "cuda", "slow"):
        assert f'"{marker}: ' in text, marker
