"""Binder's environment, rebuilt as repo2docker builds it, runs every lesson (``make test-env``: about 5 minutes).

The steps repo2docker takes for ``binder/`` (runtime.txt, requirements.txt, postBuild), in a temporary folder:

1. a fresh virtual environment (``python -m venv``; repo2docker's is a conda Python of runtime.txt's version);
2. ``pip install -r binder/requirements.txt`` in it, before the repository is there (repo2docker installs a
   requirements.txt that names no local path first, which is what lets it cache that layer);
3. a copy of the repository, as a clone would have it (the files git tracks or would track, with this working
   tree's content), and ``binder/postBuild`` run from its root with the environment first on PATH;
4. every lesson as stored (its smoke preset), as a student's Run All would run it, under nbval in the environment's
   own kernel: every cell must run. This is the suite's nbval run (``make test`` executes each lesson once,
   through the course runner; this second target runs them once more, in the fresh environment).

The environment and the copy are deleted afterwards, also when a step fails. pip uses its normal cache.

download.pytorch.org cannot be reached here (CI and this sandbox reach only the package registries), so step 2
installs a copy of binder/requirements.txt with the ``--extra-index-url`` / ``--index-url`` lines dropped and the
``+cpu`` local versions stripped: the same torch and torchvision releases come from the default index. Those are
the CUDA builds, whose nvidia-* wheels (several GB unpacked) make the install the slow half of this test; the
Python code the lessons run is the same. ``tests/course/test_binder.py`` checks the file itself (pins, CPU index).

Nothing outside the temporary folder is written: not the project's .venv, not build/, not the user's Jupyter
folders (JUPYTER_DATA_DIR and JUPYTER_CONFIG_DIR point into the temporary folder, so only the environment's own
``python3`` kernel can run the lessons).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from _clone import copy_repository  # tests/_clone.py

REPO = Path(__file__).resolve().parents[3]
BINDER = REPO / "binder"
LESSONS = sorted(p.stem for p in (REPO / "notebooks").glob("0*.ipynb"))
#: seconds each step may take (the whole test is meant to take about 5 minutes on two cores)
VENV_S, INSTALL_S, POSTBUILD_S, COURSE_S = 300, 900, 600, 1200


def requirements_without_cpu_index(text: str) -> str:
    """binder/requirements.txt for an index that has no ``+cpu`` builds: the index lines dropped, ``==X+cpu`` pins
    made ``==X`` (the same release from the default index)."""
    kept = []
    for line in text.splitlines():
        if re.match(r"\s*(--extra-index-url|--index-url|-i)\b", line):
            continue
        kept.append(re.sub(r"(==\s*[^\s#;+]+)\+cpu\b", r"\1", line))
    return "\n".join(kept) + "\n"


def _environment(venv: Path, scratch: Path) -> dict[str, str]:
    """The variables of a shell with ``venv`` activated and Jupyter's per-user folders moved into ``scratch``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "JUPYTER", "PYTEST", "DRO_LAB_"))}
    env.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        VIRTUAL_ENV=str(venv),
        JUPYTER_DATA_DIR=str(scratch / "jupyter-data"),
        JUPYTER_CONFIG_DIR=str(scratch / "jupyter-config"),
        IPYTHONDIR=str(scratch / "ipython"),
    )
    return env


def _run(step: str, command: list[str], *, cwd: Path, env: dict[str, str], timeout: float, log: list[str]) -> str:
    """Run one step; fail the test with its output's tail when it exits non-zero or runs past ``timeout``."""
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        output = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        pytest.fail(f"{step}: still running after {timeout:.0f} s\n{' '.join(command)}\n{output[-4000:]}")
    log.append(f"{step}: {time.monotonic() - started:.0f} s")
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{step} failed ({done.returncode}): {' '.join(command)}\n{output[-6000:]}"
    return output


def _build_as_repo2docker(scratch: Path, env: dict[str, str], log: list[str]) -> tuple[Path, Path]:
    """Steps 1-3 of the module's docstring in ``scratch``: (the environment, the repository copy)."""
    venv, repo = scratch / "venv", scratch / "repo"
    _run("venv", [sys.executable, "-m", "venv", "--upgrade-deps", str(venv)], cwd=scratch, env=env, timeout=VENV_S,
         log=log)  # fmt: skip
    requirements = scratch / "requirements.txt"
    requirements.write_text(requirements_without_cpu_index((BINDER / "requirements.txt").read_text()))
    pip_install = [str(venv / "bin" / "python"), "-m", "pip", "install", "-r", str(requirements)]
    _run("pip install -r binder/requirements.txt", pip_install, cwd=scratch, env=env, timeout=INSTALL_S, log=log)
    repo.mkdir()
    copy_repository(repo)
    _run("binder/postBuild", [str(repo / "binder" / "postBuild")], cwd=repo, env=env, timeout=POSTBUILD_S, log=log)
    return venv, repo


