"""dro_course.lessons.group_dro_also.checks: ALSO against torch's own Adam, Optimistic Mirror-Prox against the L-BFGS
saddle point, and π's trajectory against the KL written out in numpy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import dro_lab
from dro_course.lessons.group_dro_also.checks import mirror_prox_distances, pi_trajectory_run, trained_parameters
from dro_course.lessons.group_dro_also.saddle import logistic_dro_saddle
from dro_lab.data import load_digits, load_tabular


@pytest.fixture(scope="module")
def digits_small():
    train, _ = load_digits(flatten=True, seed=0)
    return train.subset(torch.arange(len(train)) < 256)


def test_also_with_frozen_weights_and_no_optimism_is_torch_adam(digits_small):
    run = dict(epochs=2, batch_size=64, lr=3e-3, weight_decay=1e-4, seed=3)
    start, adam = trained_parameters(digits_small, None, **run)  # ERM through torch.optim.Adam
    start_also, also = trained_parameters(digits_small, dro_lab.GroupDROStrategy("also", pi_lr=0.0, alpha=0.0), **run)
    torch.testing.assert_close(start, start_also, rtol=0, atol=0)  # the same seed, the same initialisation
    torch.testing.assert_close(also, adam, rtol=1e-6, atol=1e-7)
    assert float((adam - start).abs().max()) > 1e-2  # it did train
    _, optimistic = trained_parameters(digits_small, dro_lab.GroupDROStrategy("also", pi_lr=0.0, alpha=1.0), **run)
    assert float((optimistic - adam).abs().max()) > 1e-3


def test_mirror_prox_reaches_the_lbfgs_saddle_point_at_a_linear_rate():
    train, _ = load_tabular("iris", seed=0)
    saddle = logistic_dro_saddle(train, tau=0.5, l2=0.1)
    out = mirror_prox_distances(train, saddle, alphas=(0.0, 1.0), steps=300, lr=0.3, tau=0.5, l2=0.1)
    assert set(out) == {0.0, 1.0}
    for d in out.values():
        assert d.shape == (300,) and d[-1] < 1e-3 * d[0]
        rates = d[100:][1:] / d[100:][:-1]  # a straight line on a log axis: a near-constant ratio
        assert rates.max() < 1.0 and rates.max() - rates.min() < 0.05
    with pytest.raises(ValueError, match="example weights"):
        mirror_prox_distances(train.subset(torch.arange(len(train)) < 10), saddle)
    with pytest.raises(TypeError, match="saddle"):
        mirror_prox_distances(train, "saddle")


def test_pi_trajectory_rows_are_distributions_and_the_radius_is_their_kl():
    train, _ = load_tabular("iris", seed=0)
    run = pi_trajectory_run(train, beta=10.0, alpha=1.0, epochs=12, labels=["a", "b", "c"])
    pi, kl = run["pi"], run["kl"]
    assert pi.shape == (13, 3) and kl.shape == (13,) and run["labels"] == ["a", "b", "c"]
    np.testing.assert_allclose(pi[0], 1 / 3)  # the start: the uniform prior, radius 0
    assert kl[0] == 0.0
    np.testing.assert_allclose(pi.sum(1), 1.0, atol=1e-6)
    by_hand = [float(np.sum(q * np.log(q * 3))) for q in pi]  # KL(π‖uniform)
    np.testing.assert_allclose(kl, by_hand, atol=1e-5)
    assert kl[-1] > 0.01
    calm = pi_trajectory_run(train, beta=1e-3, alpha=1.0, epochs=5)  # τ = 1000: π stays at the prior
    np.testing.assert_allclose(calm["pi"], 1 / 3, atol=1e-3)
    assert calm["labels"] == ["class 0", "class 1", "class 2"]


def test_bad_inputs_name_the_argument(digits_small):
    with pytest.raises(TypeError, match="strategy"):
        trained_parameters(digits_small, "also")
    with pytest.raises(TypeError, match="data"):
        trained_parameters([1, 2, 3])
    with pytest.raises(ValueError, match="beta"):
        pi_trajectory_run(digits_small, beta=0.0, alpha=1.0)
    with pytest.raises(ValueError, match="labels"):
        pi_trajectory_run(digits_small, beta=1.0, alpha=1.0, labels=["a"])
