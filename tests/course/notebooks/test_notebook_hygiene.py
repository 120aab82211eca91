"""The lesson notebooks are stored clean and fit the course runner.

For every ``notebooks/*.ipynb``: valid nbformat; no outputs, execution counts or widget state; exactly
one cell tagged ``parameters`` holding only literal assignments (papermill does not recompute derived
values); a ``python3`` kernelspec (papermill needs it); and the syllabus and the notebooks agree both
ways: every preset parameter is declared by its notebook (papermill only *warns* about unknown
parameters, so a typo would pass silently), every declared parameter has a check in the syllabus, and
every preset default names a parameter the notebook leaves None.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
import pytest

from dro_course import load_syllabus

REPO = Path(__file__).resolve().parents[3]
NOTEBOOK_DIR = REPO / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
SYLLABUS = load_syllabus(REPO / "course" / "syllabus.yaml", check_notebooks=False)
NO_NOTEBOOKS = pytest.mark.skipif(not NOTEBOOKS, reason="no notebooks/*.ipynb written yet")
# Cell metadata nbstripout drops because it changes on every run.
VOLATILE_CELL_METADATA = {"ExecuteTime", "execution"}

each_notebook = pytest.mark.parametrize(
    "path", NOTEBOOKS or [pytest.param(None, marks=NO_NOTEBOOKS)], ids=lambda p: p.name if p else "none"
)


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(str(path), as_version=nbformat.NO_CONVERT)


def parameter_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]


@each_notebook
def test_valid_nbformat_v4(path):
    nb = read(path)
    assert nb.nbformat == 4
    nbformat.validate(nb)


@each_notebook
def test_stored_without_outputs_counts_or_widget_state(path):
    nb = read(path)
    dirty = [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count") is not None)
    ]
    assert not dirty, f"{path.name}: cells {dirty} have outputs or execution counts; strip them (nbstripout)"
    assert "widgets" not in nb.metadata, f"{path.name}: metadata.widgets must not be committed"
    volatile = [i for i, cell in enumerate(nb.cells) if VOLATILE_CELL_METADATA & set(cell.get("metadata", {}))]
    assert not volatile, f"{path.name}: cells {volatile} carry execution timing metadata"
    # A committed papermill output would carry its injected cell, error markers or run metadata.
    tags = {tag for cell in nb.cells for tag in cell.get("metadata", {}).get("tags", [])}
    assert not tags & {"injected-parameters", "papermill-error-cell-tag"}, f"{path.name}: papermill output committed"
    assert "papermill" not in nb.metadata, f"{path.name}: papermill run metadata committed"


@each_notebook
def test_one_parameters_cell_with_literal_assignments_only(path):
    cells = parameter_cells(read(path))
    assert len(cells) == 1, f"{path.name}: expected exactly one cell tagged 'parameters', found {len(cells)}"
    cell = cells[0]
    assert cell.cell_type == "code"
    tree = ast.parse(cell.source)
    assert tree.body, f"{path.name}: the parameters cell is empty"
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets, value = [statement.target], statement.value  # `epochs: int = 3` (papermill reads the hint)
        else:
            pytest.fail(f"{path.name}: line {statement.lineno} of the parameters cell is not `name = literal`")
        assert len(targets) == 1 and isinstance(targets[0], ast.Name), (
            f"{path.name}: line {statement.lineno}: assign one plain name per line"
        )
        try:
            ast.literal_eval(value)
        except ValueError:
            pytest.fail(
                f"{path.name}: `{targets[0].id}` in the parameters cell is not a literal; "
                "compute derived values in the next cell (papermill does not recompute them)"
            )


@each_notebook
def test_common_parameters_declared(path):
    names = set()
    for statement in ast.parse(parameter_cells(read(path))[0].source).body:
        target = statement.targets[0] if isinstance(statement, ast.Assign) else statement.target
        names.add(target.id)
    missing = {"preset", "seed", "device"} - names
    assert not missing, f"{path.name}: the parameters cell must declare {sorted(missing)}"


@each_notebook
def test_python3_kernelspec(path):
    kernelspec = read(path).metadata.get("kernelspec", {})
    assert kernelspec.get("name") == "python3", f"{path.name}: kernelspec.name must be 'python3', got {kernelspec!r}"
    assert kernelspec.get("language", "python") == "python"


@NO_NOTEBOOKS
def test_every_notebook_is_in_the_syllabus_and_every_lesson_exists():
    in_syllabus = {lesson.notebook for lesson in SYLLABUS}
    on_disk = {path.resolve() for path in NOTEBOOKS}
    assert not on_disk - in_syllabus, f"notebooks missing from course/syllabus.yaml: {sorted(on_disk - in_syllabus)}"
    assert not in_syllabus - on_disk, f"syllabus lessons without a notebook: {sorted(in_syllabus - on_disk)}"
    load_syllabus(SYLLABUS.path)  # the full validation, notebooks included


@NO_NOTEBOOKS
@pytest.mark.parametrize("lesson", SYLLABUS.lessons, ids=SYLLABUS.ids)
def test_preset_parameters_are_declared_by_the_notebook(lesson):
    if not lesson.notebook.is_file():
        pytest.skip(f"{lesson.notebook_relpath} is not written yet (reported by the test above)")
    from dro_course import notebook_parameters  # papermill.inspect_notebook misses `x = 1  # a = b` lines

    declared = notebook_parameters(lesson.notebook)
    for preset in SYLLABUS.presets:
        unknown = set(lesson.parameters(preset)) - declared
        assert not unknown, (
            f"{lesson.id}: preset {preset!r} passes {sorted(unknown)}, which {lesson.notebook_relpath} "
            f"does not declare (declared: {sorted(declared)})"
        )


@NO_NOTEBOOKS
@pytest.mark.parametrize("lesson", SYLLABUS.lessons, ids=SYLLABUS.ids)
def test_every_assignment_of_the_parameters_cell_is_a_declared_parameter(lesson):
    """`notebook_parameters` (what `-p` / `--sweep` may set) sees every `name = ...` line of the cell, also the
    lines whose comment holds an `=` that papermill's own reader drops."""
    import re

    import nbformat

    from dro_course import notebook_parameters

    nb = nbformat.read(str(lesson.notebook), as_version=4)
    (cell,) = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assigned = set(re.findall(r"^([A-Za-z_]\w*)\s*=", cell.source, flags=re.M))
    assert assigned and notebook_parameters(lesson.notebook) == assigned


