"""A copy of the working tree as a clone would hold it, for the fresh-environment tests (``from _clone import ...``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: never copied: the developer's environment, build outputs and caches
NOT_COPIED = {".git", ".venv", "build", "dist", "__pycache__", ".pytest_cache", ".ipynb_checkpoints", ".hypothesis"}


def repository_files() -> list[Path]:
    """What a clone of this working tree holds: the files git tracks or would track (ignored ones left out)."""
    git = shutil.which("git")
    if git is not None and (REPO / ".git").exists():
        listed = subprocess.run(
            [git, "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=REPO,
            capture_output=True,
            check=True,
        ).stdout.decode()
        names = sorted({name for name in listed.split("\0") if name})
    else:  # a source tree without git: everything but the environment and the build outputs
        names = [str(p.relative_to(REPO)) for p in REPO.rglob("*") if p.is_file()]
    return [Path(n) for n in names if not NOT_COPIED & set(Path(n).parts) and (REPO / n).is_file()]


def copy_repository(target: Path) -> None:
    """Copy :func:`repository_files` into ``target`` (``copy2``: postBuild keeps its executable bit)."""
    for relative in repository_files():
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / relative, target / relative)
