"""Per-sample gradient norms, the last-layer bound and Algorithm 1, against independent oracles.

Oracles: a Python loop of single-example ``torch.autograd.grad`` calls (per-sample norms and
gradients), autograd of the logits (the last-layer closed forms), numpy / ``scipy.special.rel_entr``
and hand-computed numbers from the spec (the sampling-quality metric).
"""

import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy.special import rel_entr
from torch import nn

from dro_lab.models import MLP, DigitsCNN, LogisticRegression, SmallCNN
from dro_lab.pergrad import (
    SamplingQuality,
    last_layer_grad_norms,
    logit_grad_norms,
    per_sample_grad_norms,
    sampling_quality,
)

CE = nn.CrossEntropyLoss(reduction="none")


def ce_fn(z, y):
    return F.cross_entropy(z, y, reduction="none")


def loop_grads(model, x, y, loss=ce_fn, params=None):
    """Oracle: one autograd.grad per example; returns a list of per-sample gradient tuples."""
    params = [p for p in model.parameters() if p.requires_grad] if params is None else params
    out = []
    for i in range(x.shape[0]):
        li = loss(model(x[i : i + 1]), y[i : i + 1]).sum()
        out.append(torch.autograd.grad(li, params, allow_unused=True))
    return out


def loop_norms(model, x, y, loss=ce_fn, params=None):
    return torch.stack(
        [torch.sqrt(sum((g**2).sum() for g in gs if g is not None)) for gs in loop_grads(model, x, y, loss, params)]
    )


def _batch(shape, num_classes, b=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, *shape, generator=g, dtype=torch.float64), torch.randint(0, num_classes, (b,), generator=g)


MODELS = {
    "logreg": (lambda: LogisticRegression(12, 3), (12,), 3),
    "mlp": (lambda: MLP(10, 4, hidden=(7, 5), activation="tanh"), (10,), 4),
    "mlp_nobias": (
        lambda: nn.Sequential(nn.Linear(10, 6, bias=False), nn.ReLU(), nn.Linear(6, 3, bias=False)),
        (10,),
        3,
    ),
    "digits_cnn": (lambda: DigitsCNN(5, 1, image_size=8, width=3, hidden=8), (1, 8, 8), 5),
    "small_cnn": (lambda: SmallCNN(3, 1, 12, hidden=9), (1, 12, 12), 3),
    "conv_nobias": (
        lambda: nn.Sequential(
            nn.Conv2d(2, 3, 3, stride=2, padding=1, dilation=2, bias=False),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(3 * 3 * 3, 4),
        ),
        (2, 7, 7),
        4,
    ),
    "conv1d": (
        lambda: nn.Sequential(nn.Conv1d(2, 3, 3, padding=2, stride=2), nn.Tanh(), nn.Flatten(), nn.Linear(3 * 6, 3)),
        (2, 9),
        3,
    ),
}


@pytest.mark.parametrize("method", ["auto", "ghost", "vmap"])
@pytest.mark.parametrize("name", list(MODELS))
def test_norms_match_a_loop_of_single_example_grads(name, method):
    make, shape, k = MODELS[name]
    torch.manual_seed(0)
    model = make().double()
    x, y = _batch(shape, k)
    expected = loop_norms(model, x, y)
    got = per_sample_grad_norms(model, CE, x, y, method=method)
    assert got.shape == (6,) and got.dtype == torch.float64
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("train", [True, False])
def test_grad_and_mode_untouched(train):
    torch.manual_seed(1)
    model = DigitsCNN(4, 1, image_size=8, width=2, hidden=6).double()
    model.train(train)
    x, y = _batch((1, 8, 8), 4)
    params = list(model.parameters())
    for i, p in enumerate(params):  # a sentinel .grad on half of them, None on the rest
        p.grad = torch.full_like(p, 7.0) if i % 2 == 0 else None
    before = [p.detach().clone() for p in params]
    for method in ("ghost", "vmap"):
        per_sample_grad_norms(model, CE, x, y, method=method)
        per_sample_grad_norms(model, CE, x, y, method=method, return_grads=method == "vmap")
    assert model.training is train
    for i, (p, b) in enumerate(zip(params, before)):
        assert torch.equal(p.detach(), b)
        if i % 2 == 0:
            assert torch.equal(p.grad, torch.full_like(p, 7.0))
        else:
            assert p.grad is None


