"""Small helpers shared by several test files (import as ``from _util import ...``)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import torch


def through_bytes(state: dict) -> dict:
    """``state`` after a ``torch.save`` / ``torch.load`` round trip in memory (what a checkpoint does)."""
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=False)


#: A line that writes a file in place (not through a temporary file renamed into place): the library's and the
#: course's tests of their atomic writes look for it.
IN_PLACE = re.compile(
    r"\.write_text\(|\.write_bytes\(|\bopen\([^)]*[\"'][wax]b?\+?[\"']|torch\.save\(|json\.dump\(|nbformat\.write\("
    r"|\.write_html\(|savefig\(|np\.save"
)


def fake_comparison_rows(rng, methods=("ERM", "A", "B"), seeds=(0, 1, 2)):
    """Rows as ``run_comparison`` returns them, with random accuracies and costs (for summaries and figures)."""
    return [
        {
            "method": m,
            "seed": s,
            "avg_acc": rng.random(),
            "worst_group_acc": rng.random(),
            "seconds_per_epoch": 0.01 + rng.random(),
        }
        for s in seeds
        for m in methods
    ]


def library_modules() -> list[str]:
    """Every module of dro_lab, found by walking its folder (``__main__`` modules run a command: left out)."""
    import dro_lab

    library = Path(dro_lab.__file__).resolve().parent
    names = []
    for path in sorted(library.rglob("*.py")):
        parts = path.relative_to(library).with_suffix("").parts
        if parts[-1] != "__main__":
            names.append(".".join(("dro_lab", *parts)).removesuffix(".__init__"))
    return names
