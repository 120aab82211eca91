"""What a hardness-weighted sampler does to the data: class masses of q, and the staleness of its loss history.

Numbers for lesson 02's figures (arrays in, numbers out): how a sampling distribution splits across the
classes (:func:`sampling_summary`), the empirical tail of the history's ages (:func:`age_survival`) and the
exact tail and bound of Fidon et al.'s eq. 104 under i.i.d. draws (:func:`age_tail`).
"""

from __future__ import annotations

import numpy as np

from .._validation import check_int
from ..utils import to_numpy

__all__ = ["sampling_summary", "age_survival", "age_tail"]


def sampling_summary(
    q, labels, *, minority: int | None = None, batch_size: int | None = None, num_classes: int | None = None
) -> dict:
    """How a sampling distribution ``q`` over the training set splits across classes.

    Returns a dict with ``class_mass`` (the q-mass of each class, i.e. how often a draw lands in
    it), ``class_share`` (its uniform share ``n_c / n``, what ERM draws), ``ess`` (the effective
    sample size ``1 / Σ q_i²``) and, for a ``minority`` class, ``minority_mass``,
    ``minority_share``, ``minority_ratio`` (mass / share) and, with ``batch_size = b``,
    ``expected_minority_draws = b · mass`` against ``uniform_minority_draws = b · n_c / n``.
    """
    if batch_size is not None:
        check_int(batch_size, "batch_size")
    qn = to_numpy(q)
    yn = to_numpy(labels).astype(int)
    if qn.ndim != 1 or qn.shape != yn.shape:
        raise ValueError(f"q and labels must be 1-D of the same length, got {qn.shape} and {yn.shape}")
    if np.any(qn < 0) or not np.isfinite(qn).all():
        raise ValueError("q must be finite and non-negative")
    total = qn.sum()
    if not total > 0:
        raise ValueError("q must have positive mass")
    qn = qn / total
    k = int(num_classes if num_classes is not None else yn.max() + 1)
    mass = np.bincount(yn, weights=qn, minlength=k)
    share = np.bincount(yn, minlength=k) / len(yn)
    out = {
        "class_mass": mass.tolist(),
        "class_share": share.tolist(),
        "ess": float(1.0 / np.sum(qn * qn)),
        "n": int(len(yn)),
    }
    if minority is not None:
        if not 0 <= minority < k:
            raise ValueError(f"minority must be a class in [0, {k}), got {minority}")
        out.update(
            minority_mass=float(mass[minority]),
            minority_share=float(share[minority]),
            minority_ratio=float(mass[minority] / share[minority]) if share[minority] > 0 else float("nan"),
        )
        if batch_size is not None:
            out.update(
                expected_minority_draws=float(batch_size * mass[minority]),
                uniform_minority_draws=float(batch_size * share[minority]),
            )
    return out


def age_survival(ages, kmax: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(k, P(age ≥ k))`` for ``k = 0 .. kmax``: the empirical tail of history ages (``-1`` = never, dropped)."""
    a = to_numpy(ages).ravel()
    a = a[a >= 0].astype(np.int64)
    if a.size == 0:
        raise ValueError("no finite ages (all entries are -1: never written)")
    kmax = int(a.max()) if kmax is None else check_int(kmax, "kmax")
    k = np.arange(kmax + 1)
    counts = np.bincount(a, minlength=kmax + 1)[: kmax + 1]
    at_least = a.size - np.r_[0, np.cumsum(counts)[:-1]]
    return k, at_least / a.size


def age_tail(q, k, batch_size: int) -> tuple[np.ndarray, np.ndarray, float]:
    r"""The tail of history ages under ``b = batch_size`` i.i.d. draws per iteration from a fixed ``q``: the exact
    :math:`\frac1n\sum_i(1-q_i)^{kb}` and the bound :math:`(1-\alpha)^{kb}` with :math:`\alpha=\min_iq_i`
    (the paper's eq. 104, which holds for every entry), at each age in ``k``. Returns ``(exact, bound, α)``;
    ``q`` is normalised first."""
    qn = to_numpy(q).ravel()
    qn = qn / qn.sum()
    k = np.asarray(k)
    exact = np.array([np.mean((1.0 - qn) ** (kk * batch_size)) for kk in k])
    alpha = float(qn.min())
    return exact, (1.0 - alpha) ** (k * batch_size), alpha
