"""The course's references (course/references.bib, course/references.md) and the links the lessons make to them
and to the glossary: every lesson links both pages, and every link to an entry names one that exists."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("pybtex")

from dro_course import load_syllabus
from dro_course.site.bibliography import (
    ENTRIES_MARK,
    read_bibliography,
    references_markdown,
    references_page,
)

REPO = Path(__file__).resolve().parents[2]
BIB = REPO / "course" / "references.bib"
PAGE = REPO / "course" / "references.md"
LESSONS = [lesson.notebook for lesson in load_syllabus(REPO / "course" / "syllabus.yaml", check_notebooks=False)]
#: The five papers the course follows (lessons 02-06), by key.
PAPERS = ("fidon2019hardness", "lahire2023importance", "feoktistov2025also", "sow2024doubly", "wang2024gils")
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _markdown(notebook: Path) -> str:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def test_every_paper_of_the_course_has_an_entry_that_says_which_version_a_lesson_follows():
    entries = read_bibliography(BIB).entries
    for key in PAPERS:
        assert key in entries, key
        assert entries[key].fields.get("note"), f"{key}: the note says which version the course follows"
    assert list(entries)[: len(PAPERS)] == list(PAPERS), "the five papers come first"


def test_every_other_entry_says_which_papers_reference_list_it_comes_from():
    """No identifier is invented: each entry is copied from the reference list of one of the five papers."""
    names = ("Fidon", "Lahire", "ALSO", "DONE", "GI-LS", "Sow", "Wang", "Feoktistov")
    for key, entry in read_bibliography(BIB).entries.items():
        if key in PAPERS:
            continue
        source = entry.fields.get("annote", "") + entry.fields.get("note", "")
        assert any(name in source for name in names), f"{key}: say whose reference list the entry comes from"


def test_a_key_that_cannot_name_an_anchor_is_refused(tmp_path):
    bib = tmp_path / "bad.bib"
    bib.write_text("@misc{Madry-2018, title = {x}, year = {2018}}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="Madry-2018"):
        read_bibliography(bib)


def test_references_md_is_written_from_the_bib():
    """Regenerate after editing the .bib: python -c "from dro_course.site.bibliography import write_references_page;
    write_references_page('.')" from the repository root."""
    assert PAGE.read_text(encoding="utf-8") == references_markdown(BIB)
    text = PAGE.read_text(encoding="utf-8")
    for key in read_bibliography(BIB).entries:
        assert text.count(f'<a id="{key}"></a>') == 1, key


def test_the_sites_page_keeps_the_introduction_and_lists_every_entry():
    page = references_page(PAGE, BIB)
    assert page.startswith("# References") and ENTRIES_MARK not in page and "<a id=" not in page
    for key in read_bibliography(BIB).entries:
        assert f'({key})=\n```{{bibliography}}\n:list: bullet\n:filter: key == "{key}"\n```' in page


@pytest.mark.parametrize("notebook", LESSONS, ids=lambda p: p.stem)
def test_every_lesson_links_the_glossary_and_the_references(notebook):
    targets = [t.split("#", 1)[0] for t in _LINK.findall(_markdown(notebook))]
    assert "../course/glossary.md" in targets, f"{notebook.name} never links the glossary"
    assert "../course/references.md" in targets, f"{notebook.name} never links the references"


def test_every_link_to_an_entry_names_one():
    keys = set(read_bibliography(BIB).entries)
    pages = [*(n for n in LESSONS), *(REPO / "course").glob("*.md")]
    for page in pages:
        text = _markdown(page) if page.suffix == ".ipynb" else page.read_text(encoding="utf-8")
        for target in _LINK.findall(text):
            path, _, anchor = target.partition("#")
            if path.endswith("references.md") and anchor:
                assert anchor in keys, f"{page.name} links {target}, which is no entry"
