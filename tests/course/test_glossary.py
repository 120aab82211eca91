"""course/glossary.md and course/instructor_guide.md must keep up with the lessons, the widgets and the CLI.

These tests fail when a lesson, a slider or a command-line option is added (or renamed) and the course documents
were not updated:

1. every Greek letter (LaTeX ``\\beta`` or Unicode β) in any notebook's Markdown is in the glossary;
2. every lesson of course/syllabus.yaml is in the glossary's lesson columns or the instructor guide's lesson map;
3. every widget label (``description=``) in course/panels/ is in the glossary, verbatim;
4. every ``dro-course run`` option the instructor guide names exists in ``dro_course.cli.build_parser()``;
5. every notebook parameter the glossary names (its "parameter" columns) exists in some lesson's parameters cell.

Notebooks are globbed (notebooks/*.ipynb), so a new lesson is covered without editing this file.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GLOSSARY = ROOT / "course" / "glossary.md"
GUIDE = ROOT / "course" / "instructor_guide.md"
#: the panels: the shared ones and those a lesson keeps in its own package
PANEL_SOURCES = [*(ROOT / "course" / "panels").glob("*.py"), *(ROOT / "course" / "lessons").glob("*/panels.py")]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

#: LaTeX command -> the Unicode letter it prints (variants map to the plain letter).
LATEX_GREEK = {
    "alpha": "α",
    "beta": "β",
    "gamma": "γ",
    "delta": "δ",
    "epsilon": "ε",
    "varepsilon": "ε",
    "zeta": "ζ",
    "eta": "η",
    "theta": "θ",
    "vartheta": "θ",
    "iota": "ι",
    "kappa": "κ",
    "lambda": "λ",
    "mu": "μ",
    "nu": "ν",
    "xi": "ξ",
    "pi": "π",
    "varpi": "π",
    "rho": "ρ",
    "varrho": "ρ",
    "sigma": "σ",
    "varsigma": "σ",
    "tau": "τ",
    "upsilon": "υ",
    "phi": "φ",
    "varphi": "φ",
    "chi": "χ",
    "psi": "ψ",
    "omega": "ω",
    "Gamma": "Γ",
    "Delta": "Δ",
    "Theta": "Θ",
    "Lambda": "Λ",
    "Xi": "Ξ",
    "Pi": "Π",
    "Sigma": "Σ",
    "Upsilon": "Υ",
    "Phi": "Φ",
    "Psi": "Ψ",
    "Omega": "Ω",
}
#: Unicode variant forms -> the plain letter.
UNICODE_VARIANTS = {"ϵ": "ε", "ϑ": "θ", "ϕ": "φ", "ϱ": "ρ", "ς": "σ", "ϖ": "π"}
_GREEK_CHAR = re.compile("[\u0391-\u03a9\u03b1-\u03c9\u03d1\u03d5\u03d6\u03f1\u03f5]")
_LATEX_CMD = re.compile(r"\\([A-Za-z]+)")


def _read(path: Path) -> str:
    if not path.is_file():
        pytest.fail(f"{path.relative_to(ROOT)} is missing")
    return path.read_text(encoding="utf-8")


def _notebook(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _markdown(path: Path) -> str:
    return "\n".join("".join(c["source"]) for c in _notebook(path)["cells"] if c["cell_type"] == "markdown")


def _parameters(path: Path) -> set[str]:
    """Names assigned in the notebook's cell tagged ``parameters``."""
    names: set[str] = set()
    for cell in _notebook(path)["cells"]:
        if cell["cell_type"] == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            for node in ast.parse("".join(cell["source"])).body:
                targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
                names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def _greek_letters(text: str) -> set[str]:
    letters = {UNICODE_VARIANTS.get(ch, ch) for ch in _GREEK_CHAR.findall(text)}
    letters |= {LATEX_GREEK[name] for name in _LATEX_CMD.findall(text) if name in LATEX_GREEK}
    return letters


def _split_row(line: str) -> list[str]:
    """Cells of a Markdown table row (``\\|`` is an escaped pipe, not a separator)."""
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def _tables(text: str) -> list[list[list[str]]]:
    """Every Markdown table as a list of rows (header first, the --- row dropped)."""
    tables, current = [], []
    for line in text.splitlines() + [""]:
        if line.lstrip().startswith("|"):
            row = _split_row(line)
            if not all(re.fullmatch(r":?-{3,}:?", c) for c in row):
                current.append(row)
        elif current:
            tables.append(current)
            current = []
    return tables


def _column(text: str, header: str) -> list[str]:
    """The cells under every table column whose header is exactly ``header``."""
    cells = []
    for table in _tables(text):
        for j, name in enumerate(table[0]):
            if name.strip("* ").lower() == header:
                cells.extend(row[j] for row in table[1:] if j < len(row))
    return cells


