"""``dro-lab bench pergrad / is-run``: the per-sample loop computes the library's norms, the scoring baseline is ERM
plus a counted scoring pass, and the sections run."""

from __future__ import annotations

import json
import math

import pytest
import torch

from dro_lab import ImportanceSamplingStrategy, fit, per_sample_grad_norms
from dro_lab.bench import importance, pergrad
from dro_lab.cli import main as cli_main
from dro_lab.data import ArrayDataset


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


@pytest.mark.slow
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
    assert run["epochs"] == 5 and run["threads"] == torch.get_num_threads()
    assert set(run["configs"]) == {"erm", "uniform", "uniform_eval", "uniform_gn", "grad_norm", "sqrt"}
    configs = run["configs"]
    for c in configs.values():
        assert c["steps"] == 20 and c["run_s"] > 0 and len(c["times_s"]) == 1
        assert c["epoch_s"] == pytest.approx(c["run_s"] / 5)
        for ref in ("erm", "uniform_eval"):
            assert c[f"ratio_vs_{ref}"] == pytest.approx(c["run_s"] / configs[ref]["run_s"])
            assert c[f"fastest_ratio_vs_{ref}"] == pytest.approx(c["fastest_s"] / configs[ref]["fastest_s"])
    assert configs["erm"]["ratio_vs_erm"] == pytest.approx(1.0)
    assert configs["uniform_eval"]["ratio_vs_uniform_eval"] == pytest.approx(1.0)
    printed = capsys.readouterr().out
    assert "| model | b | backward | ghost |" in printed and "| strategy | run (median) | per epoch |" in printed
    assert f"{torch.get_num_threads()} torch threads" in printed
    assert "p^GN costs" in printed and "plain SGD (ERM)" in printed and f"torch threads: {run['threads']}" in printed


def _count_examples(model, train, strategy, *, epochs=1, batch_size=5):
    seen = [0]
    handle = model.register_forward_hook(lambda m, args, out: seen.__setitem__(0, seen[0] + args[0].shape[0]))
    kw = dict(epochs=epochs, batch_size=batch_size, lr=0.05, momentum=0.5, device="cpu", seed=4, progress=False)
    fit(model, train, strategy=strategy, **kw)
    handle.remove()
    return seen[0]


@pytest.mark.parametrize("scheme", ["loss", "grad_norm"])
def test_scored_uniform_baseline_is_erm_plus_a_scoring_pass_over_all_n_before_every_step(scheme):
    gen = torch.Generator().manual_seed(0)
    n, b = 22, 5  # 5 steps an epoch, the last one of 2
    train = ArrayDataset(torch.randn(n, 6, generator=gen), torch.randint(0, 3, (n,), generator=gen))

    def mlp():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))

    steps = math.ceil(n / b)
    erm_model, scored_model = mlp(), mlp()
    assert _count_examples(erm_model, train, None, epochs=2) == 2 * n
    baseline = importance.ScoredUniformStrategy(scheme)
    assert _count_examples(scored_model, train, baseline, epochs=2) == 2 * (n + steps * n)
    for key, value in erm_model.state_dict().items():  # the scoring pass changes nothing: ERM's run
        assert torch.equal(value, scored_model.state_dict()[key]), key
    if scheme == "grad_norm":  # the same scoring work as p^GN, whose draws are always full batches of b
        exact = ImportanceSamplingStrategy("grad_norm", alpha=1.0)
        assert _count_examples(mlp(), train, exact, epochs=2) == 2 * (steps * b + steps * n)


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
