"""The syllabus (dro_course.load_syllabus and friends): the fields of a lesson, every problem of a
malformed file listed at once, finding the file, the repository's own syllabus, and its Markdown page
(``dro-course list --markdown``, which ``course/syllabus.md`` must equal)."""

from __future__ import annotations

import pytest
from _course_util import FIXTURE_SYLLABUS, REPO, make_course  # tests/course/

import dro_course as course
from dro_course import (
    SyllabusError,
    load_syllabus,
    syllabus_markdown,
)
from dro_course.cli import main

REAL_SYLLABUS = REPO / "course" / "syllabus.yaml"


# --------------------------------------------------------------------------------------------
# Syllabus validation (no execution)
# --------------------------------------------------------------------------------------------


def test_load_syllabus_fields(tmp_path):
    syllabus = load_syllabus(make_course(tmp_path))
    assert syllabus.title == "Fixture course"
    assert list(syllabus.presets) == ["smoke", "full"]
    assert syllabus.ids == ["passing", "failing"]
    passing = syllabus.lesson("pass")  # unique prefix
    assert passing.notebook == (tmp_path / "src" / "passing.ipynb").resolve()
    assert passing.goals == ("print a parameter",) and passing.minutes == {"smoke": 0.1}
    assert passing.parameters("smoke") == {"preset": "smoke", "greeting": "from-preset"}
    assert passing.parameters("full") == {"preset": "full"}  # a preset the lesson does not list
    assert syllabus.lesson("failing").prerequisites == ("passing",)
    with pytest.raises(ValueError, match="is not a lesson"):
        syllabus.select(["nope"])


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("title: Fixture course", "title: Fixture course\nlesons: []", r"unknown top-level key\(s\) \['lesons'\]"),
        ("    goals: [print a parameter]", "    goal: [x]", r"unknown key\(s\) \['goal'\]"),
        ("src/failing.ipynb", "src/missing.ipynb", r"notebook 'src/missing.ipynb' not found"),
        ("id: failing", "id: passing", r"duplicate id 'passing'"),
        ("prerequisites: [passing]", "prerequisites: [ghost]", r"prerequisite 'ghost' is not a lesson id"),
        ("prerequisites: [passing]", "prerequisites: [failing]", r"lists itself as a prerequisite"),
        ("    minutes: {smoke: 0.1}", "    minutes: {smoke: -1}", r"minutes\['smoke'\] must be a positive number"),
        ("      smoke: {preset: smoke, greeting: from-preset}", "      gpu: {preset: gpu}", r"unknown preset 'gpu'"),
        ("      smoke: {preset: smoke, greeting: from-preset}", "      smoke: {2x: 1}", r"'2x' is not a Python ident"),
        ("  - id: passing", "  - id: pass ing", r"id must be a string"),
        ("    title: A failing lesson\n", "", r"missing required key\(s\) \['title'\]"),
    ],
)
def test_syllabus_errors(tmp_path, old, new, message):
    assert old in FIXTURE_SYLLABUS
    path = make_course(tmp_path, FIXTURE_SYLLABUS.replace(old, new))
    with pytest.raises(SyllabusError, match=message):
        load_syllabus(path)


def test_syllabus_prerequisite_must_come_earlier(tmp_path):
    text = FIXTURE_SYLLABUS.replace("    goals: [print a parameter]", "    prerequisites: [failing]")
    with pytest.raises(SyllabusError, match="prerequisite 'failing' comes later"):
        load_syllabus(make_course(tmp_path, text))


def test_syllabus_lists_every_problem_at_once(tmp_path):
    text = FIXTURE_SYLLABUS.replace("id: failing", "id: passing").replace("src/passing.ipynb", "src/x.ipynb")
    with pytest.raises(SyllabusError) as info:
        load_syllabus(make_course(tmp_path, text))
    assert "duplicate id" in str(info.value) and "x.ipynb" in str(info.value)


def test_missing_notebooks_allowed_when_not_checked(tmp_path):
    path = make_course(tmp_path, FIXTURE_SYLLABUS.replace("src/failing.ipynb", "src/later.ipynb"))
    assert load_syllabus(path, check_notebooks=False).ids == ["passing", "failing"]


def test_find_syllabus_from_a_subfolder(tmp_path, monkeypatch):
    path = make_course(tmp_path)
    monkeypatch.chdir(tmp_path / "src")
    assert course.find_syllabus() == path.resolve()
    assert load_syllabus().path == path.resolve()


