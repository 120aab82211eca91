"""Tests of dro_lab.models: shapes, the penultimate/classifier split, init determinism,
parameter counts against hand-derived closed forms (the papers' counts), trainability,
per-sample gradients with torch.func, and CUDA placement when a GPU is present.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from dro_lab import models as M

# (name, in_shape, extra kwargs) — small inputs keep the CPU tests fast.
CASES = [
    ("logreg", (1, 8, 8), {}),
    ("mlp", (2,), {}),
    ("mlp", (64,), {"hidden": (16,), "activation": "tanh", "dropout": 0.2}),
    ("digits_cnn", (1, 8, 8), {}),
    ("small_cnn", (1, 28, 28), {}),
    ("wrn16_1", (1, 8, 8), {}),
]
IDS = [f"{name}-{'x'.join(map(str, shape))}" for name, shape, _ in CASES]


@pytest.mark.parametrize(("name", "in_shape", "kw"), CASES, ids=IDS)
def test_shapes_and_penultimate_classifier_split(name, in_shape, kw):
    torch.manual_seed(0)
    model = M.make_model(name, in_shape=in_shape, num_classes=3, **kw).eval()
    x = torch.rand(5, *in_shape)
    logits = model(x)
    assert logits.shape == (5, 3) and logits.dtype == torch.float32
    assert isinstance(model.classifier, nn.Linear) and model.classifier.out_features == 3
    h = model.penultimate(x)
    assert h.shape == (5, model.classifier.in_features)
    torch.testing.assert_close(model.classifier(h), logits)  # forward = classifier ∘ penultimate


@pytest.mark.parametrize(("name", "in_shape", "kw"), CASES, ids=IDS)
def test_initialisation_is_determined_by_the_global_seed(name, in_shape, kw):
    def build(seed):
        torch.manual_seed(seed)
        return M.make_model(name, in_shape=in_shape, num_classes=3, **kw).state_dict()

    a, b, c = build(0), build(0), build(1)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert any(not torch.equal(a[k], c[k]) for k in a if a[k].is_floating_point() and a[k].numel() > 1)


def test_parameter_counts_match_closed_forms():
    conv = lambda cin, cout, k, bias=True: cin * cout * k * k + (cout if bias else 0)  # noqa: E731
    lin = lambda i, o: i * o + o  # noqa: E731
    bn = lambda c: 2 * c  # noqa: E731
    assert M.count_parameters(M.LogisticRegression(64, 10)) == lin(64, 10)
    assert M.count_parameters(M.MLP(2, 2, hidden=(64, 64))) == lin(2, 64) + lin(64, 64) + lin(64, 2)
    # DONE digits analogue: Conv(1→8)-Conv(8→16)-Pool-FC(256→32)-FC(32→10).
    assert M.count_parameters(M.DigitsCNN()) == conv(1, 8, 3) + conv(8, 16, 3) + lin(256, 32) + lin(32, 10) == 9802
    # Importance-sampling paper, App. F: 401,692 parameters for 2 classes at 28×28 (spec's count).
    small = conv(1, 5, 5) + conv(5, 10, 5) + lin(4000, 100) + lin(100, 2)
    assert M.count_parameters(M.SmallCNN(num_classes=2)) == small == 401_692
    # WRN-16-1 (hardness-weighted sampling): 174,778 for 1 channel, 175,066 for 3 (spec's counts).

    def block(i, o):  # pre-activation block; a 1×1 projection shortcut when the width changes
        return bn(i) + conv(i, o, 3, False) + bn(o) + conv(o, o, 3, False) + (conv(i, o, 1, False) if i != o else 0)

    wrn = (
        conv(1, 16, 3, False)
        + 2 * block(16, 16)
        + block(16, 32)
        + block(32, 32)
        + block(32, 64)
        + block(64, 64)
        + bn(64)
        + lin(64, 10)
    )
    assert M.count_parameters(M.WideResNet(10, 1)) == wrn == 174_778
    assert M.count_parameters(M.WideResNet(10, 3)) == 175_066


@pytest.mark.parametrize(("name", "in_shape", "kw"), CASES, ids=IDS)
def test_a_few_steps_reduce_the_loss_on_a_tiny_batch(name, in_shape, kw):
    torch.manual_seed(0)
    model = M.make_model(name, in_shape=in_shape, num_classes=3, **kw)
    gen = torch.Generator().manual_seed(0)
    x, y = torch.rand(12, *in_shape, generator=gen), torch.randint(0, 3, (12,), generator=gen)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.eval()  # measure without dropout noise
    with torch.no_grad():
        before = F.cross_entropy(model(x), y).item()
    model.train()
    for _ in range(20):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        after = F.cross_entropy(model(x), y).item()
    assert after < 0.9 * before, (before, after)


@pytest.mark.parametrize("name", ["logreg", "digits_cnn"])
def test_per_sample_gradients_with_torch_func_match_a_loop(name):
    torch.manual_seed(0)
    model = M.make_model(name, in_shape=(1, 8, 8), num_classes=10)
    params = {k: v.detach() for k, v in model.named_parameters()}
    x, y = torch.rand(4, 1, 8, 8), torch.tensor([0, 3, 9, 3])

    def loss(p, xi, yi):
        out = torch.func.functional_call(model, p, (xi.unsqueeze(0),))
        return F.cross_entropy(out, yi.unsqueeze(0))

    grads = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    for i in range(4):
        model.zero_grad()
        F.cross_entropy(model(x[i : i + 1]), y[i : i + 1]).backward()
        for k, p in model.named_parameters():
            torch.testing.assert_close(grads[k][i], p.grad, rtol=1e-4, atol=1e-6)


def test_last_layer_gradient_is_outer_product_of_residual_and_penultimate():
    torch.manual_seed(0)
    model = M.DigitsCNN()
    x, y = torch.rand(1, 1, 8, 8), torch.tensor([4])
    F.cross_entropy(model(x), y).backward()
    with torch.no_grad():
        h = model.penultimate(x)[0]
        residual = torch.softmax(model(x)[0], 0) - F.one_hot(y, 10)[0]
    torch.testing.assert_close(model.classifier.weight.grad, torch.outer(residual, h))


def test_dropout_only_in_train_mode():
    torch.manual_seed(0)
    model = M.MLP(10, 2, hidden=(32,), dropout=0.5)
    x = torch.rand(4, 10)
    model.eval()
    assert torch.equal(model(x), model(x))
    model.train()
    assert not torch.equal(model(x), model(x))


def test_mlp_without_hidden_layers_is_logistic_regression():
    mlp = M.MLP(6, 3, hidden=())
    logreg = M.LogisticRegression(6, 3)
    logreg.load_state_dict(mlp.state_dict())
    x = torch.rand(2, 6)
    torch.testing.assert_close(mlp(x), logreg(x))


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda: M.make_model("resnet50", in_shape=(1, 8, 8), num_classes=10),
            ValueError,
            "logreg, mlp, digits_cnn, small_cnn",
        ),
        (lambda: M.make_model("digits_cnn", in_shape=(64,), num_classes=10), ValueError, "square images"),
        (lambda: M.make_model("small_cnn", in_shape=(1, 8, 8), num_classes=10), ValueError, "at least 9"),
        (lambda: M.make_model("mlp", in_shape=(0,), num_classes=10), ValueError, "in_shape"),
        (lambda: M.MLP(4, 2, activation="swishy"), ValueError, "relu"),
        (lambda: M.MLP(4, 2, dropout=1.0), ValueError, r"\[0, 1\)"),
        (lambda: M.LogisticRegression(4, 0), ValueError, "num_classes"),
        (lambda: M.WideResNet(depth=15), ValueError, "6N"),
    ],
)
def test_validation_messages(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_registry_lists_every_required_name():
    assert {"logreg", "mlp", "digits_cnn", "small_cnn"} <= set(M.available_models())


def test_library_source_never_hardcodes_cuda():
    source = Path(M.__file__).read_text()
    assert ".cuda(" not in source and "device=" not in source


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize(("name", "in_shape", "kw"), CASES, ids=IDS)
def test_models_run_on_cuda(name, in_shape, kw):
    torch.manual_seed(0)
    model = M.make_model(name, in_shape=in_shape, num_classes=3, **kw).eval()
    x = torch.rand(4, *in_shape)
    expected = model(x)
    model = model.to("cuda")
    out = model(x.to("cuda"))
    assert out.device.type == "cuda" and model.penultimate(x.to("cuda")).device.type == "cuda"
    torch.testing.assert_close(out.cpu(), expected, rtol=1e-3, atol=1e-3)