def test_return_grads_match_the_loop_per_parameter():
    torch.manual_seed(2)
    model = MLP(5, 3, hidden=(4,)).double()
    x, y = _batch((5,), 3, b=4)
    norms, grads = per_sample_grad_norms(model, ce_fn, x, y, return_grads=True)
    names = [n for n, _ in model.named_parameters()]
    assert set(grads) == set(names)
    for i, gs in enumerate(loop_grads(model, x, y)):
        for n, g in zip(names, gs):
            torch.testing.assert_close(grads[n][i], g)
    torch.testing.assert_close(norms, loop_norms(model, x, y))


def test_frozen_parameters_are_left_out():
    torch.manual_seed(3)
    model = MLP(6, 3, hidden=(5,)).double()
    model.features[1].weight.requires_grad_(False)
    x, y = _batch((6,), 3)
    expected = loop_norms(model, x, y)
    for method in ("ghost", "vmap"):
        torch.testing.assert_close(per_sample_grad_norms(model, CE, x, y, method=method), expected)


def test_other_losses_and_float32():
    torch.manual_seed(4)
    model = MLP(6, 3, hidden=(5,))

    def mse(z, y):  # vmap-friendly (no F.one_hot, which reads the values)
        return ((z - torch.zeros_like(z).scatter(1, y[:, None], 1.0)) ** 2).sum(1)

    x, y = _batch((6,), 3)
    x = x.float()
    expected = loop_norms(model, x, y, loss=mse)
    for method in ("ghost", "vmap"):
        got = per_sample_grad_norms(model, mse, x, y, method=method)
        assert got.dtype == torch.float32
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


def test_weight_sharing_falls_back_to_vmap():
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.out = nn.Linear(4, 2)

        def forward(self, x):
            return self.out(torch.tanh(self.lin(torch.tanh(self.lin(x)))))

    torch.manual_seed(5)
    model = Twice().double()
    x, y = _batch((4,), 2)
    torch.testing.assert_close(per_sample_grad_norms(model, CE, x, y), loop_norms(model, x, y))
    with pytest.raises(ValueError, match="called once"):
        per_sample_grad_norms(model, CE, x, y, method="ghost")


def test_batchnorm_needs_eval_mode_and_unsupported_layers_use_vmap():
    torch.manual_seed(6)
    model = nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.LayerNorm(4), nn.Linear(4, 3)).double()
    x, y = _batch((5,), 3)
    with pytest.raises(ValueError, match="BatchNorm.*eval"):
        per_sample_grad_norms(model, CE, x, y)
    model.eval()
    torch.testing.assert_close(per_sample_grad_norms(model, CE, x, y), loop_norms(model, x, y))
    with pytest.raises(ValueError, match="method='ghost' needs"):
        per_sample_grad_norms(model, CE, x, y, method="ghost")


def test_dropout_in_train_mode_runs():
    torch.manual_seed(7)
    model = MLP(6, 3, hidden=(5,), dropout=0.5).double().train()
    x, y = _batch((6,), 3)
    for method in ("ghost", "vmap"):
        g = per_sample_grad_norms(model, CE, x, y, method=method)
        assert g.shape == (6,) and bool(torch.isfinite(g).all())
    model.eval()
    torch.testing.assert_close(per_sample_grad_norms(model, CE, x, y), loop_norms(model, x, y))


