"""The ``dro-lab bench`` command line: section names, and the package's public face."""

from __future__ import annotations

import pytest

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
