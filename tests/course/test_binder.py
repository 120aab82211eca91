"""The Binder (repo2docker) configuration in ``binder/``: it follows repo2docker's conventions, its
pins agree with ``pyproject.toml`` and ``requirements/constraints.txt``, the notebook front-end stack
is pinned together, torch comes from the CPU wheel index, and the requirement set resolves.

repo2docker reads ``binder/`` and then ignores the repository root's configuration, so ``binder/``
is the whole environment: ``runtime.txt`` (the Python), ``requirements.txt`` (pip: every dependency the lessons
import, pinned, CPU-only torch; no local path, so repo2docker installs it before copying the repository and caches
that layer), ``postBuild`` (installs this repository and torchattacks with ``--no-deps``, then a smoke check).
``tests/course/binder/test_binder_env.py`` builds the environment and runs every lesson in it.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import urllib.error
import urllib.request
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
BINDER = REPO / "binder"

#: Where the Binder badge sends a learner: JupyterLab, on the welcome lesson.
BINDER_GITHUB_REPO = "dro-lab/dro_lab"  # <org>/<repo> on GitHub
BINDER_BRANCH = "main"
BINDER_LESSON = "notebooks/00_welcome.ipynb"
BINDER_URL = f"https://mybinder.org/v2/gh/{BINDER_GITHUB_REPO}/{BINDER_BRANCH}?urlpath=lab/tree/{BINDER_LESSON}"
BINDER_BADGE = f"[![Binder](https://mybinder.org/badge_logo.svg)]({BINDER_URL})"

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
#: the extras of pyproject.toml whose dependencies the lessons import (the attacks extra: see postBuild)
LESSON_EXTRAS = ("viz", "course", "vision", "bo")
#: pinned together (plotly >= 6 builds FigureWidget on anywidget; ipywidgets 8 needs jupyterlab_widgets 3)
FRONT_END = ("jupyterlab", "ipywidgets", "jupyterlab-widgets", "plotly", "anywidget")
#: repo2docker configuration files that would be ignored at the root because binder/ exists
ROOT_CONFIG = (
    "environment.yml",
    "environment.yaml",
    "requirements.txt",
    "runtime.txt",
    "postBuild",
    "apt.txt",
    "start",
    "install.R",
    "Project.toml",
    "REQUIRE",
    "default.nix",
    "Dockerfile",
)  # setup.py is there too: the package map that postBuild's `pip install .` reads, not a configuration of repo2docker


def _requirement_lines(path: Path) -> tuple[list[str], list[Requirement]]:
    """(pip option lines, requirements) of a requirements file; comments and blanks dropped."""
    options, reqs = [], []
    for raw in path.read_text().splitlines():
        line = raw.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-"):
            options.append(line)
            continue
        reqs.append(Requirement(line))
    return options, reqs


def _pins(reqs) -> dict[str, Version]:
    out = {}
    for r in reqs:
        specs = list(r.specifier)
        if len(specs) == 1 and specs[0].operator == "==":
            out[canonicalize_name(r.name)] = Version(specs[0].version)
    return out


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def _pyproject_ranges() -> dict[str, list[tuple[str, SpecifierSet]]]:
    """Every requirement of pyproject (dependencies and each extra): name -> [(where, specifier)]."""
    project = _pyproject()["project"]
    groups = {
        "dependencies": project["dependencies"],
        **{f"[{k}]": v for k, v in project["optional-dependencies"].items()},
    }
    out: dict[str, list[tuple[str, SpecifierSet]]] = {}
    self_name = canonicalize_name(project["name"])
    for where, reqs in groups.items():
        for text in reqs:
            r = Requirement(text)
            if canonicalize_name(r.name) != self_name:
                out.setdefault(canonicalize_name(r.name), []).append((where, r.specifier))
    return out


BINDER_OPTIONS, BINDER_REQS = _requirement_lines(BINDER / "requirements.txt")
BINDER_PINS = _pins(BINDER_REQS)


# --- repo2docker conventions ---------------------------------------------------------------------


def test_binder_folder_is_the_whole_configuration():
    assert BINDER.is_dir()
    assert not (REPO / ".binder").exists(), "both binder/ and .binder/ exist: repo2docker refuses that"
    ignored = [name for name in ROOT_CONFIG if (REPO / name).exists()]
    assert not ignored, f"{ignored} at the repository root are ignored by repo2docker because binder/ exists"
    assert not (BINDER / "Dockerfile").exists(), "a binder/Dockerfile would make repo2docker ignore the rest"
    for name in ("environment.yml", "environment.yaml"):
        assert not (BINDER / name).exists(), f"binder/{name} would make repo2docker ignore runtime.txt"
    assert {p.name for p in BINDER.iterdir()} >= {"requirements.txt", "runtime.txt", "postBuild"}


def test_runtime_txt_names_a_python_that_pyproject_allows():
    text = (BINDER / "runtime.txt").read_text().strip()
    m = re.fullmatch(r"python-(3\.\d+)", text)
    assert m, f"binder/runtime.txt must read python-3.X (repo2docker's form), got {text!r}"
    requires = SpecifierSet(_pyproject()["project"]["requires-python"])
    assert requires.contains(Version(m.group(1))), f"runtime {text} is outside requires-python {requires}"


def test_postbuild_is_a_strict_executable_script():
    path = BINDER / "postBuild"
    lines = [ln.strip() for ln in path.read_text().splitlines()]
    assert re.fullmatch(r"#!\s*(/usr/bin/env bash|/bin/bash|/usr/bin/env sh|/bin/sh)", lines[0]), (
        f"postBuild must start with a shebang, got {lines[0]!r}"
    )
    commands = [ln for ln in lines[1:] if ln and not ln.startswith("#")]
    assert commands and re.fullmatch(r"set -(e|eu|euo pipefail|eo pipefail)", commands[0]), (
        "postBuild's first command must be `set -e` (or `set -euo pipefail`): otherwise repo2docker "
        f"ignores its errors; got {commands[:1]!r}"
    )
    git = shutil.which("git")
    if git is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: cannot read the file mode git records for binder/postBuild")
    out = subprocess.run(
        [git, "ls-files", "-s", "binder/postBuild"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    assert out.split()[:1] == ["100755"], f"binder/postBuild must be executable in git (100755), got {out!r}"


def test_postbuild_smoke_imports_the_front_end_stack():
    text = (BINDER / "postBuild").read_text()
    for module in ("jupyterlab", "notebook", "ipywidgets", "plotly", "anywidget", "torch", "torchvision", "optuna",
                   "torchattacks", "dro_lab"):  # fmt: skip
        assert re.search(rf"\b{module}\b", text), f"postBuild's smoke check does not import {module}"


def _postbuild_commands() -> list[str]:
    lines = (BINDER / "postBuild").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def test_postbuild_installs_the_repository_and_torchattacks_without_dependencies():
    """The repository itself is installed by postBuild, not requirements.txt: repo2docker installs a
    requirements.txt that names no local path before it copies the repository, and caches that layer across
    commits. torchattacks goes without its declared deps (requests~=2.25.1 conflicts with JupyterLab's stack)."""
    installs = [shlex.split(c) for c in _postbuild_commands() if re.search(r"\bpip install\b", c)]
    assert ["python", "-m", "pip", "install", "--no-cache-dir", "--no-deps", "."] in installs, installs
    _, reqs = _requirement_lines(REPO / "requirements" / "constraints.txt")
    tested = _pins(reqs)["torchattacks"]
    wanted = ["python", "-m", "pip", "install", "--no-cache-dir", "--no-deps", f"torchattacks=={tested}"]
    assert wanted in installs, f"postBuild should install torchattacks=={tested} with --no-deps: {installs}"


# --- requirements.txt: parse, pins, CPU torch ---------------------------------------------------


def test_requirements_parse_and_options_are_known():
    assert BINDER_REQS, "binder/requirements.txt has no requirements"
    assert [f"--extra-index-url {CPU_INDEX}"] == BINDER_OPTIONS, (
        f"binder/requirements.txt's only option is the CPU index (no local path: see postBuild): {BINDER_OPTIONS}"
    )
    for r in BINDER_REQS:
        specs = list(r.specifier)
        assert len(specs) == 1 and specs[0].operator == "==", f"{r} is not pinned with =="
        assert not r.url and not r.marker, f"{r}: keep the Binder pins plain"


def test_every_dependency_of_the_lessons_is_pinned():
    """dro_lab's dependencies and those of the extras the lessons use (viz, course, vision, bo) are pinned; the
    whole resolved set is checked by test_binder_requirement_set_resolves."""
    project = _pyproject()["project"]
    wanted = list(project["dependencies"])
    for extra in LESSON_EXTRAS:
        wanted += project["optional-dependencies"][extra]
    own = canonicalize_name(project["name"])  # an extra that includes another (course = viz + ...) names the project
    missing = [text for text in wanted if canonicalize_name(Requirement(text).name) not in {*BINDER_PINS, own}]
    assert not missing, f"not pinned in binder/requirements.txt: {missing}"
    for name in ("notebook", "jupyter-offlinenotebook"):
        assert name in BINDER_PINS, f"{name} is not pinned in binder/requirements.txt"


def test_front_end_stack_is_pinned_together():
    missing = [name for name in FRONT_END if name not in BINDER_PINS]
    assert not missing, f"not pinned with == in binder/requirements.txt: {missing}"
    assert BINDER_PINS["plotly"].major < 6 or "anywidget" in BINDER_PINS, "plotly >= 6 FigureWidget needs anywidget"
    # ipywidgets' own metadata says which jupyterlab_widgets it works with (checked when the pinned
    # ipywidgets is the one installed here, which `make test` guarantees via constraints.txt)
    try:
        installed = Version(metadata.version("ipywidgets"))
    except metadata.PackageNotFoundError:
        installed = None
    if installed == BINDER_PINS["ipywidgets"]:
        wants = [Requirement(r) for r in metadata.requires("ipywidgets") or []]
        for want in wants:
            name = canonicalize_name(want.name)
            if name in BINDER_PINS and not want.marker:
                assert want.specifier.contains(BINDER_PINS[name], prereleases=True), (
                    f"ipywidgets {installed} requires {want}, Binder pins {name}=={BINDER_PINS[name]}"
                )
    assert BINDER_PINS["ipywidgets"].major == 8 and BINDER_PINS["jupyterlab-widgets"].major == 3


def test_torch_comes_from_the_cpu_index():
    assert "torch" in BINDER_PINS, "torch is not pinned in binder/requirements.txt"
    for name in ("torch", "torchvision"):  # an exact +cpu pin: pip cannot pick the CUDA build by version order
        assert BINDER_PINS[name].local == "cpu", f"{name}=={BINDER_PINS[name]} is not the +cpu build"
    assert f"--extra-index-url {CPU_INDEX}" in BINDER_OPTIONS, f"torch must come from {CPU_INDEX} (CPU-only wheels)"
    assert not any(canonicalize_name(r.name).startswith("nvidia-") for r in BINDER_REQS)


def test_pins_satisfy_pyproject_ranges():
    ranges = _pyproject_ranges()
    bad = [
        f"{name}=={pin} vs {where} {spec}"
        for name, pin in BINDER_PINS.items()
        for where, spec in ranges.get(name, [])
        if not spec.contains(pin, prereleases=True)
    ]
    assert not bad, "Binder pins outside pyproject.toml's ranges: " + "; ".join(bad)
    # and what the installed extras need is pinned, not left to chance
    for extra in ("viz",):
        for text in _pyproject()["project"]["optional-dependencies"][extra]:
            assert canonicalize_name(Requirement(text).name) in BINDER_PINS, f"[{extra}] {text} is not pinned"


def test_pins_equal_the_tested_constraints():
    _, reqs = _requirement_lines(REPO / "requirements" / "constraints.txt")
    tested = _pins(reqs)
    differ = [
        f"{name}: binder {pin}, constraints {tested[name]}"
        for name, pin in BINDER_PINS.items()
        if name in tested and Version(pin.public) != Version(tested[name].public)
    ]  # torch's +cpu aside
    assert not differ, "binder/requirements.txt and requirements/constraints.txt disagree: " + "; ".join(differ)


def test_badge_opens_jupyterlab_on_the_course():
    assert "?urlpath=lab/tree/" in BINDER_URL
    assert (REPO / BINDER_LESSON).is_file(), BINDER_LESSON
    readme = (REPO / "README.md").read_text()
    assert BINDER_URL in readme, f"README.md should carry the Binder badge:\n{BINDER_BADGE}"


# --- the requirement set resolves ------------------------------------------------------------------


def _reachable(url: str, timeout: float = 10) -> bool:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True  # it answered
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _pip_index_answers() -> bool:
    """Whether pip's configured index (PyPI or a mirror) answers."""
    out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    m = re.search(r"^\S*index-url='([^' ]+)", out, re.M)
    index = m.group(1) if m and m.group(1).startswith("http") else "https://pypi.org/simple/"
    return _reachable(index.rstrip("/") + "/pip/")


def _dry_run(requirements: Path, report: Path) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--dry-run",
        "--ignore-installed",
        "--quiet",
        "--disable-pip-version-check",
        "--report",
        str(report),
        "-r",
        str(requirements),
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return json.loads(report.read_text())


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_binder_requirement_set_resolves(tmp_path):
    """``pip install --dry-run`` of binder/requirements.txt with the Python that runs the tests (runtime.txt's
    minor version in CI): it resolves, to exactly the pinned versions, and pulls in nothing that is not pinned
    (setuptools aside: torch asks for a recent one, and the image has its own).

    When download.pytorch.org cannot be reached (CI and this sandbox reach only the package
    registries), torch and torchvision resolve against the default index instead: the same releases
    (``2.14.1`` rather than ``2.14.1+cpu``; their dependencies differ only by the CUDA wheels), so
    the rest of the set is still checked. Skipped only when no package index answers at all.
    """
    cpu_index_ok = _reachable(CPU_INDEX + "/torch/")
    if not cpu_index_ok and not _pip_index_answers():
        pytest.skip("no package index answers (neither download.pytorch.org nor pip's configured index)")
    lines = []
    for raw in (BINDER / "requirements.txt").read_text().splitlines():
        line = raw.strip()
        if line.startswith("--extra-index-url") and CPU_INDEX in line and not cpu_index_ok:
            continue
        if not cpu_index_ok:
            line = re.sub(r"^([\w.-]+==[^\s#+]+)\+cpu\b", r"\1", line)  # the same release from the default index
        lines.append(line)
    copy = tmp_path / "requirements.txt"
    copy.write_text("\n".join(lines) + "\n")
    report = _dry_run(copy, tmp_path / "report.json")
    resolved = {
        canonicalize_name(item["metadata"]["name"]): Version(item["metadata"]["version"]) for item in report["install"]
    }
    for name, pin in BINDER_PINS.items():
        assert name in resolved and Version(resolved[name].public) == Version(pin.public), (
            f"{name}: pinned {pin}, resolved {resolved.get(name)}"
        )
    cuda_only = ("nvidia-", "cuda-", "triton")  # the CUDA build's extra dependencies (default index only)
    unpinned = [
        f"{name}=={version}"
        for name, version in resolved.items()
        if name not in BINDER_PINS and name != "setuptools" and (cpu_index_ok or not name.startswith(cuda_only))
    ]
    assert not unpinned, f"binder/requirements.txt leaves these to chance: {unpinned}"
    if cpu_index_ok:
        assert resolved["torch"].local == "cpu", f"torch resolved to {resolved['torch']}, not the CPU build"
        assert not [n for n in resolved if n.startswith("nvidia-")], "CUDA wheels in the Binder environment"
