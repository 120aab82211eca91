"""ALSO, Optimistic Mirror-Prox and DRAGO against independent oracles.

Oracles: torch.optim.Adam (ALSO with π frozen and no optimism; optimistic Adam = Adam fed the
extrapolated gradient), scipy maximisation of the prox objective, an L-BFGS solve of the primal
Φ(θ) = τ log Σ π̂ e^{L/τ} + λ/2‖θ‖² (the saddle point), exact enumeration of the sampling estimators,
and a plain-numpy re-implementation of the official code's Popov step.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy.optimize import minimize
from scipy.special import logsumexp, softmax

from dro_lab.optim import ALSO, DRAGO, OptimisticMirrorProx, bilinear_game_path, kl_prox_step, simplex_projection
from tests._util import through_bytes


def _net(seed=1, dtype=torch.float32):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).to(dtype)


@pytest.fixture(scope="module")
def data():
    g = torch.Generator().manual_seed(0)
    return (
        torch.randn(64, 5, generator=g),
        torch.randint(0, 3, (64,), generator=g),
        torch.randint(0, 4, (64,), generator=g),
    )


def _max_rel(a, b):
    with torch.no_grad():
        return max(float((p - q).abs().max() / q.abs().max()) for p, q in zip(a.parameters(), b.parameters()))


# --------------------------------------------------------------------------- ALSO vs Adam


@pytest.mark.parametrize("mode", ["optimistic", "descent-ascent"])
def test_also_frozen_pi_no_optimism_is_adam(data, mode):
    X, Y, G = data
    ref, net = _net(), _net()
    adam = torch.optim.Adam(ref.parameters(), lr=1e-2, weight_decay=1e-3, eps=1e-8)
    also = ALSO(
        net.parameters(),
        n_groups=4,
        lr=1e-2,
        weight_decay=1e-3,
        eps=1e-8,
        pi_lr=0.0,
        alpha=0.0 if mode == "optimistic" else 0.7,
        mode=mode,
    )
    gen = torch.Generator().manual_seed(1)
    for _ in range(100):
        idx = torch.randint(0, 64, (16,), generator=gen)
        adam.zero_grad()
        F.cross_entropy(ref(X[idx]), Y[idx]).backward()
        adam.step()
        also.zero_grad()
        also.weighted_loss(F.cross_entropy(net(X[idx]), Y[idx], reduction="none"), G[idx]).backward()
        also.step()
    assert _max_rel(net, ref) < 1e-6
    assert torch.allclose(also.pi, torch.full((4,), 0.25, dtype=torch.float64))
    assert all("prev_grad" not in also.state[p] for p in net.parameters())  # α = 0: one plain Adam update, no memory


def test_also_with_optimism_is_adam_on_the_extrapolated_gradient(data):
    X, Y, G = data
    alpha = 1.0
    ref, net = _net(), _net()
    adam = torch.optim.Adam(ref.parameters(), lr=1e-2)
    also = ALSO(net.parameters(), n_groups=4, lr=1e-2, pi_lr=0.0, alpha=alpha)
    prev = None
    gen = torch.Generator().manual_seed(2)
    for _ in range(50):
        idx = torch.randint(0, 64, (16,), generator=gen)
        adam.zero_grad()
        F.cross_entropy(ref(X[idx]), Y[idx]).backward()
        g = [p.grad.clone() for p in ref.parameters()]
        prev = g if prev is None else prev
        for p, gt, gp in zip(ref.parameters(), g, prev):
            p.grad = gt + alpha * (gt - gp)
        prev = g
        adam.step()
        also.zero_grad()
        also.weighted_loss(F.cross_entropy(net(X[idx]), Y[idx], reduction="none"), G[idx]).backward()
        also.step()
    assert _max_rel(net, ref) < 1e-5


# --------------------------------------------------------------------------- the π step


def _kl(p, q):
    return float(np.sum(p * (np.log(p) - np.log(q))))


@pytest.mark.parametrize("lr,tau", [(0.5, 0.1), (2.0, 3.0), (0.01, 0.0001)])
def test_option_one_is_the_exact_prox(lr, tau):
    rng = np.random.default_rng(3)
    c = 5
    pi_k = rng.dirichlet(np.ones(c))
    prior = rng.dirichlet(np.ones(c))
    g = rng.normal(size=c) * 2

    def neg(z):
        pi = softmax(z)
        return -(lr * g @ pi - lr * tau * _kl(pi, prior) - _kl(pi, pi_k))

    best = minimize(neg, np.log(pi_k), method="BFGS", options={"gtol": 1e-12, "maxiter": 5000})
    ours = (
        kl_prox_step(torch.tensor(np.log(pi_k)), torch.tensor(g), lr=lr, tau=tau, log_prior=torch.tensor(np.log(prior)))
        .exp()
        .numpy()
    )
    assert np.allclose(ours, softmax(best.x), atol=1e-6)
    assert -neg(np.log(ours)) >= -best.fun - 1e-12


def test_option_two_forms_and_euclid_projection():
    rng = np.random.default_rng(4)
    c = 6
    pi_k, prior, g = rng.dirichlet(np.ones(c)), rng.dirichlet(np.ones(c)), rng.normal(size=c)
    lr, tau = 0.3, 0.5
    # II (KL geometry): argmax η⟨g − τ∇KL(π_k‖π̂), π⟩ − KL(π‖π_k), ∇KL = log(π_k/π̂) + 1
    d = g - tau * (np.log(pi_k / prior) + 1)
    best = minimize(
        lambda z: -(lr * d @ softmax(z) - _kl(softmax(z), pi_k)), np.log(pi_k), method="BFGS", options={"gtol": 1e-12}
    )
    ours = (
        kl_prox_step(
            torch.tensor(np.log(pi_k)),
            torch.tensor(g),
            lr=lr,
            tau=tau,
            log_prior=torch.tensor(np.log(prior)),
            option="II",
        )
        .exp()
        .numpy()
    )
    assert np.allclose(ours, softmax(best.x), atol=1e-6)
    # II-euclid: a Euclidean projection, checked against SLSQP
    v = pi_k + lr * d
    qp = minimize(
        lambda q: np.sum((q - v) ** 2),
        np.full(c, 1 / c),
        method="SLSQP",
        bounds=[(0, 1)] * c,
        constraints=[{"type": "eq", "fun": lambda q: q.sum() - 1}],
        options={"ftol": 1e-14},
    )
    proj = simplex_projection(torch.tensor(v)).numpy()
    assert np.allclose(proj, qp.x, atol=1e-6)
    eu = (
        kl_prox_step(
            torch.tensor(np.log(pi_k)),
            torch.tensor(g),
            lr=lr,
            tau=tau,
            log_prior=torch.tensor(np.log(prior)),
            option="II-euclid",
        )
        .exp()
        .numpy()
    )
    assert np.allclose(eu, np.maximum(proj, np.finfo(float).tiny), atol=1e-12)
    with pytest.raises(ValueError, match="pi_lr·tau"):
        kl_prox_step(torch.zeros(3), torch.zeros(3), lr=2.0, tau=1.0, log_prior=0.0, option="II")


@pytest.mark.parametrize("option", ["I", "II", "II-euclid"])
def test_pi_stays_on_the_simplex(data, option):
    X, Y, _ = data
    net = _net()
    groups = torch.arange(64)  # c = n: per-sample weights, the paper's hardest case
    opt = ALSO(
        net.parameters(),
        n_groups=64,
        lr=1e-2,
        pi_lr=0.5,
        tau=1.0 if option == "II" else 0.01,
        pi_option=option,
        loss_scale=1.0,
    )
    gen = torch.Generator().manual_seed(5)
    for _ in range(200):
        idx = torch.randint(0, 64, (8,), generator=gen)
        opt.zero_grad()
        opt.weighted_loss(F.cross_entropy(net(X[idx]), Y[idx], reduction="none") * 20, groups[idx]).backward()
        opt.step()
        pi = opt.pi
        assert torch.isfinite(opt.log_pi).all() or option == "II-euclid"
        assert bool((pi >= 0).all()) and abs(float(pi.sum()) - 1) < 1e-9
    assert opt.kl_to_prior() > 0


# --------------------------------------------------------------------------- saddle points


def _group_problem(seed=0):
    """Logistic regression, 40 examples in 4 groups of different sizes, float64."""
    g = torch.Generator().manual_seed(seed)
    n, d = 40, 3
    X = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = (
        X @ torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64) + 0.8 * torch.randn(n, generator=g, dtype=torch.float64)
        > 0
    ).long()
    groups = torch.tensor([0] * 5 + [1] * 10 + [2] * 10 + [3] * 15)
    return X, y, groups


def _saddle(X, y, groups, tau, lam, prior):
    """θ* = argmin Φ(θ) = τ log Σ_j π̂_j exp(L_j(θ)/τ) + λ/2‖θ‖², L_j = (c/n) Σ_{i∈j} f_i; π* = the softmax."""
    Xn, yn, gn = X.numpy(), y.numpy(), groups.numpy()
    n, c = len(yn), int(gn.max()) + 1
    s = 2 * yn - 1

    def parts(w):
        z = s * (Xn @ w[:-1] + w[-1])
        f = np.logaddexp(0, -z)
        L = np.array([f[gn == j].sum() for j in range(c)]) * c / n
        return f, L, z

    def phi(w):
        f, L, z = parts(w)
        pi = softmax(np.log(prior) + L / tau)
        dfdz = -1 / (1 + np.exp(z))
        wts = pi[gn] * c / n
        grad = np.concatenate([(wts * dfdz * s) @ Xn, [np.sum(wts * dfdz * s)]]) + lam * w
        return tau * logsumexp(np.log(prior) + L / tau) + lam / 2 * w @ w, grad

    res = minimize(
        phi,
        np.zeros(X.shape[1] + 1),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-13, "ftol": 1e-16, "maxiter": 10_000},
    )
    _, L, _ = parts(res.x)
    return res.x, softmax(np.log(prior) + L / tau)


def _linear(d):
    torch.manual_seed(0)
    m = torch.nn.Linear(d, 1).double()
    torch.nn.init.zeros_(m.weight)
    torch.nn.init.zeros_(m.bias)
    return m


def _run_full_batch(opt, model, X, y, groups, steps, schedule=None):
    s = (2 * y - 1).double()
    for k in range(steps):
        if schedule is not None:
            for pg in opt.param_groups:
                pg["lr"] = schedule(k)
        opt.zero_grad()
        losses = F.softplus(-s * model(X).squeeze(1))
        opt.weighted_loss(losses, groups).backward()
        opt.step()
    return torch.cat([model.weight.detach().flatten(), model.bias.detach()]).numpy()


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_optimistic_mirror_prox_reaches_the_saddle_point(alpha):
    X, y, groups = _group_problem()
    tau, lam = 0.5, 0.1
    prior = np.array([0.1, 0.2, 0.3, 0.4])
    theta_star, pi_star = _saddle(X, y, groups, tau, lam, prior)
    model = _linear(3)
    opt = OptimisticMirrorProx(
        model.parameters(), n_groups=4, lr=0.2, tau=tau, alpha=alpha, weight_decay=lam, prior=torch.tensor(prior)
    )
    theta = _run_full_batch(opt, model, X, y, groups, 1500)
    assert np.abs(theta - theta_star).max() < 1e-6
    assert np.abs(opt.pi.numpy() - pi_star).max() < 1e-6


@pytest.mark.slow
def test_also_full_batch_decaying_lr_approaches_the_saddle_point():
    X, y, groups = _group_problem()
    tau, lam = 0.5, 0.1
    theta_star, pi_star = _saddle(X, y, groups, tau, lam, np.full(4, 0.25))
    model = _linear(3)
    opt = ALSO(model.parameters(), n_groups=4, lr=0.05, weight_decay=lam, pi_lr=0.5, tau=tau, alpha=1.0)
    theta = _run_full_batch(opt, model, X, y, groups, 3000, schedule=lambda k: 0.05 / (1 + k / 100))
    # Stated tolerance: 1e-3 (Adam's step normalisation and a 1/t schedule converge slowly near the end).
    assert np.abs(theta - theta_star).max() < 1e-3
    assert np.abs(opt.pi.numpy() - pi_star).max() < 1e-3


def test_descent_ascent_spirals_out_and_optimism_converges_on_the_bilinear_game():
    gda = bilinear_game_path(lr=0.1, alpha=0.0, steps=2000)
    ogda = bilinear_game_path(lr=0.1, alpha=1.0, steps=2000)
    # closed form for α = 0: z_{k+1} = [[1, −γ], [γ, 1]] z_k, so ‖z_k‖ = (1+γ²)^{k/2} ‖z_0‖
    assert math.isclose(float(gda[-1].norm()), math.sqrt(2) * (1.01**1000), rel_tol=1e-9)
    assert float(ogda[-1].norm()) < 1e-3


# --------------------------------------------------------------------------- estimators (spec §2.1), exact enumeration


@pytest.mark.parametrize("sampling", ["uniform", "group", "pi"])
def test_sampling_estimators_are_unbiased(sampling):
    """E over one draw (j, i) of the θ-gradient and π-gradient equals ∇_θ F and (L_j)_j, by enumeration."""
    X, y, groups = _group_problem(1)
    n, c = len(y), 4
    sizes = torch.bincount(groups, minlength=c).double()
    s = (2 * y - 1).double()
    model = _linear(3)
    torch.nn.init.normal_(model.weight, generator=torch.Generator().manual_seed(0))
    pi = torch.tensor([0.1, 0.4, 0.2, 0.3], dtype=torch.float64)
    opt = ALSO(model.parameters(), n_groups=c, pi_init=pi, sampling=sampling, group_sizes=sizes)
    f = F.softplus(-s * model(X).squeeze(1))
    L = torch.zeros(c, dtype=torch.float64).index_add(0, groups, f.detach()) * c / n
    target = torch.autograd.grad((pi[groups] * f).sum() * c / n, list(model.parameters()))
    p_draw = {
        "uniform": torch.full((n,), 1 / n, dtype=torch.float64),
        "group": 1 / (c * sizes[groups]),
        "pi": pi[groups] / sizes[groups],
    }[sampling]
    assert abs(float(p_draw.sum()) - 1) < 1e-12
    exp_g = [torch.zeros_like(p) for p in model.parameters()]
    exp_pi = torch.zeros(c, dtype=torch.float64)
    for i in range(n):
        fi = F.softplus(-s[i : i + 1] * model(X[i : i + 1]).squeeze(1))
        loss = opt.weighted_loss(fi, groups[i : i + 1])
        gi = torch.autograd.grad(loss, list(model.parameters()))
        for e, gg in zip(exp_g, gi):
            e += p_draw[i] * gg
        exp_pi += p_draw[i] * opt._take_pi_grad()
    for e, t in zip(exp_g, target):
        assert torch.allclose(e, t, atol=1e-12)
    assert torch.allclose(exp_pi, L, atol=1e-12)


def test_uniform_pi_weighted_loss_is_the_mean_and_duplicates_add_up():
    opt = ALSO([torch.nn.Parameter(torch.zeros(1))], n_groups=3)
    losses = torch.tensor([1.0, 2.0, 3.0, 4.0])
    groups = torch.tensor([0, 0, 2, 0])
    assert torch.allclose(opt.weighted_loss(losses, groups), losses.mean())
    g_pi = opt._take_pi_grad()
    assert torch.allclose(g_pi, torch.tensor([7.0, 0.0, 3.0], dtype=torch.float64) * 3 / 4)  # scatter-add, c/M


# --------------------------------------------------------------------------- Popov form vs the official code's logic


def test_popov_mode_matches_a_numpy_reimplementation():
    """ALSO(mode='popov') on a quadratic per-group problem vs the spec §2.4 pseudo-code written in numpy."""
    rng = np.random.default_rng(7)
    c, d = 3, 4
    A = rng.normal(size=(c, d))
    lr, b1, b2, eps, wd, pi_lr, tau, alpha = 0.05, 0.9, 0.999, 1e-8, 0.01, 0.3, 0.2, 1.0
    x0 = rng.normal(size=d)

    def losses_at(x):  # f_j(x) = ½‖x − A_j‖², one object per group
        return 0.5 * ((x[None, :] - A) ** 2).sum(1)

    # numpy oracle
    x, m, v, t = x0.copy(), np.zeros(d), np.zeros(d), 0
    log_pi = np.log(np.full(c, 1 / c))
    g_prev, gpi_prev = None, None

    def adam_step(x, g):
        nonlocal m, v, t
        g = g + wd * x
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        t += 1
        return -lr / (1 - b1**t) * m / (np.sqrt(v) / np.sqrt(1 - b2**t) + eps)

    def prox(lp, g):
        z = (lp + pi_lr * tau * np.log(1 / c) + pi_lr * g) / (1 + pi_lr * tau)
        return z - logsumexp(z)

    for _ in range(30):
        saved = x.copy()
        if g_prev is not None:
            x = x + adam_step(x, alpha * g_prev)
        lp_eval = prox(log_pi, gpi_prev) if gpi_prev is not None else log_pi
        w = np.exp(lp_eval)  # scale c/M = 1 with M = c
        f = losses_at(x)
        g = ((x[None, :] - A) * w[:, None]).sum(0)
        x = saved
        g_prev = g
        x = x + adam_step(x, g)
        gpi_prev = f.copy()
        log_pi = prox(log_pi, f)

    p = torch.nn.Parameter(torch.tensor(x0))
    opt = ALSO(
        [p],
        n_groups=c,
        lr=lr,
        betas=(b1, b2),
        eps=eps,
        weight_decay=wd,
        pi_lr=pi_lr,
        tau=tau,
        alpha=alpha,
        mode="popov",
    )
    At = torch.tensor(A)
    for _ in range(30):

        def closure():
            opt.zero_grad()
            loss = opt.weighted_loss(0.5 * ((p[None, :] - At) ** 2).sum(1), torch.arange(c))
            loss.backward()
            return loss

        opt.step(closure)
    assert np.allclose(p.detach().numpy(), x, atol=1e-10)
    assert np.allclose(opt.log_pi.numpy(), log_pi, atol=1e-10)
    with pytest.raises(ValueError, match="closure"):
        opt.step()


# --------------------------------------------------------------------------- DRAGO (simplified)


@pytest.mark.parametrize("pi_lr", [0.0, 0.5])
def test_drago_snapshot_logic_matches_a_loop(pi_lr):
    rng = np.random.default_rng(8)
    c, d, freq, lr, tau = 3, 2, 3, 0.1, 0.1
    A = [rng.normal(size=(c, d)) for _ in range(8)]  # a different "batch" per step
    x, log_pi = np.zeros(d), np.log(np.full(c, 1 / c))
    G0 = G1 = L0 = L1 = None
    p = torch.nn.Parameter(torch.zeros(d, dtype=torch.float64))
    opt = DRAGO([p], n_groups=c, lr=lr, pi_lr=pi_lr, tau=tau, freq=freq)
    for t, At in enumerate(A):
        pi = np.exp(log_pi)
        losses = 0.5 * ((x[None, :] - At) ** 2).sum(1)  # scale c/M = 1 with M = c: weights π_j
        grad = (pi[:, None] * (x[None, :] - At)).sum(0)
        if t % freq == 0:
            G0, L0 = grad, losses
        else:
            if t % freq == 1:
                G1, L1 = grad, losses
            x = x - lr * (grad - G1 + G0)
            if pi_lr:
                z = (log_pi + pi_lr * tau * np.log(1 / c) + pi_lr * (losses - L1 + L0)) / (1 + pi_lr * tau)
                log_pi = z - logsumexp(z)
        opt.zero_grad()
        opt.weighted_loss(0.5 * ((p[None, :] - torch.tensor(At)) ** 2).sum(1), torch.arange(c)).backward()
        opt.step()
        assert np.allclose(p.detach().numpy(), x, atol=1e-12), t
        assert np.allclose(opt.log_pi.numpy(), log_pi, atol=1e-12), t


# --------------------------------------------------------------------------- state and errors


@pytest.mark.parametrize("kwargs", [dict(), dict(mode="api"), dict(pi_option="II", tau=0.5)])
def test_state_dict_round_trip_continues_identically(data, kwargs):
    X, Y, G = data

    def run(opt, net, gen, steps):
        for _ in range(steps):
            idx = torch.randint(0, 64, (16,), generator=gen)
            opt.zero_grad()
            opt.weighted_loss(F.cross_entropy(net(X[idx]), Y[idx], reduction="none"), G[idx]).backward()
            opt.step()

    net = _net()
    opt = ALSO(net.parameters(), n_groups=4, lr=1e-2, pi_lr=0.2, **kwargs)
    gen = torch.Generator().manual_seed(9)
    run(opt, net, gen, 10)
    saved_net, saved_opt, saved_gen = through_bytes(net.state_dict()), through_bytes(opt.state_dict()), gen.get_state()
    run(opt, net, gen, 10)
    net2 = _net(seed=99)
    net2.load_state_dict(saved_net)
    opt2 = ALSO(net2.parameters(), n_groups=4)
    opt2.load_state_dict(saved_opt)
    gen2 = torch.Generator()
    gen2.set_state(saved_gen)
    run(opt2, net2, gen2, 10)
    assert _max_rel(net2, net) == 0
    assert torch.equal(opt2.log_pi, opt.log_pi)
    assert opt2.mode == opt.mode and opt2.pi_option == opt.pi_option


def test_bad_inputs_are_refused_clearly():
    params = [torch.nn.Parameter(torch.zeros(2))]
    with pytest.raises(ValueError, match="tau"):
        ALSO(params, n_groups=3, tau=0.0)
    with pytest.raises(ValueError, match="tau"):
        OptimisticMirrorProx(params, n_groups=3, lr=0.1, tau=-1.0)
    with pytest.raises(ValueError, match="n_groups"):
        ALSO(params, n_groups=0)
    with pytest.raises(ValueError, match="empty group"):
        ALSO(params, n_groups=3, sampling="pi", group_sizes=[2, 0, 1])
    with pytest.raises(ValueError, match="group_sizes"):
        ALSO(params, n_groups=3, sampling="group")
    with pytest.raises(ValueError, match="mode"):
        ALSO(params, n_groups=3, mode="extragradient")
    with pytest.raises(ValueError, match="pi_option"):
        ALSO(params, n_groups=3, pi_option="III")
    with pytest.raises(ValueError, match="prior"):
        ALSO(params, n_groups=3, prior=[0.5, 0.5, 0.0])
    with pytest.raises(ValueError, match="alpha"):
        ALSO(params, n_groups=3, alpha=-1.0)
    with pytest.raises(ValueError, match="freq"):
        DRAGO(params, n_groups=3, freq=1)
    opt = ALSO(params, n_groups=3)
    with pytest.raises(ValueError, match="unknown group id 3"):
        opt.weighted_loss(torch.ones(2), torch.tensor([0, 3]))
    with pytest.raises(ValueError, match="unknown group id -1"):
        opt.weighted_loss(torch.ones(2), torch.tensor([-1, 0]))
    with pytest.raises(ValueError, match="NaN"):
        opt.weighted_loss(torch.tensor([1.0, float("nan")]), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="one id per loss"):
        opt.weighted_loss(torch.ones(2), torch.tensor([0, 1, 2]))
    with pytest.raises(TypeError, match="integer"):
        opt.weighted_loss(torch.ones(2), torch.tensor([0.0, 1.0]))
    with pytest.raises(RuntimeError, match="weighted_loss"):
        opt.step()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_pi_lives_on_the_parameters_device():
    net = _net().cuda()
    opt = ALSO(net.parameters(), n_groups=4, pi_lr=0.1)
    x, y = torch.randn(8, 5, device="cuda"), torch.randint(0, 3, (8,), device="cuda")
    opt.weighted_loss(F.cross_entropy(net(x), y, reduction="none"), torch.randint(0, 4, (8,), device="cuda")).backward()
    opt.step()
    assert opt.log_pi.device.type == "cuda" and abs(float(opt.pi.sum()) - 1) < 1e-9
