"""DONE with η < 1 (Sow et al., Algorithm 1 lines 10–12, eq. (10)): the weights keep the paper's scale, and the
strategy says so.

Oracles: the compositional recursion by hand in NumPy (linear space), per-example gradients from a loop of
separate backward passes, and scipy's softmax.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy.special import softmax

from dro_lab.reweighting import done_weights
from dro_lab.strategies.adversarial import DONEStrategy

R, ETA = 0.4, 0.5
quiet = pytest.mark.filterwarnings("ignore:DONEStrategy\\(eta=")


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(5, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3)).double()


def _batches():
    """Three batches of (x, y), the later ones harder (scaled inputs, so their losses spread more)."""
    gen = torch.Generator().manual_seed(3)
    out = []
    for scale, n in ((1.0, 7), (3.0, 6), (0.5, 8)):
        out.append(
            (scale * torch.randn(n, 5, generator=gen, dtype=torch.float64), torch.randint(0, 3, (n,), generator=gen))
        )
    return out


def _hand_weights(loss_batches, r, eta):
    """ω of each batch by Algorithm 1 lines 10–11 in plain NumPy: u_{t+1} = (1−η)u_t + η·mean(e^{ℓ/r})."""
    u, out = None, []
    for ell in loss_batches:
        g = np.exp(np.asarray(ell, dtype=np.float64) / r)
        u = g.mean() if u is None else (1 - eta) * u + eta * g.mean()
        out.append(g / (len(g) * u))
    return out


def _per_example_grads(model, x, y):
    """∇θ ℓ_i for each example, one backward pass each (no vmap, no weights)."""
    rows = []
    for i in range(len(y)):
        model.zero_grad(set_to_none=True)
        F.cross_entropy(model(x[i : i + 1]), y[i : i + 1]).backward()
        rows.append(torch.cat([p.grad.reshape(-1) for p in model.parameters()]))
    return torch.stack(rows)


@quiet
def test_the_gradient_is_the_hand_weighted_sum_of_per_example_gradients():
    model, batches = _model(), _batches()
    with torch.no_grad():
        losses = [F.cross_entropy(model(x), y, reduction="none") for x, y in batches]
    omegas = _hand_weights([ell.numpy() for ell in losses], R, ETA)
    s = DONEStrategy(0.1, r=R, eta=ETA)
    for (x, y), omega in zip(batches, omegas):
        model.zero_grad(set_to_none=True)
        s.reduce(F.cross_entropy(model(x), y, reduction="none"), indices=None, groups=None).backward()
        got = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
        expect = torch.as_tensor(omega) @ _per_example_grads(model, x, y)
        torch.testing.assert_close(got, expect, rtol=1e-10, atol=1e-12)
    # the step is the batch softmax's step (η = 1) times the weights' sum, which is not one here
    sums = [float(o.sum()) for o in omegas]
    assert sums[0] == pytest.approx(1.0) and all(abs(v - 1) > 0.05 for v in sums[1:])
    for ell, omega in zip(losses, omegas):
        np.testing.assert_allclose(omega / omega.sum(), softmax(ell.numpy() / R), rtol=1e-12)


def test_the_weights_are_not_normalised_and_normalising_them_gives_the_eta_one_weights():
    rng = np.random.default_rng(0)
    hand = _hand_weights([rng.exponential(size=16) * k for k in (1.0, 2.5, 0.3, 1.7)], r=0.3, eta=0.3)
    rng = np.random.default_rng(0)
    log_u = None
    for t, omega in enumerate(hand):
        ell = rng.exponential(size=16) * (1.0, 2.5, 0.3, 1.7)[t]
        w, log_u = done_weights(torch.tensor(ell), r=0.3, log_u=log_u, eta=0.3)
        np.testing.assert_allclose(w.numpy(), omega, rtol=1e-10)
        assert float(w.sum()) == pytest.approx(float(omega.sum()), rel=1e-10)  # e^s / u_{t+1}, not 1
        w_one, _ = done_weights(torch.tensor(ell), r=0.3, log_u=log_u, eta=1.0)
        np.testing.assert_allclose((w / w.sum()).numpy(), w_one.numpy(), rtol=1e-10)  # u cancels: η = 1
    assert max(abs(float(o.sum()) - 1) for o in hand) > 0.1


def test_eta_below_one_warns_about_the_step_size_and_eta_one_does_not():
    with pytest.warns(UserWarning, match=r"eta=0\.5.*effective learning rate.*done_weight_sum"):
        DONEStrategy(0.1, r=1.0, eta=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DONEStrategy(0.1, r=1.0)
        DONEStrategy(0.1, r=1.0, eta=1.0)


@pytest.mark.parametrize("eta, exc", [(0.0, ValueError), (1.5, ValueError), (math.nan, ValueError), ("0.5", TypeError)])
def test_eta_outside_zero_one_is_refused(eta, exc):
    with pytest.raises(exc, match="eta"):
        DONEStrategy(0.1, eta=eta)
    with pytest.raises(exc, match="eta"):
        done_weights(torch.ones(3), r=1.0, eta=eta)


@quiet
def test_epoch_stats_report_the_mean_weight_sum_by_hand():
    model, batches = _model(), _batches()
    s = DONEStrategy(0.1, r=R, eta=ETA)
    ells = []
    for x, y in batches:
        losses = F.cross_entropy(model(x), y, reduction="none")
        ells.append(losses.detach().numpy())
        s.reduce(losses, indices=None, groups=None)
    omegas = _hand_weights(ells, R, ETA)
    stats = s.epoch_stats()
    assert stats["done_weight_sum"] == pytest.approx(np.mean([o.sum() for o in omegas]), rel=1e-9)
    ess = np.mean([o.sum() ** 2 / (len(o) * (o**2).sum()) for o in omegas])
    assert stats["done_ess_fraction"] == pytest.approx(ess, rel=1e-9) and stats["done_r"] == R


@quiet
def test_state_dict_round_trip_mid_run_keeps_the_running_average():
    model, batches = _model(), _batches()
    with torch.no_grad():
        losses = [F.cross_entropy(model(x), y, reduction="none") for x, y in batches]
    a = DONEStrategy(0.1, r=R, eta=ETA)
    for ell in losses[:2]:
        a.reduce(ell, indices=None, groups=None)
    b = DONEStrategy(0.1, r=R, eta=ETA)
    b.load_state_dict(a.state_dict())
    assert torch.equal(b.log_u, a.log_u)
    out_a, out_b = (s.reduce(losses[2], indices=None, groups=None) for s in (a, b))
    omega = _hand_weights([ell.numpy() for ell in losses], R, ETA)[2]
    assert float(out_a) == float(out_b) == pytest.approx(float(omega @ losses[2].numpy()), rel=1e-12)
    assert a.epoch_stats() == b.epoch_stats()