def _section(text: str, heading: str) -> str:
    """The text of the ``## heading`` section, up to the next ``## `` heading."""
    match = re.search(rf"^## {re.escape(heading)}\s*$(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    return match.group(1) if match else ""


def test_notebooks_found():
    assert NOTEBOOKS, "no notebooks/*.ipynb found"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_greek_letter_of_the_lessons_is_in_the_glossary(notebook):
    glossary = _read(GLOSSARY)
    known = _greek_letters(glossary)
    missing = sorted(_greek_letters(_markdown(notebook)) - known)
    assert not missing, (
        f"{notebook.name} uses {', '.join(missing)} in its Markdown, but course/glossary.md does not define "
        f"{'it' if len(missing) == 1 else 'them'}: add a row (meaning, parameter, widget, lessons, each paper's name)"
    )


def test_every_lesson_is_in_the_glossary_or_the_lesson_map():
    from dro_course import load_syllabus

    syllabus = load_syllabus(ROOT / "course" / "syllabus.yaml", check_notebooks=False)
    lesson_map = _section(_read(GUIDE), "Lesson map")
    assert lesson_map, "course/instructor_guide.md has no '## Lesson map' section"
    numbers: set[str] = set()
    for cell in _column(_read(GLOSSARY), "lessons"):
        for a, b in re.findall(r"\b(\d{2})\s*[–-]\s*(\d{2})\b", cell):
            numbers.update(f"{k:02d}" for k in range(int(a), int(b) + 1))
        numbers.update(re.findall(r"\b\d{2}\b", cell))
    missing = [lid for lid in syllabus.ids if lid not in lesson_map and lid.split("_")[0] not in numbers]
    assert not missing, (
        f"lessons {missing} are in course/syllabus.yaml but neither in the instructor guide's lesson map "
        "nor in any 'lessons' column of the glossary"
    )


def _widget_labels() -> set[str]:
    labels: set[str] = set()
    sources = sorted(PANEL_SOURCES)
    nodes = [node for path in sources for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))]
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            positional = node.args.posonlyargs + node.args.args
            pairs = list(zip(positional[len(positional) - len(node.args.defaults) :], node.args.defaults))
            pairs += list(zip(node.args.kwonlyargs, node.args.kw_defaults))
            for arg, default in pairs:
                if arg.arg == "description" and isinstance(default, ast.Constant) and isinstance(default.value, str):
                    labels.add(default.value)
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("Button", "SelectMultiple", "Select", "Dropdown"):  # "Run", "methods": not symbols
                continue
            for kw in node.keywords:
                if kw.arg == "description" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                    labels.add(kw.value.value)
    return labels


def test_every_widget_label_is_in_the_glossary():
    labels = _widget_labels()
    assert labels, "found no description= labels in course/panels/"
    glossary = _read(GLOSSARY)
    missing = sorted(label for label in labels if label not in glossary)
    assert not missing, f"widget labels not in course/glossary.md (verbatim, in a 'widget' column): {missing}"


def _run_parser() -> argparse.ArgumentParser:
    from dro_course.cli import build_parser

    def sub(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction) and name in action.choices:
                return action.choices[name]
        raise AssertionError(f"dro-course has no {name!r} subcommand")

    return sub(build_parser(), "run")


def _guide_options(text: str) -> set[str]:
    """Options of ``dro-course run`` in the guide: on command lines, and in inline code that starts with -."""
    fragments = []
    for line in text.splitlines():
        if "dro-course run" in line:
            fragments.append(line.split("dro-course run", 1)[1].split(" #")[0].split("`")[0])
    fragments += [span for span in re.findall(r"`([^`\n]+)`", text) if span.lstrip().startswith("-")]
    options = set()
    for fragment in fragments:
        options.update(tok.split("=")[0] for tok in fragment.split() if re.fullmatch(r"--?[A-Za-z][\w-]*(=.*)?", tok))
    return options


def test_every_cli_option_in_the_instructor_guide_exists():
    guide_options = _guide_options(_read(GUIDE))
    assert {"--preset", "--out", "--only", "-p"} <= guide_options, "the guide's command lines were not found"
    known = set(_run_parser()._option_string_actions)
    missing = sorted(guide_options - known)
    assert not missing, (
        f"course/instructor_guide.md names `dro-course run` options that dro_course.cli does not have: {missing} "
        f"(it has {sorted(known)})"
    )


def test_every_parameter_named_in_the_glossary_exists_in_a_lesson():
    declared = set().union(*(_parameters(nb) for nb in NOTEBOOKS))
    assert declared, "no parameters cells found"
    cells = _column(_read(GLOSSARY), "parameter")
    assert cells, "course/glossary.md has no table with a 'parameter' column"
    named = {name for cell in cells for name in re.findall(r"`([^`]+)`", cell)}
    bad_syntax = sorted(name for name in named if not name.isidentifier())
    assert not bad_syntax, f"'parameter' cells must hold only notebook parameter names in backticks: {bad_syntax}"
    missing = sorted(named - declared)
    assert not missing, f"course/glossary.md names parameters no lesson declares: {missing}"


# --------------------------------------------------------------------------------------------
# The terms a student meets: each defined in the glossary's last section
# --------------------------------------------------------------------------------------------

