"""Summaries of repeated runs: the mean and standard deviation of each metric over seeds."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from .._validation import check_nonempty

__all__ = ["summarize_runs"]


def summarize_runs(rows: Iterable[Mapping], *, by: Sequence[str], metrics: Sequence[str]) -> list[dict]:
    """Mean and standard deviation of ``metrics`` over the rows sharing the keys ``by`` (e.g. over seeds)."""
    rows = list(rows)
    check_nonempty(rows, "rows")
    for i, row in enumerate(rows):
        missing = [k for k in (*by, *metrics) if k not in row]
        if missing:
            raise ValueError(f"rows[{i}] lacks {missing} (named in by / metrics)")
    groups: dict[tuple, list[Mapping]] = defaultdict(list)
    for row in rows:
        groups[tuple(row[k] for k in by)].append(row)
    out = []
    for key, members in groups.items():
        rec = dict(zip(by, key))
        rec["n_runs"] = len(members)
        for m in metrics:
            vals = np.array([r[m] for r in members], dtype=float)
            rec[m] = float(vals.mean())
            rec[f"{m}_std"] = float(vals.std(ddof=1)) if len(vals) > 1 else 0.0
        out.append(rec)
    return out
