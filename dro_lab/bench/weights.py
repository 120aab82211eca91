"""``weights`` and ``chi2-ball``: :func:`dro_lab.worst_case_weights` against scipy and against fast-dro.

For each divergence and form (KL/χ² penalised, KL/χ² constrained, CVaR) the library is timed
against a general-purpose numerical optimiser, the tool a reader would otherwise reach for (scipy
SLSQP over the simplex with analytic gradients, up to n = 200 where its O(n³) iterations still
finish; HiGHS for the CVaR linear programme), and against a scalable baseline at every n: scipy's
1-D solvers on each problem's dual, in numpy. Both baselines are this benchmark's own; the tests
check that they reach the library's objective.

``chi2-ball`` times the χ² ball alone against :func:`fastdro_chi2_ball`, a re-implementation of the
best response of fast-dro's ``RobustLoss(size=ρ, reg=0, geometry="chi-square")`` (Levy et al., 2020:
bisection on the dual variable η of q ∝ (ℓ − η)₊ until ½·mean((nq − 1)²) − ρ is within ``tol`` of 0),
in float64 torch on the CPU, at a ``tol`` for which its value ⟨q, ℓ⟩ matches the library's to 1e-9.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from ..robust import worst_case_weights
from .timing import fmt_s, paired_times, time_call

#: (divergence, knob, value): the problems timed, one row per n each.
CASES = [
    ("kl", "beta", 10.0),
    ("chi2", "beta", 10.0),
    ("kl", "radius", 0.1),
    ("chi2", "radius", 0.1),
    ("cvar", "alpha", 0.1),
]


def _np_divergence(q: np.ndarray, p: np.ndarray, divergence: str) -> float:
    """D_φ(q‖p) in numpy for the baselines (KL: Σ q log(q/p); χ²: Σ (q − p)²/p)."""
    if divergence == "kl":
        return float(np.sum(np.where(q > 0, q * np.log(np.maximum(q, 1e-300) / p), 0.0)))
    return float(np.sum((q - p) ** 2 / p))


def scipy_worst_case(losses: np.ndarray, divergence: str, knob: str, value: float) -> np.ndarray:
    """The baseline: SLSQP over the simplex with the problem written out as a reader would."""
    # scipy is imported here, not at the top: only a baseline run needs it, and it is slow to import.
    from scipy.optimize import linprog, minimize

    n = len(losses)
    p = np.full(n, 1.0 / n)
    if divergence == "cvar":
        res = linprog(-losses, A_eq=np.ones((1, n)), b_eq=[1.0], bounds=[(0, 1.0 / (n * value))] * n, method="highs")
        return res.x

    # Analytic gradients throughout, so the baseline is not handicapped by finite differences.
    def div(q):
        return _np_divergence(q, p, divergence)

    def div_grad(q):
        if divergence == "kl":
            return np.log(np.maximum(q, 1e-300) / p) + 1.0
        return 2.0 * (q - p) / p

    ones = np.ones(n)
    cons = [{"type": "eq", "fun": lambda q: q.sum() - 1.0, "jac": lambda q: ones}]
    if knob == "beta":
        obj, jac = (lambda q: -(q @ losses - div(q) / value)), (lambda q: -(losses - div_grad(q) / value))
    else:
        obj, jac = (lambda q: -(q @ losses)), (lambda q: -losses)
        cons.append({"type": "ineq", "fun": lambda q: value - div(q), "jac": lambda q: -div_grad(q)})
    res = minimize(obj, p, jac=jac, method="SLSQP", bounds=[(0, 1)] * n, constraints=cons, options={"maxiter": 500})
    return res.x


def _cvar_dual(s: np.ndarray, alpha: float) -> np.ndarray:
    """CVaR's worst case from the Rockafellar–Uryasev dual η + E[(ℓ − η)₊]/α (``minimize_scalar``)."""
    from scipy.optimize import minimize_scalar  # slow to import: only a baseline run needs it

    n = len(s)
    res = minimize_scalar(
        lambda eta: eta + np.maximum(s - eta, 0.0).mean() / alpha,
        bounds=(s.min(), 0.0),
        method="bounded",
        options={"xatol": 1e-12},
    )
    eta = res.x
    q = np.where(s > eta, 1.0 / (n * alpha), 0.0)
    at = np.isclose(s, eta, rtol=0, atol=1e-9)
    rest = 1.0 - q.sum()
    if at.any() and rest > 0:
        q[at] += rest / at.sum()
    return q / q.sum()