#: Every term the lessons use without defining it where they use it, and the terms the course names in passing
#: (methods, theorems, tools). A lesson that brings a new one adds it here and to the glossary's "Terms" table.
TERMS = (
    "ADA (adversarial data augmentation)",
    "Adam",
    "AdamW",
    "adversarial training (AT)",
    "AutoAttack",
    "Ax",
    "balanced accuracy",
    "Bayesian optimisation (BO)",
    "Bernstein's inequality",
    "BFGS and L-BFGS",
    "bilevel optimisation",
    "bisection",
    "Cauchy–Schwarz inequality",
    "Chernoff bound",
    "CID (compositional implicit differentiation)",
    "CIFAR-10",
    "class-balanced weights",
    "companion matrix",
    "complementary slackness",
    "compositional optimisation",
    "control variate",
    "convex conjugate",
    "coupling",
    "CutMix",
    "Cutout",
    "CVaR",
    "Danskin's theorem (envelope theorem)",
    "Dirichlet split (non-IID)",
    "DRAGO",
    "DRO",
    "duality gap",
    "effective sample size (ESS)",
    "ERM",
    "Euclidean projection onto the simplex",
    "expected validation performance",
    "exponentiated gradient (multiplicative weights)",
    "extragradient",
    "Fashion-MNIST",
    "Fast-BAT",
    "FastDRO",
    "FGSM",
    "finite differences",
    "FLOPs",
    "GAIRAT",
    "Gaussian process (GP)",
    "geometric mean",
    "Gershgorin's theorem",
    "ghost norm",
    "gradient descent–ascent (GDA)",
    "Gram matrix",
    "group DRO",
    "heavy-tailed",
    "Hessian",
    "Hessian-vector product",
    "HiGHS",
    "Hoeffding's lemma",
    "Holm correction",
    "ImageNet",
    "imbalance ratio",
    "implicit differentiation",
    "importance sampling",
    "instance-reweighted adversarial training",
    "inverse temperature",
    "Jacobian",
    "Jensen's inequality",
    "KKT conditions",
    "KL divergence",
    "KL-DRO",
    "Kronecker delta",
    "label smoothing",
    "Lagrange multiplier (Lagrangian)",
    "linear convergence",
    "linear programme",
    "Lipschitz constant",
    "log-barrier",
    "log-mean-exp",
    "macro-F1",
    "Madry's rule",
    "MAIL",
    "Matérn-5/2 kernel",
    "McDiarmid's inequality",
    "mean–variance expansion",
    "measurable selection",
    "minority class",
    "min–max problem",
    "mirror descent",
    "Mirror-Prox",
    "Mixup",
    "MLP-PLR",
    "MNIST",
    "Monte-Carlo estimate",
    "nats",
    "negative association",
    "Newton's method",
    "OHEM",
    "one-cycle learning rate",
    "online group DRO",
    "optimism (optimistic gradient)",
    "Optimistic Mirror-Prox",
    "Optuna",
    "paired seeds",
    "papermill",
    "PGD",
    "Pinsker's inequality",
    "prioritised experience replay (PER)",
    "probability simplex",
    "proximal step (prox)",
    "random search",
    "RECOVER",
    "ResNet-18",
    "RMSProp",
    "ROC-AUC",
    "saddle point",
    "SCGD",
    "scikit-learn digits",
    "selection bias",
    "SLSQP",
    "spectral radius",
    "Spectral Risk",
    "standard error",
    "Static Weights",
    "strong convexity (strong concavity)",
    "strongly monotone",
    "t-interval",
    "TabReD / TabM",
    "top-1 accuracy",
    "total variation distance",
    "TPE",
    "unbiased estimate",
    "uncertainty set",
    "underflow",
    "union bound",
    "Upsampling",
    "vmap (torch.func)",
    "Wasserstein distance",
    "weak duality",
    "Welch's t-interval",
    "worst-group accuracy",
    "WRM",
    "WRN-16-1",
    "φ-divergence (f-divergence)",
    "χ² divergence",
    "ℓ∞ ball",
)


def _terms_table() -> list[list[str]]:
    section = GLOSSARY.read_text(encoding="utf-8").split("## 7. Terms", 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| term |")]
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows]


def test_the_glossary_defines_every_term_of_the_list_and_no_other():
    rows = _terms_table()
    assert [row[0] for row in rows] == list(TERMS)
    for term, meaning, lessons in rows:
        assert len(meaning.split()) >= 8, f"{term}: define it in a sentence or two"
        assert not re.search(r"\b(spec|pitfall)s?\b", meaning, re.IGNORECASE), term
        assert re.fullmatch(r"0[0-7](, 0[0-7])*", lessons), f"{term}: lessons as 00, 05"


def test_the_terms_a_student_asked_about_are_defined():
    asked = (
        "SLSQP",
        "OHEM",
        "GAIRAT",
        "MAIL",
        "AutoAttack",
        "Danskin's theorem (envelope theorem)",
        "Jensen's inequality",
        "bilevel optimisation",
        "compositional optimisation",
        "implicit differentiation",
        "Hessian-vector product",
        "SCGD",
        "Fast-BAT",
        "Madry's rule",
        "WRN-16-1",
        "nats",
        "t-interval",
    )
    missing = [term for term in asked if term not in TERMS]
    assert not missing, missing