def test_per_sample_errors():
    model = MLP(6, 3, hidden=(5,))
    x, y = torch.randn(4, 6), torch.randint(0, 3, (4,))
    with pytest.raises(ValueError, match="reduction='none'"):
        per_sample_grad_norms(model, nn.CrossEntropyLoss(), x, y)
    for method in ("ghost", "vmap"):
        with pytest.raises(ValueError, match=r"per-sample losses of shape \(\d,\)"):
            per_sample_grad_norms(model, F.cross_entropy, x, y, method=method)
    with pytest.raises(TypeError, match="model"):
        per_sample_grad_norms(lambda t: t, CE, x, y)
    with pytest.raises(TypeError, match="loss_fn"):
        per_sample_grad_norms(model, "ce", x, y)
    with pytest.raises(TypeError, match="x must be a tensor"):
        per_sample_grad_norms(model, CE, x.numpy(), y)
    with pytest.raises(ValueError, match="one target per input"):
        per_sample_grad_norms(model, CE, x, y[:3])
    with pytest.raises(ValueError, match="method"):
        per_sample_grad_norms(model, CE, x, y, method="loop")
    with pytest.raises(ValueError, match="chunk_size"):
        per_sample_grad_norms(model, CE, x, y, method="vmap", chunk_size=0)
    with pytest.raises(ValueError, match="return_grads"):
        per_sample_grad_norms(model, CE, x, y, method="ghost", return_grads=True)
    frozen = MLP(6, 3, hidden=(5,)).requires_grad_(False)
    with pytest.raises(ValueError, match="no trainable parameter"):
        per_sample_grad_norms(frozen, CE, x, y)


def test_vmap_chunks_agree():
    torch.manual_seed(8)
    model = DigitsCNN(3, 1, image_size=8, width=2, hidden=5).double()
    x, y = _batch((1, 8, 8), 3, b=7)
    torch.testing.assert_close(
        per_sample_grad_norms(model, CE, x, y, method="vmap", chunk_size=3), loop_norms(model, x, y)
    )


# --------------------------------------------------------------------------- last layer


def test_logit_grad_norms_match_autograd_of_the_logits():
    g = torch.Generator().manual_seed(0)
    z = (3 * torch.randn(9, 5, generator=g, dtype=torch.float64)).requires_grad_(True)
    y = torch.randint(0, 5, (9,), generator=g)
    (d,) = torch.autograd.grad(F.cross_entropy(z, y, reduction="sum"), z)
    torch.testing.assert_close(logit_grad_norms(z, y), d.norm(dim=1))
    # two classes: sqrt(2) (1 - sigma_y)
    z2 = torch.randn(6, 2, generator=g, dtype=torch.float64)
    y2 = torch.randint(0, 2, (6,), generator=g)
    sig_y = torch.softmax(z2, 1).gather(1, y2[:, None]).squeeze(1)
    torch.testing.assert_close(logit_grad_norms(z2, y2), math.sqrt(2) * (1 - sig_y))
    # a saturated float32 logit does not round to zero (1 - sigma_y ~ e^-40)
    sat = logit_grad_norms(torch.tensor([[40.0, 0.0]]), torch.tensor([0]))
    assert sat.dtype == torch.float32 and 0 < float(sat) == pytest.approx(math.sqrt(2) * math.exp(-40), rel=1e-5)


def _classifier_grad_norms(model, x, y, loss=ce_fn):
    return loop_norms(model, x, y, loss=loss, params=list(model.classifier.parameters()))


@pytest.mark.parametrize("bias", [True, False])
def test_exact_last_layer_norm_matches_autograd_on_classifier_params(bias):
    torch.manual_seed(9)
    model = DigitsCNN(4, 1, image_size=8, width=2, hidden=6).double()
    if not bias:
        model.classifier = nn.Linear(6, 4, bias=False).double()
    x, y = _batch((1, 8, 8), 4)
    exact = last_layer_grad_norms(model, x, y, exact=True)
    torch.testing.assert_close(exact, _classifier_grad_norms(model, x, y))
    # the logit-gradient score: equals autograd of the logits; times max sqrt(|h|^2+1) it bounds the
    # last-layer norm; the full norm is at least the last-layer norm
    z = model(x).detach().requires_grad_(True)
    (d,) = torch.autograd.grad(F.cross_entropy(z, y, reduction="sum"), z)
    s = last_layer_grad_norms(model, x, y)
    torch.testing.assert_close(s, d.norm(dim=1))
    h = model.penultimate(x).detach()
    k = torch.sqrt(h.pow(2).sum(1) + (1.0 if bias else 0.0)).max()
    assert bool((k * s >= exact * (1 - 1e-12)).all())
    assert bool((loop_norms(model, x, y) >= exact * (1 - 1e-12)).all())


