"""Same seed, same run: every strategy of the library, trained twice through `fit` on the CPU, gives identical
histories and identical parameters (bit for bit), and a different seed gives a different run.

The table below must name every `Strategy` subclass that `dro_lab` exports: a new strategy fails
`test_the_table_covers_every_exported_strategy` until it is added here.

GPU caveat (documented in the manual, course/manual/reproducibility.md): CUDA kernels such as
`index_add_`/`scatter_add_` with float atomics and some cuDNN convolutions are not deterministic, so on a GPU the same
seed gives the same run only to rounding unless `torch.use_deterministic_algorithms(True)` is set (with
`CUBLAS_WORKSPACE_CONFIG=:4096:8`).
"""

from __future__ import annotations

import math

import pytest
import torch

import dro_lab
import dro_lab.strategies

EPOCHS = 2
BATCH = 64
TIME_KEYS = ("seconds", "time", "wall")  # measured, not computed: excluded from the comparison


def _shift(x, y, model, generator):  # TransformGroupsStrategy's transform signature
    return (x + 0.1).clamp(0, 1)


def _noise(x, y, model, generator):  # uses the strategy's generator: must be reproducible too
    return (x + 0.1 * torch.randn(x.shape, generator=generator)).clamp(0, 1)


# name -> (factory, fit options). Small settings: the point is reproducibility, not accuracy.
STRATEGIES = {
    "ERM": (lambda: dro_lab.ERM(), {}),
    "RobustLossStrategy": (lambda: dro_lab.RobustLossStrategy("kl", beta=2.0), {}),
    "HardnessWeightedStrategy": (lambda: dro_lab.HardnessWeightedStrategy(beta=2.0), {}),
    "OHEMStrategy": (lambda: dro_lab.OHEMStrategy(keep=0.5), {}),
    "ImportanceSamplingStrategy": (lambda: dro_lab.ImportanceSamplingStrategy("grad_norm", alpha=0.5), {}),
    "GroupDROStrategy": (
        lambda: dro_lab.GroupDROStrategy("also", grouping="group", pi_lr=0.05, tau=0.5),
        {"optimizer": "adam", "lr": 0.003},
    ),
    "TransformGroupsStrategy": (
        lambda: dro_lab.TransformGroupsStrategy(
            dro_lab.GroupDROStrategy("also", grouping="group", pi_lr=0.05, tau=0.5), [_shift, _noise]
        ),
        {"optimizer": "adam", "lr": 0.003},
    ),
    "CompressedWorkersStrategy": (
        lambda: dro_lab.CompressedWorkersStrategy(
            dro_lab.GroupDROStrategy("also", grouping="group", pi_lr=0.05, tau=0.5), n_workers=3
        ),
        {"optimizer": "adam", "lr": 0.003},
    ),
    "UpsamplingStrategy": (lambda: dro_lab.UpsamplingStrategy(), {}),
    "StaticWeightsStrategy": (lambda: dro_lab.StaticWeightsStrategy(), {}),
    "SpectralRiskStrategy": (lambda: dro_lab.SpectralRiskStrategy(), {}),
    "FastDROStrategy": (lambda: dro_lab.FastDROStrategy("cvar", size=0.2), {}),
    "RecoverStrategy": (lambda: dro_lab.RecoverStrategy(warmup_steps=3), {}),
    "OnlineGroupDROStrategy": (lambda: dro_lab.OnlineGroupDROStrategy(0.05), {}),
    "AdversarialTrainingStrategy": (lambda: dro_lab.AdversarialTrainingStrategy(0.1, steps=2), {}),
    "DONEStrategy": (lambda: dro_lab.DONEStrategy(0.1, r=1.0, steps=2, implicit=True), {}),
    "GAIRATStrategy": (lambda: dro_lab.GAIRATStrategy(0.1, steps=2), {}),
    "MAILStrategy": (lambda: dro_lab.MAILStrategy(0.1, steps=2), {}),
    "GILSStrategy": (lambda: dro_lab.GILSStrategy(0.2, gamma=1.0, eta=0.1, steps=2), {}),
    "LabelSmoothingStrategy": (lambda: dro_lab.LabelSmoothingStrategy(0.1), {}),
    "MixupStrategy": (lambda: dro_lab.MixupStrategy(), {}),
    "CutMixStrategy": (lambda: dro_lab.CutMixStrategy(), {}),
    "CutoutStrategy": (lambda: dro_lab.CutoutStrategy(), {}),
    "AttackAugmentStrategy": (lambda: dro_lab.AttackAugmentStrategy("pgd", 0.1, steps=2), {}),
}
IMAGE_STRATEGIES = {"CutMixStrategy", "CutoutStrategy"}  # need (C, H, W) inputs


def small_benchmark(n: int) -> dict:
    """The first ``n`` examples of scikit-learn's digits, classes 0–4 thinned to a fifth in training, in two groups
    (those classes and the others), flat (MLP) and as 1×8×8 images (CNN)."""
    from dro_lab.data import assign_groups, groups_from_classes, load_digits, make_imbalanced

    train, test = load_digits(flatten=True, seed=0)
    train = make_imbalanced(train, classes=range(5), keep_fraction=0.2, generator=0)
    minority = [int(c < 5) for c in range(10)]
    flat = [assign_groups(d, lambda x, y: groups_from_classes(y, minority), num_groups=2) for d in (train, test)]
    train, test = (dro_lab.ArrayDataset(d.x[:n], d.y[:n], groups=d.groups[:n]) for d in flat)
    images = tuple(dro_lab.ArrayDataset(d.x.view(-1, 1, 8, 8), d.y, groups=d.groups) for d in (train, test))
    return {"flat": (train, test), "image": images}


@pytest.fixture(scope="module")
def data():
    return small_benchmark(240)


def _model(image: bool) -> torch.nn.Module:
    if image:
        return dro_lab.DigitsCNN(num_classes=10, width=4)
    return dro_lab.MLP(64, 10, hidden=(16,))


def _run(name: str, data, seed: int):
    factory, options = STRATEGIES[name]
    image = name in IMAGE_STRATEGIES
    train, test = data["image" if image else "flat"]
    torch.manual_seed(seed)  # the model's initialisation: fit seeds everything else
    model = _model(image)
    options = {"lr": 0.05, **options}
    history = dro_lab.fit(
        model,
        train,
        strategy=factory(),
        test=test,
        epochs=EPOCHS,
        batch_size=BATCH,
        device="cpu",
        seed=seed,
        progress=False,
        **options,
    )
    records = [{k: v for k, v in r.items() if not any(t in k for t in TIME_KEYS)} for r in history.records]
    return records, {k: v.clone() for k, v in model.state_dict().items()}


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    return a == b


def test_the_table_covers_every_strategy_of_the_library():
    exported = set(dro_lab.strategies.STRATEGIES)
    missing = sorted(exported - set(STRATEGIES))
    assert not missing, f"add these strategies to STRATEGIES in {__file__}: {missing}"
    assert not set(STRATEGIES) - exported, sorted(set(STRATEGIES) - exported)


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_same_seed_same_history_and_parameters(name, data):
    records_a, params_a = _run(name, data, seed=3)
    records_b, params_b = _run(name, data, seed=3)
    assert len(records_a) == EPOCHS
    assert _same(records_a, records_b), f"{name}: histories differ between two runs with seed 3"
    for key in params_a:
        assert torch.equal(params_a[key], params_b[key]), f"{name}: parameter {key} differs"
    _, params_c = _run(name, data, seed=4)
    assert any(not torch.equal(params_a[k], params_c[k]) for k in params_a), f"{name}: seed 4 gave seed 3's run"
