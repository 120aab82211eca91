"""``dro-lab bench pergrad / is-run``: the per-sample loop computes the library's norms, and the sections run."""

from __future__ import annotations

import json

import pytest
import torch

from dro_lab import per_sample_grad_norms
from dro_lab.bench import pergrad
from dro_lab.cli import main as cli_main


@pytest.mark.parametrize("key", sorted(pergrad.PERGRAD_MODELS))
def test_loop_baseline_equals_per_sample_grad_norms(key):
    torch.manual_seed(0)
    model = pergrad._pergrad_model(key).eval()
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(4, 1, 28, 28, generator=gen)
    y = torch.randint(0, model.classifier.out_features, (4,), generator=gen)
    loss_fn = lambda z, t: torch.nn.functional.cross_entropy(z, t, reduction="none")  # noqa: E731
    loop = pergrad.loop_grad_norms(model, loss_fn, x, y)
    assert loop.shape == (4,) and bool((loop > 0).all())
    for method in ("ghost", "vmap"):
        ours = per_sample_grad_norms(model, loss_fn, x, y, method=method)
        assert torch.allclose(loop, ours.to(loop.dtype), rtol=1e-4, atol=1e-7), method


def test_bench_cli_runs_the_importance_sampling_sections_quickly(tmp_path, capsys):
    out = tmp_path / "is.json"
    rc = cli_main(
        [
            "bench",
            "--only",
            "pergrad,is-run",
            "--quick",
            "--device",
            "cpu",
            "--repeats",
            "1",
            "--pergrad-batches",
            "5,64",
            "--pergrad-models",
            "small_cnn",
            "--is-n",
            "20",
            "--json",
            str(out),
        ]
    )
    assert rc == 0
    data = json.loads(out.read_text())
    assert data["sections"] == ["pergrad", "is-run"] and data["results"] == [] and data["hws_step"] is None
    assert data["seconds"]["pergrad"] > 0 and data["seconds"]["is-run"] > 0
    rows = data["pergrad"]
    assert [(r["model"], r["batch_size"]) for r in rows] == [("SmallCNN(2 classes)", 5)]  # --quick: b ≤ 32
    row = rows[0]
    assert {
        "backward_s",
        "ghost_s",
        "vmap_s",
        "loop_s",
        "ghost_over_backward",
        "vmap_over_backward",
        "loop_over_ghost",
        "parameters",
        "rounds",
    } <= set(row)
    assert row["parameters"] == 401_692 and row["loop_s"] > 0 and row["loop_skipped"] is None
    assert all(row[k] > 0 for k in ("ghost_over_backward", "vmap_over_backward", "loop_over_ghost"))
    run = data["is_run"]
    assert run["n"] == 20 and run["steps"] == 20 and run["runs"] == 1 and run["batch_size"] == 5
    assert set(run["configs"]) == {"erm", "uniform", "grad_norm", "sqrt"}
    for c in run["configs"].values():
        assert c["steps"] == 20 and c["run_s"] > 0 and len(c["times_s"]) == 1
        assert c["ratio_vs_uniform"] == pytest.approx(c["run_s"] / run["configs"]["uniform"]["run_s"])
    assert run["configs"]["uniform"]["ratio_vs_uniform"] == pytest.approx(1.0)
    printed = capsys.readouterr().out
    assert "| model | b | backward | ghost |" in printed and "| strategy | run (median) |" in printed


def test_pergrad_skips_the_loop_past_its_limits():
    rows = pergrad.bench_pergrad(
        [2, 3, 4],
        models=["digits_cnn"],
        device=torch.device("cpu"),
        repeats=1,
        budget_s=0.01,
        loop_max_b=3,
        loop_max_s=1e-9,
    )
    first, second, third = rows
    assert first["loop_s"] > 0 and first["loop_over_ghost"] > 0  # the first batch size always runs the loop
    assert second["loop_s"] is None and "predicted" in second["loop_skipped"]
    assert third["loop_s"] is None and third["loop_skipped"] == "b > 3"
    with pytest.raises(ValueError, match="model must be one of"):
        pergrad.bench_pergrad([2], models=["wrn16_1"], device=torch.device("cpu"))
