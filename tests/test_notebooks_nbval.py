"""Run nbval over notebooks/ as part of the normal test run.

nbval is a pytest plugin that collects notebooks; running it in a child pytest keeps the top-level
run collecting only tests/ (pyproject's testpaths) while ``make test`` still covers the lessons.
The notebooks are stored without outputs, so nbval only checks that every cell runs (stored cells
without an execution count are not compared; plotly cells are tagged ``nbval-ignore-output``).
The lessons run as stored, with ``DRO_LAB_PRESET=smoke`` (set by ``make test``; defaulted here).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


@pytest.mark.notebook
@pytest.mark.timeout(900)
@pytest.mark.skipif(not NOTEBOOKS, reason="no notebooks/*.ipynb written yet")
def test_nbval_notebooks():
    env = dict(os.environ)
    env.setdefault("DRO_LAB_PRESET", "smoke")
    env.setdefault("PLOTLY_RENDERER", "notebook")
    env.pop("DRO_LAB_RECORD", None)  # record() stays a no-op, as for a student
    env.pop("PYTEST_ADDOPTS", None)  # the outer run's options (e.g. -n, -k) are not for this one
    command = [
        sys.executable,
        "-m",
        "pytest",
        "--nbval",
        "--nbval-current-env",
        "--nbval-cell-timeout=300",
        "-p",
        "no:cacheprovider",
        "-q",
        "-ra",
        "--color=no",
        "notebooks/",
    ]
    completed = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    report = (completed.stdout + completed.stderr)[-8000:]
    assert completed.returncode == 0, f"nbval failed ({' '.join(command[2:])}):\n{report}"
