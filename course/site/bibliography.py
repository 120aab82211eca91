"""The course's references: one BibTeX file, ``course/references.bib``, read two ways.

- In the repository, ``course/references.md`` is plain Markdown written from the BibTeX file by
  :func:`write_references_page` (run it after editing the .bib; a test compares the two): it reads the same in
  JupyterLab, Colab, VS Code and on GitHub, and each entry carries an anchor named by its key.
- On the website, :func:`references_page` keeps that page's introduction and lets sphinxcontrib-bibtex format the
  entries, each under a target named by its key, as above.

So a lesson links an entry with a plain Markdown link, ``[Zhang et al. 2021](../course/references.md#zhang2021gairat)``,
which lands on the entry wherever the lesson is read.
"""

from __future__ import annotations

import re
from pathlib import Path

from dro_course._files import write_text_atomic

#: The BibTeX file, relative to the course root (and to the Sphinx source folder, where the site keeps a copy).
BIBFILE = "course/references.bib"
#: The line of ``references.md`` after which the entries begin (the site puts its bibliography there).
ENTRIES_MARK = "<!-- entries: written from references.bib by dro_course.site.bibliography; edit the .bib -->"
#: A key names an anchor in a URL: lower-case letters and digits only.
KEY = re.compile(r"[a-z][a-z0-9]*")

_INTRO = """# References

The five papers the course follows come first, each with the version a lesson follows; then every other method or
result a lesson names. Each entry is written as the reference list of one of the five papers gives it (its `note`
says which); a link goes to the paper's page on arXiv or its publisher's page, where the paper's text gave one.

A lesson links an entry by its key, so the link lands here, in JupyterLab as on the course website.
"""


def read_bibliography(path: str | Path):
    """The entries of a BibTeX file (pybtex's ``BibliographyData``); raises ``ValueError`` naming a key that
    cannot name an anchor."""
    from pybtex.database import parse_file  # here: pybtex comes with the course's website tools

    data = parse_file(str(path), bib_format="bibtex")
    bad = [key for key in data.entries if not KEY.fullmatch(key)]
    if bad:
        raise ValueError(f"{path}: keys must be lower-case letters and digits (they name anchors): {', '.join(bad)}")
    return data


def _entry_markdown(key: str, text: str, url: str | None) -> str:
    link = f" [{url}]({url})" if url else ""
    return f'- <a id="{key}"></a>**{key}** · {text}{link}'


def references_markdown(path: str | Path) -> str:
    """``course/references.md``: the introduction, then every entry of the BibTeX file ``path`` in the file's
    order (the website's ``unsrt`` style keeps it too), formatted as Markdown by pybtex, each with an anchor named by
    its key and its URL as a link."""
    from pybtex.backends.markdown import Backend
    from pybtex.style.formatting.unsrt import Style

    data = read_bibliography(path)
    urls = {key: entry.fields.pop("url", None) for key, entry in data.entries.items()}  # shown once, as a link
    backend = Backend()
    lines = [_INTRO, ENTRIES_MARK, ""]
    for entry in Style().format_entries(data.entries.values()):
        lines.append(_entry_markdown(entry.key, entry.text.render(backend).replace("\n", " "), urls[entry.key]))
    return "\n".join(lines) + "\n"


def write_references_page(root: str | Path) -> Path:
    """Write ``<root>/course/references.md`` from ``<root>/course/references.bib``; return its path."""
    root = Path(root)
    page = root / "course" / "references.md"
    write_text_atomic(page, references_markdown(root / BIBFILE))
    return page


def references_page(page: str | Path, bib: str | Path) -> str:
    """The website's references page: ``page``'s introduction (``course/references.md`` up to
    :data:`ENTRIES_MARK`), then every entry of the BibTeX file ``bib`` in its order, each formatted by
    sphinxcontrib-bibtex under a MyST target named by its key (so that a lesson's link ``references.md#<key>``
    resolves, and Sphinx checks it)."""
    intro = Path(page).read_text(encoding="utf-8").split(ENTRIES_MARK, 1)[0].rstrip()
    blocks = [
        f'({key})=\n```{{bibliography}}\n:list: bullet\n:filter: key == "{key}"\n```'
        for key in read_bibliography(bib).entries
    ]
    return intro + "\n\n" + "\n\n".join(blocks) + "\n"