def scipy_dual_worst_case(losses: np.ndarray, divergence: str, knob: str, value: float) -> np.ndarray:
    """The scalable baseline: a generic scipy 1-D solver on each problem's dual, in numpy (uniform prior).

    KL penalised is its closed form (nothing to solve); χ² penalised is ``brentq`` on the normalising
    multiplier λ; the balls are ``brentq`` on log β of D(q_β) = r (χ²: nested in the λ solve); CVaR
    minimises the Rockafellar–Uryasev dual η + E[(ℓ − η)₊]/α with ``minimize_scalar``.
    """
    from scipy.optimize import brentq  # slow to import: only a baseline run needs it

    n = len(losses)
    s = losses - losses.max()

    def kl_tilt(beta):
        z = np.exp(beta * s)
        return z / z.sum()

    def chi2_tilt(beta):
        half = beta / 2.0
        # f(λ) decreases in λ; f(mean − 2/β) ≥ 1 > 0 and f(max) = f(0) ≤ 0 bracket the root.
        lam = brentq(
            lambda lam: np.maximum(1.0 + half * (s - lam), 0.0).mean() - 1.0, s.mean() - 1.0 / half, 0.0, xtol=1e-14
        )
        q = np.maximum(1.0 + half * (s - lam), 0.0) / n
        return q / q.sum()

    if divergence == "cvar":
        return _cvar_dual(s, value)
    tilt = kl_tilt if divergence == "kl" else chi2_tilt
    if knob == "beta":
        return tilt(value)

    def excess(t):
        return _np_divergence(tilt(np.exp(t)), np.full(n, 1.0 / n), divergence) - value

    lo, hi = -5.0, 5.0
    while excess(lo) > 0:
        lo -= 5.0
    while excess(hi) < 0:
        hi += 5.0
    return tilt(np.exp(brentq(excess, lo, hi, xtol=1e-12)))


def bench_weights(
    sizes,
    *,
    device: torch.device,
    repeats: int,
    scipy_max_n: int,
    lp_max_n: int,
    dual_max_n: int,
    budget_s: float,
    dtype=torch.float32,
    seed: int = 0,
    on_row: Callable[[dict], None] | None = None,
) -> list[dict]:
    """One row per n and problem of :data:`CASES`: dro_lab's time, the baselines' times and the speed-ups.

    SLSQP runs up to ``scipy_max_n``, the CVaR LP up to ``lp_max_n``, the 1-D dual baseline up to
    ``dual_max_n``; beyond, their columns are ``None``. ``on_row`` sees each row as it finishes.
    """
    gen = torch.Generator().manual_seed(seed)
    rows = []
    for n in sizes:
        losses_cpu = torch.rand(n, generator=gen, dtype=torch.float64) * 3
        losses = losses_cpu.to(device=device, dtype=dtype)
        for divergence, knob, value in CASES:
            kw = {knob: value}
            ours = time_call(lambda: worst_case_weights(losses, divergence=divergence, **kw), device, repeats, budget_s)
            row = {
                "benchmark": "worst_case_weights",
                "divergence": divergence,
                "form": knob,
                "value": value,
                "n": n,
                "dro_lab_s": ours,
                "scipy_s": None,
                "speedup": None,
                "dual_s": None,
                "dual_speedup": None,
            }
            # SLSQP is dense (O(n³) per iteration): minutes at n = 10³. The CVaR LP (HiGHS) scales further.
            # Baselines get the same harness (warm-up, then a median), so imports and first-call
            # costs are not charged to them.
            arr, cpu, base_repeats = losses_cpu.numpy(), torch.device("cpu"), min(repeats, 3)
            if n <= (lp_max_n if divergence == "cvar" else scipy_max_n):
                theirs = time_call(lambda: scipy_worst_case(arr, divergence, knob, value), cpu, base_repeats, budget_s)
                row.update(scipy_s=theirs, speedup=theirs / ours)
            if n <= dual_max_n:
                dual = time_call(
                    lambda: scipy_dual_worst_case(arr, divergence, knob, value), cpu, base_repeats, budget_s
                )
                row.update(dual_s=dual, dual_speedup=dual / ours)
            rows.append(row)
            if on_row is not None:
                on_row(row)
    return rows


