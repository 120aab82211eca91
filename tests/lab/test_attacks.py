"""PGD / FGSM against torchattacks and closed forms; κ by hand; the robust-accuracy report."""

from __future__ import annotations

import math
import sys

import pytest
import torch
import torch.nn.functional as F

from dro_lab.attacks import fgsm_attack, pgd_attack, robust_accuracy_report
from dro_lab.data import ArrayDataset, load_digits

try:  # the `attacks` extra, installed with --no-deps (see pyproject.toml); only some tests need it
    import torchattacks
except ImportError:  # pragma: no cover - depends on the environment
    torchattacks = None
needs_torchattacks = pytest.mark.skipif(torchattacks is None, reason="torchattacks (the 'attacks' extra) missing")


def _mlp(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))


@pytest.fixture(scope="module")
def digits():
    train, test = load_digits(test_fraction=0.2, seed=0)
    return train, test


@pytest.fixture(scope="module")
def batch(digits):
    _, test = digits
    x, y, _ = test.batch(torch.arange(64))
    return x, y


@pytest.fixture(scope="module")
def trained(digits):
    """A tiny MLP trained clean for 150 full-batch Adam steps (~97% test accuracy)."""
    train, _ = digits
    x, y, _ = train.batch(torch.arange(len(train)))
    model = _mlp(1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(150):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    return model.eval()


# --------------------------------------------------------------------------- agreement with torchattacks


@needs_torchattacks
@pytest.mark.parametrize("norm, eps, alpha", [("linf", 0.1, 0.02), ("l2", 1.0, 0.2)])
def test_pgd_matches_torchattacks_from_the_same_start(batch, norm, eps, alpha):
    x, y = batch
    model = _mlp()
    cls = torchattacks.PGD if norm == "linf" else torchattacks.PGDL2
    reference = cls(model, eps=eps, alpha=alpha, steps=10, random_start=False)(x, y)
    ours = pgd_attack(model, x, y, eps=eps, alpha=alpha, steps=10, norm=norm, random_start=False)
    assert (ours - reference).abs().max() < 1e-6
    assert (ours - x).abs().max() > 0.5 * eps if norm == "linf" else True  # it moved


@needs_torchattacks
def test_fgsm_matches_torchattacks(batch):
    x, y = batch
    model = _mlp()
    reference = torchattacks.FGSM(model, eps=0.1)(x, y)
    assert (fgsm_attack(model, x, y, eps=0.1) - reference).abs().max() < 1e-6


@pytest.mark.parametrize("norm, eps", [("linf", 0.1), ("l2", 1.0)])
@pytest.mark.parametrize("step_rule, alpha", [("sign", 0.03), ("gd", 5.0), ("adam", 0.03)])
def test_random_start_stays_in_the_ball_and_range_and_a_seed_reproduces(batch, norm, eps, step_rule, alpha):
    x, y = batch
    model = _mlp()
    state = torch.random.get_rng_state()
    runs = [
        pgd_attack(
            model,
            x,
            y,
            eps=eps,
            alpha=alpha,
            steps=5,
            norm=norm,
            step_rule=step_rule,
            generator=torch.Generator().manual_seed(s),
        )
        for s in (3, 3, 4)
    ]
    assert torch.equal(torch.random.get_rng_state(), state)  # a generator given: the global RNG is not drawn
    assert torch.equal(runs[0], runs[1]) and not torch.equal(runs[0], runs[2])
    for adv in runs:
        delta = (adv - x).flatten(1)
        size = delta.abs().max(1).values if norm == "linf" else delta.norm(dim=1)
        assert size.max() <= eps + 1e-6
        assert adv.min() >= 0 and adv.max() <= 1


def test_l2_random_start_is_uniform_in_the_ball():
    # Uniform in the d-ball: P(‖δ‖ ≤ ε/2) = 2^{-d}; with d = 2 that is 1/4, and directions are isotropic.
    model = torch.nn.Linear(2, 2)
    x, y = torch.zeros(4000, 2), torch.zeros(4000, dtype=torch.long)
    gen = torch.Generator().manual_seed(0)
    # steps=1 with a tiny step: the start is (almost) what comes back; no range clamp
    adv = pgd_attack(model, x, y, eps=1.0, alpha=1e-9, steps=1, norm="l2", clamp=None, generator=gen)
    r = adv.norm(dim=1)
    assert r.max() <= 1 + 1e-6
    assert abs(float((r <= 0.5).double().mean()) - 0.25) < 0.03
    assert abs(float((adv[:, 0] > 0).double().mean()) - 0.5) < 0.03


# --------------------------------------------------------------------------- brute-force oracle


def _two_class_linear():
    model = torch.nn.Linear(2, 2)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, -2.0], [-0.5, 1.5]]))
        model.bias.copy_(torch.tensor([0.3, -0.1]))
    return model


