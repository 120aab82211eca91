"""The ALSO paper's baselines (dro_lab.baselines) against independent oracles.

Oracles: scipy SLSQP on the permutahedron written out subset by subset, SLSQP on Levy's χ² ball,
a brute-force CVaR sort, Python-loop counts, numpy re-implementations of the simple formulas
(RECOVER, Sagawa's exponentiated-gradient loop) and a chi-square goodness-of-fit test.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from _util import through_bytes
from scipy import optimize, stats

from dro_lab.data import ArrayDataset
from dro_lab.engine import fit
from dro_lab.models import LogisticRegression
from dro_lab.reweighting import class_balanced_weights, extremile_spectrum, spectral_risk_weights
from dro_lab.strategies.baselines import (
    FastDROStrategy,
    OnlineGroupDROStrategy,
    RecoverStrategy,
    SpectralRiskStrategy,
    StaticWeightsStrategy,
    UpsamplingStrategy,
)
from dro_lab.utils import make_generator


def _setup(strategy, train, seed=0):
    strategy.setup(len(train), device=torch.device("cpu"), generator=make_generator(seed), batch_size=8, train=train)
    return strategy


# --------------------------------------------------------------------------- spectral risk


def _permutahedron_slsqp(losses, sigma, nu, penalty):
    """max ⟨q,ℓ⟩ − ν D(q‖u) over P(σ), every subset constraint written out; returns (q, objective)."""
    m = len(losses)
    top = np.cumsum(np.sort(sigma)[::-1])  # top[k-1] = sum of the k largest σ

    def objective(q):
        if penalty == "kl":
            div = float(np.sum(q * np.log(np.maximum(m * q, 1e-300))))
        else:
            div = float(m * np.sum((q - 1 / m) ** 2))
        return float(q @ losses) - nu * div

    def neg(q):
        return -objective(q)

    def neg_grad(q):
        if penalty == "kl":
            g = losses - nu * (np.log(np.maximum(m * q, 1e-300)) + 1)
        else:
            g = losses - nu * 2 * m * (q - 1 / m)
        return -g

    cons = [{"type": "eq", "fun": lambda q: q.sum() - sigma.sum(), "jac": lambda q: np.ones(m)}]
    for k in range(1, m):
        for subset in itertools.combinations(range(m), k):
            mask = np.zeros(m)
            mask[list(subset)] = 1.0
            cons.append({"type": "ineq", "fun": lambda q, a=mask, b=top[k - 1]: b - a @ q, "jac": lambda q, a=mask: -a})
    lower = 1e-12 if penalty == "kl" else 0.0
    best = None
    for start in (np.full(m, 1 / m), sigma[np.argsort(np.argsort(losses))]):
        start = np.clip(start, lower, None)
        res = optimize.minimize(
            neg,
            start,
            jac=neg_grad,
            method="SLSQP",
            constraints=cons,
            bounds=[(lower, 1.0)] * m,
            options={"ftol": 1e-15, "maxiter": 2000},
        )
        if best is None or res.fun < best.fun:
            best = res
    return best.x, -best.fun, objective


@pytest.mark.parametrize("penalty", ["kl", "chi2"])
@pytest.mark.parametrize("nu", [0.05, 0.3, 1.0, 5.0])
@pytest.mark.parametrize("m,seed", [(4, 0), (5, 1), (6, 2)])
def test_spectral_weights_match_slsqp(penalty, nu, m, seed):
    rng = np.random.default_rng(seed)
    losses = rng.exponential(1.0, size=m)
    sigma = extremile_spectrum(m, 2.5).numpy()
    q = spectral_risk_weights(torch.tensor(losses), torch.tensor(sigma), shift_cost=nu, penalty=penalty).numpy()
    q_ref, obj_ref, objective = _permutahedron_slsqp(losses, sigma, nu, penalty)
    assert objective(q) == pytest.approx(obj_ref, abs=1e-9)
    np.testing.assert_allclose(q, q_ref, atol=2e-6)
    assert q.sum() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("penalty", ["kl", "chi2"])
@pytest.mark.parametrize("nu", [0.02, 0.5])
def test_spectral_weights_with_zero_spectrum_entries(penalty, nu):
    """A superquantile (CVaR) spectrum has zeros at the bottom: still the permutahedron's maximiser."""
    losses = np.random.default_rng(7).normal(size=5)
    sigma = np.array([0.0, 0.0, 1 / 3, 1 / 3, 1 / 3])
    q = spectral_risk_weights(torch.tensor(losses), torch.tensor(sigma), shift_cost=nu, penalty=penalty).numpy()
    q_ref, obj_ref, objective = _permutahedron_slsqp(losses, sigma, nu, penalty)
    assert objective(q) == pytest.approx(obj_ref, abs=1e-9)
    np.testing.assert_allclose(q, q_ref, atol=2e-6)