#: The weights table's head (Markdown): :func:`format_row` writes its rows.
TABLE_HEAD = (
    "| divergence | form | n | dro_lab | scipy SLSQP / HiGHS | speed-up | scipy 1-D dual (numpy) | speed-up |\n"
    "|---|---|---:|---:|---:|---:|---:|---:|"
)


def format_row(r: dict) -> str:
    """One row of the weights table."""

    def ratio(x):
        return f"{x:.3g}×" if x else "—"

    return (
        f"| {r['divergence']} | {r['form']}={r['value']:g} | {r['n']:.0e} | {fmt_s(r['dro_lab_s'])} "
        f"| {fmt_s(r['scipy_s'])} | {ratio(r['speedup'])} | {fmt_s(r.get('dual_s'))} "
        f"| {ratio(r.get('dual_speedup'))} |"
    )


def format_table(rows: list[dict]) -> str:
    """The weights table: :data:`TABLE_HEAD` and one :func:`format_row` per row."""
    return "\n".join([TABLE_HEAD, *map(format_row, rows)])


# --------------------------------------------------------------------------- chi2-ball: against fast-dro


def fastdro_chi2_ball(v: torch.Tensor, rho: float, tol: float = 1e-4, max_iter: int = 1000) -> torch.Tensor:
    """fast-dro's χ²-ball best response (``RobustLoss(rho, 0, "chi-square", tol, max_iter)``), re-implemented.

    The ball is ½·mean((nq − 1)²) ≤ ρ (dro_lab's radius 2ρ). With q(η) = (v − η)₊ / Σ(v − η)₊, bisect on η
    for f(η) = ½·mean((n·q(η) − 1)²) − ρ = 0, from the bracket [−v_max/(√(2ρ + 1) − 1), v_max] (widened
    by doubling while it misses the root), stopping once |f| ≤ ``tol`` or after ``max_iter`` halvings.
    The same guards: nearly constant losses give uniform q, and n ≤ 1 + 2ρ the arg-max set. Every
    evaluation of f makes the same O(n) tensor passes as the original.
    """
    m = v.shape[0]
    if (v.max() - v.min()) / v.max() <= 1e-5:
        return torch.ones_like(v) / m
    if m <= 1 + 2 * rho:
        top = (v == v.max()).to(v.dtype)
        return top / top.sum()

    def q_at(eta):
        pos = torch.relu(v - eta)
        return pos / pos.sum()

    def f(eta):
        w = m * q_at(eta) - torch.ones_like(v)
        return 0.5 * torch.mean(w**2) - rho

    lo, hi = -(1.0 / (math.sqrt(2 * rho + 1) - 1)) * v.max(), v.max()
    f_lo, f_hi = f(lo), f(hi)
    while f_lo > 0 or f_hi < 0:
        width = hi - lo
        if f_lo > 0:
            lo, hi = lo - 2 * width, lo
        if f_hi < 0:
            lo, hi = hi, hi + 2 * width
        f_lo, f_hi = f(lo), f(hi)
    for _ in range(max_iter):
        mid = 0.5 * (lo + hi)
        value = f(mid)
        if torch.abs(value) <= tol:
            return q_at(mid)
        if value > 0:
            hi = mid
        elif value < 0:
            lo = mid
    return q_at(0.5 * (lo + hi))


