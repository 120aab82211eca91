"""``dro-lab bench hws-step / hws-draw``: the official-approach baseline does the sampler's work, and the sections run.

The baseline samples the sampler's distribution (its p vector, and a chi-square test of its
with-replacement draws) and its Python-loop update writes the same history as
``HardnessWeightedSampler.update``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from scipy import stats

from dro_lab import HardnessWeightedSampler
from dro_lab.bench import hws
from dro_lab.cli import main as cli_main


def _sampler(history: torch.Tensor, beta: float, **kw) -> HardnessWeightedSampler:
    return HardnessWeightedSampler(
        history.numel(),
        8,
        beta=beta,
        warm_start=False,
        history_init=history,
        device="cpu",
        generator=torch.Generator().manual_seed(0),
        **kw,
    )


def test_official_probabilities_are_the_samplers_softmax():
    history = torch.rand(50, generator=torch.Generator().manual_seed(1)) * 3
    p = hws.official_probabilities(history.clone(), 2.0)
    z = np.exp(2.0 * history.double().numpy())
    assert p.dtype == np.float32 and abs(float(p.sum()) - 1) < 1e-6
    assert np.allclose(p, z / z.sum(), rtol=1e-5, atol=0)  # every entry above the 1e-4/n floor here
    assert np.allclose(p, _sampler(history, 2.0).probabilities().numpy(), rtol=1e-5, atol=0)
    # At a large β the floor lifts the starved entries to 1e-4/n before renormalising.
    p_hot = hws.official_probabilities(history.clone(), 100.0)
    assert p_hot.min() >= 0.99e-4 / 50 and abs(float(p_hot.sum()) - 1) < 1e-6


def test_official_draw_with_replacement_samples_the_samplers_distribution():
    history = torch.tensor([0.0, 0.1, 0.3, 0.5, 0.8, 1.0, 1.2, 1.5, 1.9, 2.0, 2.4, 3.0])
    beta = 1.2
    q = _sampler(history, beta).probabilities().double().numpy()
    q /= q.sum()  # float32 → float64: chisquare wants the totals equal to 1e-8
    draws = hws.official_draw(history.clone(), beta, 60_000, np.random.RandomState(0), replace=True)
    counts = np.bincount(draws, minlength=len(history))
    assert stats.chisquare(counts, q * counts.sum()).pvalue > 1e-3
    # Power: the same counts reject a plainly different distribution (uniform).
    assert stats.chisquare(counts, np.full(len(q), counts.sum() / len(q))).pvalue < 1e-6


def test_official_draw_default_is_without_replacement():
    history = torch.rand(50, generator=torch.Generator().manual_seed(2)) * 3
    idx = hws.official_draw(history, 10.0, 40, np.random.RandomState(0))
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
    hws.official_update(weights, idx.tolist(), losses, momentum)
    assert torch.allclose(sampler.history, weights, rtol=0, atol=1e-6)
    untouched = torch.ones(40, dtype=torch.bool)
    untouched[idx] = False
    assert torch.equal(weights[untouched], history[untouched])


@pytest.mark.slow
def test_hws_draw_skips_the_baseline_past_its_limit():
    rows = hws.bench_hws_draw(
        [64, 300, 3000], batch_size=128, device=torch.device("cpu"), repeats=1, budget_s=1.0, baseline_max_s=1e-9
    )
    small, first, big = rows
    assert small["baseline_s"] is None and small["baseline_skipped"].startswith("n < b")
    assert first["baseline_s"] > 0 and first["speedup"] > 0  # the first measurable n always runs
    assert big["baseline_s"] is None and "predicted" in big["baseline_skipped"]
    assert [r["state_bytes"] for r in rows] == [12 * n for n in (64, 300, 3000)]


@pytest.mark.slow
def test_bench_cli_runs_the_hws_sections_quickly(tmp_path, capsys):
    out = tmp_path / "hws.json"
    rc = cli_main(
        [
            "bench",
            "--only",
            "hws-step,hws-draw",
            "--quick",
            "--device",
            "cpu",
            "--hws-n",
            "512",
            "--hws-steps",
            "4",
            "--hws-warmup",
            "1",
            "--hws-sizes",
            "300,2000",
            "--repeats",
            "1",
            "--json",
            str(out),
        ]
    )
    assert rc == 0
    data = json.loads(out.read_text())
    assert data["sections"] == ["hws-step", "hws-draw"] and data["results"] == []
    assert data["machine"]["device"] == "cpu" and data["seconds"]["total"] > 0
    step = data["hws_step"]
    assert {
        "uniform_step_s",
        "hws_step_s",
        "ratio",
        "paired_ratio",
        "draw_s",
        "update_s",
        "softmax_s",
        "multinomial_s",
        "sampler_pct",
        "model",
        "n",
        "batch_size",
    } <= set(step)
    assert step["n"] == 512 and step["batch_size"] == 128 and step["steps"] == 4
    assert step["ratio"] == pytest.approx(step["hws_step_s"] / step["uniform_step_s"])
    assert 0 < step["sampler_pct"] < 100
    assert step["in_step_draw_s"] > 0 and step["in_step_update_s"] > 0 and 0 < step["in_step_sampler_pct"] < 100
    draw = data["hws_draw"]
    assert [r["n"] for r in draw] == [300, 2000]
    assert all(r["ours_s"] > 0 and r["baseline_s"] > 0 and r["speedup"] > 0 for r in draw)
    assert all(r["auto_took"] == "multinomial" and r["auto_s"] > 0 and r["auto_speedup"] > 0 for r in draw)
    assert all({"state_bytes", "q_bytes", "baseline_mode", "ours_mode"} <= set(r) for r in draw)
    printed = capsys.readouterr().out
    assert "| model, data |" in printed and "| n | dro_lab sampler" in printed
    assert "draw='auto' takes the tree from n = " in printed and "(multinomial)" in printed


@pytest.mark.slow
def test_hws_draw_times_auto_and_reports_the_mode_it_took(monkeypatch):
    import dro_lab.samplers.hardness as hardness

    monkeypatch.setattr(hardness, "AUTO_TREE_MIN_N", 1000)
    rows = hws.bench_hws_draw([300, 3000], batch_size=128, device=torch.device("cpu"), repeats=1, budget_s=0.2)
    assert [r["auto_took"] for r in rows] == ["multinomial", "tree"]
    assert all(r["auto_s"] > 0 and r["auto_speedup"] > 0 for r in rows)
    assert "(tree)" in hws.format_hws_draw(rows[1]) and "(multinomial)" in hws.format_hws_draw(rows[0])


@pytest.mark.slow
def test_hws_step_runs_the_lessons_mnist_model_and_rejects_others():
    r = hws.bench_hws_step(
        n=256, steps=2, warmup=0, model="small_cnn", device=torch.device("cpu"), repeats=1, budget_s=0.05
    )
    assert r["model"] == "SmallCNN(image_size=28)" and r["parameters"] == 402_500
    assert r["uniform_step_s"] > 0 and r["hws_step_s"] > 0 and r["sampler_state_bytes"] == 12 * 256
    with pytest.raises(ValueError, match="model must be one of"):
        hws.bench_hws_step(n=256, steps=1, model="wrn16_1", device=torch.device("cpu"))
