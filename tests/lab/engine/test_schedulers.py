"""Learning-rate schedules through fit: torch.optim.lr_scheduler factories, the lr_schedule shortcut, one-cycle."""

from __future__ import annotations

import pytest
import torch

import dro_lab
from dro_lab.data import ArrayDataset
from dro_lab.optim import one_cycle, one_cycle_factor


def _data():
    g = torch.Generator().manual_seed(0)
    return ArrayDataset(torch.rand(24, 3, generator=g), torch.arange(24) % 2, num_classes=2)


def _fit(epochs=4, **kw):
    torch.manual_seed(0)
    model = dro_lab.LogisticRegression(3, 2)
    hist = dro_lab.fit(model, _data(), epochs=epochs, batch_size=8, lr=0.2, progress=False, device="cpu", **kw)
    return model, hist


def test_one_cycle_factors_written_out():
    # 12 epochs, peak at round(12 · 25/60) = 5: up 1/5 .. 5/5, then down (12 − e + 1) / 8
    expect = [1 / 5, 2 / 5, 3 / 5, 4 / 5, 1.0, 7 / 8, 6 / 8, 5 / 8, 4 / 8, 3 / 8, 2 / 8, 1 / 8]
    assert [one_cycle_factor(e, 12) for e in range(1, 13)] == pytest.approx(expect)


def test_a_scheduler_factory_sets_each_epochs_learning_rate():
    _, hist = _fit(scheduler=lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5))
    assert hist["lr"] == pytest.approx([0.2, 0.2, 0.1, 0.1])
    _, hist = _fit(epochs=6, scheduler=one_cycle(6))
    assert hist["lr"] == pytest.approx([0.2 * one_cycle_factor(e, 6) for e in range(1, 7)])


def test_the_lr_schedule_shortcut_trains_exactly_as_its_lambda_scheduler():
    factor = [1.0, 0.5, 0.25, 0.1]
    model_a, hist_a = _fit(lr_schedule=lambda e: factor[e - 1])
    model_b, hist_b = _fit(scheduler=lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, lambda k: factor[k]))
    assert hist_a["lr"] == hist_b["lr"] == pytest.approx([0.2 * f for f in factor])
    assert all(torch.equal(p, q) for p, q in zip(model_a.parameters(), model_b.parameters()))


def test_a_zero_learning_rate_epoch_leaves_the_model_unchanged():
    torch.manual_seed(0)
    model = dro_lab.LogisticRegression(3, 2)
    before = [p.detach().clone() for p in model.parameters()]
    dro_lab.fit(model, _data(), epochs=2, lr=0.2, lr_schedule=lambda e: 0.0, progress=False, device="cpu")
    assert all(torch.equal(p, q) for p, q in zip(before, model.parameters()))


def test_scheduler_and_lr_schedule_are_exclusive_and_checked():
    with pytest.raises(ValueError, match="not both"):
        _fit(scheduler=one_cycle(4), lr_schedule=lambda e: 1.0)
    with pytest.raises(TypeError, match="scheduler"):
        _fit(scheduler="cosine")
    with pytest.raises(ValueError, match="lr_schedule"):
        _fit(lr_schedule=lambda e: -1.0)
    with pytest.raises(ValueError, match="peak_fraction"):
        one_cycle(10, peak_fraction=1.5)


def test_a_resumed_run_continues_its_schedule(tmp_path):
    model_a, hist_a = _fit(epochs=5, scheduler=one_cycle(5))
    path = tmp_path / "run.pt"

    class Stop(Exception):
        pass

    def stop_after_two(epoch, record):
        if epoch == 2:
            raise Stop

    with pytest.raises(Stop):
        _fit(epochs=5, scheduler=one_cycle(5), checkpoint=path, callback=stop_after_two)
    model_b, hist_b = _fit(epochs=5, scheduler=one_cycle(5), checkpoint=path)
    assert hist_b["lr"] == hist_a["lr"]
    assert all(torch.equal(p, q) for p, q in zip(model_a.parameters(), model_b.parameters()))