@pytest.mark.parametrize("step_rule, alpha", [("sign", 0.05), ("gd", 2.0), ("adam", 0.05)])
def test_pgd_reaches_the_max_over_the_linf_box(step_rule, alpha):
    model = _two_class_linear()
    x = torch.tensor([[0.4, 0.6], [0.5, 0.2], [0.7, 0.7]])
    y = torch.tensor([0, 1, 0])
    eps = 0.15
    adv = pgd_attack(model, x, y, eps=eps, alpha=alpha, steps=30, step_rule=step_rule)
    with torch.no_grad():
        loss = F.cross_entropy(model(adv), y, reduction="none")
        # closed form: CE of a 2-class linear model grows with (w_other − w_y)·x, so the worst corner is
        # x + ε·sign(w_other − w_y) (inside [0, 1] for these points)
        w = model.weight
        corner = x + eps * (w[1 - y] - w[y]).sign()
        best = F.cross_entropy(model(corner), y, reduction="none")
        # grid over the box, an oracle that knows nothing about linearity
        t = torch.linspace(-eps, eps, 301)
        grid = torch.stack(torch.meshgrid(t, t, indexing="ij"), -1).reshape(-1, 2)
        for i in range(len(x)):
            pts = (x[i] + grid).clamp(0, 1)
            grid_max = F.cross_entropy(model(pts), y[i].expand(len(pts)), reduction="none").max()
            assert abs(float(best[i] - grid_max)) < 1e-4
    assert torch.allclose(loss, best, atol=1e-4)


def test_gd_step_uses_the_per_sample_sum_so_batch_size_does_not_matter(batch):
    x, y = batch
    model = _mlp()
    together = pgd_attack(model, x, y, eps=0.1, alpha=3.0, steps=3, step_rule="gd", random_start=False)
    alone = torch.cat(
        [
            pgd_attack(
                model, x[i : i + 1], y[i : i + 1], eps=0.1, alpha=3.0, steps=3, step_rule="gd", random_start=False
            )
            for i in range(8)
        ]
    )
    assert torch.allclose(together[:8], alone, atol=1e-6)
    # one GD step is x + α ∇ℓ_i, projected
    xg = x.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(F.cross_entropy(model(xg), y, reduction="sum"), xg)
    one = pgd_attack(model, x, y, eps=0.1, alpha=3.0, steps=1, step_rule="gd", random_start=False)
    expected = (x + (3.0 * g).clamp(-0.1, 0.1)).clamp(0, 1)
    assert torch.allclose(one, expected, atol=1e-6)


def test_adam_rule_follows_the_adam_formula(batch):
    x, y = batch
    model = _mlp()
    lr, b1, b2, tiny = 0.01, 0.9, 0.999, 1e-8
    xa, m, v = x.clone(), torch.zeros_like(x), torch.zeros_like(x)
    for t in range(1, 4):
        xg = xa.clone().requires_grad_(True)
        (g,) = torch.autograd.grad(F.cross_entropy(model(xg), y, reduction="sum"), xg)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        step = lr * (m / (1 - b1**t)) / ((v / (1 - b2**t)).sqrt() + tiny)
        xa = (x + (xa + step - x).clamp(-0.1, 0.1)).clamp(0, 1)
    ours = pgd_attack(model, x, y, eps=0.1, alpha=lr, steps=3, step_rule="adam", random_start=False)
    assert torch.allclose(ours, xa, atol=1e-6)


# --------------------------------------------------------------------------- model state, grads, no_grad