def parameter_literals(notebook: Path) -> dict[str, object]:
    """The parameters cell as name -> value (its assignments are literals, see the test above)."""
    values = {}
    for statement in ast.parse(parameter_cells(read(notebook))[0].source).body:
        target = statement.targets[0] if isinstance(statement, ast.Assign) else statement.target
        values[target.id] = ast.literal_eval(statement.value)
    return values


@NO_NOTEBOOKS
@pytest.mark.parametrize("lesson", SYLLABUS.lessons, ids=SYLLABUS.ids)
def test_every_declared_parameter_has_a_check_in_the_syllabus(lesson):
    """`setup_lesson` checks what the syllabus lists: a parameter without a check would pass unchecked
    (it refuses to run then), a check of an undeclared name is a typo."""
    if not lesson.notebook.is_file():
        pytest.skip(f"{lesson.notebook_relpath} is not written yet")
    declared = set(parameter_literals(lesson.notebook))
    unchecked = sorted(declared - set(lesson.checks) - {"preset"})
    assert not unchecked, f"{lesson.id}: add checks for {unchecked} to the lesson in course/syllabus.yaml"
    undeclared = sorted(set(lesson.checks) - declared)
    assert not undeclared, f"{lesson.id}: the syllabus checks {undeclared}, which {lesson.notebook_relpath} lacks"


@NO_NOTEBOOKS
@pytest.mark.parametrize("lesson", SYLLABUS.lessons, ids=SYLLABUS.ids)
def test_every_preset_default_names_a_declared_parameter_left_none(lesson):
    """A default applies to a parameter the notebook leaves None; one for any other name never applies."""
    if not lesson.notebook.is_file():
        pytest.skip(f"{lesson.notebook_relpath} is not written yet")
    literals = parameter_literals(lesson.notebook)
    for preset, values in lesson.defaults.items():
        undeclared = sorted(set(values) - set(literals))
        assert not undeclared, f"{lesson.id}: defaults[{preset!r}] name {undeclared}, not declared by the notebook"
        given = sorted(name for name in values if literals[name] is not None)
        assert not given, f"{lesson.id}: defaults[{preset!r}] set {given}, which the notebook does not leave None"


@NO_NOTEBOOKS
@pytest.mark.parametrize("lesson", SYLLABUS.lessons, ids=SYLLABUS.ids)
def test_a_parameter_left_none_gets_a_value_from_every_preset_or_accepts_none(lesson):
    if not lesson.notebook.is_file():
        pytest.skip(f"{lesson.notebook_relpath} is not written yet")
    for name, value in parameter_literals(lesson.notebook).items():
        if value is None and not lesson.checks.get(name, {}).get("none_ok"):
            lacking = [p for p in SYLLABUS.presets if name not in lesson.defaults.get(p, {})]
            assert not lacking, f"{lesson.id}: {name} = None has no default for preset(s) {lacking} and refuses None"
