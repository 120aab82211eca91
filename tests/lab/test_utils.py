"""dro_lab.utils.resolve_device, the public boundary for devices: an accelerator torch reports unavailable is refused
there with one ValueError naming it and what is available, on a CPU machine and on a GPU machine alike (torch's
availability functions are monkeypatched, so the cases do not depend on the hardware the tests run on)."""

from __future__ import annotations

import pytest
import torch

import dro_lab


@pytest.fixture
def no_accelerator(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    monkeypatch.setattr(torch.xpu, "is_available", lambda: False)


@pytest.fixture
def one_cuda_device(no_accelerator, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)


@pytest.mark.parametrize(
    ("device", "named"),
    [("cuda", "CUDA"), ("cuda:0", "CUDA"), ("cuda:3", "CUDA"), (0, "CUDA"), ("mps", "MPS"), ("xpu", "XPU")],
)
def test_an_accelerator_that_is_not_here_is_refused_with_what_is(no_accelerator, device, named):
    with pytest.raises(ValueError) as raised:
        dro_lab.resolve_device(device)
    message = str(raised.value)
    assert message.startswith(f"device={device!r} was asked for but {named}") and "is not available here" in message
    assert "(available: cpu)" in message and "device='auto'" in message and "\n" not in message


def test_auto_picks_what_is_there(no_accelerator, monkeypatch):
    assert dro_lab.resolve_device("auto") == torch.device("cpu")
    assert dro_lab.resolve_device(None) == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert dro_lab.resolve_device("auto") == torch.device("cuda")


def test_a_cuda_index_past_the_last_device_is_refused(one_cuda_device):
    assert dro_lab.resolve_device("cuda") == torch.device("cuda")
    assert dro_lab.resolve_device("cuda:0") == torch.device("cuda:0")
    with pytest.raises(ValueError, match=r"device='cuda:1' was asked for but this machine has 1 CUDA device\(s\) "
                                         r"\(available: cpu, cuda:0\)"):  # fmt: skip
        dro_lab.resolve_device("cuda:1")


def test_mps_and_xpu_pass_where_torch_reports_them(no_accelerator, monkeypatch):
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert dro_lab.resolve_device("mps") == torch.device("mps")
    monkeypatch.setattr(torch.xpu, "is_available", lambda: True)
    monkeypatch.setattr(torch.xpu, "device_count", lambda: 2)
    assert dro_lab.resolve_device("xpu:1") == torch.device("xpu:1")
    with pytest.raises(ValueError, match=r"available: cpu, mps, xpu:0, xpu:1\)"):
        dro_lab.resolve_device("xpu:2")


def test_cpu_and_meta_are_never_refused(no_accelerator):
    assert dro_lab.resolve_device("cpu") == torch.device("cpu")
    assert dro_lab.resolve_device(torch.device("meta")) == torch.device("meta")


def test_the_sampler_and_fit_refuse_an_unavailable_device_at_once(no_accelerator):
    """Before, device='mps' failed deep inside the sampler's first tensor move; now at the public boundary."""
    with pytest.raises(ValueError, match=r"device='mps'.*not available"):
        dro_lab.HardnessWeightedSampler(16, batch_size=4, device="mps")
    data = dro_lab.ArrayDataset(torch.rand(8, 2), torch.arange(8) % 2)
    with pytest.raises(ValueError, match=r"device='xpu'.*not available"):
        dro_lab.fit(torch.nn.Linear(2, 2), data, epochs=1, batch_size=4, device="xpu", progress=False)
