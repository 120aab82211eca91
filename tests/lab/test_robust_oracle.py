"""dro_lab's worst-case weights checked against independent scipy solvers.

Nothing here compares dro_lab with its own output.  Every reference value comes from one of

* ``kkt_solution``  -- the optimality (KKT) conditions of each problem, written out by hand and
  solved in float64 with ``scipy.optimize.brentq`` (one scalar multiplier per problem);
* ``slsqp_solution`` -- a direct, generic ``scipy.optimize.minimize(method="SLSQP")`` run on the
  primal problem over the probability simplex, from several starting points;
* ``linprog_solution`` -- ``scipy.optimize.linprog`` (HiGHS) for the CVaR linear programme;
* ``scipy.special.logsumexp`` for the closed-form KL-penalised value.

Problems (p = prior, D_phi(q||p) = sum_i p_i phi(q_i / p_i)):

* penalised   max_q <q, l> - D_phi(q||p) / beta           (phi = z log z  or  (z - 1)^2)
* constrained max_q <q, l>  s.t.  D_phi(q||p) <= radius
* CVaR        max_q <q, l>  s.t.  0 <= q_i <= p_i / alpha

all over the simplex.  The checks are on objective value and feasibility everywhere, and on q
itself where the maximiser is unique (or fixed by the contract: the argmax limit, ties in
proportion to p).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy import optimize, special

from dro_lab import divergence_value, robust_loss, worst_case_weights

# --------------------------------------------------------------------------------------------
# Independent float64 oracle (numpy + scipy only)
# --------------------------------------------------------------------------------------------

_TINY = 1e-300


def kl_div(q, p) -> float:
    """sum_i q_i log(q_i / p_i), with 0 log 0 = 0 and +inf where q_i > 0 = p_i."""
    q, p = np.asarray(q, dtype=np.float64), np.asarray(p, dtype=np.float64)
    m = q > 0
    if np.any(m & (p <= 0)):
        return math.inf
    return float(np.sum(q[m] * np.log(q[m] / p[m])))


def chi2_div(q, p) -> float:
    """sum_i p_i (q_i / p_i - 1)^2 = sum_i (q_i - p_i)^2 / p_i, with 0 where q_i = p_i = 0."""
    q, p = np.asarray(q, dtype=np.float64), np.asarray(p, dtype=np.float64)
    m = p > 0
    if np.any(~m & (q > 0)):
        return math.inf
    return float(np.sum((q[m] - p[m]) ** 2 / p[m]))


DIVERGENCES = {"kl": kl_div, "chi2": chi2_div}


def argmax_limit(losses, p) -> np.ndarray:
    """The prior restricted to the arg-max set of the losses over supp(p), renormalised."""
    s = p > 0
    top = losses[s].max()
    q = np.where(s & (losses == top), p, 0.0)
    return q / q.sum()


def objective(q, losses, p, divergence, kind, param) -> float:
    """The objective each problem maximises, evaluated at an arbitrary q (float64)."""
    q = np.asarray(q, dtype=np.float64)
    lin = float(q @ losses)
    if kind == "beta" and 0 < param < math.inf:
        return lin - DIVERGENCES[divergence](q, p) / param
    return lin


def kl_tilt(losses, p, eta) -> np.ndarray:
    """q_i proportional to p_i exp(eta l_i) (the KL stationarity condition), computed stably."""
    s = p > 0
    z = np.full(losses.shape, -np.inf)
    z[s] = np.log(p[s]) + eta * (losses[s] - losses[s].max())
    return np.exp(z - special.logsumexp(z[s]))


def chi2_tilt(losses, p, eta) -> np.ndarray:
    """q_i = p_i (1 + (eta/2)(l_i - lam))_+ with lam the root of sum_i q_i = 1 (brentq)."""
    if eta == 0:
        return p.copy()
    s = p > 0
    ls, ps = losses[s], p[s]

    def excess(lam):
        return float(np.sum(ps * np.maximum(1.0 + 0.5 * eta * (ls - lam), 0.0)) - 1.0)

    lo = float(ps @ ls) - 1.0  # excess(lo) >= eta / 2 > 0
    hi = float(ls.max()) + 2.0 / eta + 1.0  # every term clipped: excess(hi) = -1
    lam = optimize.brentq(excess, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    # Polish: on the active set the condition is linear in lam; solve it exactly.
    act = 1.0 + 0.5 * eta * (ls - lam) > 0
    lam = (np.sum(ps[act] * (1.0 + 0.5 * eta * ls[act])) - 1.0) / (0.5 * eta * np.sum(ps[act]))
    q = np.zeros_like(p)
    q[s] = ps * np.maximum(1.0 + 0.5 * eta * (ls - lam), 0.0)
    return q / q.sum()


TILTS = {"kl": kl_tilt, "chi2": chi2_tilt}


def kkt_solution(losses, p, divergence, kind, param):
    """Exact maximiser and optimal value from the KKT conditions (float64, brentq).

    Penalised: q = tilt(beta).  Constrained: q = tilt(eta) with eta >= 0 the root of
    D(tilt(eta)||p) = radius (any such root is a KKT point, so optimal), or the argmax limit if
    the radius is at least D(limit||p).  CVaR: greedy fill by decreasing loss (ties share the
    boundary mass in proportion to p).
    """
    losses, p = np.asarray(losses, np.float64), np.asarray(p, np.float64)
    s = p > 0
    constant = np.ptp(losses[s]) == 0
    if kind == "beta":
        if param == 0 or constant:
            q = p.copy()
        elif param == math.inf:
            q = argmax_limit(losses, p)
        else:
            q = TILTS[divergence](losses, p, param)
    elif kind == "radius":
        lim = argmax_limit(losses, p)
        div = DIVERGENCES[divergence]
        if param == 0 or constant:
            q = p.copy()
        elif param >= div(lim, p):
            q = lim
        else:
            tilt = TILTS[divergence]

            def gap(eta):
                return div(tilt(losses, p, eta), p) - param

            hi = 1.0
            while gap(hi) < 0:
                hi *= 2.0
                assert hi < 1e30, "oracle: could not bracket the multiplier"
            eta = optimize.brentq(gap, 0.0, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=1000)
            q = tilt(losses, p, eta)
    else:  # cvar
        q = np.zeros_like(p)
        left = 1.0
        for v in sorted(set(losses[s].tolist()), reverse=True):
            grp = s & (losses == v)
            cap = p[grp].sum() / param
            take = min(cap, left)
            q[grp] = take * p[grp] / p[grp].sum()
            left -= take
            if left <= 0:
                break
    return q, objective(q, losses, p, divergence, kind, param)


def _kl_grad(x, ps):
    return np.log(np.maximum(x, _TINY) / ps) + 1.0


def _kl_smooth(x, ps):
    return float(np.sum(x * np.log(np.maximum(x, _TINY) / ps)))


def _chi2_grad(x, ps):
    return 2.0 * (x - ps) / ps


def _chi2_smooth(x, ps):
    return float(np.sum((x - ps) ** 2 / ps))


_SMOOTH = {"kl": (_kl_smooth, _kl_grad), "chi2": (_chi2_smooth, _chi2_grad)}


def slsqp_solution(losses, p, divergence, kind, param):
    """Generic primal solve with SLSQP over the simplex on supp(p), several starts, best kept.

    Only for penalised (0 < beta < inf) and constrained (radius > 0) problems.  Returns the best
    feasible point found (constraint violation at most 1e-9) and its objective value.
    """
    s = p > 0
    ls, ps = losses[s], p[s]
    k = int(s.sum())
    div, dgrad = _SMOOTH[divergence]
    simplex = {"type": "eq", "fun": lambda x: np.sum(x) - 1.0, "jac": lambda x: np.ones_like(x)}
    if kind == "beta":

        def negf(x):
            return -(x @ ls - div(x, ps) / param)

        def negj(x):
            return -(ls - dgrad(x, ps) / param)

        cons = [simplex]
    else:

        def negf(x):
            return -(x @ ls)

        def negj(x):
            return -ls

        cons = [simplex, {"type": "ineq", "fun": lambda x: param - div(x, ps), "jac": lambda x: -dgrad(x, ps)}]
    lim = argmax_limit(ls, ps)
    starts = [ps, 0.5 * ps + 0.5 * lim]
    if np.ptp(ps) > 0:  # a uniform prior already is the uniform start
        starts.append(np.full(k, 1.0 / k))
    best_q, best_val = None, -math.inf
    for x0 in starts:
        res = optimize.minimize(
            negf,
            x0,
            jac=negj,
            method="SLSQP",
            bounds=[(0.0, 1.0)] * k,
            constraints=cons,
            options={"ftol": 1e-14, "maxiter": 2000},
        )
        x = np.clip(res.x, 0.0, None)
        x = x / x.sum()
        q = np.zeros_like(p)
        q[s] = x
        if kind == "radius" and DIVERGENCES[divergence](q, p) > param + 1e-9:
            continue
        val = objective(q, losses, p, divergence, kind, param)
        if val > best_val:
            best_q, best_val = q, val
    assert best_q is not None, "oracle: SLSQP found no feasible point"
    return best_q, best_val


def linprog_solution(losses, p, alpha):
    """CVaR: max <q, l> s.t. sum q = 1, 0 <= q_i <= p_i / alpha, with HiGHS."""
    n = losses.size
    res = optimize.linprog(
        -losses, A_eq=np.ones((1, n)), b_eq=[1.0], bounds=[(0.0, pi / alpha) for pi in p], method="highs"
    )
    assert res.status == 0, res.message
    return res.x, float(losses @ res.x)


# --------------------------------------------------------------------------------------------
# Helpers for calling dro_lab
# --------------------------------------------------------------------------------------------


def np64(t) -> np.ndarray:
    return t.detach().to(torch.float64).cpu().numpy()


def t64(a) -> torch.Tensor:
    return torch.as_tensor(np.asarray(a, dtype=np.float64))


def kwargs_for(divergence, kind, param, prior=None) -> dict:
    return {"divergence": divergence, kind: param, "prior": prior}


# Problem families: (divergence, keyword, parameter values)
FAMILIES = [
    ("kl", "beta", [0.0, 0.1, 1.0, 10.0, 100.0]),
    ("chi2", "beta", [0.0, 0.1, 1.0, 10.0, 100.0]),
    ("kl", "radius", [0.0, 0.01, 0.1, 1.0, 5.0]),
    ("chi2", "radius", [0.0, 0.01, 0.1, 1.0, 5.0]),
    ("cvar", "alpha", [0.05, 0.2, 0.5, 1.0]),
]
_PRIOR_CODE = {"uniform": 0, "dirichlet": 1, "zero": 2}


def make_problem(n, prior_kind, seed):
    """Random losses (all distinct) and a prior; the 'zero' prior puts p = 0 on the largest loss."""
    rng = np.random.default_rng([seed, n, _PRIOR_CODE[prior_kind]])
    losses = rng.uniform(-1.0, 3.0, size=n)
    assert np.unique(losses).size == n
    if prior_kind == "uniform":
        return losses, np.full(n, 1.0 / n), None
    p = rng.dirichlet(np.ones(n))
    if prior_kind == "zero":
        p[np.argmax(losses)] = 0.0
        p = p / p.sum()
    return losses, p, t64(p)


def _cases():
    out = []
    for divergence, kind, values in FAMILIES:
        for n in (1, 2, 5, 12):
            for prior_kind in ("uniform", "dirichlet", "zero"):
                if n == 1 and prior_kind != "uniform":
                    continue
                for seed in (0, 1):
                    for v in values:
                        out.append(
                            pytest.param(
                                divergence,
                                kind,
                                v,
                                n,
                                prior_kind,
                                seed,
                                id=f"{divergence}-{kind}={v}-n{n}-{prior_kind}-s{seed}",
                            )
                        )
    return out


# --------------------------------------------------------------------------------------------
# 1. Random problems against the scipy optimum (also robust_loss value and gradient)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("divergence,kind,param,n,prior_kind,seed", _cases())
def test_weights_feasible_and_optimal_against_scipy(divergence, kind, param, n, prior_kind, seed):
    losses, p, prior_t = make_problem(n, prior_kind, seed)
    kw = kwargs_for(divergence, kind, param, prior_t)
    q_t = worst_case_weights(t64(losses), **kw)
    assert q_t.shape == (n,) and q_t.dtype == torch.float64
    q = np64(q_t)

    # Feasibility.
    assert np.all(np.isfinite(q))
    assert q.min() >= -1e-12
    assert abs(q.sum() - 1.0) <= 1e-9
    assert np.all(q[p == 0] == 0)
    if kind == "radius":
        assert DIVERGENCES[divergence](q, p) <= param * (1 + 1e-6) + 1e-9
    if kind == "alpha":
        assert np.all(q <= p / param + 1e-9)

    # Optimality: exact KKT reference, plus a direct scipy solve that must not beat dro_lab.
    q_ref, v_ref = kkt_solution(losses, p, divergence, kind, param)
    v_ours = objective(q, losses, p, divergence, kind, param)
    if kind == "alpha":
        _, v_lp = linprog_solution(losses, p, param)
        assert v_lp == pytest.approx(v_ref, abs=1e-9)  # oracle self-check
        v_scipy = v_lp
    elif param == 0 or (kind == "beta" and param == math.inf) or n == 1:
        v_scipy = v_ref  # the feasible set / maximiser is a single point
    else:
        _, v_scipy = slsqp_solution(losses, p, divergence, kind, param)
        assert v_scipy <= v_ref + 1e-7  # oracle self-check: KKT point is the optimum
        assert v_scipy >= v_ref - 1e-5  # oracle self-check: SLSQP converged
    if divergence == "kl" and kind == "beta" and 0 < param < math.inf:
        closed = special.logsumexp(param * losses[p > 0], b=p[p > 0]) / param
        assert v_ref == pytest.approx(closed, abs=1e-10)
    assert v_ours >= v_scipy - 1e-6
    assert v_ours >= v_ref - 1e-6
    assert v_ours <= v_ref + 1e-6

    # The maximiser is unique here (strictly concave penalised objective; active strictly
    # convex constraint with non-constant losses; distinct losses for the LP; otherwise the
    # contract fixes it: p for beta = 0 / radius = 0, the argmax limit for large radii).
    np.testing.assert_allclose(q, q_ref, atol=1e-5, rtol=0)

    # robust_loss: value is the optimal value, gradient w.r.t. the losses is q.
    lt = t64(losses).requires_grad_()
    r = robust_loss(lt, **kw)
    assert r.dim() == 0
    assert r.item() == pytest.approx(v_ref, abs=1e-6)
    r.backward()
    np.testing.assert_allclose(np64(lt.grad), q, atol=1e-9, rtol=0)


# --------------------------------------------------------------------------------------------
# 2. Ties: tied losses share mass in proportion to the prior
# --------------------------------------------------------------------------------------------

TIE_LOSSES = np.array([1.0, 3.0, 3.0, 0.0])
TIE_PRIOR = np.array([0.1, 0.2, 0.5, 0.2])


@pytest.mark.parametrize(
    "divergence,kind,param",
    [
        ("kl", "beta", 2.0),
        ("chi2", "beta", 2.0),
        ("chi2", "beta", 0.3),
        ("kl", "radius", 0.1),
        ("chi2", "radius", 0.1),
        ("kl", "radius", 0.5),
    ],
)
def test_tied_losses_share_mass_in_prior_ratio(divergence, kind, param):
    q_t = worst_case_weights(t64(TIE_LOSSES), **kwargs_for(divergence, kind, param, t64(TIE_PRIOR)))
    q = np64(q_t)
    assert q[1] > 0
    assert q[2] / q[1] == pytest.approx(TIE_PRIOR[2] / TIE_PRIOR[1], rel=1e-6)
    q_ref, v_ref = kkt_solution(TIE_LOSSES, TIE_PRIOR, divergence, kind, param)
    _, v_slsqp = slsqp_solution(TIE_LOSSES, TIE_PRIOR, divergence, kind, param)
    assert v_slsqp == pytest.approx(v_ref, abs=1e-5)
    assert objective(q, TIE_LOSSES, TIE_PRIOR, divergence, kind, param) >= v_slsqp - 1e-6
    np.testing.assert_allclose(q, q_ref, atol=1e-6)


@pytest.mark.parametrize("divergence", ["kl", "chi2"])
@pytest.mark.parametrize(
    "kw", [{"radius": 100.0}, {"beta": math.inf}, {"beta": 1e6}], ids=["radius=100", "beta=inf", "beta=1e6"]
)
def test_tied_argmax_limit_is_prior_restricted_to_argmax(divergence, kw):
    q = np64(worst_case_weights(t64(TIE_LOSSES), divergence=divergence, prior=t64(TIE_PRIOR), **kw))
    expected = np.array([0.0, 0.2 / 0.7, 0.5 / 0.7, 0.0])
    np.testing.assert_allclose(q, expected, atol=1e-9)


@pytest.mark.parametrize(
    "losses,prior,alpha,expected",
    [
        # tie between the two largest losses, which together have more than enough capacity
        ([1.0, 3.0, 3.0, 0.0], [0.1, 0.2, 0.5, 0.2], 0.5, [0.0, 0.2 / 0.7, 0.5 / 0.7, 0.0]),
        # one entry filled to its cap p/alpha, the remaining 0.6 shared by the tie in ratio 1 : 3
        ([5.0, 3.0, 3.0, 0.0], [0.2, 0.1, 0.3, 0.4], 0.5, [0.4, 0.15, 0.45, 0.0]),
        # uniform prior, tie at the threshold
        ([5.0, 3.0, 3.0, 0.0], [0.25, 0.25, 0.25, 0.25], 0.5, [0.5, 0.25, 0.25, 0.0]),
    ],
)
def test_cvar_tie_at_threshold_shares_mass_in_prior_ratio(losses, prior, alpha, expected):
    losses, prior = np.array(losses), np.array(prior)
    q = np64(worst_case_weights(t64(losses), divergence="cvar", alpha=alpha, prior=t64(prior)))
    _, v_lp = linprog_solution(losses, prior, alpha)
    assert float(q @ losses) == pytest.approx(v_lp, abs=1e-9)
    assert np.all(q <= prior / alpha + 1e-9)
    np.testing.assert_allclose(q, expected, atol=1e-9)


# --------------------------------------------------------------------------------------------
# 3. Limits
# --------------------------------------------------------------------------------------------

LIM_LOSSES = np.array([0.3, 2.0, -1.0, 2.0, 1.5])
LIM_PRIOR = np.array([0.3, 0.1, 0.25, 0.15, 0.2])


@pytest.mark.parametrize(
    "kw",
    [
        {"divergence": "kl", "beta": 0.0},
        {"divergence": "chi2", "beta": 0.0},
        {"divergence": "kl", "radius": 0.0},
        {"divergence": "chi2", "radius": 0.0},
        {"divergence": "cvar", "alpha": 1.0},
    ],
    ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()),
)
@pytest.mark.parametrize("prior", ["uniform", "given"])
def test_trivial_parameter_returns_prior(kw, prior):
    p = np.full(5, 0.2) if prior == "uniform" else LIM_PRIOR
    q = np64(worst_case_weights(t64(LIM_LOSSES), prior=None if prior == "uniform" else t64(p), **kw))
    np.testing.assert_allclose(q, p, atol=1e-12)
    r = robust_loss(t64(LIM_LOSSES), prior=None if prior == "uniform" else t64(p), **kw)
    assert r.item() == pytest.approx(float(p @ LIM_LOSSES), abs=1e-12)


@pytest.mark.parametrize("divergence", ["kl", "chi2"])
@pytest.mark.parametrize(
    "kw", [{"beta": math.inf}, {"beta": 1e7}, {"radius": 1e3}], ids=["beta=inf", "beta=1e7", "radius=1e3"]
)
def test_extreme_parameter_gives_prior_on_argmax(divergence, kw):
    q = np64(worst_case_weights(t64(LIM_LOSSES), divergence=divergence, prior=t64(LIM_PRIOR), **kw))
    np.testing.assert_allclose(q, [0, 0.4, 0, 0.6, 0], atol=1e-9)
    r = robust_loss(t64(LIM_LOSSES), divergence=divergence, prior=t64(LIM_PRIOR), **kw)
    assert r.item() == pytest.approx(2.0, abs=1e-6)  # the limit value: max loss


@pytest.mark.parametrize(
    "divergence,kind,param",
    [
        ("kl", "beta", 1e3),
        ("chi2", "beta", 1e3),
        ("kl", "radius", 0.1),
        ("chi2", "radius", 0.1),
        ("cvar", "alpha", 0.3),
    ],
)
def test_losses_on_zero_prior_entries_do_not_change_the_maximiser(divergence, kind, param):
    # q is zero where p is zero, and the problem restricted to supp(p) does not see those losses;
    # a huge loss there (a padded or masked sample) must not cost precision on the support.
    p = np.array([0.5, 0.5, 0.0])
    losses = np.array([0.0, 1e-3, 1e10])
    q = np64(worst_case_weights(t64(losses), prior=t64(p), **{"divergence": divergence, kind: param}))
    q_ref, v_ref = kkt_solution(losses, p, divergence, kind, param)
    assert q[2] == 0
    assert objective(q, losses, p, divergence, kind, param) >= v_ref - 1e-6
    np.testing.assert_allclose(q, q_ref, atol=1e-5, rtol=0)


@pytest.mark.parametrize("divergence", ["kl", "chi2"])
def test_radius_just_below_limit_is_close_to_argmax_limit(divergence):
    div = DIVERGENCES[divergence]
    rmax = div(argmax_limit(LIM_LOSSES, LIM_PRIOR), LIM_PRIOR)
    radius = rmax * (1 - 1e-3)
    q = np64(worst_case_weights(t64(LIM_LOSSES), divergence=divergence, radius=radius, prior=t64(LIM_PRIOR)))
    assert div(q, LIM_PRIOR) <= radius * (1 + 1e-6)
    q_ref, v_ref = kkt_solution(LIM_LOSSES, LIM_PRIOR, divergence, "radius", radius)
    assert float(q @ LIM_LOSSES) == pytest.approx(v_ref, abs=1e-6)
    assert float(q @ LIM_LOSSES) < 2.0


def test_cvar_small_alpha_puts_all_mass_on_argmax():
    losses = np.array([0.3, 2.5, -1.0, 2.0, 1.5])
    for alpha in (LIM_PRIOR[1], LIM_PRIOR[1] / 2, 1e-6):
        q = np64(worst_case_weights(t64(losses), divergence="cvar", alpha=alpha, prior=t64(LIM_PRIOR)))
        np.testing.assert_allclose(q, [0, 1, 0, 0, 0], atol=1e-12)
    # tied argmax: alpha <= p(argmax set) puts the mass there, in prior ratio
    q = np64(worst_case_weights(t64(LIM_LOSSES), divergence="cvar", alpha=0.25, prior=t64(LIM_PRIOR)))
    np.testing.assert_allclose(q, [0, 0.4, 0, 0.6, 0], atol=1e-12)
    # just above p_argmax: mass p/alpha on the argmax, the rest on the runner-up
    alpha = 0.15
    q = np64(worst_case_weights(t64(losses), divergence="cvar", alpha=alpha, prior=t64(LIM_PRIOR)))
    np.testing.assert_allclose(q, [0, 0.1 / alpha, 0, 1 - 0.1 / alpha, 0], atol=1e-12)


# --------------------------------------------------------------------------------------------
# 4. The paper's chi^2 formula (21): right without clipping, wrong (not normalised) with it
# --------------------------------------------------------------------------------------------


def paper_chi2_formula(losses, beta):
    n = losses.size
    return np.maximum(1.0 + 0.5 * beta * (losses - losses.mean()), 0.0) / n


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_chi2_paper_formula_agrees_when_nothing_clips(seed):
    losses = np.random.default_rng(seed).exponential(1.0, size=8)
    beta = 0.95 * 2.0 / (losses.mean() - losses.min())
    paper = paper_chi2_formula(losses, beta)
    assert paper.min() > 0 and paper.sum() == pytest.approx(1.0, abs=1e-12)
    q = np64(worst_case_weights(t64(losses), divergence="chi2", beta=beta))
    np.testing.assert_allclose(q, paper, atol=1e-10)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_chi2_paper_formula_fails_when_clipping_while_dro_lab_matches_scipy(seed):
    losses = np.random.default_rng(seed).exponential(1.0, size=8)
    beta = 5.0
    p = np.full(8, 1 / 8)
    paper = paper_chi2_formula(losses, beta)
    assert np.any(1.0 + 0.5 * beta * (losses - losses.mean()) < 0)  # clipping happens
    assert abs(paper.sum() - 1.0) > 1e-3  # so the paper's q is not even a distribution
    q = np64(worst_case_weights(t64(losses), divergence="chi2", beta=beta))
    assert q.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.max(np.abs(q - paper)) > 1e-3
    _, v_slsqp = slsqp_solution(losses, p, "chi2", "beta", beta)
    q_ref, v_ref = kkt_solution(losses, p, "chi2", "beta", beta)
    assert v_slsqp == pytest.approx(v_ref, abs=1e-7)
    assert objective(q, losses, p, "chi2", "beta", beta) >= v_slsqp - 1e-9
    np.testing.assert_allclose(q, q_ref, atol=1e-9)
    # uniform prior: q is the Euclidean projection of 1/n + beta/(2n) l onto the simplex
    y = 1 / 8 + beta / 16 * losses
    proj = optimize.minimize(
        lambda x: np.sum((x - y) ** 2),
        p,
        jac=lambda x: 2 * (x - y),
        method="SLSQP",
        bounds=[(0, 1)] * 8,
        constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}],
        options={"ftol": 1e-15, "maxiter": 500},
    ).x
    np.testing.assert_allclose(q, proj, atol=1e-6)


# --------------------------------------------------------------------------------------------
# 5. robust_loss: gradient = q = finite difference of the scipy optimal value; nn training use
# --------------------------------------------------------------------------------------------


def _fd_grad(value_fn, losses, h=1e-5):
    g = np.zeros_like(losses)
    for i in range(losses.size):
        e = np.zeros_like(losses)
        e[i] = h
        g[i] = (value_fn(losses + e) - value_fn(losses - e)) / (2 * h)
    return g


@pytest.mark.parametrize(
    "divergence,kind,param",
    [
        ("kl", "beta", 0.5),
        ("kl", "beta", 5.0),
        ("chi2", "beta", 3.0),
        ("kl", "radius", 0.2),
        ("chi2", "radius", 0.5),
        ("cvar", "alpha", 0.3),
    ],
)
def test_robust_loss_gradient_is_q_and_finite_difference_of_optimal_value(divergence, kind, param):
    rng = np.random.default_rng(7)
    losses = rng.uniform(0, 2, size=6)
    p = rng.dirichlet(np.ones(6))
    if divergence == "kl" and kind == "beta":

        def value(l):
            return special.logsumexp(param * l, b=p) / param
    elif kind == "alpha":

        def value(l):
            return linprog_solution(l, p, param)[1]
    else:

        def value(l):
            return kkt_solution(l, p, divergence, kind, param)[1]

    fd = _fd_grad(value, losses)
    kw = kwargs_for(divergence, kind, param, t64(p))
    lt = t64(losses).requires_grad_()
    r = robust_loss(lt, **kw)
    assert r.item() == pytest.approx(value(losses), abs=1e-7)
    r.backward()
    q = np64(worst_case_weights(t64(losses), **kw))
    np.testing.assert_allclose(np64(lt.grad), q, atol=1e-10)
    np.testing.assert_allclose(np64(lt.grad), fd, atol=1e-5)


@pytest.mark.parametrize(
    "kw",
    [
        {"divergence": "kl", "beta": 10.0},
        {"divergence": "chi2", "beta": 4.0},
        {"divergence": "kl", "radius": 0.3},
        {"divergence": "chi2", "radius": 0.5},
        {"divergence": "cvar", "alpha": 0.3},
    ],
    ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()),
)
def test_robust_loss_backward_through_cross_entropy_matches_per_sample_loop(kw):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 4).double()
    x = torch.randn(10, 3, dtype=torch.float64)
    y = torch.randint(0, 4, (10,))
    per_sample = F.cross_entropy(model(x), y, reduction="none")
    q = worst_case_weights(per_sample.detach(), **kw)
    robust_loss(per_sample, **kw).backward()
    got = [prm.grad.clone() for prm in model.parameters()]

    expected = [torch.zeros_like(prm) for prm in model.parameters()]
    for i in range(10):
        model.zero_grad()
        F.cross_entropy(model(x[i : i + 1]), y[i : i + 1]).backward()
        for acc, prm in zip(expected, model.parameters()):
            acc += q[i] * prm.grad
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, atol=1e-12, rtol=1e-10)
    assert not q.requires_grad


def test_robust_loss_kl_penalised_is_log_mean_exp():
    rng = np.random.default_rng(3)
    losses = rng.normal(size=9)
    for beta in (0.1, 1.0, 30.0):
        r = robust_loss(t64(losses), divergence="kl", beta=beta)
        assert r.item() == pytest.approx(special.logsumexp(beta * losses, b=1 / 9) / beta, abs=1e-12)


# --------------------------------------------------------------------------------------------
# 6. Extreme values and dtypes
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("divergence", ["kl", "chi2"])
def test_huge_beta_float32_huge_losses_is_finite_and_on_argmax(divergence):
    losses = torch.from_numpy(np.random.default_rng(0).uniform(0, 1e6, size=12).astype(np.float32))
    q = worst_case_weights(losses, divergence=divergence, beta=1e4)
    assert q.dtype == torch.float32
    assert torch.isfinite(q).all()
    assert q.sum().item() == pytest.approx(1.0, abs=1e-5)
    assert q[losses.argmax()].item() == pytest.approx(1.0, abs=1e-6)
    r = robust_loss(losses, divergence=divergence, beta=1e4)
    assert torch.isfinite(r)
    ref = kkt_solution(np64(losses), np.full(12, 1 / 12), divergence, "beta", 1e4)[1]
    assert r.item() == pytest.approx(ref, rel=1e-6)


@pytest.mark.parametrize("divergence", ["kl", "chi2"])
def test_huge_beta_float32_tiny_loss_gaps_match_float64_oracle(divergence):
    losses = torch.tensor([0.5, 0.503, 0.501, 0.504, 0.502], dtype=torch.float32)
    q = worst_case_weights(losses, divergence=divergence, beta=1e4)
    assert torch.isfinite(q).all()
    assert q.sum().item() == pytest.approx(1.0, abs=1e-5)
    assert int(q.argmax()) == 3
    q_ref, _ = kkt_solution(np64(losses), np.full(5, 0.2), divergence, "beta", 1e4)
    np.testing.assert_allclose(np64(q), q_ref, atol=1e-3)


@pytest.mark.parametrize(
    "kw",
    [
        {"divergence": "kl", "radius": 0.1},
        {"divergence": "chi2", "radius": 0.1},
        {"divergence": "cvar", "alpha": 0.2},
    ],
    ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()),
)
def test_float32_huge_losses_constrained_is_finite_and_optimal(kw):
    losses = torch.from_numpy(np.random.default_rng(1).uniform(0, 1e6, size=10).astype(np.float32))
    q = worst_case_weights(losses, **kw)
    assert q.dtype == torch.float32 and torch.isfinite(q).all()
    assert q.sum().item() == pytest.approx(1.0, abs=1e-5)
    kind, param = [(k, v) for k, v in kw.items() if k != "divergence"][0]
    l64, p = np64(losses), np.full(10, 0.1)
    _, v_ref = kkt_solution(l64, p, kw["divergence"], kind, param)
    assert float(np64(q) @ l64) == pytest.approx(v_ref, rel=1e-5)


@pytest.mark.parametrize(
    "kw",
    [
        {"divergence": "kl", "beta": 3.0},
        {"divergence": "chi2", "beta": 3.0},
        {"divergence": "kl", "radius": 0.2},
        {"divergence": "chi2", "radius": 0.2},
        {"divergence": "cvar", "alpha": 0.3},
        {"divergence": "kl", "beta": math.inf},
    ],
    ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()),
)
def test_equal_losses_give_prior_and_single_sample_gives_one(kw):
    q = np64(worst_case_weights(torch.full((5,), 1.7, dtype=torch.float64), prior=t64(LIM_PRIOR), **kw))
    np.testing.assert_allclose(q, LIM_PRIOR, atol=1e-9)
    one = worst_case_weights(torch.tensor([0.42], dtype=torch.float64), **kw)
    assert one.shape == (1,)
    assert one.item() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(
    "divergence,kind,param",
    [
        ("kl", "beta", 2.0),
        ("chi2", "radius", 0.3),
        ("cvar", "alpha", 0.4),
    ],
)
def test_output_dtype_matches_input_dtype(dtype, divergence, kind, param):
    losses = torch.tensor([0.1, 0.9, 0.4, 0.7], dtype=dtype)
    q = worst_case_weights(losses, divergence=divergence, **{kind: param})
    assert q.dtype == dtype
    r = robust_loss(losses, divergence=divergence, **{kind: param})
    assert r.dtype == dtype


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize(
    "kw",
    [
        {"divergence": "kl", "beta": 10.0},
        {"divergence": "kl", "beta": 1e4},
        {"divergence": "chi2", "beta": 10.0},
        {"divergence": "chi2", "beta": 1e4},
        {"divergence": "kl", "radius": 0.1},
        {"divergence": "chi2", "radius": 0.1},
        {"divergence": "cvar", "alpha": 0.2},
    ],
    ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()),
)
def test_half_precision_inputs_give_finite_normalised_weights(dtype, kw):
    losses = torch.from_numpy(np.random.default_rng(2).uniform(0, 1e3, size=8)).to(dtype)
    q = worst_case_weights(losses, **kw)
    assert q.dtype == dtype and q.shape == (8,)
    assert torch.isfinite(q).all() and (q >= 0).all()
    assert q.double().sum().item() == pytest.approx(1.0, abs=2e-2)
    assert int(q.double().argmax()) == int(losses.double().argmax())


# --------------------------------------------------------------------------------------------
# divergence_value against a direct numpy sum
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("divergence", ["kl", "chi2"])
def test_divergence_value_matches_numpy_sum(divergence):
    p1 = np.array([0.25, 0.25, 0.25, 0.25])
    q1 = np.array([0.1, 0.2, 0.3, 0.4])
    p2 = np.array([0.5, 0.1, 0.15, 0.25])
    q2 = np.array([0.0, 0.5, 0.5, 0.0])  # zero entries of q: 0 log 0 = 0
    for q, p in ((q1, p1), (q2, p2), (p2, p2)):
        if divergence == "kl":
            m = q > 0
            ref = np.sum(q[m] * np.log(q[m] / p[m]))
        else:
            ref = np.sum(p * (q / p - 1) ** 2)
        got = divergence_value(t64(q), t64(p), divergence)
        assert float(got) == pytest.approx(ref, abs=1e-12)


@pytest.mark.parametrize("divergence", ["kl", "chi2"])
def test_divergence_value_zero_prior_entries_contribute_nothing(divergence):
    p = np.array([0.0, 0.4, 0.6])
    q = np.array([0.0, 0.7, 0.3])
    ref = DIVERGENCES[divergence](q, p)
    assert float(divergence_value(t64(q), t64(p), divergence)) == pytest.approx(ref, abs=1e-12)
    assert float(divergence_value(t64(p), t64(p), divergence)) == pytest.approx(0.0, abs=1e-15)


# --------------------------------------------------------------------------------------------
# 7. Bad inputs
# --------------------------------------------------------------------------------------------

_L = torch.tensor([0.1, 0.5, 0.3], dtype=torch.float64)


def _v(*xs):
    return torch.tensor(xs, dtype=torch.float64)


@pytest.mark.parametrize("fn", [worst_case_weights, robust_loss], ids=["weights", "robust_loss"])
@pytest.mark.parametrize(
    "losses,kw,match",
    [
        (_L, {"divergence": "kl", "beta": -1.0}, "beta"),
        (_L, {"divergence": "chi2", "beta": -0.5}, "beta"),
        (_L, {"divergence": "kl", "radius": -0.1}, "radius"),
        (_L, {"divergence": "chi2", "radius": -1e-3}, "radius"),
        (_L, {"divergence": "cvar", "alpha": 0.0}, "alpha"),
        (_L, {"divergence": "cvar", "alpha": -0.2}, "alpha"),
        (_L, {"divergence": "cvar", "alpha": 1.5}, "alpha"),
        (_v(0.1, math.nan, 0.3), {"divergence": "kl", "beta": 1.0}, "loss"),
        (_v(0.1, math.inf, 0.3), {"divergence": "chi2", "radius": 0.1}, "loss"),
        (torch.tensor([0.1, -float("inf"), 0.3]), {"divergence": "cvar", "alpha": 0.5}, "loss"),
        (_L, {"divergence": "tv", "beta": 1.0}, "divergence"),
        (_L, {"divergence": "KL-ish", "radius": 1.0}, "divergence"),
        (_L, {"divergence": "kl", "beta": 1.0, "prior": _v(0.25, 0.25, 0.25, 0.25)}, "prior"),
        (_L, {"divergence": "cvar", "alpha": 0.5, "prior": _v(0.5, 0.5)}, "prior"),
        (_L, {"divergence": "kl", "beta": 1.0, "prior": _v(0.6, 0.6, -0.2)}, "prior"),
        (_L, {"divergence": "chi2", "radius": 0.1, "prior": _v(0.5, 0.3, 0.3)}, "prior"),
        (_L, {"divergence": "kl", "beta": 1.0, "radius": 0.1}, "beta|radius"),
        (_L, {"divergence": "kl"}, "beta|radius"),
        (_L, {"divergence": "cvar"}, "alpha"),
        (_L, {"divergence": "kl", "alpha": 0.5}, "alpha"),
        (_L, {"divergence": "chi2", "beta": 1.0, "alpha": 0.5}, "alpha|beta"),
        (_L, {"divergence": "cvar", "beta": 1.0}, "beta|alpha"),
        (_L, {"divergence": "cvar", "alpha": 0.5, "radius": 0.1}, "radius|alpha"),
    ],
    ids=lambda v: v.replace("|", "-or-") if isinstance(v, str) else None,
)
def test_bad_inputs_raise(fn, losses, kw, match):
    with pytest.raises((ValueError, TypeError), match=f"(?i){match}"):
        fn(losses, **kw)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("beta", [1e-9, 1e-4, 1e-2])
def test_robust_loss_value_tends_to_the_mean_at_small_beta_in_low_precision(dtype, beta):
    # (1/β)·log Σ p e^{βℓ} = mean + (β/2)·Var + O(β²): a float32 log-sum-exp divided by a tiny β
    # would cancel catastrophically, so the value must be formed in higher precision.
    from scipy.special import logsumexp

    losses = torch.tensor([1.0, 3.0, 2.0, 10.0, 0.0]).to(dtype)
    l64 = losses.double().numpy()
    # log-mean-exp around the mean, in float64: (1/β)·log mean e^{β(ℓ − mean)} + mean
    exact = float(l64.mean() + (logsumexp(beta * (l64 - l64.mean())) - np.log(len(l64))) / beta)
    value = float(robust_loss(losses, divergence="kl", beta=beta))
    assert value == pytest.approx(exact, rel=1e-2 if dtype != torch.float32 else 1e-6)


# --------------------------------------------------------------------------- extremes found in review


def test_kl_robust_loss_at_tiny_beta_is_the_mean():
    # (1/β)·log Σ p e^{βℓ} → mean: a plain log-sum-exp returned the max at β = 1e-16.
    losses = torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64)
    for beta in (1e-300, 1e-16, 1e-12):
        assert float(robust_loss(losses, divergence="kl", beta=beta)) == pytest.approx(7 / 6, rel=1e-12)


@pytest.mark.parametrize(
    ("losses", "beta", "prior"),
    [
        ([1e8, 1e8 - 1, 1e8 - 2], 1e9, None),
        ([1.0, 2.0, 3.0], 1e20, None),
        ([1.0, 2.0, 3.0], 1e300, [0.2, 0.3, 0.5]),
    ],
)
def test_chi2_at_huge_beta_is_the_argmax_not_nan(losses, beta, prior):
    p = None if prior is None else torch.tensor(prior, dtype=torch.float64)
    q = worst_case_weights(torch.tensor(losses, dtype=torch.float64), divergence="chi2", beta=beta, prior=p)
    assert torch.isfinite(q).all()
    assert int(q.argmax()) == int(torch.tensor(losses).argmax()) and float(q.max()) == pytest.approx(1.0, abs=1e-6)


def test_kl_beyond_float32_range_and_zero_prior_with_huge_off_support_loss():
    q = worst_case_weights(torch.tensor([1.0, 2.0, 3.0]), divergence="kl", beta=1e39)
    assert q.tolist() == [0.0, 0.0, 1.0]
    prior = torch.tensor([0.0, 0.5, 0.5])
    q = worst_case_weights(torch.tensor([100.0, 1.0, 2.0]), divergence="kl", beta=1e37, prior=prior)
    assert q.tolist() == [0.0, 0.0, 1.0]
    value = robust_loss(
        torch.tensor([100.0, 1.0, 2.0], dtype=torch.float64), divergence="kl", beta=1e307, prior=prior.double()
    )
    assert float(value) == pytest.approx(2.0)


def test_array_inputs_keep_float_dtype_and_list_prior_follows_losses():
    assert worst_case_weights(np.array([1, 2, 3], dtype=np.float32), divergence="kl", beta=1.0).dtype == torch.float32
    assert worst_case_weights([1, 2, 3], divergence="kl", beta=1.0).dtype == torch.float64
    with pytest.raises(TypeError, match="real numbers"):
        worst_case_weights(np.array([True, False]), divergence="kl", beta=1.0)
    q = worst_case_weights(torch.tensor([1.0, 2.0, 3.0]), divergence="kl", beta=1.0, prior=[0.2, 0.3, 0.5])
    expected = np.array([0.2, 0.3, 0.5]) * np.exp([1.0, 2.0, 3.0])
    np.testing.assert_allclose(q.numpy(), expected / expected.sum(), rtol=1e-6)