@pytest.mark.parametrize("penalty", ["kl", "chi2"])
def test_spectral_tiny_and_zero_shift_cost_give_sorted_spectrum(penalty):
    rng = np.random.default_rng(3)
    losses = torch.tensor(rng.normal(size=7))
    sigma = extremile_spectrum(7, 3.0)
    # independent: the rearrangement inequality — the largest σ goes to the largest loss
    expected = np.empty(7)
    expected[np.argsort(losses.numpy())] = np.sort(sigma.numpy())
    for nu in (0.0, 1e-9, 1e-14):
        q = spectral_risk_weights(losses, sigma, shift_cost=nu, penalty=penalty)
        np.testing.assert_allclose(q.numpy(), expected, atol=1e-6)


def test_spectral_weights_dtype_detached_and_huge_shift_cost_uniform():
    losses = torch.tensor([3.0, 0.5, 1.0, 2.0], requires_grad=True)
    q = spectral_risk_weights(losses, extremile_spectrum(4, 2.0), shift_cost=1e6, penalty="kl")
    assert q.dtype == torch.float32 and not q.requires_grad
    np.testing.assert_allclose(q.numpy(), 0.25, atol=1e-5)  # ν → ∞: the penalty pins q to uniform


def test_extremile_spectrum_properties_and_n_draws_below_one():
    for m, r in [(1, 1.0), (5, 1.0), (10, 2.0), (64, 7.5), (1000, 200.0)]:
        s = extremile_spectrum(m, r)
        assert s.dtype == torch.float64 and s.shape == (m,)
        assert float(s.sum()) == pytest.approx(1.0, abs=1e-12)
        assert bool((s[1:] >= s[:-1] - 1e-15).all())
    np.testing.assert_allclose(extremile_spectrum(4, 2.0).numpy(), [1 / 16, 3 / 16, 5 / 16, 7 / 16])
    with pytest.raises(ValueError, match="n_draws.*easy|n_draws.*smallest"):
        extremile_spectrum(5, 0.5)
    with pytest.raises(ValueError, match="n_draws"):
        SpectralRiskStrategy(n_draws=1e-3)


def test_spectral_rejects_bad_spectrum():
    with pytest.raises(ValueError, match="nondecreasing"):
        spectral_risk_weights(torch.rand(3), torch.tensor([0.5, 0.3, 0.2]), shift_cost=1.0)
    with pytest.raises(ValueError, match="shape"):
        spectral_risk_weights(torch.rand(3), extremile_spectrum(4, 2.0), shift_cost=1.0)


# --------------------------------------------------------------------------- FastDRO


