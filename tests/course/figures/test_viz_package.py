"""The figures / panels packages: the names they re-export, and the one
model-on-a-grid evaluation that the decision-boundary, attack-toy and GI-LS figures share."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch

from dro_course import figures
from dro_lab.metrics import model_on_grid


@pytest.mark.parametrize("package", ["figures", "panels"])
def test_every_public_name_is_re_exported_from_a_topic_module(package):
    pkg = pytest.importorskip(f"dro_course.{package}")
    assert len(set(pkg.__all__)) == len(pkg.__all__)
    for name in pkg.__all__:
        obj = getattr(pkg, name)
        if callable(obj):
            home = importlib.import_module(obj.__module__)
            assert obj.__module__.startswith(("dro_lab.", "dro_course.")), (name, obj.__module__)
            assert getattr(home, name) is obj


def _linear(w, b):
    model = torch.nn.Linear(2, 2)
    with torch.no_grad():
        model.weight.copy_(torch.tensor(w, dtype=torch.float32))
        model.bias.copy_(torch.tensor(b, dtype=torch.float32))
    return model


def test_model_on_grid_is_the_softmax_or_argmax_over_the_padded_box():
    w, b = np.array([[0.5, -1.0], [-0.25, 2.0]]), np.array([0.1, -0.3])
    model = _linear(w, b).train()
    points = np.array([[-1.0, 0.0], [2.0, 1.5], [0.5, -2.0]])
    gx, gy, prob = model_on_grid(model, points, resolution=7, pad=0.25)
    np.testing.assert_allclose(gx, np.linspace(-1.25, 2.25, 7))
    np.testing.assert_allclose(gy, np.linspace(-2.25, 1.75, 7))
    xx, yy = np.meshgrid(gx, gy)
    logits = np.stack([xx, yy], -1) @ w.T + b  # (len(gy), len(gx), 2), as np.meshgrid lays it out
    p1 = 1.0 / (1.0 + np.exp(logits[..., 0] - logits[..., 1]))
    np.testing.assert_allclose(prob, p1, rtol=1e-5, atol=1e-6)
    _, _, classes = model_on_grid(model, points, resolution=7, pad=0.25, output="class")
    np.testing.assert_array_equal(classes, logits.argmax(-1))
    assert model.training  # the mode is restored
    with pytest.raises(ValueError, match="output"):
        model_on_grid(model, points, resolution=7, output="logits")
    with pytest.raises(ValueError, match=r"\(n, 2\)"):
        model_on_grid(model, np.zeros((3, 3)), resolution=7)


def test_decision_boundary_figure_draws_model_on_grid():
    torch.manual_seed(0)
    model, x = _linear([[1.0, 0.0], [-1.0, 0.5]], [0.0, 0.2]), torch.randn(20, 2)
    fig = figures.decision_boundary_figure({"m": model}, x, torch.zeros(20), resolution=9)
    contour = next(t for t in fig.data if t.type == "contour")
    gx, gy, prob = model_on_grid(model, x, resolution=9, pad=0.5)
    np.testing.assert_allclose(contour.x, gx) and np.testing.assert_allclose(contour.y, gy)
    np.testing.assert_allclose(np.asarray(contour.z), prob)
