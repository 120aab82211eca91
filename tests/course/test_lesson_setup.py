"""dro_course.setup_lesson, the one set-up call of every lesson, and the syllabus's ``checks`` and
``defaults`` it applies: on hand-built syllabi (None filled from the preset, the environment's preset
winning, a bad value named, the namespace updated, seeds and device derived) and on the real lessons
(every preset of every lesson sets up with the values its parameters cell holds)."""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
import pytest
import torch

from dro_course import PRESET_ENV, LessonSetup, SyllabusError, load_syllabus, setup_lesson

REPO = Path(__file__).resolve().parents[2]

PARAMETERS = """\
preset = "smoke"
seed = 3
device = "cpu"
epochs = None
n_seeds = None
betas = None
method = "a"
"""

SYLLABUS = """\
title: Set-up course
presets: [smoke, full]
lessons:
  - id: toy
    title: A toy lesson
    notebook: src/toy.ipynb
    checks:
      seed: {kind: int, low: 0}
      device: {kind: str}
      epochs: {kind: int, low: 1}
      n_seeds: {kind: int, low: 1}
      betas: {kind: number, low: 0, low_open: true, each: true}
      method: {kind: str}
    defaults:
      smoke: {epochs: 2, n_seeds: 2, betas: [1.0, 10.0]}
      full: {epochs: 20, n_seeds: 5, betas: [0.1, 1.0, 10.0]}
"""


def make_lesson(root: Path, parameters: str = PARAMETERS, syllabus: str = SYLLABUS) -> Path:
    """``root/src/toy.ipynb`` (a parameters cell and nothing else) and ``root/course/syllabus.yaml``."""
    (root / "src").mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(parameters, metadata={"tags": ["parameters"]})]
    nbformat.write(nb, str(root / "src" / "toy.ipynb"))
    (root / "course").mkdir(exist_ok=True)
    path = root / "course" / "syllabus.yaml"
    path.write_text(syllabus, encoding="utf-8")
    return path


def namespace_of(parameters: str = PARAMETERS) -> dict:
    """The variables the parameters cell defines, as ``globals()`` would hold them."""
    names: dict = {}
    exec(parameters, {}, names)
    return names


@pytest.fixture
def toy(tmp_path, monkeypatch):
    monkeypatch.delenv(PRESET_ENV, raising=False)
    return make_lesson(tmp_path)


def test_none_is_filled_from_the_preset_and_the_namespace_updated(toy, capsys):
    names = namespace_of()
    setup = setup_lesson("toy", names, syllabus=toy)
    assert isinstance(setup, LessonSetup) and setup.preset == "smoke" and not setup.preset_from_env
    assert names["epochs"] == 2 and names["n_seeds"] == 2 and names["betas"] == [1.0, 10.0]
    assert names["method"] == "a" and names["seed"] == 3
    assert setup.from_preset == ("epochs", "n_seeds", "betas")
    assert setup["epochs"] == 2 and "seeds" in setup
    with pytest.raises(TypeError):
        setup.values["epochs"] = 3  # read-only
    line = capsys.readouterr().out
    assert line.count("\n") == 1 and "toy: preset smoke" in line and "epochs=2" in line and "seeds [3, 4]" in line


def test_seeds_and_device_are_derived(toy):
    names = namespace_of()
    setup_lesson("toy", names, syllabus=toy)
    assert names["seeds"] == [3, 4]
    assert names["device"] == torch.device("cpu")
    names = namespace_of(PARAMETERS.replace('device = "cpu"', 'device = "auto"'))
    setup_lesson("toy", names, syllabus=toy)
    assert names["device"].type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_a_given_value_is_kept(toy):
    names = namespace_of(PARAMETERS.replace("epochs = None", "epochs = 7"))
    setup = setup_lesson("toy", names, syllabus=toy)
    assert names["epochs"] == 7 and "epochs" not in setup.from_preset