def _code_cells(notebook: Path) -> int:
    return sum(cell["cell_type"] == "code" for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"])


def _run_lessons_with_nbval(venv: Path, repo: Path, env: dict[str, str], log: list[str]) -> str:
    """Step 4: every lesson as a student's Run All in JupyterLab runs it, as stored (smoke preset, no parameters
    injected), under nbval (every cell runs; stored notebooks have no outputs to compare) in the environment's own
    kernel. nbval and pytest are added to the environment for this, at the pinned versions."""
    python = str(venv / "bin" / "python")
    tools = [python, "-m", "pip", "install", "-c", str(repo / "requirements" / "constraints.txt"), "pytest",
             "pytest-xdist", "pytest-timeout", "nbval"]  # fmt: skip
    _run("pip install pytest nbval", tools, cwd=repo, env=env, timeout=INSTALL_S, log=log)
    nbval = [python, "-m", "pytest", "--nbval", "--nbval-current-env", "--nbval-cell-timeout=300", "-p",
             "no:cacheprovider", "-n", "2", "--dist", "loadscope", "-q", "-ra", "--color=no", "notebooks/"]  # fmt: skip
    return _run("pytest --nbval notebooks/", nbval, cwd=repo, env=env, timeout=COURSE_S, log=log)


@pytest.mark.freshenv
@pytest.mark.timeout(VENV_S + 2 * INSTALL_S + POSTBUILD_S + COURSE_S + 120)
@pytest.mark.skipif(not LESSONS, reason="no lessons in notebooks/")
def test_binder_environment_runs_every_lesson():
    scratch = Path(tempfile.mkdtemp(prefix="dro-lab-binder-"))
    env, log = _environment(scratch / "venv", scratch), []
    try:
        venv, repo = _build_as_repo2docker(scratch, env, log)
        assert not (repo / "build").exists() and not (repo / "dro_lab.egg-info").exists(), "postBuild left build files"
        # the library is the installed copy (not the repository's folder), and the lessons' kernel is the environment's
        where = _run("where", [str(venv / "bin" / "python"), "-c", _WHERE], cwd=scratch, env=env, timeout=120, log=log)
        library, kernel = where.split()[:2]
        assert Path(library).is_relative_to(venv), f"dro_lab imported from {library}, not the environment {venv}"
        assert Path(kernel).is_relative_to(venv), f"the python3 kernel is {kernel}, not the environment's"

        output = _run_lessons_with_nbval(venv, repo, env, log)
        cells = sum(_code_cells(REPO / "notebooks" / f"{stem}.ipynb") for stem in LESSONS)  # nbval: a test per cell
        assert re.search(rf"\b{cells} passed\b", output), f"nbval did not run every cell:\n{output[-6000:]}"
    finally:
        started = time.monotonic()
        shutil.rmtree(scratch, ignore_errors=True)
        log.append(f"deleting it: {time.monotonic() - started:.0f} s")
    print("Binder environment, seconds per step: " + "; ".join(log))
    assert not scratch.exists(), f"{scratch} was not deleted"


#: prints where dro_lab is imported from and which folder holds the python3 kernel the lessons run on
_WHERE = (
    "import dro_lab; from jupyter_client.kernelspec import KernelSpecManager; "
    "print(dro_lab.__file__, KernelSpecManager().get_kernel_spec('python3').resource_dir)"
)


def test_requirements_without_cpu_index_keeps_the_release():
    text = (
        "# CPU torch\n--extra-index-url https://download.pytorch.org/whl/cpu\n--index-url https://example.org/simple\n"
        "torch==2.14.1+cpu\ntorchvision==0.29.1+cpu  # the vision extra\nnumpy==2.4.6\n"
    )
    assert requirements_without_cpu_index(text).splitlines() == [
        "# CPU torch",
        "torch==2.14.1",
        "torchvision==0.29.1  # the vision extra",
        "numpy==2.4.6",
    ]