def test_mode_restored_grads_untouched_and_works_under_no_grad(batch):
    x, y = batch
    model = torch.nn.Sequential(
        torch.nn.Flatten(),
        torch.nn.Linear(64, 32),
        torch.nn.BatchNorm1d(32),
        torch.nn.ReLU(),
        torch.nn.Dropout(0.5),
        torch.nn.Linear(32, 10),
    ).train()
    running = model[2].running_mean.clone()
    with torch.no_grad():
        adv, kappa = pgd_attack(
            model, x, y, eps=0.1, alpha=0.02, steps=3, return_kappa=True, generator=torch.Generator().manual_seed(0)
        )
    assert model.training and all(m.training for m in model.modules())
    assert all(p.grad is None for p in model.parameters())
    assert torch.equal(model[2].running_mean, running)  # eval mode: BatchNorm statistics untouched
    assert not adv.requires_grad and adv.dtype == x.dtype and adv.device == x.device
    assert kappa.dtype == torch.int64 and kappa.shape == y.shape

    class Broken(torch.nn.Module):
        def forward(self, x):
            raise RuntimeError("boom")

    broken = Broken().train()
    with pytest.raises(RuntimeError, match="boom"):
        pgd_attack(broken, x, y, eps=0.1, alpha=0.02, steps=2)
    assert broken.training


def test_float64_inputs_come_back_as_float64(batch):
    x, y = batch
    model = _mlp().double()
    adv = pgd_attack(model, x.double(), y, eps=0.1, alpha=0.02, steps=2, random_start=False)
    assert adv.dtype == torch.float64


# --------------------------------------------------------------------------- GAIRAT's κ


class _Threshold(torch.nn.Module):
    """Two classes on a scalar input: logits (0, x − 0.95), so class 0 is predicted while x < 0.95."""

    def forward(self, x):
        return torch.cat([torch.zeros_like(x), x - 0.95], dim=1)


def test_kappa_counts_the_iterations_still_classified_correctly():
    model = _Threshold()
    x = torch.tensor([[0.5], [2.0], [0.05]])
    y = torch.tensor([0, 0, 0])
    # sample 0: sign-PGD pushes x up by 0.1 per step: 0.5, 0.6, …, 0.9 correct (5 starts), 1.0 wrong
    # sample 1: wrong from the start → 0; sample 2: ε = 0.5 keeps x ≤ 0.55 < 0.95 → all 10
    adv, kappa = pgd_attack(
        model, x, y, eps=0.5, alpha=0.1, steps=10, random_start=False, clamp=None, return_kappa=True
    )
    assert kappa.tolist() == [5, 0, 10]
    assert adv[2, 0] == pytest.approx(0.55)
    _, kappa0 = pgd_attack(model, x, y, eps=0.0, alpha=0.1, steps=10, return_kappa=True)
    assert kappa0.tolist() == [10, 0, 10]


def test_kappa_is_between_zero_and_steps(trained, batch):
    x, y = batch
    _, kappa = pgd_attack(
        trained, x, y, eps=0.2, alpha=0.05, steps=7, return_kappa=True, generator=torch.Generator().manual_seed(0)
    )
    assert kappa.min() >= 0 and kappa.max() <= 7
    assert kappa.min() < 7 and kappa.max() > 0  # some flip, some hold


# --------------------------------------------------------------------------- robust_accuracy_report


def test_report_eps_zero_is_clean_and_tail_is_the_mean_of_the_three_worst(trained, digits):
    _, test = digits
    zero = robust_accuracy_report(trained, test, eps=0.0)
    assert zero["robust_accuracy"] == zero["clean_accuracy"]
    assert zero["per_class_robust_accuracy"] == zero["per_class_clean_accuracy"]
    x, y, _ = test.batch(torch.arange(len(test)))
    with torch.no_grad():
        assert zero["clean_accuracy"] == pytest.approx(float((trained(x).argmax(1) == y).double().mean()))
    trained.train()
    rep = robust_accuracy_report(trained, test, eps=0.05, steps=10)
    assert trained.training
    trained.eval()
    per_class = rep["per_class_robust_accuracy"]
    assert len(per_class) == 10
    assert rep["tail_robust_accuracy"] == pytest.approx(sum(sorted(per_class)[:3]) / 3)
    assert rep["worst_class_robust_accuracy"] == min(per_class)
    assert 0 <= rep["robust_accuracy"] <= rep["clean_accuracy"]


