"""A lesson whose prose changed but whose code did not: its executed notebook takes the new markdown and keeps
its outputs, with no kernel started (:func:`rerender_prose`).

Why that is safe: the outputs depend only on what the cells run, and the resume key already holds everything
that decides that (the code cells in order with their tags, the kernel, the parameters, the preset, the
library). The lessons never read their own markdown. When the code cells of the source and of the executed
notebook do not match one to one (a cell added, removed or edited), re-rendering is refused and the lesson runs.
"""

from __future__ import annotations

import copy
from typing import Any

INJECTED = "injected-parameters"


def _code_key(cell: Any) -> tuple[str, tuple[str, ...]]:
    return cell.source, tuple(cell.get("metadata", {}).get("tags", []))


def rerender_prose(source: Any, executed: Any) -> Any | None:
    """The ``executed`` notebook with the cells of ``source`` (nbformat nodes): markdown and raw cells from the
    source, each code cell from the executed notebook (outputs, execution count and papermill's metadata), and
    papermill's injected-parameters cell where it was. None when the code cells differ (then the lesson must run).
    """
    ran = [
        cell for cell in executed.cells if cell.cell_type == "code" and INJECTED not in cell.metadata.get("tags", [])
    ]
    wanted = [cell for cell in source.cells if cell.cell_type == "code"]
    if [_code_key(c) for c in ran] != [_code_key(c) for c in wanted]:
        return None
    injected = {
        i: cell for i, cell in enumerate(executed.cells) if INJECTED in cell.get("metadata", {}).get("tags", [])
    }
    before = {  # the executed code cell each injected cell follows (papermill puts it after the parameters cell)
        id(executed.cells[i - 1]) if i > 0 else None: cell for i, cell in injected.items()
    }
    nb = copy.deepcopy(executed)
    cells, next_code = [], iter(ran)
    if None in before:
        cells.append(before[None])
    for cell in source.cells:
        if cell.cell_type == "code":
            done = next(next_code)
            cells.append(done)
            if id(done) in before:
                cells.append(before[id(done)])
        else:
            cells.append(copy.deepcopy(cell))
    nb.cells = copy.deepcopy(cells)
    return nb