#: fast-dro tolerances tried, loosest first: the first whose value matches the library's to 1e-9 is timed.
FASTDRO_TOLS = (1e-6, 1e-8, 1e-10, 1e-12, 1e-14)


def _matching_tol(losses: torch.Tensor, rho: float, ours: float) -> tuple[float, float]:
    """The loosest of :data:`FASTDRO_TOLS` whose value is within 1e-9 of ``ours`` (relative): (tol, rel. gap)."""
    for tol in FASTDRO_TOLS:
        gap = abs(float(fastdro_chi2_ball(losses, rho, tol) @ losses) - ours) / abs(ours)
        if gap <= 1e-9:
            break
    return tol, gap


def bench_chi2_ball(
    sizes, rhos=(0.05, 1.0), *, repeats: int, budget_s: float, seed: int = 0, on_row=None
) -> list[dict]:
    """The χ² ball on float64 CPU losses, dro_lab against :func:`fastdro_chi2_ball`, alternating call by call.

    One row per n and ρ: fast-dro's ball ½·mean((nq − 1)²) ≤ ρ is ``worst_case_weights(losses,
    divergence="chi2", radius=2ρ)``. Losses uniform on [0, 3) (as in ``weights``). ``ratio`` is fast-dro's
    fastest call over dro_lab's fastest (the two alternate for ``repeats`` rounds or ``budget_s``),
    ``paired_ratio`` the median of the per-round ratios; the torch thread count is in the row.
    """
    gen, cpu = torch.Generator().manual_seed(seed), torch.device("cpu")
    rows = []
    for n in sizes:
        losses = torch.rand(n, generator=gen, dtype=torch.float64) * 3
        for rho in rhos:
            ours = float(worst_case_weights(losses, divergence="chi2", radius=2 * rho) @ losses)
            tol, gap = _matching_tol(losses, rho, ours)
            fns = {
                "dro_lab": lambda: worst_case_weights(losses, divergence="chi2", radius=2 * rho),
                "fastdro": lambda: fastdro_chi2_ball(losses, rho, tol),
            }
            # at least 20 rounds (budget permitting): the minimum of a millisecond call needs a few tries
            times, rounds = paired_times(fns, cpu, max(repeats, 20), budget_s, min_rounds=min(repeats, 3))
            row = {
                "benchmark": "chi2_ball",
                "n": n,
                "rho": rho,
                "radius": 2 * rho,
                "dtype": "float64",
                "threads": torch.get_num_threads(),
                "fastdro_tol": tol,
                "value_rel_gap": gap,
                "rounds": rounds,
                "dro_lab_s": min(times["dro_lab"]),
                "fastdro_s": min(times["fastdro"]),
                "paired_ratio": float(np.median(np.divide(times["fastdro"], times["dro_lab"]))),
            }
            row["ratio"] = row["fastdro_s"] / row["dro_lab_s"]
            rows.append(row)
            if on_row is not None:
                on_row(row)
    return rows


#: The chi2-ball table's head (Markdown): :func:`format_chi2_ball` writes its rows.
CHI2_BALL_HEAD = (
    "| n | fast-dro ρ (our radius 2ρ) | dro_lab | fast-dro RobustLoss (bisection, tol) | value gap "
    "| fast-dro / dro_lab (min; paired median) |\n|---:|---:|---:|---:|---:|---:|"
)


def format_chi2_ball(r: dict) -> str:
    """One row of the chi2-ball table."""
    return (
        f"| {r['n']:.0e} | {r['rho']:g} ({r['radius']:g}) | {fmt_s(r['dro_lab_s'])} "
        f"| {fmt_s(r['fastdro_s'])} (tol {r['fastdro_tol']:.0e}) | {r['value_rel_gap']:.1e} "
        f"| {r['ratio']:.3g}× ({r['paired_ratio']:.3g}×) |"
    )
