"""The library's manual on the course website: the Markdown pages of the course's ``manual/`` folder, with the
pages whose numbers come from files generated at build time.

- :func:`manual_pages`: the pages in reading order, the order in which ``manual/index.md`` links them;
- :func:`benchmarks_markdown`: the tables of ``dro-lab bench --json`` documents (``docs/bench-*.json``), as
  :func:`dro_lab.bench.markdown` writes them with the heads and row formatters ``dro-lab bench`` prints with;
- :func:`references_markdown`: the verdicts of the reference runs shipped with the library, through
  :func:`dro_lab.experiments.load_reference` and :meth:`~dro_lab.experiments.Reference.markdown`;
- :func:`write_manual`: the pages into the Sphinx source folder, beside the API reference (:mod:`.api`).

No number on these pages is typed by hand: a JSON file changes, and the next build shows it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from dro_course.site.api import write_api_sources
from dro_course.syllabus import Syllabus

#: The manual's folder, beside the syllabus file (course/manual/ in the repository, dro_course/manual/ installed).
MANUAL_FOLDER = "manual"
#: Where the manual's pages go in the site (the repository's layout, so that links between course/ pages work).
SITE_FOLDER = "course/manual"
#: ``dro-lab bench --json`` documents shipped in the repository, relative to the course root.
BENCH_GLOB = "docs/bench-*.json"

_LINK = re.compile(r"\]\(([\w-]+)\.md(?:#[^)]*)?\)")


def manual_folder(syllabus: Syllabus) -> Path | None:
    """The course's manual folder (``manual/`` beside the syllabus file), or None when it has none."""
    folder = syllabus.path.parent / MANUAL_FOLDER
    return folder if (folder / "index.md").is_file() else None


def manual_pages(folder: Path) -> list[str]:
    """The manual's page names in reading order: ``index``, then the pages in the order ``index.md`` links them,
    then any page it does not link (by name)."""
    present = {p.stem for p in folder.glob("*.md")}
    linked = _LINK.findall((folder / "index.md").read_text(encoding="utf-8"))
    order = ["index", *dict.fromkeys(name for name in linked if name in present and name != "index")]
    return order + sorted(present - set(order))


# --------------------------------------------------------------------------- benchmarks


def bench_document_markdown(path: Path) -> str:
    """One ``dro-lab bench --json`` document as Markdown: its file name, then :func:`dro_lab.bench.markdown`'s
    text (the machine, then each section's table)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # the page says so; the rest of the site still builds
        return f"### `{path.name}`\n\n*This document cannot be read ({exc}).*\n"
    from dro_lab.bench import markdown  # here: torch, scipy load late

    return f"### `{path.name}`\n\n" + markdown(document, level=4)


def benchmarks_markdown(files: Sequence[Path]) -> str:
    """The benchmark tables of every document in ``files``, in that order."""
    if not files:
        return "*No benchmark documents in this installation: run `dro-lab bench --json bench.json`.*\n"
    parts = ["## The recorded runs", ""]
    for path in files:
        parts += [bench_document_markdown(path), ""]
    return "\n".join(parts)


# --------------------------------------------------------------------------- reference runs


def _tally(verdicts: Sequence[dict]) -> str:
    counts: dict[str, int] = {}
    for v in verdicts:
        counts[v["verdict"]] = counts.get(v["verdict"], 0) + 1
    return ", ".join(f"{n} {verdict}" for verdict, n in counts.items())


def references_markdown() -> str:
    """The reference runs shipped with the library: a tally of each one's verdicts, then each run as its
    :meth:`~dro_lab.experiments.Reference.markdown` writes it (provenance, command, table, verdicts)."""
    from dro_lab.experiments import available_references, load_reference  # here: torch loads only for this page

    references = [load_reference(name) for name in available_references()]
    lines = ["## The verdicts at a glance", "", "| reference | the paper | claims | verdicts |", "|---|---|---:|---|"]
    for ref in references:
        verdicts = ref.verdicts()
        paper = ref.parts[0][2].paper
        lines.append(f"| {{ref}}`{ref.name} <ref-{ref.name}>` | {paper} | {len(verdicts)} | {_tally(verdicts)} |")
    lines.append("")
    for ref in references:
        lines += [f"(ref-{ref.name})=", _raise_headings(ref.markdown()), ""]
    return "\n".join(lines)


def _raise_headings(markdown: str) -> str:
    """Markdown whose headings start at ``###`` (a reference's) with each heading one level up."""
    return "\n".join(line[1:] if line.startswith("##") else line for line in markdown.splitlines())


# --------------------------------------------------------------------------- the pages into the site


def bench_documents(root: Path) -> list[Path]:
    """The course's ``dro-lab bench`` documents: CPU runs before GPU runs, the one with the most sections first."""

    def order(path: Path) -> tuple[bool, int, str]:
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return (True, 0, path.name)
        return (document.get("machine", {}).get("device") != "cpu", -len(document.get("sections", [])), path.name)

    return sorted((root / BENCH_GLOB).parent.glob(Path(BENCH_GLOB).name), key=order)


def generated_sections(syllabus: Syllabus) -> dict[str, Callable[[], str]]:
    """Manual page -> what the build appends to it."""
    bench = bench_documents(syllabus.root)
    return {"benchmarks": lambda: benchmarks_markdown(bench), "reference_runs": references_markdown}


def write_manual(
    src: Path, syllabus: Syllabus, write: Callable[[Path, str], None], absent: Sequence[str] = ()
) -> list[str]:
    """Write the manual's pages (with their generated sections) and the API reference into ``src`` with
    ``write(path, text)``; return the site's page names in reading order (none when the course has no manual).
    ``absent``: the course's pages this site leaves out (the student's site has no instructor guide): a link to
    one keeps its words and loses its target."""
    folder = manual_folder(syllabus)
    if folder is None:
        return []
    generated = generated_sections(syllabus)
    pages = []
    for name in manual_pages(folder):
        text = (folder / f"{name}.md").read_text(encoding="utf-8")
        if name in generated:
            text = text.rstrip() + "\n\n" + generated[name]()
        for page in absent:
            text = re.sub(rf"\[([^\]]+)\]\(\.\./{re.escape(page)}(?:#[^)]*)?\)", r"\1", text)
        write(src / SITE_FOLDER / f"{name}.md", text)
        pages.append(f"{SITE_FOLDER}/{name}")
    return [*pages, write_api_sources(src, write)]