def test_the_environment_preset_wins(toy, monkeypatch, capsys):
    monkeypatch.setenv(PRESET_ENV, "full")
    names = namespace_of()
    setup = setup_lesson("toy", names, syllabus=toy)
    assert setup.preset == names["preset"] == "full" and setup.preset_from_env
    assert names["epochs"] == 20 and names["seeds"] == [3, 4, 5, 6, 7]
    assert f"preset full (from {PRESET_ENV})" in capsys.readouterr().out


def test_the_defaults_are_copied(toy):
    names = namespace_of()
    setup_lesson("toy", names, syllabus=toy)
    names["betas"].append(100.0)
    again = namespace_of()
    setup_lesson("toy", again, syllabus=toy)
    assert again["betas"] == [1.0, 10.0]


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("epochs = None", "epochs = 0", "Invalid parameter epochs=0: expected an integer ≥ 1"),
        ("seed = 3", "seed = -1", "Invalid parameter seed=-1: expected an integer ≥ 0"),
        ("betas = None", "betas = [1.0, -2.0]", "Invalid parameter betas=[1.0, -2.0]: expected a non-empty list"),
        ('preset = "smoke"', 'preset = "huge"', "Invalid parameter preset='huge': expected one of 'smoke', 'full'"),
        ('device = "cpu"', 'device = "tpu"', "Invalid parameter device='tpu'"),
        ('method = "a"', "method = 3", "Invalid parameter method=3: expected a string"),
    ],
)
def test_a_bad_value_stops_with_its_name(toy, old, new, message):
    names = namespace_of(PARAMETERS.replace(old, new))
    with pytest.raises(ValueError) as info:
        setup_lesson("toy", names, syllabus=toy)
    assert message in str(info.value)


def test_choices_known_at_run_time(toy):
    names = namespace_of()
    setup_lesson("toy", names, syllabus=toy, choices={"method": ["a", "b"]})
    with pytest.raises(ValueError, match=r"Invalid parameter method='c': expected one of 'a', 'b'"):
        setup_lesson("toy", namespace_of(PARAMETERS.replace('"a"', '"c"')), syllabus=toy, choices={"method": "ab"})
    with pytest.raises(ValueError, match=r"choices given for \['nope'\]"):
        setup_lesson("toy", namespace_of(), syllabus=toy, choices={"nope": [1]})


def test_a_declared_parameter_without_a_check_is_an_error(tmp_path, monkeypatch):
    monkeypatch.delenv(PRESET_ENV, raising=False)
    path = make_lesson(tmp_path, PARAMETERS + "extra = 1\n")
    with pytest.raises(ValueError, match=r"\['extra'\] of toy.ipynb have no entry under the lesson's checks"):
        setup_lesson("toy", namespace_of(PARAMETERS + "extra = 1\n"), syllabus=path)


def test_a_parameter_missing_from_the_namespace(toy):
    names = namespace_of()
    del names["epochs"]
    with pytest.raises(NameError, match=r"\['epochs'\] are not defined"):
        setup_lesson("toy", names, syllabus=toy)


@pytest.mark.parametrize(
    "old, new, message",
    [
        (
            "epochs: {kind: int, low: 1}",
            "epochs: {kind: int, minimum: 1}",
            r"checks\.epochs: unknown key\(s\) \['minimum'\]; allowed: kind, choices, low, high,",
        ),
        (
            "epochs: {kind: int, low: 1}",
            "epochs: {kind: integer}",
            r"checks\.epochs\.kind must be one of 'int', 'number', 'str', 'bool', got 'integer'",
        ),
        (
            "epochs: {kind: int, low: 1}",
            "epochs: {kind: int, low: one}",
            r"checks\.epochs\.low must be a number, got 'one'",
        ),
        ("method: {kind: str}", "method: {choices: []}", r"checks\.method\.choices must be a non-empty list, got \[\]"),
        (
            "method: {kind: str}",
            "method: {kind: str, each: yes please}",
            r"checks\.method\.each must be true or false, got 'yes please'",
        ),
        (
            "method: {kind: str}",
            "methd: {kind: str}",
            r"\(toy\)\.checks: parameter\(s\) \['methd'\] that toy.ipynb does not",
        ),
        (
            "method: {kind: str}",
            "preset: {kind: str}",
            r"\(toy\)\.checks: 'preset' is always checked against the syllabus's presets",
        ),
        (
            "smoke: {epochs: 2,",
            "smoke: {epochs: 0,",
            r"\(toy\)\.defaults\.smoke: Invalid parameter epochs=0: expected an integer ≥ 1",
        ),
        ("smoke: {epochs: 2,", "smoke: {epoch: 2,", r"\(toy\)\.defaults\.smoke: 'epoch' has no entry in checks"),
        (
            "      full: {epochs: 20",
            "      gpu: {epochs: 20",
            r"\(toy\)\.defaults: unknown preset 'gpu'; presets: \['smoke', 'full'\]",
        ),
        ("    defaults:", "    default:", r"lessons\[0\] \(toy\): unknown key\(s\) \['default'\]"),
    ],
)
def test_syllabus_checks_and_defaults_are_validated(tmp_path, old, new, message):
    assert old in SYLLABUS
    with pytest.raises(SyllabusError, match=message):
        load_syllabus(make_lesson(tmp_path, syllabus=SYLLABUS.replace(old, new)))


