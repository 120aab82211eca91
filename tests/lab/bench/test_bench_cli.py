"""The ``dro-lab bench`` command line: section names, and the package's public face."""

from __future__ import annotations

import json

import pytest
import torch

from dro_lab import bench
from dro_lab.bench.cli import RUNNERS


def test_bench_rejects_unknown_benchmark():
    with pytest.raises(SystemExit):
        bench.main(["nope"])


def test_bench_only_and_positional_names_combine_and_unknown_names_fail(capsys):
    with pytest.raises(SystemExit):
        bench.main(["--only", "weights,nope"])
    assert "nope" in capsys.readouterr().err


def test_the_package_keeps_the_names_of_the_old_module():
    names = [
        "main",
        "bench_weights",
        "bench_hws_step",
        "bench_hws_draw",
        "machine_info",
        "scipy_worst_case",
        "scipy_dual_worst_case",
        "official_probabilities",
        "official_draw",
        "official_update",
        "BENCHMARKS",
        "bench_pergrad",
        "bench_is_run",
        "loop_grad_norms",
        "bench_also_step",
        "bench_done_step",
        "bench_gils_epoch",
        "CASES",
        "HWS_MODELS",
        "PERGRAD_MODELS",
        "format_row",
        "format_table",
    ]
    assert [n for n in names if not hasattr(bench, n)] == []
    assert set(names) <= set(bench.__all__)


def test_every_benchmark_has_a_runner_in_order():
    assert tuple(RUNNERS) == bench.BENCHMARKS


# --------------------------------------------------------------------------- --json and --device: refused up front
def _fake_weights(s, device, out):
    out["results"] = [{"n": 8, "seconds": 0.5}]


def test_json_into_a_missing_folder_or_a_folder_is_refused_before_measuring(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(bench.cli.RUNNERS, "weights", lambda *a: pytest.fail("measured before checking --json"))
    for target, problem in ((tmp_path / "missing" / "b.json", "does not exist"), (tmp_path, "is a folder")):
        with pytest.raises(SystemExit) as raised:
            bench.main(["--only", "weights", "--json", str(target)])
        assert raised.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith(f"dro-lab bench: error: --json {target}: ") and problem in err and err.count("\n") == 1


def test_json_is_written_whole_or_not_at_all(tmp_path, capsys, monkeypatch):
    import dro_lab._files as files

    monkeypatch.setitem(bench.cli.RUNNERS, "weights", _fake_weights)
    path = tmp_path / "bench.json"
    assert bench.main(["--only", "weights", "--json", str(path)]) == 0
    first = path.read_text()
    assert json.loads(first)["results"] == [{"n": 8, "seconds": 0.5}]
    monkeypatch.setattr(files.os, "replace", lambda *a: (_ for _ in ()).throw(OSError(30, "Read-only file system")))
    assert bench.main(["--only", "weights", "--json", str(path)]) == 2
    assert f"dro-lab bench: error: cannot write {path}: Read-only file system" in capsys.readouterr().err
    monkeypatch.undo()
    assert path.read_text() == first and sorted(p.name for p in tmp_path.iterdir()) == ["bench.json"]


@pytest.mark.parametrize("device", ["cuda", "mps", "xpu"])
def test_a_device_that_is_not_here_is_a_usage_error(device, capsys, monkeypatch):
    for module in (torch.cuda, torch.backends.mps, torch.xpu):  # the same on a machine that has one
        monkeypatch.setattr(module, "is_available", lambda: False)
    with pytest.raises(SystemExit) as raised:
        bench.main(["--only", "weights", "--device", device])
    assert raised.value.code == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(f"dro-lab bench: error: --device: device={device!r} was asked for but ") and err.count("\n") == 1
    )