@pytest.mark.slow
@needs_torchattacks
def test_apgd_is_at_least_as_strong_as_pgd_and_autoattack_as_apgd(trained, digits):
    _, test = digits
    small = ArrayDataset(*test.batch(torch.arange(120))[:2])
    state = torch.random.get_rng_state()
    kw = dict(eps=0.05, steps=20, generator=None)
    pgd = robust_accuracy_report(trained, small, attack="pgd", **kw)
    reports = {
        a: robust_accuracy_report(trained, small, attack=a, **{**kw, "generator": torch.Generator().manual_seed(0)})
        for a in ("apgd-ce", "apgd-dlr", "autoattack")
    }
    assert torch.equal(torch.random.get_rng_state(), state)  # torchattacks reseeds; we restore
    assert 0.1 < pgd["robust_accuracy"] < pgd["clean_accuracy"]  # a non-trivial regime
    assert reports["apgd-ce"]["robust_accuracy"] <= pgd["robust_accuracy"] + 0.02
    # the ensemble starts with the same seeded APGD-CE, so it can only remove more examples
    assert reports["autoattack"]["robust_accuracy"] <= reports["apgd-ce"]["robust_accuracy"]
    assert reports["autoattack"]["robust_accuracy"] <= reports["apgd-dlr"]["robust_accuracy"]
    fgsm = robust_accuracy_report(trained, small, attack="fgsm", eps=0.05)
    assert pgd["robust_accuracy"] <= fgsm["robust_accuracy"] + 0.02


@needs_torchattacks
def test_report_works_on_flat_inputs_with_groups():
    torch.manual_seed(0)
    x, y, g = torch.rand(40, 64), torch.randint(0, 10, (40,)), torch.randint(0, 2, (40,))
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
    rep = robust_accuracy_report(
        model,
        ArrayDataset(x, y, groups=g),
        attack="apgd-ce",
        eps=0.05,
        steps=5,
        generator=torch.Generator().manual_seed(0),
    )
    assert rep["n"] == 40 and 0 <= rep["robust_accuracy"] <= rep["clean_accuracy"]


def test_missing_torchattacks_names_the_extra(trained, digits, monkeypatch):
    monkeypatch.setitem(sys.modules, "torchattacks", None)
    with pytest.raises(ImportError, match=r"attacks"):
        robust_accuracy_report(trained, digits[1], attack="apgd-ce", eps=0.05, steps=2)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "kwargs, name, error",
    [
        (dict(eps=-0.1), "eps", ValueError),
        (dict(eps=math.nan), "eps", ValueError),
        (dict(alpha=0.0), "alpha", ValueError),
        (dict(alpha=-1), "alpha", ValueError),
        (dict(steps=0), "steps", ValueError),
        (dict(steps=2.5), "steps", TypeError),
        (dict(steps=True), "steps", TypeError),
        (dict(norm="l1"), "norm", ValueError),
        (dict(step_rule="momentum"), "step_rule", ValueError),
        (dict(clamp=(1.0, 0.0)), "clamp", ValueError),
    ],
)
def test_pgd_rejects_bad_arguments(batch, kwargs, name, error):
    x, y = batch
    args = dict(eps=0.1, alpha=0.02, steps=2) | kwargs
    with pytest.raises(error, match=name):
        pgd_attack(_mlp(), x, y, **args)


def test_pgd_rejects_mismatched_shapes(batch):
    x, y = batch
    with pytest.raises(ValueError, match="x and y"):
        pgd_attack(_mlp(), x, y[:-1], eps=0.1, alpha=0.02, steps=2)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(attack="cw"), "attack"),
        (dict(eps=-1.0), "eps"),
        (dict(steps=0), "steps"),
        (dict(alpha=0.0), "alpha"),
        (dict(batch_size=0), "batch_size"),
        (dict(norm="l3"), "norm"),
        (dict(tail_fraction=0.0), "tail_fraction"),
        (dict(tail_fraction=1.5), "tail_fraction"),
        (dict(attack="fgsm", norm="l2"), "norm"),
    ],
)
def test_report_rejects_bad_arguments(trained, digits, kwargs, name):
    with pytest.raises(ValueError, match=name):
        robust_accuracy_report(trained, digits[1], **(dict(eps=0.1) | kwargs))