# --------------------------------------------------------------------------------------------
# The real lessons: each preset sets up with the values of the parameters cell
# --------------------------------------------------------------------------------------------

REAL = load_syllabus(REPO / "course" / "syllabus.yaml", check_notebooks=False)


def parameters_cell(notebook: Path) -> str:
    nb = nbformat.read(str(notebook), as_version=4)
    return next(c.source for c in nb.cells if "parameters" in c.metadata.get("tags", []))


@pytest.fixture
def threads_kept():
    """A lesson's set-up sets torch's threads (``cpu_threads``): the test's process gets its own count back."""
    before = torch.get_num_threads()
    yield before
    torch.set_num_threads(before)


def test_cpu_threads_sets_torchs_threads_on_a_cpu_only(threads_kept):
    lesson = next(lesson for lesson in REAL.lessons if "cpu_threads" in lesson.checks)
    names = namespace_of(parameters_cell(lesson.notebook))
    wanted = 2 if threads_kept == 1 else 1
    setup_lesson(lesson.id, {**names, "device": "cpu", "cpu_threads": wanted}, syllabus=REAL)
    assert torch.get_num_threads() == wanted
    torch.set_num_threads(threads_kept)
    setup_lesson(lesson.id, {**names, "device": "cpu", "cpu_threads": None}, syllabus=REAL)
    assert torch.get_num_threads() == threads_kept  # None: torch's own count, untouched


def test_cpu_threads_leaves_torch_alone_on_a_gpu(threads_kept, monkeypatch):
    lesson = next(lesson for lesson in REAL.lessons if "cpu_threads" in lesson.checks)
    names = namespace_of(parameters_cell(lesson.notebook))
    monkeypatch.setattr("dro_course.lesson_setup._resolve_device", lambda device: torch.device("cuda", 0))
    wanted = 2 if threads_kept == 1 else 1
    setup = setup_lesson(lesson.id, {**names, "device": "cuda", "cpu_threads": wanted}, syllabus=REAL)
    assert setup["device"].type == "cuda" and torch.get_num_threads() == threads_kept


@pytest.mark.parametrize("lesson", REAL.lessons, ids=REAL.ids)
def test_every_preset_of_every_lesson_sets_up(lesson, monkeypatch, capsys, threads_kept):
    if not lesson.notebook.is_file():
        pytest.skip(f"{lesson.notebook_relpath} is not written yet")
    source = parameters_cell(lesson.notebook)
    ast.parse(source)
    for preset in REAL.presets:
        monkeypatch.setenv(PRESET_ENV, preset)
        names = namespace_of(source)
        names["device"] = "cpu"  # the gpu preset's sizes, checked on this machine
        setup = setup_lesson(lesson.id, names, syllabus=REAL)
        assert setup.preset == preset
        left_none = [n for n in lesson.checks if names[n] is None and not lesson.checks[n].get("none_ok")]
        assert not left_none, f"{lesson.id} ({preset}): {left_none} stay None"