def test_last_layer_with_a_custom_loss():
    torch.manual_seed(10)
    model = MLP(6, 3, hidden=(5,)).double()
    x, y = _batch((6,), 3)

    def mse(z, y):
        return ((z - F.one_hot(y, 3).to(z.dtype)) ** 2).sum(1)

    torch.testing.assert_close(
        last_layer_grad_norms(model, x, y, exact=True, loss_fn=mse), _classifier_grad_norms(model, x, y, loss=mse)
    )
    # d mse / dz = 2 (z - onehot)
    z = model(x).detach()
    torch.testing.assert_close(last_layer_grad_norms(model, x, y, loss_fn=mse), 2 * (z - F.one_hot(y, 3)).norm(dim=1))


def test_last_layer_errors():
    with pytest.raises(TypeError, match="penultimate"):
        last_layer_grad_norms(nn.Linear(3, 2), torch.randn(2, 3), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="class indices in"):
        logit_grad_norms(torch.randn(2, 3), torch.tensor([0, 3]))
    with pytest.raises(TypeError, match="integer class indices"):
        logit_grad_norms(torch.randn(2, 3), torch.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"shape \(b, C\)"):
        logit_grad_norms(torch.randn(3), torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="one label per row"):
        logit_grad_norms(torch.randn(2, 3), torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="NaN"):
        logit_grad_norms(torch.tensor([[0.0, float("nan")]]), torch.tensor([0]))


# --------------------------------------------------------------------------- Algorithm 1 and rho


G_EX = [1.0, 1.0, 1.0, 4.0]
P_EX = [0.001, 0.2, 0.2, 0.599]


def test_spec_counterexample_by_hand():
    q = sampling_quality(P_EX, G_EX)
    assert isinstance(q, SamplingQuality) and q.m == 4
    pgn, p, u = np.array(G_EX) / 7, np.array(P_EX), np.full(4, 0.25)
    assert q.rho == pytest.approx(-35.58, abs=0.005)
    assert q.tv_p == pytest.approx(0.5 * np.abs(p - pgn).sum(), rel=1e-12) and q.tv_p == pytest.approx(0.142, abs=5e-4)
    assert q.tv_u == pytest.approx(0.5 * np.abs(u - pgn).sum(), rel=1e-12) and q.tv_u == pytest.approx(0.321, abs=5e-4)
    assert q.kl_p == pytest.approx(rel_entr(p, pgn).sum(), rel=1e-12) and q.kl_p == pytest.approx(0.158, abs=5e-4)
    assert q.kl_u == pytest.approx(rel_entr(u, pgn).sum(), rel=1e-12) and q.kl_u == pytest.approx(0.213, abs=5e-4)
    assert q.kl_rev_p == pytest.approx(rel_entr(pgn, p).sum(), rel=1e-12) and q.kl_rev_p == pytest.approx(
        0.586, abs=5e-4
    )
    assert q.kl_rev_u == pytest.approx(rel_entr(pgn, u).sum(), rel=1e-12) and q.kl_rev_u == pytest.approx(
        0.233, abs=5e-4
    )
    assert q.chi2_p == pytest.approx(20.16, abs=5e-3) and q.chi2_u == pytest.approx(0.551, abs=5e-4)
    assert q.h_u == pytest.approx(76.0) and q.h_gn == pytest.approx(49.0) and q.h_p == pytest.approx(1036.7, abs=0.05)
    assert set(q.as_dict()) >= {"rho", "kl_p", "kl_u", "tv_p", "tv_u", "chi2_p", "chi2_u"}


def test_rho_is_one_at_optimum_zero_at_uniform():
    g = np.array([0.3, 1.2, 0.05, 2.0, 0.7])
    assert sampling_quality(g / g.sum(), g).rho == pytest.approx(1.0, abs=1e-12)
    assert sampling_quality(3 * g, g).rho == pytest.approx(1.0, abs=1e-12)  # p is renormalised
    q = sampling_quality(np.ones(5), g)
    assert q.rho == pytest.approx(0.0, abs=1e-12)
    assert q.kl_p == pytest.approx(q.kl_u) and q.tv_p == pytest.approx(q.tv_u)
    # p ∝ g^2 has exactly the variance term of uniform (spec §1.4)
    assert sampling_quality(g**2, g).rho == pytest.approx(0.0, abs=1e-12)


