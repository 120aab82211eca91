"""The shape of the house: sizes a reader can hold, imports that go one way, lint, and what docstrings cite.

* no module of ``dro_lab`` or ``dro_course`` over :data:`MAX_MODULE_LINES` lines and no function over
  :data:`MAX_FUNCTION_LINES` lines of code (docstring, blank and comment lines excluded), unless :data:`ALLOWED`
  names it with a reason;
* the import-linter contracts of ``pyproject.toml`` hold (the library imports neither the course nor the notebook
  stack; each package's layers; the lessons' modules independent of each other), and no module imports another
  of the house inside a function unless it says why;
* ``ruff check`` and ``ruff format --check`` are clean;
* docstrings and comments cite the papers, never documents the reader does not have ("spec", "pitfall N"), and
  carry no frozen timing tables (`dro-lab bench` measures speed).
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = (REPO / "dro_lab", REPO / "course")  # the library and the course (import package dro_course)
HOUSE = ("dro_lab", "dro_course")  # the import packages
LINTED = ["dro_lab", "course", "tests", "setup.py"]
MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 80

#: ``"path:function"`` or ``"path"`` -> the one-line reason it may exceed its limit.
ALLOWED: dict[str, str] = {}


def _modules() -> list[Path]:
    return sorted(path for package in PACKAGES for path in package.rglob("*.py"))


def _code_lines(node: ast.AST, lines: list[str]) -> int:
    """Lines of code of a function: its body without the docstring, blank lines and comment lines."""
    body = node.body
    start = body[0].lineno
    if (
        isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        start = body[0].end_lineno + 1
    return sum(1 for line in lines[start - 1 : node.end_lineno] if line.strip() and not line.strip().startswith("#"))


def _function_sizes() -> dict[str, int]:
    sizes = {}
    for path in _modules():
        text = path.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                sizes[f"{path.relative_to(REPO)}:{node.name}:{node.lineno}"] = _code_lines(node, lines)
    return sizes


def test_no_module_is_longer_than_a_reader_can_hold():
    long = {
        str(p.relative_to(REPO)): n
        for p in _modules()
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES and str(p.relative_to(REPO)) not in ALLOWED
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them, or allow one with a reason): {long}"


def test_no_function_is_longer_than_a_reader_can_hold():
    long = {
        where: n
        for where, n in _function_sizes().items()
        if n > MAX_FUNCTION_LINES and where.rsplit(":", 1)[0] not in ALLOWED
    }
    assert not long, f"functions over {MAX_FUNCTION_LINES} code lines: {long}"


def test_the_size_counter_counts_code_only():
    source = 'def f(x):\n    """Doc\n\n    more doc."""\n    # a comment\n\n    y = x\n    return y\n'
    node = ast.parse(source).body[0]
    assert _code_lines(node, source.splitlines()) == 2


def _tool(name: str) -> str:
    path = Path(sys.executable).parent / name
    found = str(path) if path.exists() else shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[test]')")
    return found


def test_imports_go_one_way():
    result = subprocess.run([_tool("lint-imports")], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "4 kept, 0 broken" in result.stdout


def _function_level_library_imports() -> list[str]:
    """``path:line`` of each import of a dro_lab module made inside a function without a comment on that line."""
    found = []
    for path in _modules():
        text = path.read_text()
        lines = text.splitlines()
        for func in ast.walk(ast.parse(text)):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                internal = (
                    isinstance(node, ast.ImportFrom)
                    and (node.level > 0 or (node.module or "").startswith(("dro_lab", "dro_course")))
                ) or (
                    isinstance(node, ast.Import)
                    and any(a.name.startswith(("dro_lab", "dro_course")) for a in node.names)
                )
                if internal and "#" not in lines[node.lineno - 1]:
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    return sorted(set(found))


def test_library_imports_inside_functions_say_why():
    """An import of another dro_lab module inside a function (start-up time of the command line, an optional
    dependency behind it) carries a comment that says why; all others sit at the top of the module."""
    assert not _function_level_library_imports()


def test_ruff_is_clean():
    ruff = _tool("ruff")
    check = subprocess.run([ruff, "check", *LINTED], cwd=REPO, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout[-4000:]
    fmt = subprocess.run([ruff, "format", "--check", *LINTED], cwd=REPO, capture_output=True, text=True)
    assert fmt.returncode == 0, fmt.stdout[-4000:]


_ELSEWHERE = re.compile(r"\bspec\b|\bspec's\b|\bpitfall\b|the notes\b|developer notes", re.IGNORECASE)


def _prose(path: Path):
    """``(line, text)`` of every comment and string literal (docstrings, messages) of a module: not its code."""
    with tokenize.open(path) as handle:
        for tok in tokenize.generate_tokens(handle.readline):
            if tok.type in (tokenize.COMMENT, tokenize.STRING):  # an f-string's {fields} are code, not prose
                yield tok.start[0], re.sub(r"\{[^{}]*\}", "", tok.string)


def test_the_library_cites_papers_not_documents_the_reader_lacks():
    hits = [
        f"{p.relative_to(REPO)}:{line}: {text.strip()[:90]}"
        for p in _modules()
        for line, text in _prose(p)
        if _ELSEWHERE.search(text)
    ]
    assert not hits, "cite the paper (section, equation) instead:\n" + "\n".join(hits[:40])


_TIMINGS = re.compile(r"\bMEASURED\b|\bmedian (ms|s)\b|\bms per (call|step|epoch)\b|\bs per epoch on\b")


def test_no_frozen_timing_tables_in_docstrings():
    """Speed claims are measured by ``dro-lab bench`` on the reader's machine, not copied into docstrings."""
    hits = [f"{p.relative_to(REPO)}:{line}" for p in _modules() for line, text in _prose(p) if _TIMINGS.search(text)]
    assert not hits, hits


def test_library_code_never_chooses_cuda_itself():
    hits = [
        f"{p.relative_to(REPO)}:{i}"
        for p in _modules()
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if ".cuda(" in line and not line.strip().startswith("#")
    ]
    assert not hits, hits
