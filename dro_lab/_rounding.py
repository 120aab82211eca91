"""Floating-point rounding bounds (Higham, *Accuracy and Stability of Numerical Algorithms*, 2002, §2.2 and §4.2):
what a certified comparison of two computations may allow for rounding, and nothing more.

* :data:`U64`, :data:`U32`: the unit roundoff of float64 and float32.
* :func:`gamma`: :math:`\\gamma_k=ku/(1-ku)`, the relative error of a sum of ``k + 1`` terms in any order (or of ``k``
  operations).
* :func:`fn_error`: the relative error allowed to one ``exp``, ``expm1``, ``log`` or ``log1p`` (4 ulp).
* :data:`SAFETY`: the factor on every first-order bound, covering the second-order terms it drops.
"""

from __future__ import annotations

__all__ = ["SAFETY", "U32", "U64", "fn_error", "gamma"]

U64 = 2.0**-53  #: unit roundoff of float64
U32 = 2.0**-24  #: unit roundoff of float32
SAFETY = 2.0  #: factor on every first-order rounding bound (it covers the dropped second-order terms)


def gamma(k: int, u: float = U64) -> float:
    """``γ(k) = ku / (1 − ku)``: relative error of a sum of ``k + 1`` terms (any order), or of ``k`` operations."""
    k = max(int(k), 0)
    return k * u / (1.0 - k * u)


def fn_error(u: float = U64) -> float:
    """The relative error allowed to one ``exp``, ``expm1``, ``log`` or ``log1p``: 4 ulp, i.e. ``8u``."""
    return 8.0 * u
