"""``dro-lab bench``: speed measurements behind the course's claims, runnable on any machine.

Each benchmark times dro_lab and a baseline side by side in one run and reports the ratio. Today:

* ``weights`` — :func:`dro_lab.worst_case_weights` for n = 10³…10⁷ per divergence and form
  (KL/χ² penalised, KL/χ² constrained, CVaR) against a general-purpose numerical optimiser
  (scipy SLSQP over the simplex with analytic gradients, the tool a reader would otherwise reach
  for, up to n = 200 where its O(n³) iterations still finish; HiGHS for the CVaR linear programme),
  and against a scalable baseline at every n: scipy's 1-D solvers on each problem's dual in numpy.

Times are medians over repeats after a warm-up; CUDA timings are synchronised.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from typing import Callable

import numpy as np
import torch

from .robust import worst_case_weights
from .utils import resolve_device

__all__ = ["main", "bench_weights", "machine_info", "scipy_worst_case", "scipy_dual_worst_case"]

CASES = [
    ("kl", "beta", 10.0),
    ("chi2", "beta", 10.0),
    ("kl", "radius", 0.1),
    ("chi2", "radius", 0.1),
    ("cvar", "alpha", 0.1),
]


def machine_info(device: torch.device) -> dict:
    info = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cpu": platform.processor() or platform.machine(),
        "device": str(device),
    }
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    return info


def _time(fn: Callable[[], object], device: torch.device, repeats: int, budget_s: float) -> float:
    """Median seconds of ``fn`` over up to ``repeats`` runs (fewer if ``budget_s`` runs out), after a warm-up."""
    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    fn()
    sync()
    times = []
    start_all = time.perf_counter()
    # At least `repeats` runs; fast cases keep going for 0.2 s so their median is not one noisy sample.
    while len(times) < repeats or (time.perf_counter() - start_all < 0.2 and len(times) < 1000):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
        if time.perf_counter() - start_all > budget_s:
            break
    return statistics.median(times)


def _np_divergence(q: np.ndarray, p: np.ndarray, divergence: str) -> float:
    """D_φ(q‖p) in numpy for the baselines (KL: Σ q log(q/p); χ²: Σ (q − p)²/p)."""
    if divergence == "kl":
        return float(np.sum(np.where(q > 0, q * np.log(np.maximum(q, 1e-300) / p), 0.0)))
    return float(np.sum((q - p) ** 2 / p))


def scipy_worst_case(losses: np.ndarray, divergence: str, knob: str, value: float) -> np.ndarray:
    """The baseline: SLSQP over the simplex with the problem written out as a reader would."""
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
    res = minimize(obj, p, jac=jac, method="SLSQP", bounds=[(0, 1)] * n, constraints=cons,
                   options={"maxiter": 500})
    return res.x


def scipy_dual_worst_case(losses: np.ndarray, divergence: str, knob: str, value: float) -> np.ndarray:
    """The scalable baseline: a generic scipy 1-D solver on each problem's dual, in numpy (uniform prior).

    KL penalised is its closed form (nothing to solve); χ² penalised is ``brentq`` on the normalising
    multiplier λ; the balls are ``brentq`` on log β of D(q_β) = r (χ²: nested in the λ solve); CVaR
    minimises the Rockafellar–Uryasev dual η + E[(ℓ − η)₊]/α with ``minimize_scalar``.
    """
    from scipy.optimize import brentq, minimize_scalar

    n = len(losses)
    s = losses - losses.max()

    def kl_tilt(beta):
        z = np.exp(beta * s)
        return z / z.sum()

    def chi2_tilt(beta):
        half = beta / 2.0
        # f(λ) decreases in λ; f(mean − 2/β) ≥ 1 > 0 and f(max) = f(0) ≤ 0 bracket the root.
        lam = brentq(lambda lam: np.maximum(1.0 + half * (s - lam), 0.0).mean() - 1.0, s.mean() - 1.0 / half, 0.0,
                     xtol=1e-14)
        q = np.maximum(1.0 + half * (s - lam), 0.0) / n
        return q / q.sum()

    if divergence == "cvar":
        res = minimize_scalar(lambda eta: eta + np.maximum(s - eta, 0.0).mean() / value, bounds=(s.min(), 0.0),
                              method="bounded", options={"xatol": 1e-12})
        eta = res.x
        q = np.where(s > eta, 1.0 / (n * value), 0.0)
        at = np.isclose(s, eta, rtol=0, atol=1e-9)
        rest = 1.0 - q.sum()
        if at.any() and rest > 0:
            q[at] += rest / at.sum()
        return q / q.sum()
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


def bench_weights(sizes, *, device: torch.device, repeats: int, scipy_max_n: int, lp_max_n: int, dual_max_n: int,
                  budget_s: float, dtype=torch.float32, seed: int = 0,
                  on_row: Callable[[dict], None] | None = None) -> list[dict]:
    gen = torch.Generator().manual_seed(seed)
    rows = []
    for n in sizes:
        losses_cpu = torch.rand(n, generator=gen, dtype=torch.float64) * 3
        losses = losses_cpu.to(device=device, dtype=dtype)
        for divergence, knob, value in CASES:
            kw = {knob: value}
            ours = _time(lambda: worst_case_weights(losses, divergence=divergence, **kw), device, repeats, budget_s)
            row = {"benchmark": "worst_case_weights", "divergence": divergence, "form": knob, "value": value,
                   "n": n, "dro_lab_s": ours, "scipy_s": None, "speedup": None, "dual_s": None,
                   "dual_speedup": None}
            # SLSQP is dense (O(n³) per iteration): minutes at n = 10³. The CVaR LP (HiGHS) scales further.
            # Baselines get the same harness (warm-up, then a median), so imports and first-call
            # costs are not charged to them.
            arr, cpu, base_repeats = losses_cpu.numpy(), torch.device("cpu"), min(repeats, 3)
            if n <= (lp_max_n if divergence == "cvar" else scipy_max_n):
                theirs = _time(lambda: scipy_worst_case(arr, divergence, knob, value), cpu, base_repeats, budget_s)
                row.update(scipy_s=theirs, speedup=theirs / ours)
            if n <= dual_max_n:
                dual = _time(lambda: scipy_dual_worst_case(arr, divergence, knob, value), cpu, base_repeats, budget_s)
                row.update(dual_s=dual, dual_speedup=dual / ours)
            rows.append(row)
            if on_row is not None:
                on_row(row)
    return rows


def _fmt_s(s: float | None) -> str:
    if s is None:
        return "—"
    return f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"


TABLE_HEAD = ("| divergence | form | n | dro_lab | scipy SLSQP / HiGHS | speed-up | scipy 1-D dual (numpy) | speed-up |\n"
              "|---|---|---:|---:|---:|---:|---:|---:|")


def format_row(r: dict) -> str:
    def ratio(x):
        return f"{x:.3g}×" if x else "—"

    return (f"| {r['divergence']} | {r['form']}={r['value']:g} | {r['n']:.0e} | {_fmt_s(r['dro_lab_s'])} "
            f"| {_fmt_s(r['scipy_s'])} | {ratio(r['speedup'])} | {_fmt_s(r.get('dual_s'))} "
            f"| {ratio(r.get('dual_speedup'))} |")


def format_table(rows: list[dict]) -> str:
    return "\n".join([TABLE_HEAD, *map(format_row, rows)])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="dro-lab bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", nargs="*", help="benchmarks to run: weights (default: all)")
    ap.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N")
    ap.add_argument("--sizes", default="1e2,1e3,1e4,1e5,1e6,1e7", help="comma-separated n values")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--scipy-max-n", type=int, default=200, help="largest n given to the SLSQP baseline (O(n³))")
    ap.add_argument("--lp-max-n", type=int, default=10_000, help="largest n given to the CVaR LP baseline")
    ap.add_argument("--dual-max-n", type=int, default=10_000_000, help="largest n given to the 1-D dual baseline")
    ap.add_argument("--budget", type=float, default=20.0, help="seconds per timing before repeats stop early")
    ap.add_argument("--json", metavar="PATH", help="also write machine-readable results here")
    ap.add_argument("--quick", action="store_true", help="n up to 1e5, 2 repeats (a smoke check)")
    args = ap.parse_args(argv)
    unknown = set(args.what) - {"weights"}
    if unknown:
        ap.error(f"unknown benchmark(s) {sorted(unknown)}; available: weights")
    device = resolve_device(args.device)
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    repeats = args.repeats
    if args.quick:
        sizes, repeats = [s for s in sizes if s <= 100_000] or [1000], 2
    info = machine_info(device)
    print(f"dro-lab bench on {info['device']} ({info.get('gpu', info['cpu'])}, {info['threads']} threads, "
          f"torch {info['torch']})")
    print(TABLE_HEAD, flush=True)  # rows print as they finish: the n = 10⁷ ones take a while
    rows = bench_weights(sizes, device=device, repeats=repeats, scipy_max_n=args.scipy_max_n,
                         lp_max_n=args.lp_max_n, dual_max_n=args.dual_max_n, budget_s=args.budget,
                         on_row=lambda r: print(format_row(r), flush=True))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": info, "results": rows}, fh, indent=2)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