def _levy_chi2_slsqp(losses, size):
    m = len(losses)
    cons = [
        {"type": "eq", "fun": lambda q: q.sum() - 1, "jac": lambda q: np.ones(m)},
        {
            "type": "ineq",
            "fun": lambda q: size - 0.5 * np.mean((m * q - 1) ** 2),
            "jac": lambda q: -m * (m * q - 1) / m,
        },
    ]
    res = optimize.minimize(
        lambda q: -q @ losses,
        np.full(m, 1 / m),
        jac=lambda q: -losses,
        method="SLSQP",
        constraints=cons,
        bounds=[(0, 1)] * m,
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    return res.x


@pytest.mark.parametrize("size", [0.05, 0.5, 2.0])
def test_fastdro_chi2_ball_matches_levy_problem(size):
    rng = np.random.default_rng(4)
    losses = rng.exponential(size=12)
    q = FastDROStrategy("chi2", size=size).weights(torch.tensor(losses)).numpy()
    m = len(losses)
    half_mean = 0.5 * np.mean((m * q - 1) ** 2)
    assert half_mean <= size + 1e-9
    q_ref = _levy_chi2_slsqp(losses, size)
    np.testing.assert_allclose(q, q_ref, atol=1e-5)
    if 0.5 * np.mean((m * q_ref - 1) ** 2) > size - 1e-6:  # the constraint binds: tight
        assert half_mean == pytest.approx(size, rel=1e-6)


@pytest.mark.parametrize("size", [0.1, 0.25, 0.37, 1.0])
def test_fastdro_cvar_matches_sort(size):
    rng = np.random.default_rng(5)
    losses = rng.permutation(np.arange(20, dtype=np.float64)) + rng.uniform(0, 0.5, 20)
    m = len(losses)
    q = FastDROStrategy("cvar", size=size).weights(torch.tensor(losses)).numpy()
    cap = 1 / (size * m)
    expected = np.zeros(m)
    mass = 1.0
    for i in np.argsort(-losses):  # brute force: fill the largest losses up to the cap
        expected[i] = min(cap, mass)
        mass -= expected[i]
    assert q.max() <= cap + 1e-12
    np.testing.assert_allclose(q, expected, atol=1e-12)
    losses_t = torch.tensor(losses, requires_grad=True)
    value = FastDROStrategy("cvar", size=size).reduce(losses_t, indices=torch.arange(m), groups=None)
    assert float(value.detach()) == pytest.approx(float(expected @ losses))
    value.backward()
    np.testing.assert_allclose(losses_t.grad.numpy(), expected, atol=1e-12)


# --------------------------------------------------------------------------- class balance


def test_class_balanced_weights_vs_loop():
    labels = [2, 0, 0, 1, 2, 2, 2, 0, 5]
    counts = {}
    for c in labels:
        counts[c] = counts.get(c, 0) + 1
    raw = [1.0 / counts[c] for c in labels]
    expected = [r / sum(raw) for r in raw]
    w = class_balanced_weights(torch.tensor(labels))
    assert w.dtype == torch.float64
    np.testing.assert_allclose(w.numpy(), expected, rtol=1e-14)
    with pytest.raises(ValueError, match="empty"):
        class_balanced_weights(torch.tensor([], dtype=torch.int64))
    with pytest.raises(TypeError, match="labels"):
        class_balanced_weights(torch.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="labels"):
        class_balanced_weights(torch.zeros(2, 2, dtype=torch.int64))


def test_static_weights_reduce_by_hand():
    y = torch.tensor([0, 0, 0, 1, 2, 2])
    train = ArrayDataset(torch.zeros(6, 2), y)
    strat = _setup(StaticWeightsStrategy(), train)
    idx = torch.tensor([0, 3, 4, 3])
    losses = torch.tensor([1.0, 2.0, 3.0, 4.0])
    # N = (3, 1, 2): raw 1/N_y = 1/3,1/3,1/3,1,1/2,1/2 → Σ = 3
    w = {0: (1 / 3) / 3, 3: 1 / 3, 4: (1 / 2) / 3}
    expected = sum(6 * w[int(i)] / 4 * float(l) for i, l in zip(idx, losses))
    got = strat.reduce(losses, indices=idx, groups=None)
    assert float(got) == pytest.approx(expected, rel=1e-6)


def test_static_weights_balanced_is_mean():
    train = ArrayDataset(torch.zeros(12, 2), torch.arange(12) % 3)
    strat = _setup(StaticWeightsStrategy(), train)
    losses = torch.rand(5, dtype=torch.float64)
    got = strat.reduce(losses, indices=torch.tensor([0, 5, 7, 11, 2]), groups=None)
    assert float(got) == pytest.approx(float(losses.mean()), rel=1e-12)


def test_upsampling_balances_classes():
    y = torch.tensor([0] * 70 + [1] * 25 + [2] * 5)
    train = ArrayDataset(torch.zeros(100, 2), y)
    strat = _setup(UpsamplingStrategy(), train, seed=123)
    batches = [b for epoch in range(60) for b in strat.batches(epoch, 32)]
    assert len(batches) == 60 * math.ceil(100 / 32)
    drawn = torch.cat(batches)
    assert len(drawn) == 60 * 100
    counts = np.bincount(y[drawn].numpy(), minlength=3)
    assert stats.chisquare(counts).pvalue > 1e-3  # uniform over classes
    unbalanced = np.array([0.70, 0.25, 0.05]) * counts.sum()
    assert stats.chisquare(counts, unbalanced).pvalue < 1e-12  # not the data's class distribution


# --------------------------------------------------------------------------- RECOVER


def test_recover_warmup_formula_clip_and_state():
    strat = RecoverStrategy(t=0.7, clip=3.0, warmup_steps=2)
    losses = torch.tensor([0.1, 1.5, 6.0, 0.0], dtype=torch.float64)
    idx = torch.arange(4)
    for _ in range(2):
        assert float(strat.reduce(losses, indices=idx, groups=None)) == pytest.approx(float(losses.mean()))
        strat.observe(idx, losses)
    ell = losses.numpy()
    expected = (np.mean(np.exp(np.clip(0.7 * ell, -3.0, 3.0))) - 1) / 0.7
    assert float(strat.reduce(losses, indices=idx, groups=None)) == pytest.approx(expected, rel=1e-12)
    big = RecoverStrategy(t=3.0, warmup_steps=0).reduce(torch.full((3,), 1e4), indices=idx[:3], groups=None)
    assert math.isfinite(float(big)) and float(big) == pytest.approx((math.exp(10.0) - 1) / 3, rel=1e-5)
    other = RecoverStrategy(t=0.7, clip=3.0, warmup_steps=2)
    other.load_state_dict(through_bytes(strat.state_dict()))
    assert other.steps == 2 and other.state_dict() == {"steps": 2}


# --------------------------------------------------------------------------- online group DRO


def _sagawa_numpy(batches, n_groups, eta):
    q = np.full(n_groups, 1.0 / n_groups)
    objectives = []
    for ids, ell in batches:
        means = {}
        for g in range(n_groups):
            sel = [l for i, l in zip(ids, ell) if i == g]
            if sel:
                means[g] = sum(sel) / len(sel)
        for g, mg in means.items():
            q[g] *= math.exp(eta * mg)
        q /= q.sum()
        objectives.append(sum(q[g] * mg for g, mg in means.items()))
    return q, objectives


@pytest.mark.parametrize("grouping", ["class", "group"])
def test_group_dro_matches_sagawa_loop(grouping):
    gen = torch.Generator().manual_seed(6)
    y = torch.randint(0, 3, (40,), generator=gen)
    groups = torch.randint(0, 4, (40,), generator=gen)
    train = ArrayDataset(torch.zeros(40, 2), y, groups, num_classes=3, num_groups=4)
    strat = _setup(OnlineGroupDROStrategy(step_size=0.5, grouping=grouping), train)
    n_groups = 3 if grouping == "class" else 4
    np.testing.assert_allclose(strat.q.numpy(), 1 / n_groups)
    recorded, objectives = [], []
    for _ in range(5):
        idx = torch.randperm(40, generator=gen)[:6]
        losses = torch.rand(6, generator=gen, dtype=torch.float64) * 3
        ids = (y if grouping == "class" else groups)[idx]
        objectives.append(float(strat.reduce(losses, indices=idx, groups=groups[idx])))
        recorded.append((ids.tolist(), losses.tolist()))
        assert float(strat.q.sum()) == pytest.approx(1.0, abs=1e-14) and bool((strat.q >= 0).all())
    q_ref, obj_ref = _sagawa_numpy(recorded, n_groups, 0.5)
    np.testing.assert_allclose(strat.q.numpy(), q_ref, rtol=1e-12)
    np.testing.assert_allclose(objectives, obj_ref, rtol=1e-12)
    stats_ = strat.epoch_stats()
    assert stats_["q_max"] == pytest.approx(q_ref.max())
    assert stats_["q_entropy"] == pytest.approx(-(q_ref * np.log(q_ref)).sum())
    other = _setup(OnlineGroupDROStrategy(step_size=0.5, grouping=grouping), train)
    other.load_state_dict(through_bytes(strat.state_dict()))
    torch.testing.assert_close(other.q, strat.q)


def test_group_dro_needs_groups():
    train = ArrayDataset(torch.zeros(6, 2), torch.arange(6) % 2)
    with pytest.raises(ValueError, match="groups"):
        _setup(OnlineGroupDROStrategy(grouping="group"), train)
    grouped = ArrayDataset(torch.zeros(6, 2), torch.arange(6) % 2, torch.arange(6) % 3)
    strat = _setup(OnlineGroupDROStrategy(grouping="group"), grouped)
    with pytest.raises(ValueError, match="groups"):
        strat.reduce(torch.rand(2), indices=torch.tensor([0, 1]), groups=None)


# --------------------------------------------------------------------------- through fit


def _strategies():
    return {
        "upsampling": UpsamplingStrategy,
        "static": StaticWeightsStrategy,
        "spectral-kl": lambda: SpectralRiskStrategy(),
        "spectral-chi2": lambda: SpectralRiskStrategy(n_draws=3.0, shift_cost=0.1, penalty="chi2"),
        "fastdro-cvar": lambda: FastDROStrategy("cvar", size=0.3),
        "fastdro-chi2": lambda: FastDROStrategy("chi2", size=0.5),
        "recover": lambda: RecoverStrategy(t=1.5, warmup_steps=3),
        "group-dro": lambda: OnlineGroupDROStrategy(step_size=0.1),
        "group-dro-groups": lambda: OnlineGroupDROStrategy(step_size=0.1, grouping="group"),
    }


@pytest.mark.parametrize("key", list(_strategies()))
def test_fit_runs_and_is_reproducible(key):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(60, 5, generator=gen)
    y = torch.arange(60) % 3
    train = ArrayDataset(x, y, torch.arange(60) % 2, num_classes=3)

    def run():
        torch.manual_seed(0)
        model = LogisticRegression(5, 3)
        strat = _strategies()[key]()
        hist = fit(model, train, strategy=strat, epochs=2, batch_size=16, lr=0.1, seed=7, progress=False, device="cpu")
        return hist, strat

    h1, strat = run()
    h2, _ = run()
    assert h1.strategy == strat.describe()
    assert all(math.isfinite(v) for v in h1["train_loss"] + h1["train_objective"])
    assert h1["train_loss"] == h2["train_loss"] and h1["train_objective"] == h2["train_objective"]
    assert h1["steps"] == [4, 4]


def test_names():
    assert UpsamplingStrategy().describe() == "upsampling"
    assert StaticWeightsStrategy().describe() == "static-weights"
    assert SpectralRiskStrategy().describe() == "spectral(extremile=2,ν=1,kl)"
    assert FastDROStrategy("cvar", size=0.1).describe() == "fastdro-cvar(0.1)"
    assert FastDROStrategy("chi2", size=0.5).describe() == "fastdro-chi2(0.5)"
    assert RecoverStrategy().describe() == "recover-simplified(t=1)"
    assert OnlineGroupDROStrategy().describe() == "group-dro(η=0.01)"


@pytest.mark.parametrize(
    "make,arg",
    [
        (lambda: SpectralRiskStrategy(shift_cost=-1.0), "shift_cost"),
        (lambda: SpectralRiskStrategy(penalty="tv"), "penalty"),
        (lambda: spectral_risk_weights(torch.rand(3), extremile_spectrum(3, 2), shift_cost=-0.1), "shift_cost"),
        (lambda: spectral_risk_weights(torch.rand(3), extremile_spectrum(3, 2), shift_cost=1, penalty="x"), "penalty"),
        (lambda: FastDROStrategy("cvar", size=0.0), "size"),
        (lambda: FastDROStrategy("cvar", size=1.5), "size"),
        (lambda: FastDROStrategy("chi2", size=-0.2), "size"),
        (lambda: FastDROStrategy("kl", size=0.1), "kind"),
        (lambda: OnlineGroupDROStrategy(step_size=0.0), "step_size"),
        (lambda: OnlineGroupDROStrategy(step_size=-1.0), "step_size"),
        (lambda: OnlineGroupDROStrategy(grouping="domain"), "grouping"),
        (lambda: RecoverStrategy(t=0.0), "t"),
        (lambda: RecoverStrategy(t=-2.0), "t"),
        (lambda: RecoverStrategy(clip=0.0), "clip"),
        (lambda: RecoverStrategy(warmup_steps=-1), "warmup_steps"),
        (lambda: extremile_spectrum(0, 2.0), "m"),
    ],
)
def test_bad_inputs_name_the_argument(make, arg):
    with pytest.raises(ValueError, match=rf"\b{arg}\b"):
        make()


def test_wrong_types():
    with pytest.raises(TypeError, match="size"):
        FastDROStrategy("cvar", size="0.1")
    with pytest.raises(TypeError, match="warmup_steps"):
        RecoverStrategy(warmup_steps=1.5)
