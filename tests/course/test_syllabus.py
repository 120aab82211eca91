"""The syllabus (dro_course.load_syllabus and friends): the fields of a lesson, its JSON Schema
(course/syllabus.schema.json) and every problem of a malformed file listed at once, one line naming its place,
finding the file, the repository's own syllabus, and its Markdown page (``dro-course list --markdown``, which
``course/syllabus.md`` must equal)."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import jsonschema
import pytest
import yaml
from _course_util import FIXTURE_SYLLABUS, REPO, make_course  # tests/course/

import dro_course as course
from dro_course import (
    SyllabusError,
    check_parameter,
    load_syllabus,
    syllabus_markdown,
)
from dro_course.cli import main

REAL_SYLLABUS = REPO / "course" / "syllabus.yaml"
SCHEMA = json.loads((REPO / "course" / "syllabus.schema.json").read_text(encoding="utf-8"))


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
        ("title: Fixture course", "title: Fixture course\nlesons: []", r"top level: unknown key\(s\) \['lesons'\]"),
        ("    goals: [print a parameter]", "    goal: [x]", r"lessons\[0\] \(passing\): unknown key\(s\) \['goal'\]"),
        ("src/failing.ipynb", "src/missing.ipynb", r"lessons\[1\] \(failing\): notebook 'src/missing.ipynb' not found"),
        ("id: failing", "id: passing", r"lessons\[1\] \(passing\): duplicate id 'passing'"),
        ("prerequisites: [passing]", "prerequisites: [ghost]", r"\(failing\): prerequisite 'ghost' is not a lesson id"),
        ("prerequisites: [passing]", "prerequisites: [failing]", r"\(failing\): lists itself as a prerequisite"),
        (
            "    minutes: {smoke: 0.1}",
            "    minutes: {smoke: -1}",
            r"\(passing\)\.minutes\.smoke must be a number > 0, got -1",
        ),
        (
            "      smoke: {preset: smoke, greeting: from-preset}",
            "      gpu: {preset: gpu}",
            r"presets: unknown preset 'gpu'",
        ),
        (
            "      smoke: {preset: smoke, greeting: from-preset}",
            "      smoke: {2x: 1}",
            r"\(passing\)\.presets\.smoke: key '2x' must be a Python identifier",
        ),
        ("  - id: passing", "  - id: pass ing", r"lessons\[0\] \(pass ing\)\.id must be a string of letters, digits"),
        ("    title: A failing lesson\n", "", r"lessons\[1\] \(failing\): missing required key\(s\) \['title'\]"),
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


def problem_lines(tmp_path: Path, text: str) -> list[str]:
    """The problems ``load_syllabus`` lists for a fixture course whose syllabus is ``text``, one per line."""
    with pytest.raises(SyllabusError) as info:
        load_syllabus(make_course(tmp_path, text))
    head, *lines = str(info.value).split("\n  - ")
    assert head.endswith("invalid syllabus:")
    return lines


# --------------------------------------------------------------------------------------------
# The JSON Schema: its structure, the shipped file, one line per problem
# --------------------------------------------------------------------------------------------


def test_the_schema_is_a_valid_draft_2020_12_schema():
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_the_shipped_syllabus_validates_against_the_schema():
    data = yaml.safe_load(REAL_SYLLABUS.read_text(encoding="utf-8"))
    errors = [f"{list(e.path)}: {e.message}" for e in jsonschema.Draft202012Validator(SCHEMA).iter_errors(data)]
    assert not errors
    # the copy dro_course reads is this one, and a wheel ships it beside the syllabus; jsonschema comes with the viz
    # extra, what a lesson's kernel needs (Colab installs that one), and so with the course extra, which includes it
    import dro_course.parameters

    assert dro_course.parameters.syllabus_schema() == SCHEMA
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "syllabus.schema.json" in pyproject["tool"]["setuptools"]["package-data"]["dro_course"]
    extras = pyproject["project"]["optional-dependencies"]
    assert any(re.match(r"jsonschema\b", dep) for dep in extras["viz"]) and "dro-lab[viz]" in extras["course"]


_M = "    minutes: {smoke: 0.1}"
_CHECKS = _M + "\n    checks: "  # the passing fixture declares preset, seed and greeting
_FAILING = (
    "  - id: failing\n    title: A failing lesson\n    notebook: src/failing.ipynb\n    prerequisites: [passing]\n"
)
_P = "lessons[0] (passing)"
_LESSON_KEYS = "id, title, notebook, goals, prerequisites, paper, minutes, reading_minutes, presets, checks, defaults"
_TOP_KEYS = "title, description, root, presets, lessons"
_CHECK_KEYS = "kind, choices, low, high, low_open, high_open, none_ok, each"
_NAME = "a string of letters, digits, '_', '.' and '-' that starts with a letter or a digit"
_TEXTS = "a non-empty string or a list of non-empty strings"
_LITERAL = "a literal (null, true or false, a number, a string, or a list or mapping of literals)"
_PRESETS = "a non-empty list of preset names or a mapping preset name -> what it runs"
_GOALS = "    goals: [print a parameter]"

MALFORMED = [
    # a wrong type
    ("title: Fixture course", "title: 3", "title must be a string, got 3"),
    ("presets: [smoke, full]", "presets: [smoke, full]\nroot: [up]", "root must be a string, got ['up']"),
    (_GOALS, "    goals: {a: b}", f"{_P}.goals must be {_TEXTS}, got {{'a': 'b'}}"),
    (_GOALS, "    goals: [print, '']", f"{_P}.goals[1] must be a non-empty string, got ''"),
    (_FAILING, "  - just a title\n", "lessons[1] must be a mapping, got 'just a title'"),
    ("  - id: failing", "  - id: 2", f"lessons[1].id must be {_NAME}, got 2"),
    ("src/passing.ipynb", "src/passing.py", f"{_P}.notebook must be a path to a .ipynb file, got 'src/passing.py'"),
    ("greeting: from-preset}", "greeting: 2024-01-01}", f"{_P}.presets.smoke.greeting must be {_LITERAL}, got "
     "datetime.date(2024, 1, 1)"),
    # names
    ("presets: [smoke, full]", "presets: [smoke, full smoke]", f"presets[1] must be {_NAME}, got 'full smoke'"),
    ("presets: [smoke, full]", "presets: [smoke, full, smoke]", "presets must not repeat an item, got "
     "['smoke', 'full', 'smoke']"),
    ("presets: [smoke, full]", "presets: []", f"presets must be {_PRESETS}, got []"),
    # an unknown key, a missing key
    ("title: Fixture course", "title: Fixture course\nauthor: me", f"top level: unknown key(s) ['author']; allowed: "
     f"{_TOP_KEYS}"),
    (_GOALS, "    goals: [x]\n    notes: y", f"{_P}: unknown key(s) ['notes']; allowed: {_LESSON_KEYS}"),
    ("    notebook: src/passing.ipynb\n", "", f"{_P}: missing required key(s) ['notebook']"),
    (FIXTURE_SYLLABUS[FIXTURE_SYLLABUS.index("lessons:") :], "", "top level: missing required key(s) ['lessons']"),
    # a bad check
    (_M, _CHECKS + "{seed: {kind: int, min: 0}}", f"{_P}.checks.seed: unknown key(s) ['min']; allowed: {_CHECK_KEYS}"),
    (_M, _CHECKS + "{seed: {kind: integer}}", f"{_P}.checks.seed.kind must be one of 'int', 'number', 'str', 'bool', "
     "got 'integer'"),
    (_M, _CHECKS + "{seed: {kind: int, high: ten}}", f"{_P}.checks.seed.high must be a number, got 'ten'"),
    (_M, _CHECKS + "{seed: {none_ok: 1}}", f"{_P}.checks.seed.none_ok must be true or false, got 1"),
    (_M, _CHECKS + "{seed: [int]}", f"{_P}.checks.seed must be a mapping, got ['int']"),
    (_M, _CHECKS + "{seed-2: {}}", f"{_P}.checks: key 'seed-2' must be a Python identifier"),
    (_M, _CHECKS + "{preset: {}}", f"{_P}.checks: 'preset' is always checked against the syllabus's presets; drop it"),
    # out-of-range minutes
    (_M, "    minutes: {smoke: 0}", f"{_P}.minutes.smoke must be a number > 0, got 0"),
    (_M, "    minutes: {smoke: fast}", f"{_P}.minutes.smoke must be a number > 0, got 'fast'"),
    (_M, "    minutes: [0.1]", f"{_P}.minutes must be a mapping, got [0.1]"),
    (_M, "    reading_minutes: -5", f"{_P}.reading_minutes must be a number > 0, got -5"),
]  # fmt: skip


@pytest.mark.parametrize("old, new, line", MALFORMED)
def test_each_kind_of_malformed_syllabus_is_one_line_naming_its_place(tmp_path, old, new, line):
    assert old in FIXTURE_SYLLABUS
    assert problem_lines(tmp_path, FIXTURE_SYLLABUS.replace(old, new, 1)) == [line]


def test_several_problems_are_all_listed_one_per_line_in_the_files_order(tmp_path):
    text = (
        FIXTURE_SYLLABUS.replace("title: Fixture course", "title: Fixture course\nauthor: me")
        .replace("    minutes: {smoke: 0.1}", "    minutes: {smoke: 0, full: x, huge: 1}\n    checks: {seed: {low: a}}")
        .replace("    title: A failing lesson\n", "")
        .replace("prerequisites: [passing]", "prerequisites: [ghost, failing]\n    reading_minutes: true")
        .replace("      smoke: {preset: smoke, greeting: from-preset}", "      smoke: {2x: 1}\n      gpu: {}")
    )
    assert problem_lines(tmp_path, text) == [
        "top level: unknown key(s) ['author']; allowed: title, description, root, presets, lessons",
        "lessons[0] (passing).minutes.smoke must be a number > 0, got 0",
        "lessons[0] (passing).minutes.full must be a number > 0, got 'x'",
        "lessons[0] (passing).minutes: unknown preset 'huge'; presets: ['smoke', 'full']",
        "lessons[0] (passing).checks.seed.low must be a number, got 'a'",
        "lessons[0] (passing).presets.smoke: key '2x' must be a Python identifier",
        "lessons[0] (passing).presets: unknown preset 'gpu'; presets: ['smoke', 'full']",
        "lessons[1] (failing): missing required key(s) ['title']",
        "lessons[1] (failing): prerequisite 'ghost' is not a lesson id",
        "lessons[1] (failing): lists itself as a prerequisite",
        "lessons[1] (failing).reading_minutes must be a number > 0, got True",
    ]


def test_check_parameter_takes_what_the_schema_states():
    """check_parameter's keywords and kinds are the schema's ``$defs/check``: every kind works, anything else is
    refused in the schema's words."""
    check = SCHEMA["$defs"]["check"]["properties"]
    samples = {"int": 3, "number": 0.5, "str": "x", "bool": True}
    assert [kind for kind in check["kind"]["enum"] if kind is not None] == list(samples)
    for kind, value in samples.items():
        assert check_parameter("x", value, kind) == value
    allowed = ", ".join(check)
    with pytest.raises(ValueError, match=re.escape(f"x: options: unknown key(s) ['minimum']; allowed: {allowed}")):
        check_parameter("x", 1, "int", minimum=0)
    with pytest.raises(ValueError, match=r"invalid check of x: low must be a number, got '0'"):
        check_parameter("x", 1, "int", low="0")
    with pytest.raises(ValueError, match=r"invalid check of x: choices must be a non-empty list, got \[\]"):
        check_parameter("x", 1, choices=())


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
    assert md.startswith("# Syllabus\n\n**Fixture course**\n")
    assert "| # | lesson | reading (min) | smoke | full |" in md
    # each row links the lesson itself (its title)
    assert "| passing | [A passing lesson](../src/passing.ipynb) |  | 0.1 |  |" in md
    assert "### failing · [A failing lesson](../src/failing.ipynb)" in md and "- **after:** `passing`" in md
    assert "1. print a parameter" in md and "**notebook:** `src/passing.ipynb`" in md
    assert main(["list", "--syllabus", str(syllabus.path), "--markdown"]) == 0
    assert capsys.readouterr().out.strip() == md.strip()
    real = syllabus_markdown(load_syllabus(REAL_SYLLABUS, check_notebooks=False))
    for lesson in load_syllabus(REAL_SYLLABUS, check_notebooks=False):
        assert f"`{lesson.id}`" in real and lesson.goals[0] in real
        # the course numbers its lessons 00-07, as their ids do
        assert f"| {lesson.id[:2]} | [{lesson.title}](../notebooks/{lesson.id}.ipynb) |" in real


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
    assert f"| | **total** | {total:g} |" in page


@pytest.mark.parametrize("bad", [0, -5, "ten", True])
def test_a_bad_reading_time_is_refused(tmp_path, bad):
    text = FIXTURE_SYLLABUS.replace(
        "    minutes: {smoke: 0.1}\n", f"    minutes: {{smoke: 0.1}}\n    reading_minutes: {bad!r}\n", 1
    )
    assert "reading_minutes" in text
    with pytest.raises(SyllabusError, match=rf"\(passing\)\.reading_minutes must be a number > 0, got {bad!r}"):
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
