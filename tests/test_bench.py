"""`dro-lab bench` runs end to end, and its baselines really do the same work.

The scipy baselines reach the same worst-case objective; the official-approach HWS baseline samples
the sampler's distribution (its p vector, and a chi-square test of its with-replacement draws) and
its Python-loop update writes the same history as ``HardnessWeightedSampler.update``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from scipy import stats

from dro_lab import HardnessWeightedSampler, bench, worst_case_weights
from dro_lab.cli import main as cli_main


@pytest.mark.parametrize(("divergence", "knob", "value"), bench.CASES)
def test_scipy_baseline_reaches_the_same_objective(divergence, knob, value):
    rng = np.random.default_rng(0)
    losses = rng.exponential(size=30)
    for solver in (bench.scipy_worst_case, bench.scipy_dual_worst_case):
        _check_baseline(solver, losses, divergence, knob, value)


def _check_baseline(solver, losses, divergence, knob, value):
    q_base = solver(losses, divergence, knob, value)
    q_ours = worst_case_weights(torch.tensor(losses), divergence=divergence, **{knob: value}).numpy()
    assert abs(q_base.sum() - 1) < 1e-6
    # Same objective value (penalty included) within solver tolerance.
    def objective(q):
        if knob != "beta":
            return q @ losses
        p = np.full(len(q), 1 / len(q))
        if divergence == "kl":
            d = np.sum(np.where(q > 0, q * np.log(np.maximum(q, 1e-300) / p), 0))
        else:
            d = np.sum((q - p) ** 2 / p)
        return q @ losses - d / value
    assert objective(q_ours) >= objective(q_base) - 1e-5


def test_bench_cli_writes_json_with_ratios(tmp_path, capsys):
    out = tmp_path / "bench.json"
    rc = cli_main(["bench", "weights", "--sizes", "50,2000", "--repeats", "1", "--scipy-max-n", "50",
                   "--dual-max-n", "50", "--json", str(out)])
    assert rc == 0
    data = json.loads(out.read_text())
    assert data["machine"]["torch"] == torch.__version__
    rows = data["results"]
    assert {(r["divergence"], r["n"]) for r in rows} >= {("kl", 50), ("cvar", 2000)}
    small = [r for r in rows if r["n"] == 50]
    assert all(r["speedup"] and r["speedup"] > 0 and r["dual_speedup"] > 0 for r in small)
    assert all(r["dual_s"] is None for r in rows if r["n"] == 2000)
    assert "| divergence |" in capsys.readouterr().out


def test_bench_rejects_unknown_benchmark():
    with pytest.raises(SystemExit):
        bench.main(["nope"])


# --------------------------------------------------------------------------- hardness-weighted sampling


def _sampler(history: torch.Tensor, beta: float, **kw) -> HardnessWeightedSampler:
    return HardnessWeightedSampler(history.numel(), 8, beta=beta, warm_start=False, history_init=history,
                                   device="cpu", generator=torch.Generator().manual_seed(0), **kw)


def test_official_probabilities_are_the_samplers_softmax():
    history = torch.rand(50, generator=torch.Generator().manual_seed(1)) * 3
    p = bench.official_probabilities(history.clone(), 2.0)
    z = np.exp(2.0 * history.double().numpy())
    assert p.dtype == np.float32 and abs(float(p.sum()) - 1) < 1e-6
    assert np.allclose(p, z / z.sum(), rtol=1e-5, atol=0)  # every entry above the 1e-4/n floor here
    assert np.allclose(p, _sampler(history, 2.0).probabilities().numpy(), rtol=1e-5, atol=0)
    # At a large β the floor lifts the starved entries to 1e-4/n before renormalising.
    p_hot = bench.official_probabilities(history.clone(), 100.0)
    assert p_hot.min() >= 0.99e-4 / 50 and abs(float(p_hot.sum()) - 1) < 1e-6


def test_official_draw_with_replacement_samples_the_samplers_distribution():
    history = torch.tensor([0.0, 0.1, 0.3, 0.5, 0.8, 1.0, 1.2, 1.5, 1.9, 2.0, 2.4, 3.0])
    beta = 1.2
    q = _sampler(history, beta).probabilities().double().numpy()
    q /= q.sum()  # float32 → float64: chisquare wants the totals equal to 1e-8
    draws = bench.official_draw(history.clone(), beta, 60_000, np.random.RandomState(0), replace=True)
    counts = np.bincount(draws, minlength=len(history))
    assert stats.chisquare(counts, q * counts.sum()).pvalue > 1e-3
    # Power: the same counts reject a plainly different distribution (uniform).
    assert stats.chisquare(counts, np.full(len(q), counts.sum() / len(q))).pvalue < 1e-6


def test_official_draw_default_is_without_replacement():
    history = torch.rand(50, generator=torch.Generator().manual_seed(2)) * 3
    idx = bench.official_draw(history, 10.0, 40, np.random.RandomState(0))
    assert len(idx) == len(set(idx)) == 40 and all(0 <= i < 50 for i in idx)


@pytest.mark.parametrize("momentum", [0.0, 0.3])
def test_official_python_loop_update_equals_the_samplers_update(momentum):
    gen = torch.Generator().manual_seed(3)
    history = torch.rand(40, generator=gen) * 3
    idx = torch.randperm(40, generator=gen)[:16]  # no duplicates
    losses = torch.rand(16, generator=gen) * 3
    sampler = _sampler(history, 10.0, history_momentum=momentum)
    sampler.update(idx, losses)
    weights = history.clone()
    bench.official_update(weights, idx.tolist(), losses, momentum)
    assert torch.allclose(sampler.history, weights, rtol=0, atol=1e-6)
    untouched = torch.ones(40, dtype=torch.bool)
    untouched[idx] = False
    assert torch.equal(weights[untouched], history[untouched])


def test_hws_draw_skips_the_baseline_past_its_limit():
    rows = bench.bench_hws_draw([64, 300, 3000], batch_size=128, device=torch.device("cpu"), repeats=1,
                                budget_s=1.0, baseline_max_s=1e-9)
    small, first, big = rows
    assert small["baseline_s"] is None and small["baseline_skipped"].startswith("n < b")
    assert first["baseline_s"] > 0 and first["speedup"] > 0  # the first measurable n always runs
    assert big["baseline_s"] is None and "predicted" in big["baseline_skipped"]
    assert [r["state_bytes"] for r in rows] == [12 * n for n in (64, 300, 3000)]


def test_bench_cli_runs_the_hws_sections_quickly(tmp_path, capsys):
    out = tmp_path / "hws.json"
    rc = cli_main(["bench", "--only", "hws-step,hws-draw", "--quick", "--device", "cpu", "--hws-n", "512",
                   "--hws-steps", "4", "--hws-warmup", "1", "--hws-sizes", "300,2000", "--repeats", "1",
                   "--json", str(out)])
    assert rc == 0
    data = json.loads(out.read_text())
    assert data["sections"] == ["hws-step", "hws-draw"] and data["results"] == []
    assert data["machine"]["device"] == "cpu" and data["seconds"]["total"] > 0
    step = data["hws_step"]
    assert {"uniform_step_s", "hws_step_s", "ratio", "paired_ratio", "draw_s", "update_s", "softmax_s",
            "multinomial_s", "sampler_pct", "model", "n", "batch_size"} <= set(step)
    assert step["n"] == 512 and step["batch_size"] == 128 and step["steps"] == 4
    assert step["ratio"] == pytest.approx(step["hws_step_s"] / step["uniform_step_s"])
    assert 0 < step["sampler_pct"] < 100
    assert step["in_step_draw_s"] > 0 and step["in_step_update_s"] > 0 and 0 < step["in_step_sampler_pct"] < 100
    draw = data["hws_draw"]
    assert [r["n"] for r in draw] == [300, 2000]
    assert all(r["ours_s"] > 0 and r["baseline_s"] > 0 and r["speedup"] > 0 for r in draw)
    assert all({"state_bytes", "q_bytes", "baseline_mode", "ours_mode"} <= set(r) for r in draw)
    printed = capsys.readouterr().out
    assert "| model, data |" in printed and "| n | dro_lab sampler" in printed


def test_bench_only_and_positional_names_combine_and_unknown_names_fail(capsys):
    with pytest.raises(SystemExit):
        bench.main(["--only", "weights,nope"])
    assert "nope" in capsys.readouterr().err


def test_hws_step_runs_the_lessons_mnist_model_and_rejects_others():
    r = bench.bench_hws_step(n=256, steps=2, warmup=0, model="small_cnn", device=torch.device("cpu"), repeats=1,
                             budget_s=0.05)
    assert r["model"] == "SmallCNN(image_size=28)" and r["parameters"] == 402_500
    assert r["uniform_step_s"] > 0 and r["hws_step_s"] > 0 and r["sampler_state_bytes"] == 12 * 256
    with pytest.raises(ValueError, match="model must be one of"):
        bench.bench_hws_step(n=256, steps=1, model="wrn16_1", device=torch.device("cpu"))


# --------------------------------------------------------------------------- importance sampling (issue 4)


@pytest.mark.parametrize("key", sorted(bench.PERGRAD_MODELS))
def test_loop_baseline_equals_per_sample_grad_norms(key):
    from dro_lab import per_sample_grad_norms

    torch.manual_seed(0)
    model = bench._pergrad_model(key).eval()
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(4, 1, 28, 28, generator=gen)
    y = torch.randint(0, model.classifier.out_features, (4,), generator=gen)
    loss_fn = lambda z, t: torch.nn.functional.cross_entropy(z, t, reduction="none")  # noqa: E731
    loop = bench.loop_grad_norms(model, loss_fn, x, y)
    assert loop.shape == (4,) and bool((loop > 0).all())
    for method in ("ghost", "vmap"):
        ours = per_sample_grad_norms(model, loss_fn, x, y, method=method)
        assert torch.allclose(loop, ours.to(loop.dtype), rtol=1e-4, atol=1e-7), method


def test_bench_cli_runs_the_importance_sampling_sections_quickly(tmp_path, capsys):
    out = tmp_path / "is.json"
    rc = cli_main(["bench", "--only", "pergrad,is-run", "--quick", "--device", "cpu", "--repeats", "1",
                   "--pergrad-batches", "5,64", "--pergrad-models", "small_cnn", "--is-n", "20", "--json", str(out)])
    assert rc == 0
    data = json.loads(out.read_text())
    assert data["sections"] == ["pergrad", "is-run"] and data["results"] == [] and data["hws_step"] is None
    assert data["seconds"]["pergrad"] > 0 and data["seconds"]["is-run"] > 0
    rows = data["pergrad"]
    assert [(r["model"], r["batch_size"]) for r in rows] == [("SmallCNN(2 classes)", 5)]  # --quick: b ≤ 32
    row = rows[0]
    assert {"backward_s", "ghost_s", "vmap_s", "loop_s", "ghost_over_backward", "vmap_over_backward",
            "loop_over_ghost", "parameters", "rounds"} <= set(row)
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
    rows = bench.bench_pergrad([2, 3, 4], models=["digits_cnn"], device=torch.device("cpu"), repeats=1,
                               budget_s=0.01, loop_max_b=3, loop_max_s=1e-9)
    first, second, third = rows
    assert first["loop_s"] > 0 and first["loop_over_ghost"] > 0  # the first batch size always runs the loop
    assert second["loop_s"] is None and "predicted" in second["loop_skipped"]
    assert third["loop_s"] is None and third["loop_skipped"] == "b > 3"
    with pytest.raises(ValueError, match="model must be one of"):
        bench.bench_pergrad([2], models=["wrn16_1"], device=torch.device("cpu"))


def test_bench_also_step_section(tmp_path, capsys):
    out = tmp_path / "also.json"
    rc = cli_main(["bench", "--only", "also-step", "--quick", "--device", "cpu", "--also-groups", "10,1000",
                   "--hws-batch", "16", "--json", str(out)])
    assert rc == 0
    rows = json.loads(out.read_text())["also_step"]
    assert [r["groups"] for r in rows] == [10, 1000]
    for r in rows:
        assert r["also_over_adam"] == pytest.approx(r["also_s"] / r["adam_s"])
        assert min(r["part_fwd_bwd_s"], r["part_theta_s"], r["part_pi_s"]) > 0
        assert r["pi_state_bytes"] == 24 * r["groups"]
    assert "| groups c | Adam step | ALSO step |" in capsys.readouterr().out
    with pytest.raises(ValueError, match="model must be one of"):
        bench.bench_also_step([10], model="mlp", device=torch.device("cpu"))


def test_bench_done_step_section(tmp_path):
    out = tmp_path / "done.json"
    assert cli_main(["bench", "--only", "done-step", "--quick", "--device", "cpu", "--done-steps", "2",
                     "--json", str(out)]) == 0
    r = json.loads(out.read_text())["done_step"]
    assert set(r["configs"]) == {"at", "done", "done_implicit"} and r["pgd_steps"] == 2
    assert r["configs"]["at"]["paired_ratio_vs_at"] == pytest.approx(1.0)
    assert all(c["step_s"] > 0 for c in r["configs"].values())


def test_bench_gils_section(tmp_path):
    out = tmp_path / "gils.json"
    assert cli_main(["bench", "--only", "gils-T", "--quick", "--device", "cpu", "--gils-T", "0,2",
                     "--json", str(out)]) == 0
    r = json.loads(out.read_text())["gils_T"]
    assert [x["T"] for x in r["rows"]] == [0, 2] and r["rows"][0]["ratio_to_T0"] == pytest.approx(1.0)
    assert all(x["epoch_s"] > 0 and x["ratio_to_ls"] > 0 for x in r["rows"])
