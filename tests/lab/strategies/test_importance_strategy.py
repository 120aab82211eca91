"""ImportanceSamplingStrategy through the engine, against brute-force per-example computations."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import dro_lab
from dro_lab.data import ArrayDataset


def _setup(scheme, **kw):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(30, 4, generator=gen)
    y = (x[:, 0] > 0).long()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 2))
    train = ArrayDataset(x, y)
    st = dro_lab.ImportanceSamplingStrategy(scheme, **kw)
    st.setup(
        len(train),
        device=torch.device("cpu"),
        generator=torch.Generator().manual_seed(1),
        batch_size=7,
        model=model,
        train=train,
        loss_fn=None,
    )
    return st, model, x, y


def _loop_grad_norms(model, x, y):
    out = []
    for i in range(len(x)):
        grads = torch.autograd.grad(F.cross_entropy(model(x[i : i + 1]), y[i : i + 1]), list(model.parameters()))
        out.append(torch.sqrt(sum((g**2).sum() for g in grads)))
    return torch.stack(out)


def test_exact_scheme_refreshes_all_grad_norms_before_the_draw_and_weights_the_loss_by_1_over_np():
    st, model, x, y = _setup("grad_norm", alpha=0.5)
    idx = next(iter(st.batches(1, 7)))
    torch.testing.assert_close(st.sampler.scores, _loop_grad_norms(model, x, y).detach(), rtol=1e-4, atol=1e-6)
    g = _loop_grad_norms(model, x, y).detach().double().numpy()
    p = 0.5 / 30 + 0.5 * g / g.sum()  # the α = ½ mixture, computed here
    losses = F.cross_entropy(model(x[idx]), y[idx], reduction="none")
    got = st.reduce(losses, indices=idx, groups=None)
    want = (losses.detach().double().numpy() / (30 * p[idx.numpy()])).mean()
    assert float(got.detach()) == pytest.approx(want, rel=1e-5)


def test_stale_loss_scheme_writes_the_batch_losses_into_the_table():
    st, model, x, y = _setup("loss", alpha=0.3, refresh_every=None)
    idx = next(iter(st.batches(1, 7)))
    losses = torch.rand(7) + 0.5
    st.observe(idx, losses)
    for i in set(idx.tolist()):  # duplicates: their mean
        assert float(st.sampler.scores[i]) == pytest.approx(float(losses[idx == i].mean()), rel=1e-6)


def test_stale_last_layer_scheme_writes_the_logit_gradient_norms():
    st, model, x, y = _setup("last_layer", alpha=0.5, refresh_every=None)
    idx = next(iter(st.batches(1, 7)))
    st.observe(idx, torch.ones(7))
    with torch.no_grad():
        probs = torch.softmax(model(x[idx]), 1).double().numpy()
    onehot = np.eye(2)[y[idx].numpy()]
    np.testing.assert_allclose(st.sampler.scores[idx].numpy(), np.linalg.norm(probs - onehot, axis=1), rtol=1e-5)


def test_fit_runs_every_scheme_and_records_sampler_stats():
    x = torch.randn(40, 4, generator=torch.Generator().manual_seed(3))
    train = ArrayDataset(x, (x[:, 1] > 0).long())
    for scheme in dro_lab.samplers.IS_SCHEMES:
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 2)
        hist = dro_lab.fit(
            model,
            train,
            strategy=dro_lab.ImportanceSamplingStrategy(scheme, alpha=0.5),
            epochs=2,
            batch_size=8,
            lr=0.1,
            progress=False,
            device="cpu",
        )
        assert len(hist) == 2 and hist.last["steps"] == 5 and "sampler_ess" in hist.last


def test_bad_options_fail_at_construction():
    with pytest.raises(ValueError, match="scheme"):
        dro_lab.ImportanceSamplingStrategy("hardness")
    with pytest.raises(ValueError, match="alpha"):
        dro_lab.ImportanceSamplingStrategy("loss", alpha=-0.1)
