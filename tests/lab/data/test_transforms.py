"""Input transformations as groups and the Dirichlet split of classes over workers, against direct computations."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import dro_lab
from dro_lab.attacks import fgsm_transform
from dro_lab.data import (
    blur_transform,
    dirichlet_split,
    identity_transform,
    noise_transform,
    rotation_transform,
    shift_transform,
)


def _images(n=4, size=8):
    return torch.rand(n, 1, size, size, generator=torch.Generator().manual_seed(0))


def test_identity_and_shift_by_hand():
    x = _images()
    g = torch.Generator().manual_seed(0)
    assert torch.equal(identity_transform()(x, None, None, g), x)
    shifted = shift_transform(2)(x, None, None, g)
    assert torch.equal(shifted[..., 2:], x[..., :-2]) and not shifted[..., :2].any()


def test_noise_is_the_generators_gaussian_clamped():
    x = _images()
    out = noise_transform(0.3)(x, None, None, torch.Generator().manual_seed(5))
    expect = (x + 0.3 * torch.randn(x.shape, generator=torch.Generator().manual_seed(5))).clamp(0, 1)
    assert torch.equal(out, expect)


def test_blur_equals_a_convolution_with_the_gaussian_kernel():
    pytest.importorskip("torchvision")
    x = _images(size=10)
    k = torch.tensor([math.exp(-(i**2) / 2) for i in (-1, 0, 1)])
    k = k / k.sum()
    inner = F.conv2d(x, (k[:, None] * k[None, :]).view(1, 1, 3, 3))  # torchvision pads by reflection: compare inside
    out = blur_transform(3, 1.0)(x, None, None, None)
    torch.testing.assert_close(out[..., 1:-1, 1:-1], inner, rtol=1e-5, atol=1e-6)


def test_rotation_turns_by_plus_or_minus_the_angle():
    pytest.importorskip("torchvision")
    x = torch.zeros(1, 1, 9, 9)
    x[..., 4, 6:] = 1.0  # a bar pointing right from the centre
    signs = set()
    for seed in range(20):
        out = rotation_transform(90.0)(x, None, None, torch.Generator().manual_seed(seed))
        up, down = float(out[..., :4, 4].sum()), float(out[..., 5:, 4].sum())
        assert up + down > 2.5  # the bar now points up or down
        signs.add(up > down)
    assert signs == {True, False}  # both directions occur


def test_fgsm_transform_is_fgsm():
    torch.manual_seed(0)
    model = dro_lab.MLP(64, 3)
    x, y = _images().flatten(1), torch.tensor([0, 1, 2, 0])
    expect = dro_lab.fgsm_attack(model, x, y, eps=0.1, clamp=(0.0, 1.0))
    assert torch.equal(fgsm_transform(0.1)(x, y, model, None), expect)


def test_dirichlet_split_assigns_every_example_once_and_follows_the_concentration():
    labels = torch.arange(2000) % 10
    even = dirichlet_split(labels, 5, 1e4, seed=0)
    assert even.shape == labels.shape and set(even.tolist()) == set(range(5))
    counts = np.array([[int(((labels == c) & (even == j)).sum()) for j in range(5)] for c in range(10)])
    assert np.abs(counts - 40).max() <= 5  # a huge concentration splits every class evenly
    skewed = dirichlet_split(labels, 5, 0.01, seed=0)
    shares = np.array([[float(((labels == c) & (skewed == j)).sum()) / 200 for j in range(5)] for c in range(10)])
    assert (shares.max(1) > 0.9).mean() >= 0.8  # a tiny one gives most classes to one worker
    assert torch.equal(dirichlet_split(labels, 5, 0.3, seed=3), dirichlet_split(labels, 5, 0.3, seed=3))


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: dirichlet_split(torch.arange(4), 0, 0.3), ValueError),
        (lambda: dirichlet_split(torch.arange(4), 2, -1.0), ValueError),
        (lambda: dirichlet_split(torch.rand(4), 2, 0.3), TypeError),
        (lambda: blur_transform(4), ValueError),
        (lambda: shift_transform(1.5), TypeError),
        (lambda: noise_transform(-0.1), ValueError),
    ],
)
def test_bad_arguments_are_refused(call, error):
    with pytest.raises(error):
        call()