def test_repository_syllabus():
    syllabus = load_syllabus(REPO / "course" / "syllabus.yaml", check_notebooks=False)
    assert syllabus.ids[:2] == ["00_welcome", "01_dro_foundations"]
    assert set(syllabus.presets) == {"smoke", "full", "gpu"}
    for lesson in syllabus:
        assert lesson.notebook_relpath == f"notebooks/{lesson.id}.ipynb"
        assert lesson.goals, lesson.id
        for preset in syllabus.presets:
            assert lesson.parameters(preset)["preset"] == preset
            assert preset in lesson.minutes


# --------------------------------------------------------------------------------------------
# The syllabus as Markdown
# --------------------------------------------------------------------------------------------


def test_syllabus_markdown(tmp_path, capsys):
    syllabus = load_syllabus(make_course(tmp_path))
    md = syllabus_markdown(syllabus)
    assert md.startswith("# Fixture course\n")
    assert "| # | lesson | title | reading (min) | minutes (smoke) | minutes (full) |" in md
    assert "| 1 | [`passing`](#passing) | A passing lesson |  | 0.1 |  |" in md
    assert "### 2. A failing lesson" in md and "- **after:** `passing`" in md
    assert "1. print a parameter" in md and "[`src/passing.ipynb`](../src/passing.ipynb)" in md
    assert main(["list", "--syllabus", str(syllabus.path), "--markdown"]) == 0
    assert capsys.readouterr().out.strip() == md.strip()
    real = syllabus_markdown(load_syllabus(REAL_SYLLABUS, check_notebooks=False))
    for lesson in load_syllabus(REAL_SYLLABUS, check_notebooks=False):
        assert f"`{lesson.id}`" in real and lesson.goals[0] in real


def test_course_syllabus_md_is_the_generated_one():
    """course/syllabus.md is what `dro-course list --markdown` prints; regenerate it after editing the YAML:
    `.venv/bin/dro-course list --markdown > course/syllabus.md`."""
    syllabus = course.load_syllabus()
    stored = (syllabus.path.parent / "syllabus.md").read_text(encoding="utf-8")
    assert stored.strip() == course.syllabus_markdown(syllabus).strip(), (
        "course/syllabus.md is stale: run `.venv/bin/dro-course list --markdown > course/syllabus.md`"
    )


def test_every_lesson_of_the_course_gives_its_reading_time_and_the_pages_show_it():
    from dro_course import lessons_table, syllabus_markdown

    syllabus = load_syllabus(check_notebooks=False)
    assert all(lesson.reading_minutes and lesson.reading_minutes > 0 for lesson in syllabus.lessons)
    table = lessons_table(syllabus)
    for lesson in syllabus.lessons:
        row = next(line for line in table.splitlines() if f"`{lesson.id}`" in line)
        assert f"| {lesson.reading_minutes:g} |" in row
    page = syllabus_markdown(syllabus)
    total = sum(lesson.reading_minutes for lesson in syllabus.lessons)
    assert f"| | **total** | | {total:g} |" in page


@pytest.mark.parametrize("bad", [0, -5, "ten", True])
def test_a_bad_reading_time_is_refused(tmp_path, bad):
    text = FIXTURE_SYLLABUS.replace(
        "    minutes: {smoke: 0.1}\n", f"    minutes: {{smoke: 0.1}}\n    reading_minutes: {bad!r}\n", 1
    )
    assert "reading_minutes" in text
    with pytest.raises(SyllabusError, match="reading_minutes must be a positive number"):
        load_syllabus(make_course(tmp_path, text))


def test_the_set_up_line_gives_the_reading_and_running_times(capsys):
    from dro_course import setup_lesson

    namespace = dict(preset="smoke", seed=0, device="cpu", beta=1.0, radius=0.1, cvar_alpha=0.2)
    setup = setup_lesson("00_welcome", namespace, syllabus=REAL_SYLLABUS)
    lesson = load_syllabus(REAL_SYLLABUS, check_notebooks=False).lesson("00_welcome")
    expected = (
        f"About {lesson.reading_minutes:g} min to read, {lesson.minutes[setup.preset]:g} min to run on this preset"
    )
    assert expected in capsys.readouterr().out