def test_both_rho_formulas_agree_on_random_inputs():
    rng = np.random.default_rng(0)
    for _ in range(50):
        m = int(rng.integers(2, 30))
        g = rng.exponential(size=m) * 10.0 ** rng.uniform(-6, 6)
        p = rng.dirichlet(np.full(m, 0.5)) + 1e-9
        q = sampling_quality(torch.tensor(p), torch.tensor(g))
        pt, pgn, u = p / p.sum(), g / g.sum(), np.full(m, 1 / m)
        h = lambda r: np.sum(g**2 / r)  # noqa: E731
        rho_h = (h(u) - h(pt)) / (h(u) - h(pgn))
        rho_chi = 1 - np.sum((pgn - pt) ** 2 / pt) / np.sum((pgn - u) ** 2 / u)
        assert q.rho == pytest.approx(rho_h, rel=1e-6, abs=1e-9)
        assert q.rho == pytest.approx(rho_chi, rel=1e-9, abs=1e-12)
        assert q.h_p == pytest.approx(h(pt), rel=1e-9)
        assert q.kl_p == pytest.approx(rel_entr(pt, pgn).sum(), rel=1e-9, abs=1e-15)


def test_constant_norms_give_nan_with_a_warning():
    with pytest.warns(RuntimeWarning, match="rho is undefined"):
        q = sampling_quality([0.1, 0.5, 0.4], [0.1, 0.1, 0.1])
    assert math.isnan(q.rho)
    assert q.tv_u == 0.0 and q.kl_u == 0.0


def test_infinite_kl_and_zero_probabilities():
    # an item with zero gradient but positive p: KL(p||pGN) and KL(u||pGN) are infinite
    q = sampling_quality([0.25, 0.25, 0.5], [0.0, 1.0, 2.0])
    assert math.isinf(q.kl_p) and math.isinf(q.kl_u)
    assert math.isfinite(q.tv_p) and math.isfinite(q.rho)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # p zero where g > 0: H(p) and chi2 infinite, rho = -inf; KL(p||pGN) finite
        q = sampling_quality([0.0, 0.5, 0.5], [1.0, 1.0, 2.0])
    assert math.isinf(q.chi2_p) and q.rho == -math.inf and math.isinf(q.h_p) and math.isinf(q.kl_rev_p)
    assert q.kl_p == pytest.approx(rel_entr([0.0, 0.5, 0.5], np.array([1, 1, 2]) / 4).sum())
    # p zero exactly where g is zero: all finite, and optimal
    q = sampling_quality([0.0, 1.0, 2.0], [0.0, 1.0, 2.0])
    assert q.rho == pytest.approx(1.0) and q.kl_p == pytest.approx(0.0)


def test_sampling_quality_errors():
    with pytest.raises(ValueError, match="same length"):
        sampling_quality([0.5, 0.5], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="p must be non-negative"):
        sampling_quality([-0.1, 1.1], [1.0, 2.0])
    with pytest.raises(ValueError, match="grad_norms must be non-negative"):
        sampling_quality([0.5, 0.5], [1.0, -2.0])
    with pytest.raises(ValueError, match="grad_norms contains NaN"):
        sampling_quality([0.5, 0.5], [1.0, float("nan")])
    with pytest.raises(ValueError, match="p contains NaN or inf"):
        sampling_quality([0.5, float("inf")], [1.0, 2.0])
    with pytest.raises(ValueError, match="all zero"):
        sampling_quality([0.5, 0.5], [0.0, 0.0])
    with pytest.raises(ValueError, match="p is all zeros"):
        sampling_quality([0.0, 0.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="1-D"):
        sampling_quality([[0.5, 0.5]], [[1.0, 2.0]])
    with pytest.raises(ValueError, match="empty"):
        sampling_quality([], [])
    with pytest.raises(TypeError, match="real numbers"):
        sampling_quality(torch.tensor([True, False]), [1.0, 2.0])
    with pytest.raises(TypeError, match="grad_norms must be"):
        sampling_quality([0.5, 0.5], "ab")


def test_works_under_no_grad():
    torch.manual_seed(11)
    model = MLP(6, 3, hidden=(5,)).double()
    x, y = _batch((6,), 3)
    expected = loop_norms(model, x, y)
    with torch.no_grad():
        for method in ("ghost", "vmap"):
            torch.testing.assert_close(per_sample_grad_norms(model, CE, x, y, method=method), expected)
