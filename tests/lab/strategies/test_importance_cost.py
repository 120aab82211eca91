"""What importance sampling costs through ``fit``, counted: examples through the model (a forward hook), not seconds.

p = u (``scheme="uniform"`` or α = 0) must cost what ERM costs — no score table, no refresh, no extra forward
pass — and train exactly as ERM does. The oracles are ERM's run (``strategy=None``, the engine's default
batches) and counts worked out by hand from n, the batch size and the refresh policy.
"""

from __future__ import annotations

import math

import pytest
import torch

import dro_lab
from dro_lab.data import ArrayDataset

B = 32  # batch size


@pytest.fixture(scope="module")
def digits():
    train, _ = dro_lab.load_digits(flatten=True)  # 1347 training images of 64 pixels
    return train


def _mlp(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(64, 16), torch.nn.ReLU(), torch.nn.Linear(16, 10))


def _examples_through_model(train, strategy, *, epochs: int = 1, batch_size: int = B, **kw) -> int:
    """One ``fit``'s examples through the model: the sum of the leading dimension of every forward's input."""
    model = _mlp()
    seen = [0]
    handle = model.register_forward_hook(lambda module, args, out: seen.__setitem__(0, seen[0] + args[0].shape[0]))
    try:
        dro_lab.fit(
            model,
            train,
            strategy=strategy,
            epochs=epochs,
            batch_size=batch_size,
            lr=0.05,
            device="cpu",
            seed=0,
            progress=False,
            **kw,
        )
    finally:
        handle.remove()
    return seen[0]


def test_uniform_importance_sampling_puts_as_many_examples_through_the_model_as_erm(digits):
    n = len(digits)
    steps = math.ceil(n / B)  # 43 steps of (at most) 32 on 1347 images
    erm = _examples_through_model(digits, None)
    assert erm == n  # one epoch of ERM: each example once
    for strategy in (
        dro_lab.ImportanceSamplingStrategy("uniform"),
        dro_lab.ImportanceSamplingStrategy("grad_norm", alpha=0.0),
        dro_lab.ImportanceSamplingStrategy("loss", alpha=0.0, refresh_every=None),
        dro_lab.ImportanceSamplingStrategy("last_layer", alpha=0.0, refresh_every=4),
    ):
        assert _examples_through_model(digits, strategy) == erm, strategy.name

    # the contrast, p^GN: each of the `steps` draws of B is preceded by a refresh scoring all n
    exact = _examples_through_model(digits, dro_lab.ImportanceSamplingStrategy("grad_norm", alpha=1.0))
    assert exact == steps * n + steps * B == 59_297
    assert exact / erm == pytest.approx(44.02, abs=0.01)  # 44× ERM's examples
    # a stale table: no refresh, but each step scores its own batch after the step (a second pass of B)
    stale = _examples_through_model(digits, dro_lab.ImportanceSamplingStrategy("grad_norm", refresh_every=None))
    assert stale == 2 * steps * B == 2_752
    # refresh_every=5: the stale table's passes, plus a refresh of all n before draws 0, 5, ..., 40 (9 of them)
    every5 = _examples_through_model(digits, dro_lab.ImportanceSamplingStrategy("grad_norm", refresh_every=5))
    assert every5 == math.ceil(steps / 5) * n + 2 * steps * B == 14_875


@pytest.mark.parametrize(
    "strategy",
    [
        lambda: dro_lab.ImportanceSamplingStrategy("uniform"),
        lambda: dro_lab.ImportanceSamplingStrategy("grad_norm", alpha=0.0, weight_exponent=0.5),
    ],
    ids=["uniform", "grad_norm-alpha0"],
)
def test_uniform_importance_sampling_trains_exactly_like_erm(digits, strategy):
    runs = []
    kw = dict(epochs=2, batch_size=B, lr=0.05, momentum=0.5, device="cpu", seed=7, progress=False)
    for st in (None, strategy()):
        model = _mlp(seed=1)
        hist = dro_lab.fit(model, digits, strategy=st, **kw)
        runs.append((model.state_dict(), hist))
    (erm_params, erm_hist), (is_params, is_hist) = runs
    for key, value in erm_params.items():
        assert torch.equal(value, is_params[key]), key  # the same batches, weights 1: bit for bit
    assert erm_hist["train_loss"] == is_hist["train_loss"] and erm_hist["steps"] == is_hist["steps"]
    assert is_hist.last["sampler_ess"] == len(digits) and is_hist.last["sampler_max_weight"] == 1.0


def test_uniform_weights_follow_the_sampler_formula_with_clipping():
    # w = (1/(N·(1/N)))^e = 1 for every e; clip_weights=c makes it min(1, c)
    losses = torch.tensor([0.5, 1.5, 2.0, 4.0])
    for clip, want in ((None, 2.0), (3.0, 2.0), (0.25, 0.5)):
        st = dro_lab.ImportanceSamplingStrategy("uniform", weight_exponent=0.3, clip_weights=clip)
        assert float(st.reduce(losses, indices=torch.arange(4), groups=None)) == pytest.approx(want)


def _tiny():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(50, 64, generator=gen)
    return ArrayDataset(x, (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long())


class _Stop(BaseException):
    pass


def test_uniform_strategy_checkpoint_resumes_bit_identically_and_keeps_no_table(tmp_path):
    train = _tiny()
    kw = dict(epochs=2, batch_size=8, lr=0.05, device="cpu", seed=3, progress=False)

    model_a = _mlp(seed=2)
    dro_lab.fit(model_a, train, strategy=dro_lab.ImportanceSamplingStrategy("uniform"), **kw)

    # interrupted in epoch 2 (7 steps an epoch) after a checkpoint every 2 steps, then resumed by fresh objects
    path = tmp_path / "run.pt"
    st = dro_lab.ImportanceSamplingStrategy("uniform")
    calls = [0]

    def observe(indices, losses):
        calls[0] += 1
        if calls[0] == 10:
            raise _Stop

    st.observe = observe
    with pytest.raises(_Stop):
        dro_lab.fit(_mlp(seed=2), train, strategy=st, checkpoint=path, checkpoint_every=2, **kw)
    saved = torch.load(path, weights_only=True)
    assert saved["epoch"] == 2 and saved["consumed"] > 0 and saved["strategy"] == {"sampler": None}
    model_c = _mlp(seed=99)
    dro_lab.fit(model_c, train, strategy=dro_lab.ImportanceSamplingStrategy("uniform"), checkpoint=path, **kw)
    for key, value in model_a.state_dict().items():
        assert torch.equal(value, model_c.state_dict()[key]), key


def test_uniform_strategy_state_round_trip_and_refuses_a_sampler_table():
    train = _tiny()
    exact = dro_lab.ImportanceSamplingStrategy("loss", alpha=0.5)
    dro_lab.fit(_mlp(), train, strategy=exact, epochs=1, batch_size=8, device="cpu", progress=False)
    uniform = dro_lab.ImportanceSamplingStrategy("loss", alpha=0.0)
    dro_lab.fit(_mlp(), train, strategy=uniform, epochs=1, batch_size=8, device="cpu", progress=False)
    assert uniform.sampler is None and uniform.state_dict() == {"sampler": None}
    fresh = dro_lab.ImportanceSamplingStrategy("loss", alpha=0.0)
    fresh.load_state_dict(uniform.state_dict())
    assert fresh.state_dict() == {"sampler": None}
    with pytest.raises(ValueError, match="uniformly"):
        fresh.load_state_dict(exact.state_dict())
