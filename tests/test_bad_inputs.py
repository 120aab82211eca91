"""Every public name rejects bad input with a clear ``ValueError`` / ``TypeError`` naming the argument.

``BAD_INPUTS`` maps each public name of ``dro_lab`` (the lazy ``_EXPORTS`` table) to cases built by
``c(label, call, expected exception, regex, pending=None)``: ``call`` is a zero-argument callable that
passes the public name ONE bad argument and otherwise valid ones; the message must match ``regex``,
which names the argument. ``NO_INPUT`` lists, with a reason, the public names that take no user
input worth validating. ``VIZ_BAD_INPUTS`` / ``VIZ_NO_INPUT`` do the same for ``dro_course.figures.__all__``,
``dro_course.panels.__all__``, the lessons' own figures and panels, and lesson 07's study.
``test_every_public_name_is_covered`` (and its viz / widgets twin) fails when a new public name is in neither table:
add its bad inputs here.

A case with ``pending="<module>: <what>"`` is a strict xfail: validation still to add in a module
someone else was editing when the table was written. Once the module validates, the case passes,
the strict xfail fails, and the ``pending`` argument must go.

``python tests/test_bad_inputs.py`` prints the counts (names, cases, per category, per exception).

The cases follow the issue's categories (``CATEGORIES``): negative β / radius / ε, α outside its
range, NaN / inf losses, mismatched shapes or devices ("meta" tensors stand in for a second
device on a CPU-only machine), empty or unknown groups, zero-length datasets, unknown
divergence / scheme / method / mode names, wrong types, and other out-of-range numbers.
"""

from __future__ import annotations

import collections
import math
import re

import numpy as np
import pytest
import torch

import dro_lab

# --------------------------------------------------------------------------- tiny fixtures
# Built on first use (cheap: a few dozen numbers); every case gets fresh objects.


def _gen():
    return torch.Generator().manual_seed(0)


def X(n=6, d=4):
    return torch.rand(n, d, generator=_gen())


def Y(n=6, k=3):
    return torch.arange(n) % k


def L(n=5):
    return torch.linspace(0.1, 1.0, n, dtype=torch.float64)


def NAN(n=5):
    v = L(n)
    v[2] = math.nan
    return v


def INF(n=5):
    v = L(n)
    v[1] = math.inf
    return v


def META(n=5):
    return torch.zeros(n, dtype=torch.float64, device="meta")


def NO_GPU(call, *args):
    """``call(*args)`` while torch reports no CUDA, MPS or XPU device: a case that holds on a GPU machine too."""
    from unittest import mock

    with (
        mock.patch.object(torch.cuda, "is_available", return_value=False),
        mock.patch.object(torch.backends.mps, "is_available", return_value=False),
        mock.patch.object(torch.xpu, "is_available", return_value=False),
    ):
        return call(*args)


def DS(n=12, d=4, k=3, groups=True):
    x = torch.rand(n, d, generator=_gen())
    y = torch.arange(n) % k
    return dro_lab.ArrayDataset(x, y, torch.arange(n) % 2 if groups else None)


class _Empty(torch.utils.data.Dataset):
    def __len__(self):
        return 0

    def __getitem__(self, i):
        raise IndexError(i)


def EMPTY():
    return _Empty()


def MODEL(d=4, k=3):
    torch.manual_seed(0)
    return dro_lab.LogisticRegression(d, k)


def PARAMS():
    return [torch.nn.Parameter(torch.zeros(3))]


def ROWS():
    return [
        {"method": m, "seed": s, "avg_acc": 0.8 - 0.1 * i, "worst_group_acc": 0.5 + 0.1 * i, "seconds_per_epoch": 0.01}
        for i, m in enumerate(["ERM", "KL-DRO"])
        for s in (0, 1)
    ]


def SUMMARY():
    return [
        {"method": "ERM", "avg_acc": 0.8, "worst_group_acc": 0.5},
        {"method": "KL-DRO", "avg_acc": 0.7, "worst_group_acc": 0.6},
    ]


def LS(n=3):
    """Three or so logits rows and labels for the label-smoothing / logit functions."""
    return torch.randn(n, 3, generator=_gen()), torch.arange(n) % 3


# --------------------------------------------------------------------------- the table

CATEGORIES = {
    "beta<0": "negative β (inverse temperature)",
    "radius<0": "negative radius r",
    "alpha-range": "α outside its range",
    "nan-inf": "NaN / inf losses or inputs",
    "shape": "mismatched shapes / lengths",
    "device": "mismatched devices (meta tensors as the second device)",
    "groups": "empty or unknown groups",
    "eps<0": "negative ε (attack budget)",
    "empty": "zero-length datasets / vectors",
    "name": "unknown divergence / scheme / method / mode names",
    "type": "wrong types (a string for a number, a float for an int count, not a model ...)",
    "range": "other numbers outside their valid range (counts ≤ 0, fractions outside (0, 1) ...)",
}

V, T = ValueError, TypeError


def c(label, call, exc, match, *, pending=None):
    """One case; ``label`` is ``"<category>:<short text>"``. ``pending`` marks validation still to add
    in a module someone else owns now: a strict xfail, so the mark must go once it is fixed."""
    assert label.split(":")[0] in CATEGORIES, label
    return (label, call, exc, match, pending)


D = dro_lab  # short

BAD_INPUTS: dict[str, list] = {
    # ---------------------------------------------------------------- robust.py
    "worst_case_weights": [
        c("beta<0:beta=-1", lambda: D.worst_case_weights(L(), divergence="kl", beta=-1.0), V, r"beta"),
        c("radius<0:radius=-0.1", lambda: D.worst_case_weights(L(), divergence="kl", radius=-0.1), V, r"radius"),
        c("alpha-range:cvar alpha=1.5", lambda: D.worst_case_weights(L(), divergence="cvar", alpha=1.5), V, r"alpha"),
        c("alpha-range:cvar alpha=0", lambda: D.worst_case_weights(L(), divergence="cvar", alpha=0.0), V, r"alpha"),
        c("nan-inf:nan loss", lambda: D.worst_case_weights(NAN(), divergence="kl", beta=1.0), V, r"losses"),
        c("nan-inf:inf loss", lambda: D.worst_case_weights(INF(), divergence="chi2", beta=1.0), V, r"losses"),
        c("nan-inf:beta=nan", lambda: D.worst_case_weights(L(), divergence="kl", beta=math.nan), V, r"beta"),
        c("empty:no losses", lambda: D.worst_case_weights(torch.zeros(0), divergence="kl", beta=1.0), V, r"losses"),
        c("shape:2-D losses", lambda: D.worst_case_weights(torch.zeros(2, 2), divergence="kl", beta=1.0), V, r"losses"),
        c(
            "shape:prior length",
            lambda: D.worst_case_weights(L(), divergence="kl", beta=1.0, prior=torch.ones(3) / 3),
            V,
            r"prior",
        ),
        c(
            "device:prior on meta",
            lambda: D.worst_case_weights(L(), divergence="kl", beta=1.0, prior=META()),
            V,
            r"prior",
        ),
        c(
            "name:divergence=wasserstein",
            lambda: D.worst_case_weights(L(), divergence="wasserstein", beta=1.0),
            V,
            r"divergence",
        ),
        c("type:beta='1'", lambda: D.worst_case_weights(L(), divergence="kl", beta="1"), T, r"beta"),
        c("type:losses=str", lambda: D.worst_case_weights("abc", divergence="kl", beta=1.0), T, r"losses"),
    ],
    "robust_loss": [
        c("beta<0:beta=-1", lambda: D.robust_loss(L(), divergence="kl", beta=-1.0), V, r"beta"),
        c("radius<0:radius=-1", lambda: D.robust_loss(L(), divergence="chi2", radius=-1.0), V, r"radius"),
        c("alpha-range:cvar alpha=2", lambda: D.robust_loss(L(), divergence="cvar", alpha=2.0), V, r"alpha"),
        c("nan-inf:nan loss", lambda: D.robust_loss(NAN(), divergence="kl", beta=1.0), V, r"losses"),
        c("nan-inf:inf loss", lambda: D.robust_loss(INF(), divergence="kl", beta=1.0), V, r"losses"),
        c("empty:no losses", lambda: D.robust_loss(torch.zeros(0), divergence="kl", beta=1.0), V, r"losses"),
        c("device:prior on meta", lambda: D.robust_loss(L(), divergence="kl", beta=1.0, prior=META()), V, r"prior"),
        c("name:divergence=tv", lambda: D.robust_loss(L(), divergence="tv", beta=1.0), V, r"divergence"),
        c("type:radius='1'", lambda: D.robust_loss(L(), divergence="kl", radius="1"), T, r"radius"),
    ],
    "RobustLoss": [
        c("beta<0:beta=-1", lambda: D.RobustLoss("kl", beta=-1.0), V, r"beta"),
        c("radius<0:radius=-1", lambda: D.RobustLoss("kl", radius=-1.0), V, r"radius"),
        c("alpha-range:cvar alpha=1.5", lambda: D.RobustLoss("cvar", alpha=1.5), V, r"alpha"),
        c("name:divergence=js", lambda: D.RobustLoss("js", beta=1.0), V, r"divergence"),
        c("type:beta=[1]", lambda: D.RobustLoss("kl", beta=[1.0]), T, r"beta"),
        c("nan-inf:nan loss in forward", lambda: D.RobustLoss("kl", beta=1.0)(NAN()), V, r"losses"),
    ],
    "divergence_value": [
        c("shape:q vs p", lambda: D.divergence_value(torch.ones(3) / 3, torch.ones(4) / 4, "kl"), V, r"q and p"),
        c(
            "name:divergence=cvar",
            lambda: D.divergence_value(torch.ones(3) / 3, torch.ones(3) / 3, "cvar"),
            V,
            r"divergence",
        ),
        c(
            "range:negative q",
            lambda: D.divergence_value(torch.tensor([1.5, -0.5]), torch.ones(2) / 2, "kl"),
            V,
            r"q and p",
        ),
        c(
            "nan-inf:nan q",
            lambda: D.divergence_value(torch.tensor([math.nan, 1.0]), torch.ones(2) / 2, "kl"),
            V,
            r"\bq\b",
        ),
        c("device:p on meta", lambda: D.divergence_value(torch.ones(5) / 5, META(), "kl"), V, r"\bp\b"),
        c("type:q=str", lambda: D.divergence_value("q", torch.ones(2) / 2, "kl"), T, r"\bq\b"),
    ],
    "radius_to_beta": [
        c("radius<0:radius=-1", lambda: D.radius_to_beta(L(), -1.0), V, r"radius"),
        c("nan-inf:nan loss", lambda: D.radius_to_beta(NAN(), 0.1), V, r"losses"),
        c("name:divergence=cvar", lambda: D.radius_to_beta(L(), 0.1, divergence="cvar"), V, r"divergence"),
        c("empty:no losses", lambda: D.radius_to_beta(torch.zeros(0), 0.1), V, r"losses"),
        c("type:radius=None", lambda: D.radius_to_beta(L(), None), T, r"radius"),
    ],
    # ---------------------------------------------------------------- utils.py
    "resolve_device": [
        c("name:device=tpu", lambda: D.resolve_device("tpu"), V, r"device"),
        c("type:device=3.5", lambda: D.resolve_device(3.5), T, r"device"),
        c("device:cuda, none here", lambda: NO_GPU(D.resolve_device, "cuda"), V, r"device='cuda'.*not available"),
        c("device:cuda:1, none here", lambda: NO_GPU(D.resolve_device, "cuda:1"), V, r"cuda:1.*available: cpu"),
        c("device:mps, none here", lambda: NO_GPU(D.resolve_device, "mps"), V, r"device='mps'.*MPS.*not available"),
        c("device:xpu, none here", lambda: NO_GPU(D.resolve_device, "xpu"), V, r"device='xpu'.*XPU.*not available"),
    ],
    "seed_everything": [
        c("range:seed=-1", lambda: D.seed_everything(-1), V, r"seed"),
        c("type:seed='0'", lambda: D.seed_everything("0"), T, r"seed"),
    ],
    "make_generator": [
        c("range:seed=-1", lambda: D.make_generator(-1), V, r"seed"),
        c("type:seed='0'", lambda: D.make_generator("0"), T, r"seed"),
        c("type:seed=1.5", lambda: D.make_generator(1.5), T, r"seed"),
        c("name:device=tpu", lambda: D.make_generator(0, device="tpu"), V, r"device"),
    ],
    # ---------------------------------------------------------------- train.py (taken)
    "fit": [
        c("type:model=str", lambda: D.fit("net", DS(), epochs=1, progress=False, device="cpu"), T, r"model"),
        c(
            "empty:train has no examples",
            lambda: D.fit(MODEL(), EMPTY(), epochs=1, progress=False, device="cpu"),
            V,
            r"train",
        ),
        c("range:epochs=-1", lambda: D.fit(MODEL(), DS(), epochs=-1, progress=False, device="cpu"), V, r"epochs"),
        c("type:epochs=1.5", lambda: D.fit(MODEL(), DS(), epochs=1.5, progress=False, device="cpu"), T, r"epochs"),
        c(
            "range:batch_size=0",
            lambda: D.fit(MODEL(), DS(), epochs=1, batch_size=0, progress=False, device="cpu"),
            V,
            r"batch_size",
        ),
        c("range:lr=-1", lambda: D.fit(MODEL(), DS(), epochs=1, lr=-1.0, progress=False, device="cpu"), V, r"lr"),
        c(
            "name:optimizer=adamx",
            lambda: D.fit(MODEL(), DS(), epochs=1, optimizer="adamx", progress=False, device="cpu"),
            V,
            r"optimizer",
        ),
        c(
            "range:momentum=-1",
            lambda: D.fit(MODEL(), DS(), epochs=1, momentum=-1.0, progress=False, device="cpu"),
            V,
            r"momentum",
        ),
        c(
            "range:weight_decay=-1",
            lambda: D.fit(MODEL(), DS(), epochs=1, weight_decay=-1.0, progress=False, device="cpu"),
            V,
            r"weight_decay",
        ),
        c("name:device=tpu", lambda: D.fit(MODEL(), DS(), epochs=1, progress=False, device="tpu"), V, r"device"),
        c(
            "type:strategy=str",
            lambda: D.fit(MODEL(), DS(), strategy="erm", epochs=1, progress=False, device="cpu"),
            T,
            r"strategy",
        ),
        c("type:seed='0'", lambda: D.fit(MODEL(), DS(), epochs=1, seed="0", progress=False, device="cpu"), T, r"seed"),
    ],
    "RobustLossStrategy": [
        c("beta<0:beta=-1", lambda: D.RobustLossStrategy("kl", beta=-1.0), V, r"beta"),
        c("radius<0:radius=-1", lambda: D.RobustLossStrategy("chi2", radius=-1.0), V, r"radius"),
        c("alpha-range:cvar alpha=1.5", lambda: D.RobustLossStrategy("cvar", alpha=1.5), V, r"alpha"),
        c("name:divergence=tv", lambda: D.RobustLossStrategy("tv", beta=1.0), V, r"divergence"),
        c("name:over=batches", lambda: D.RobustLossStrategy("kl", beta=1.0, over="batches"), V, r"over"),
        c(
            "name:group_prior=zipf",
            lambda: D.RobustLossStrategy("kl", beta=1.0, over="groups", group_prior="zipf"),
            V,
            r"group_prior",
        ),
        c("type:beta='1'", lambda: D.RobustLossStrategy("kl", beta="1"), T, r"beta"),
    ],
    "clone_model": [
        c("type:model=str", lambda: D.clone_model("net"), T, r"model"),
    ],
    "HardnessWeightedStrategy": [
        c("beta<0:beta=-1", lambda: D.HardnessWeightedStrategy(beta=-1.0), V, r"beta"),
        c("name:divergence=tv", lambda: D.HardnessWeightedStrategy(divergence="tv"), V, r"divergence"),
        c("range:refresh_every=0", lambda: D.HardnessWeightedStrategy(refresh_every=0), V, r"refresh_every"),
        c("range:prob_floor=1.5", lambda: D.HardnessWeightedStrategy(prob_floor=1.5), V, r"prob_floor"),
        c(
            "range:history_momentum=1.5",
            lambda: D.HardnessWeightedStrategy(history_momentum=1.5),
            V,
            r"history_momentum",
        ),
        c("type:beta='10'", lambda: D.HardnessWeightedStrategy(beta="10"), T, r"beta"),
    ],
    "OHEMStrategy": [
        c("range:keep=0", lambda: D.OHEMStrategy(keep=0.0), V, r"keep"),
        c("range:keep=1.5", lambda: D.OHEMStrategy(keep=1.5), V, r"keep"),
        c("type:keep='half'", lambda: D.OHEMStrategy(keep="half"), T, r"keep"),
    ],
    "ImportanceSamplingStrategy": [
        c("name:scheme=random", lambda: D.ImportanceSamplingStrategy("random"), V, r"scheme"),
        c("alpha-range:alpha=1.5", lambda: D.ImportanceSamplingStrategy(alpha=1.5), V, r"alpha"),
        c("alpha-range:alpha=-0.1", lambda: D.ImportanceSamplingStrategy(alpha=-0.1), V, r"alpha"),
        c("range:refresh_every=0", lambda: D.ImportanceSamplingStrategy(refresh_every=0), V, r"refresh_every"),
        c("range:score_batch_size=0", lambda: D.ImportanceSamplingStrategy(score_batch_size=0), V, r"score_batch_size"),
        c("type:alpha='0.5'", lambda: D.ImportanceSamplingStrategy(alpha="0.5"), T, r"alpha"),
    ],
    # ---------------------------------------------------------------- metrics.py
    "evaluate": [
        c("type:model=str", lambda: D.evaluate("net", DS()), T, r"model"),
        c("empty:dataset has no examples", lambda: D.evaluate(MODEL(), EMPTY()), V, r"dataset"),
        c("range:batch_size=0", lambda: D.evaluate(MODEL(), DS(), batch_size=0), V, r"batch_size"),
        c("range:num_classes=0", lambda: D.evaluate(MODEL(), DS(), num_classes=0), V, r"num_classes"),
    ],
    "accuracy_report": [
        c("shape:pred vs y", lambda: D.accuracy_report(Y(6), Y(5)), V, r"pred"),
        c(
            "groups:groups length",
            lambda: D.accuracy_report(Y(6), Y(6), groups=torch.zeros(5, dtype=torch.long)),
            V,
            r"groups",
        ),
        c("groups:negative group id", lambda: D.accuracy_report(Y(6), Y(6), groups=torch.full((6,), -1)), V, r"groups"),
        c("empty:no predictions", lambda: D.accuracy_report(Y(0), Y(0)), V, r"pred"),
        c("range:num_classes=0", lambda: D.accuracy_report(Y(6), Y(6), num_classes=0), V, r"num_classes"),
        c("shape:losses length", lambda: D.accuracy_report(Y(5), Y(5), losses=L(4)), V, r"losses"),
        c(
            "device:y on meta",
            lambda: D.accuracy_report(Y(5), torch.zeros(5, dtype=torch.long, device="meta")),
            V,
            r"device",
        ),
        c("type:pred=list", lambda: D.accuracy_report([0, 1], Y(2)), T, r"pred"),
    ],
    "dataset_losses": [
        c("type:model=str", lambda: D.dataset_losses("net", DS()), T, r"model"),
        c("empty:dataset has no examples", lambda: D.dataset_losses(MODEL(), EMPTY()), V, r"dataset"),
        c("range:batch_size=0", lambda: D.dataset_losses(MODEL(), DS(), batch_size=0), V, r"batch_size"),
        c("type:loss_fn=str", lambda: D.dataset_losses(MODEL(), DS(), loss_fn="ce"), T, r"loss_fn"),
    ],
    # ---------------------------------------------------------------- optim.py (taken)
    "ALSO": [
        c("range:n_groups=0", lambda: D.ALSO(PARAMS(), 0), V, r"n_groups"),
        c("type:n_groups=2.5", lambda: D.ALSO(PARAMS(), 2.5), T, r"n_groups"),
        c("range:lr=-1", lambda: D.ALSO(PARAMS(), 2, lr=-1.0), V, r"\blr\b|learning rate"),
        c("range:betas=(1.5, 0.9)", lambda: D.ALSO(PARAMS(), 2, betas=(1.5, 0.9)), V, r"beta"),
        c("eps<0:eps=-1", lambda: D.ALSO(PARAMS(), 2, eps=-1.0), V, r"eps"),
        c("range:weight_decay=-1", lambda: D.ALSO(PARAMS(), 2, weight_decay=-1.0), V, r"weight_decay"),
        c("range:pi_lr=-1", lambda: D.ALSO(PARAMS(), 2, pi_lr=-1.0), V, r"pi_lr"),
        c("range:tau=-1", lambda: D.ALSO(PARAMS(), 2, tau=-1.0), V, r"tau"),
        c("name:mode=pessimistic", lambda: D.ALSO(PARAMS(), 2, mode="pessimistic"), V, r"mode"),
        c("name:pi_option=III", lambda: D.ALSO(PARAMS(), 2, pi_option="III"), V, r"pi_option"),
        c("name:sampling=zipf", lambda: D.ALSO(PARAMS(), 2, sampling="zipf"), V, r"sampling"),
        c("shape:prior length", lambda: D.ALSO(PARAMS(), 2, prior=torch.ones(3) / 3), V, r"prior"),
        c("range:temperature=0", lambda: D.ALSO(PARAMS(), 2, temperature=0.0), V, r"temperature"),
    ],
    "OptimisticMirrorProx": [
        c("range:n_groups=0", lambda: D.OptimisticMirrorProx(PARAMS(), 0, lr=0.1, tau=0.1), V, r"n_groups"),
        c("range:lr=-1", lambda: D.OptimisticMirrorProx(PARAMS(), 2, lr=-1.0, tau=0.1), V, r"lr"),
        c("range:tau=-1", lambda: D.OptimisticMirrorProx(PARAMS(), 2, lr=0.1, tau=-1.0), V, r"tau"),
        c(
            "name:sampling=zipf",
            lambda: D.OptimisticMirrorProx(PARAMS(), 2, lr=0.1, tau=0.1, sampling="zipf"),
            V,
            r"sampling",
        ),
        c(
            "shape:prior length",
            lambda: D.OptimisticMirrorProx(PARAMS(), 2, lr=0.1, tau=0.1, prior=torch.ones(3) / 3),
            V,
            r"prior",
        ),
    ],
    "DRAGO": [
        c("range:n_groups=0", lambda: D.DRAGO(PARAMS(), 0), V, r"n_groups"),
        c("range:lr=-1", lambda: D.DRAGO(PARAMS(), 2, lr=-1.0), V, r"lr"),
        c("range:tau=-1", lambda: D.DRAGO(PARAMS(), 2, tau=-1.0), V, r"tau"),
        c("range:freq=0", lambda: D.DRAGO(PARAMS(), 2, freq=0), V, r"freq"),
        c("type:freq=2.5", lambda: D.DRAGO(PARAMS(), 2, freq=2.5), T, r"freq"),
    ],
    "kl_prox_step": [
        c(
            "range:lr=-1",
            lambda: D.kl_prox_step(torch.zeros(3), torch.ones(3), lr=-1.0, tau=0.1, log_prior=0.0),
            V,
            r"lr",
        ),
        c(
            "range:tau=-1",
            lambda: D.kl_prox_step(torch.zeros(3), torch.ones(3), lr=0.1, tau=-1.0, log_prior=0.0),
            V,
            r"tau",
        ),
        c(
            "name:option=III",
            lambda: D.kl_prox_step(torch.zeros(3), torch.ones(3), lr=0.1, tau=0.1, log_prior=0.0, option="III"),
            V,
            r"option",
        ),
        c(
            "shape:grad vs log_pi",
            lambda: D.kl_prox_step(torch.zeros(3), torch.ones(4), lr=0.1, tau=0.1, log_prior=0.0),
            V,
            r"grad",
        ),
        c(
            "nan-inf:nan grad",
            lambda: D.kl_prox_step(torch.zeros(3), torch.tensor([0.0, math.nan, 1.0]), lr=0.1, tau=0.1, log_prior=0.0),
            V,
            r"grad",
        ),
    ],
    "simplex_projection": [
        c("nan-inf:nan entry", lambda: D.simplex_projection(torch.tensor([0.2, math.nan])), V, r"\bv\b"),
        c("empty:no entries", lambda: D.simplex_projection(torch.zeros(0)), V, r"\bv\b"),
        c("shape:2-D v", lambda: D.simplex_projection(torch.zeros(2, 2)), V, r"\bv\b"),
        c("type:v=str", lambda: D.simplex_projection("v"), T, r"\bv\b"),
    ],
    "bilinear_game_path": [
        c("range:lr=-1", lambda: D.bilinear_game_path(lr=-1.0), V, r"lr"),
        c("range:steps=0", lambda: D.bilinear_game_path(steps=0), V, r"steps"),
        c("type:steps=2.5", lambda: D.bilinear_game_path(steps=2.5), T, r"steps"),
        c("shape:start of length 3", lambda: D.bilinear_game_path(start=(1.0, 1.0, 1.0)), V, r"start"),
        c("nan-inf:alpha=nan", lambda: D.bilinear_game_path(alpha=math.nan), V, r"alpha"),
    ],
    # ---------------------------------------------------------------- group_dro.py (taken)
    "GroupDROStrategy": [
        c("name:method=foo", lambda: D.GroupDROStrategy("foo"), V, r"method"),
        c("name:grouping=foo", lambda: D.GroupDROStrategy(grouping="foo"), V, r"grouping"),
        c("groups:n_groups=0", lambda: D.GroupDROStrategy(grouping="group", n_groups=0), V, r"n_groups"),
        c("name:sampling=zipf", lambda: D.GroupDROStrategy(sampling="zipf"), V, r"sampling"),
        c("name:prior=zipf", lambda: D.GroupDROStrategy(prior="zipf"), V, r"prior"),
    ],
    "TransformGroupsStrategy": [
        c("type:inner=str", lambda: D.TransformGroupsStrategy("erm", [lambda x: x]), T, r"inner"),
        c("groups:no transforms", lambda: D.TransformGroupsStrategy(D.ERM(), []), V, r"transforms"),
        c("type:transform not callable", lambda: D.TransformGroupsStrategy(D.ERM(), [3]), T, r"transforms"),
        c(
            "shape:names length",
            lambda: D.TransformGroupsStrategy(D.ERM(), [lambda x: x], names=["a", "b"]),
            V,
            r"names",
        ),
    ],
    "CompressedWorkersStrategy": [
        c("type:inner=str", lambda: D.CompressedWorkersStrategy("erm", 2), T, r"inner"),
        c("range:n_workers=0", lambda: D.CompressedWorkersStrategy(D.ERM(), 0), V, r"n_workers"),
        c("type:n_workers=2.5", lambda: D.CompressedWorkersStrategy(D.ERM(), 2.5), T, r"n_workers"),
    ],
    # ---------------------------------------------------------------- adversarial.py
    "fgsm_attack": [
        c("eps<0:eps=-0.1", lambda: D.fgsm_attack(MODEL(), X(), Y(), eps=-0.1), V, r"eps"),
        c("nan-inf:eps=nan", lambda: D.fgsm_attack(MODEL(), X(), Y(), eps=math.nan), V, r"eps"),
        c("shape:x vs y", lambda: D.fgsm_attack(MODEL(), X(6), Y(5), eps=0.1), V, r"\by\b"),
        c("range:clamp=(1, 0)", lambda: D.fgsm_attack(MODEL(), X(), Y(), eps=0.1, clamp=(1.0, 0.0)), V, r"clamp"),
        c("type:model=str", lambda: D.fgsm_attack("net", X(), Y(), eps=0.1), T, r"model"),
        c("type:eps='0.1'", lambda: D.fgsm_attack(MODEL(), X(), Y(), eps="0.1"), T, r"eps"),
        c(
            "device:y on meta",
            lambda: D.fgsm_attack(MODEL(), X(), torch.zeros(6, dtype=torch.long, device="meta"), eps=0.1),
            V,
            r"device",
        ),
    ],
    "pgd_attack": [
        c("eps<0:eps=-0.1", lambda: D.pgd_attack(MODEL(), X(), Y(), eps=-0.1, alpha=0.01, steps=2), V, r"eps"),
        c("range:alpha=-0.01", lambda: D.pgd_attack(MODEL(), X(), Y(), eps=0.1, alpha=-0.01, steps=2), V, r"alpha"),
        c("range:steps=0", lambda: D.pgd_attack(MODEL(), X(), Y(), eps=0.1, alpha=0.01, steps=0), V, r"steps"),
        c("type:steps=2.5", lambda: D.pgd_attack(MODEL(), X(), Y(), eps=0.1, alpha=0.01, steps=2.5), T, r"steps"),
        c("name:norm=l3", lambda: D.pgd_attack(MODEL(), X(), Y(), eps=0.1, alpha=0.01, steps=2, norm="l3"), V, r"norm"),
        c(
            "name:step_rule=newton",
            lambda: D.pgd_attack(MODEL(), X(), Y(), eps=0.1, alpha=0.01, steps=2, step_rule="newton"),
            V,
            r"step_rule",
        ),
        c("shape:x vs y", lambda: D.pgd_attack(MODEL(), X(6), Y(4), eps=0.1, alpha=0.01, steps=2), V, r"\by\b"),
    ],
    "robust_accuracy_report": [
        c("name:attack=cw", lambda: D.robust_accuracy_report(MODEL(), DS(), attack="cw", eps=0.1), V, r"attack"),
        c("eps<0:eps=-0.1", lambda: D.robust_accuracy_report(MODEL(), DS(), eps=-0.1), V, r"eps"),
        c("range:steps=0", lambda: D.robust_accuracy_report(MODEL(), DS(), eps=0.1, steps=0), V, r"steps"),
        c("name:norm=l3", lambda: D.robust_accuracy_report(MODEL(), DS(), eps=0.1, norm="l3"), V, r"norm"),
        c(
            "range:batch_size=0",
            lambda: D.robust_accuracy_report(MODEL(), DS(), eps=0.1, batch_size=0),
            V,
            r"batch_size",
        ),
        c(
            "range:tail_fraction=1.5",
            lambda: D.robust_accuracy_report(MODEL(), DS(), eps=0.1, tail_fraction=1.5),
            V,
            r"tail_fraction",
        ),
        c("empty:dataset has no examples", lambda: D.robust_accuracy_report(MODEL(), EMPTY(), eps=0.1), V, r"dataset"),
        c("type:model=str", lambda: D.robust_accuracy_report("net", DS(), eps=0.1), T, r"model"),
    ],
    # ---------------------------------------------------------------- adversarial_training.py (taken)
    "AdversarialTrainingStrategy": [
        c("eps<0:eps=-0.1", lambda: D.AdversarialTrainingStrategy(-0.1), V, r"eps"),
        c("range:alpha=-0.01", lambda: D.AdversarialTrainingStrategy(0.1, alpha=-0.01), V, r"alpha"),
        c("range:steps=0", lambda: D.AdversarialTrainingStrategy(0.1, steps=0), V, r"steps"),
        c("name:norm=l3", lambda: D.AdversarialTrainingStrategy(0.1, norm="l3"), V, r"norm"),
        c("name:step_rule=newton", lambda: D.AdversarialTrainingStrategy(0.1, step_rule="newton"), V, r"step_rule"),
        c("range:clamp=(1, 0)", lambda: D.AdversarialTrainingStrategy(0.1, clamp=(1.0, 0.0)), V, r"clamp"),
        c("type:eps='0.1'", lambda: D.AdversarialTrainingStrategy("0.1"), T, r"eps"),
    ],
    "DONEStrategy": [
        c("eps<0:eps=-0.1", lambda: D.DONEStrategy(-0.1), V, r"eps"),
        c("range:r=0", lambda: D.DONEStrategy(0.1, r=0.0), V, r"\br\b"),
        c("range:eta=0", lambda: D.DONEStrategy(0.1, eta=0.0), V, r"eta"),
        c("name:inner=cw", lambda: D.DONEStrategy(0.1, inner="cw"), V, r"inner"),
        c("range:barrier=-1", lambda: D.DONEStrategy(0.1, barrier=-1.0), V, r"barrier"),
        c("range:steps=0", lambda: D.DONEStrategy(0.1, steps=0), V, r"steps"),
    ],
    "GAIRATStrategy": [
        c("eps<0:eps=-0.1", lambda: D.GAIRATStrategy(-0.1), V, r"eps"),
        c("range:burn_in_epochs=-1", lambda: D.GAIRATStrategy(0.1, burn_in_epochs=-1), V, r"burn_in_epochs"),
        c("type:lam='x'", lambda: D.GAIRATStrategy(0.1, lam="x"), T, r"lam"),
    ],
    "MAILStrategy": [
        c("eps<0:eps=-0.1", lambda: D.MAILStrategy(-0.1), V, r"eps"),
        c("range:burn_in_epochs=-1", lambda: D.MAILStrategy(0.1, burn_in_epochs=-1), V, r"burn_in_epochs"),
        c("type:slope='x'", lambda: D.MAILStrategy(0.1, slope="x"), T, r"slope"),
    ],
    "done_weights": [
        c("range:r=0", lambda: D.done_weights(L(), r=0.0), V, r"\br\b"),
        c("range:r=-1", lambda: D.done_weights(L(), r=-1.0), V, r"\br\b"),
        c("nan-inf:nan loss", lambda: D.done_weights(NAN(), r=1.0), V, r"losses"),
        c("shape:log_u length", lambda: D.done_weights(L(5), r=1.0, log_u=torch.zeros(3)), V, r"log_u"),
        c("range:eta=0", lambda: D.done_weights(L(), r=1.0, eta=0.0), V, r"eta"),
    ],
    "implicit_correction": [
        c(
            "eps<0:eps=-0.1",
            lambda: D.implicit_correction(L(6), X(), X(), torch.ones(6), eps=-0.1, barrier=0.05),
            V,
            r"eps",
        ),
        c(
            "range:barrier=-1",
            lambda: D.implicit_correction(L(6), X(), X(), torch.ones(6), eps=0.1, barrier=-1.0),
            V,
            r"barrier",
        ),
        c(
            "shape:x_adv vs x",
            lambda: D.implicit_correction(L(6), X(5), X(6), torch.ones(6), eps=0.1, barrier=0.05),
            V,
            r"x_adv",
        ),
        c(
            "shape:weights length",
            lambda: D.implicit_correction(L(6), X(), X(), torch.ones(4), eps=0.1, barrier=0.05),
            V,
            r"weights",
        ),
        c(
            "nan-inf:nan loss",
            lambda: D.implicit_correction(NAN(6), X(), X(), torch.ones(6), eps=0.1, barrier=0.05),
            V,
            r"losses",
        ),
    ],
    "gairat_weights": [
        c("range:steps=0", lambda: D.gairat_weights(torch.zeros(4), 0), V, r"steps"),
        c("range:kappa > steps", lambda: D.gairat_weights(torch.tensor([0.0, 9.0]), 5), V, r"kappa"),
        c("type:lam='x'", lambda: D.gairat_weights(torch.zeros(4), 5, lam="x"), T, r"lam"),
        c("empty:no kappa", lambda: D.gairat_weights(torch.zeros(0), 5), V, r"kappa"),
    ],
    "mail_weights": [
        c("shape:logits vs y", lambda: D.mail_weights(*LS(4)[:1], Y(3)), V, r"\by\b"),
        c("nan-inf:nan logits", lambda: D.mail_weights(torch.full((3, 3), math.nan), Y(3)), V, r"logits"),
        c("range:scale=-1", lambda: D.mail_weights(*LS(3), scale=-1.0), V, r"scale"),
        c("type:bias='x'", lambda: D.mail_weights(*LS(3), bias="x"), T, r"bias"),
    ],
    # ---------------------------------------------------------------- baselines.py
    "SpectralRiskStrategy": [
        c("range:n_draws=0.5", lambda: D.SpectralRiskStrategy(n_draws=0.5), V, r"n_draws"),
        c("range:shift_cost=-1", lambda: D.SpectralRiskStrategy(shift_cost=-1.0), V, r"shift_cost"),
        c("name:penalty=tv", lambda: D.SpectralRiskStrategy(penalty="tv"), V, r"penalty"),
        c("type:n_draws='2'", lambda: D.SpectralRiskStrategy(n_draws="2"), T, r"n_draws"),
    ],
    "FastDROStrategy": [
        c("name:kind=wasserstein", lambda: D.FastDROStrategy(kind="wasserstein"), V, r"kind"),
        c("alpha-range:cvar size=0", lambda: D.FastDROStrategy(size=0.0), V, r"size"),
        c("alpha-range:cvar size=1.5", lambda: D.FastDROStrategy(size=1.5), V, r"size"),
        c("type:size='0.1'", lambda: D.FastDROStrategy(size="0.1"), T, r"size"),
    ],
    "RecoverStrategy": [
        c("range:t=0", lambda: D.RecoverStrategy(t=0.0), V, r"\bt\b"),
        c("range:clip=0", lambda: D.RecoverStrategy(clip=0.0), V, r"clip"),
        c("range:warmup_steps=-1", lambda: D.RecoverStrategy(warmup_steps=-1), V, r"warmup_steps"),
        c("type:warmup_steps=1.5", lambda: D.RecoverStrategy(warmup_steps=1.5), T, r"warmup_steps"),
    ],
    "OnlineGroupDROStrategy": [
        c("range:step_size=-1", lambda: D.OnlineGroupDROStrategy(step_size=-1.0), V, r"step_size"),
        c("name:grouping=foo", lambda: D.OnlineGroupDROStrategy(grouping="foo"), V, r"grouping"),
        c("type:step_size='0.1'", lambda: D.OnlineGroupDROStrategy(step_size="0.1"), T, r"step_size"),
    ],
    "class_balanced_weights": [
        c("empty:no labels", lambda: D.class_balanced_weights(torch.zeros(0, dtype=torch.long)), V, r"labels"),
        c("range:negative label", lambda: D.class_balanced_weights(torch.tensor([0, -1])), V, r"labels"),
        c("type:float labels", lambda: D.class_balanced_weights(torch.tensor([0.5, 1.0])), T, r"labels"),
    ],
    "spectral_risk_weights": [
        c(
            "range:shift_cost=-1",
            lambda: D.spectral_risk_weights(L(4), torch.ones(4) / 4, shift_cost=-1.0),
            V,
            r"shift_cost",
        ),
        c(
            "name:penalty=tv",
            lambda: D.spectral_risk_weights(L(4), torch.ones(4) / 4, shift_cost=1.0, penalty="tv"),
            V,
            r"penalty",
        ),
        c(
            "shape:spectrum length",
            lambda: D.spectral_risk_weights(L(4), torch.ones(3) / 3, shift_cost=1.0),
            V,
            r"spectrum",
        ),
        c("nan-inf:nan loss", lambda: D.spectral_risk_weights(NAN(4), torch.ones(4) / 4, shift_cost=1.0), V, r"losses"),
    ],
    "extremile_spectrum": [
        c("range:m=0", lambda: D.extremile_spectrum(0, 2.0), V, r"\bm\b"),
        c("type:m=2.5", lambda: D.extremile_spectrum(2.5, 2.0), T, r"\bm\b"),
        c("range:n_draws=0.5", lambda: D.extremile_spectrum(4, 0.5), V, r"n_draws"),
    ],
    # ---------------------------------------------------------------- smoothing.py
    "smoothed_targets": [
        c("alpha-range:alpha=1.5", lambda: D.smoothed_targets(Y(3), 3, 1.5), V, r"alpha"),
        c("alpha-range:alpha=-0.1", lambda: D.smoothed_targets(Y(3), 3, -0.1), V, r"alpha"),
        c("range:num_classes=0", lambda: D.smoothed_targets(Y(3), 0, 0.1), V, r"num_classes"),
        c("range:label >= num_classes", lambda: D.smoothed_targets(torch.tensor([0, 5]), 3, 0.1), V, r"\by\b"),
        c("type:alpha='0.1'", lambda: D.smoothed_targets(Y(3), 3, "0.1"), T, r"alpha"),
    ],
    "ls_cross_entropy": [
        c("alpha-range:alpha=-0.1", lambda: D.ls_cross_entropy(*LS(), alpha=-0.1), V, r"alpha"),
        c("name:reduction=max", lambda: D.ls_cross_entropy(*LS(), alpha=0.1, reduction="max"), V, r"reduction"),
        c("shape:logits vs y", lambda: D.ls_cross_entropy(LS(3)[0], Y(2), alpha=0.1), V, r"\by\b"),
    ],
    "torch_label_smoothing": [
        c("alpha-range:alpha=-0.1", lambda: D.torch_label_smoothing(-0.1, 3), V, r"alpha"),
        c("range:num_classes=0", lambda: D.torch_label_smoothing(0.1, 0), V, r"num_classes"),
        c("type:num_classes=2.5", lambda: D.torch_label_smoothing(0.1, 2.5), T, r"num_classes"),
    ],
    "gils_shift": [
        c(
            "alpha-range:alpha=1.5",
            lambda: D.gils_shift(MODEL(), X(), Y(), alpha=1.5, gamma=0.1, eta=0.1, steps=1),
            V,
            r"alpha",
        ),
        c(
            "range:gamma=-1",
            lambda: D.gils_shift(MODEL(), X(), Y(), alpha=0.1, gamma=-1.0, eta=0.1, steps=1),
            V,
            r"gamma",
        ),
        c("range:eta=-1", lambda: D.gils_shift(MODEL(), X(), Y(), alpha=0.1, gamma=0.1, eta=-1.0, steps=1), V, r"eta"),
        c(
            "range:steps=-1",
            lambda: D.gils_shift(MODEL(), X(), Y(), alpha=0.1, gamma=0.1, eta=0.1, steps=-1),
            V,
            r"steps",
        ),
        c(
            "shape:x vs y",
            lambda: D.gils_shift(MODEL(), X(6), Y(4), alpha=0.1, gamma=0.1, eta=0.1, steps=1),
            V,
            r"\by\b",
        ),
        c("type:model=str", lambda: D.gils_shift("net", X(), Y(), alpha=0.1, gamma=0.1, eta=0.1, steps=1), T, r"model"),
    ],
    "gils_shift_report": [
        c(
            "range:eta=0",
            lambda: D.gils_shift_report(MODEL(), X(), Y(), alpha=0.1, gamma=0.1, eta=0.0, steps=1),
            V,
            r"eta",
        ),
        c(
            "range:x all-zero example",
            lambda: D.gils_shift_report(MODEL(), torch.zeros(6, 4), Y(), alpha=0.1, gamma=0.1, eta=0.1, steps=1),
            V,
            r"\bx\b",
        ),
        c(
            "type:y float",
            lambda: D.gils_shift_report(MODEL(), X(), Y().float(), alpha=0.1, gamma=0.1, eta=0.1, steps=1),
            T,
            r"\by\b",
        ),
        c(
            "type:judge_model=str",
            lambda: D.gils_shift_report(MODEL(), X(), Y(), alpha=0.1, gamma=0.1, eta=0.1, steps=1, judge_model="ce"),
            T,
            r"judge_model",
        ),
    ],
    "GILSStrategy": [
        c("alpha-range:alpha=1.5", lambda: D.GILSStrategy(alpha=1.5), V, r"alpha"),
        c("range:gamma=-1", lambda: D.GILSStrategy(gamma=-1.0), V, r"gamma"),
        c("range:eta=-1", lambda: D.GILSStrategy(eta=-1.0), V, r"eta"),
        c("range:steps=-1", lambda: D.GILSStrategy(steps=-1), V, r"steps"),
        c("name:outer=parallel", lambda: D.GILSStrategy(outer="parallel"), V, r"outer"),
    ],
    "LabelSmoothingStrategy": [
        c("alpha-range:alpha=-0.1", lambda: D.LabelSmoothingStrategy(alpha=-0.1), V, r"alpha"),
        c("alpha-range:alpha=1.5", lambda: D.LabelSmoothingStrategy(alpha=1.5), V, r"alpha"),
        c("type:alpha='0.1'", lambda: D.LabelSmoothingStrategy(alpha="0.1"), T, r"alpha"),
    ],
    "MixupStrategy": [
        c("range:beta_param=0", lambda: D.MixupStrategy(beta_param=0.0), V, r"beta_param"),
        c("type:beta_param='1'", lambda: D.MixupStrategy(beta_param="1"), T, r"beta_param"),
    ],
    "CutMixStrategy": [
        c("range:beta_param=-1", lambda: D.CutMixStrategy(beta_param=-1.0), V, r"beta_param"),
        c("type:beta_param='1'", lambda: D.CutMixStrategy(beta_param="1"), T, r"beta_param"),
    ],
    "CutoutStrategy": [
        c("range:size=0", lambda: D.CutoutStrategy(size=0), V, r"size"),
        c("type:size=2.5", lambda: D.CutoutStrategy(size=2.5), T, r"size"),
    ],
    "AttackAugmentStrategy": [
        c("name:attack=cw", lambda: D.AttackAugmentStrategy(attack="cw"), V, r"attack"),
        c("eps<0:eps=-0.1", lambda: D.AttackAugmentStrategy(eps=-0.1), V, r"eps"),
        c("range:steps=0", lambda: D.AttackAugmentStrategy(steps=0), V, r"steps"),
        c(
            "alpha-range:label_smoothing=1.5",
            lambda: D.AttackAugmentStrategy(label_smoothing=1.5),
            V,
            r"label_smoothing",
        ),
    ],
    "tune": [
        c("range:n_trials=0", lambda: D.tune(lambda p: 0.0, n_trials=0), V, r"n_trials"),
        c("type:n_trials=2.5", lambda: D.tune(lambda p: 0.0, n_trials=2.5), T, r"n_trials"),
        c("name:sampler=grid", lambda: D.tune(lambda p: 0.0, n_trials=1, sampler="grid"), V, r"sampler"),
        c("name:direction=sideways", lambda: D.tune(lambda p: 0.0, n_trials=1, direction="sideways"), V, r"direction"),
        c(
            "range:space bounds reversed",
            lambda: D.tune(lambda p: 0.0, {"alpha": ("float", 0.5, 0.0)}, n_trials=1),
            V,
            r"space",
        ),
        c("empty:space={}", lambda: D.tune(lambda p: 0.0, {}, n_trials=1), V, r"space"),
        c("type:objective not callable", lambda: D.tune(3, n_trials=1), T, r"objective"),
    ],
    # ---------------------------------------------------------------- samplers.py (taken)
    "HardnessWeightedSampler": [
        c("empty:data_source=0", lambda: D.HardnessWeightedSampler(0, 2, device="cpu"), V, r"data_source|dataset"),
        c("range:batch_size=0", lambda: D.HardnessWeightedSampler(8, 0, device="cpu"), V, r"batch_size"),
        c("beta<0:beta=-1", lambda: D.HardnessWeightedSampler(8, 2, beta=-1.0, device="cpu"), V, r"beta"),
        c(
            "name:divergence=tv",
            lambda: D.HardnessWeightedSampler(8, 2, divergence="tv", device="cpu"),
            V,
            r"divergence",
        ),
        c(
            "range:prob_floor=1.5",
            lambda: D.HardnessWeightedSampler(8, 2, prob_floor=1.5, device="cpu"),
            V,
            r"prob_floor",
        ),
        c(
            "range:history_momentum=1.5",
            lambda: D.HardnessWeightedSampler(8, 2, history_momentum=1.5, device="cpu"),
            V,
            r"history_momentum",
        ),
        c(
            "range:rank=world_size",
            lambda: D.HardnessWeightedSampler(8, 2, world_size=2, rank=2, device="cpu"),
            V,
            r"rank",
        ),
        c("type:batch_size=2.5", lambda: D.HardnessWeightedSampler(8, 2.5, device="cpu"), T, r"batch_size"),
    ],
    "ImportanceSampler": [
        c("empty:data_source=0", lambda: D.ImportanceSampler(0, 2, device="cpu"), V, r"data_source|dataset"),
        c("range:batch_size=0", lambda: D.ImportanceSampler(8, 0, device="cpu"), V, r"batch_size"),
        c("name:scheme=random", lambda: D.ImportanceSampler(8, 2, scheme="random", device="cpu"), V, r"scheme"),
        c("alpha-range:alpha=1.5", lambda: D.ImportanceSampler(8, 2, alpha=1.5, device="cpu"), V, r"alpha"),
        c(
            "nan-inf:nan scores_init",
            lambda: D.ImportanceSampler(5, 2, scores_init=NAN(), device="cpu"),
            V,
            r"scores_init",
        ),
        c(
            "shape:scores_init length",
            lambda: D.ImportanceSampler(8, 2, scores_init=L(5), device="cpu"),
            V,
            r"scores_init",
        ),
    ],
    # ---------------------------------------------------------------- pergrad.py
    "per_sample_grad_norms": [
        c(
            "name:method=magic",
            lambda: D.per_sample_grad_norms(MODEL(), torch.nn.functional.cross_entropy, X(), Y(), method="magic"),
            V,
            r"method",
        ),
        c(
            "shape:x vs y",
            lambda: D.per_sample_grad_norms(MODEL(), torch.nn.functional.cross_entropy, X(6), Y(4)),
            V,
            r"\by\b",
        ),
        c(
            "type:model=str",
            lambda: D.per_sample_grad_norms("net", torch.nn.functional.cross_entropy, X(), Y()),
            T,
            r"model",
        ),
        c(
            "range:chunk_size=0",
            lambda: D.per_sample_grad_norms(MODEL(), torch.nn.functional.cross_entropy, X(), Y(), chunk_size=0),
            V,
            r"chunk_size",
        ),
        c("type:loss_fn=str", lambda: D.per_sample_grad_norms(MODEL(), "ce", X(), Y()), T, r"loss_fn"),
    ],
    "logit_grad_norms": [
        c("shape:logits vs y", lambda: D.logit_grad_norms(LS(3)[0], Y(2)), V, r"\by\b"),
        c("nan-inf:nan logits", lambda: D.logit_grad_norms(torch.full((3, 3), math.nan), Y(3)), V, r"logits"),
        c("range:label >= classes", lambda: D.logit_grad_norms(LS(3)[0], torch.tensor([0, 1, 7])), V, r"\by\b"),
        c(
            "device:y on meta",
            lambda: D.logit_grad_norms(LS(3)[0], torch.zeros(3, dtype=torch.long, device="meta")),
            V,
            r"device",
        ),
    ],
    "last_layer_grad_norms": [
        c("type:model=str", lambda: D.last_layer_grad_norms("net", X(), Y()), T, r"model"),
        c("shape:x vs y", lambda: D.last_layer_grad_norms(MODEL(), X(6), Y(4)), V, r"\by\b"),
        c("type:loss_fn=str", lambda: D.last_layer_grad_norms(MODEL(), X(), Y(), loss_fn="ce"), T, r"loss_fn"),
    ],
    "sampling_quality": [
        c("shape:p vs grad_norms", lambda: D.sampling_quality(torch.ones(3) / 3, torch.ones(4)), V, r"grad_norms"),
        c("range:negative p", lambda: D.sampling_quality(torch.tensor([1.5, -0.5]), torch.ones(2)), V, r"\bp\b"),
        c(
            "nan-inf:nan grad_norms",
            lambda: D.sampling_quality(torch.ones(2) / 2, torch.tensor([1.0, math.nan])),
            V,
            r"grad_norms",
        ),
        c("empty:no entries", lambda: D.sampling_quality(torch.zeros(0), torch.zeros(0)), V, r"\bp\b"),
    ],
    # ---------------------------------------------------------------- data.py
    "ArrayDataset": [
        c(
            "empty:no examples",
            lambda: D.ArrayDataset(torch.zeros(0, 2), torch.zeros(0, dtype=torch.long)),
            V,
            r"\bx\b",
        ),
        c("shape:x vs y", lambda: D.ArrayDataset(X(6), Y(5)), V, r"\by\b"),
        c("type:float labels", lambda: D.ArrayDataset(X(3), torch.tensor([0.0, 1.0, 0.5])), T, r"\by\b"),
        c("range:negative label", lambda: D.ArrayDataset(X(2), torch.tensor([0, -1])), V, r"\by\b"),
        c("groups:groups length", lambda: D.ArrayDataset(X(6), Y(6), torch.zeros(5, dtype=torch.long)), V, r"groups"),
        c("groups:negative group id", lambda: D.ArrayDataset(X(2), Y(2), torch.tensor([0, -1])), V, r"groups"),
        c("range:num_classes too small", lambda: D.ArrayDataset(X(6), Y(6), num_classes=2), V, r"num_classes"),
        c("groups:num_groups too small", lambda: D.ArrayDataset(X(6), Y(6), Y(6), num_groups=1), V, r"num_groups"),
        c("nan-inf:nan x", lambda: D.ArrayDataset(torch.full((2, 2), math.nan), Y(2)), V, r"\bx\b"),
    ],
    "IndexedDataset": [
        c("type:dataset=5", lambda: D.IndexedDataset(5), T, r"dataset"),
        c("empty:no examples", lambda: D.IndexedDataset(EMPTY()), V, r"dataset"),
    ],
    "load_digits": [
        c("range:size=0", lambda: D.load_digits(size=0), V, r"size"),
        c("range:test_fraction=1.5", lambda: D.load_digits(test_fraction=1.5), V, r"test_fraction"),
        c("type:seed='0'", lambda: D.load_digits(seed="0"), T, r"seed"),
        c("type:size=8.5", lambda: D.load_digits(size=8.5), T, r"size"),
    ],
    "make_minority_blobs": [
        c("empty:n=0", lambda: D.make_minority_blobs(0), V, r"\bn\b"),
        c(
            "range:minority_fraction=1.5",
            lambda: D.make_minority_blobs(100, minority_fraction=1.5),
            V,
            r"minority_fraction",
        ),
        c("range:noise=-1", lambda: D.make_minority_blobs(100, noise=-1.0), V, r"noise"),
        c("empty:test_size=0", lambda: D.make_minority_blobs(100, test_size=0), V, r"test_size"),
        c("type:n=100.5", lambda: D.make_minority_blobs(100.5), T, r"\bn\b"),
    ],
    "load_tabular": [
        c("name:name=titanic", lambda: D.load_tabular("titanic"), V, r"name"),
        c("range:test_fraction=0", lambda: D.load_tabular("iris", test_fraction=0.0), V, r"test_fraction"),
        c("type:name=3", lambda: D.load_tabular(3), T, r"name"),
    ],
    "make_imbalanced": [
        c("type:dataset=list", lambda: D.make_imbalanced([1, 2], classes=0, keep_fraction=0.5), T, r"dataset"),
        c(
            "range:keep_fraction=1.5",
            lambda: D.make_imbalanced(DS(), classes=0, keep_fraction=1.5),
            V,
            r"keep_fraction",
        ),
        c("range:unknown class 99", lambda: D.make_imbalanced(DS(), classes=[99], keep_fraction=0.5), V, r"classes"),
    ],
    "split_dataset": [
        c("range:test_fraction=1.5", lambda: D.split_dataset(DS(), test_fraction=1.5), V, r"test_fraction"),
        c("type:dataset=list", lambda: D.split_dataset([1, 2]), T, r"dataset"),
        c("type:seed='0'", lambda: D.split_dataset(DS(), seed="0"), T, r"seed"),
    ],
    "assign_groups": [
        c("groups:groups length", lambda: D.assign_groups(DS(12), torch.zeros(5, dtype=torch.long)), V, r"groups"),
        c(
            "groups:num_groups too small",
            lambda: D.assign_groups(DS(12), torch.arange(12) % 3, num_groups=2),
            V,
            r"num_groups",
        ),
        c("type:float groups", lambda: D.assign_groups(DS(12), torch.rand(12)), T, r"groups"),
        c("type:dataset=list", lambda: D.assign_groups([1, 2], [0, 1]), T, r"dataset"),
    ],
    "load_mnist": [
        c("type:root=5", lambda: D.load_mnist(5), T, r"root"),
        c("type:download='yes'", lambda: D.load_mnist(download="yes"), T, r"download"),
    ],
    "load_fashion_mnist": [
        c("type:root=5", lambda: D.load_fashion_mnist(5), T, r"root"),
        c("type:train='yes'", lambda: D.load_fashion_mnist(train="yes"), T, r"train"),
        c("type:download=1", lambda: D.load_fashion_mnist(download=1), T, r"download"),
    ],
    "load_cifar10": [
        c("type:root=5", lambda: D.load_cifar10(5), T, r"root"),
        c("type:train='yes'", lambda: D.load_cifar10(train="yes"), T, r"train"),
    ],
    "load_digits_defects": [
        c("type:seed='0'", lambda: D.load_digits_defects(seed="0"), T, r"seed"),
        c("type:free='yes'", lambda: D.load_digits_defects(free="yes"), T, r"free"),
    ],
    "make_defect_textures": [
        c("name:kind=marble", lambda: D.make_defect_textures("marble"), V, r"kind"),
        c("range:size=0", lambda: D.make_defect_textures(size=0), V, r"size"),
        c("range:negative count", lambda: D.make_defect_textures(counts={"Free": -1}), V, r"counts"),
        c("name:unknown class in counts", lambda: D.make_defect_textures(counts={"good": 5}), V, r"counts"),
        c("type:seed='0'", lambda: D.make_defect_textures(seed="0"), T, r"seed"),
    ],
    # ---------------------------------------------------------------- models.py
    "LogisticRegression": [
        c("range:in_features=0", lambda: D.LogisticRegression(0, 3), V, r"in_features"),
        c("range:num_classes=0", lambda: D.LogisticRegression(4, 0), V, r"num_classes"),
        c("type:in_features=2.5", lambda: D.LogisticRegression(2.5, 3), T, r"in_features"),
    ],
    "MLP": [
        c("range:hidden=(-4,)", lambda: D.MLP(4, 3, hidden=(-4,)), V, r"hidden"),
        c("name:activation=swoosh", lambda: D.MLP(4, 3, activation="swoosh"), V, r"activation"),
        c("range:dropout=1.5", lambda: D.MLP(4, 3, dropout=1.5), V, r"dropout"),
        c("range:num_classes=0", lambda: D.MLP(4, 0), V, r"num_classes"),
    ],
    "DigitsCNN": [
        c("range:num_classes=0", lambda: D.DigitsCNN(0), V, r"num_classes"),
        c("range:image_size=0", lambda: D.DigitsCNN(image_size=0), V, r"image_size"),
        c("range:width=0", lambda: D.DigitsCNN(width=0), V, r"width"),
        c("type:in_channels=1.5", lambda: D.DigitsCNN(in_channels=1.5), T, r"in_channels"),
    ],
    "SmallCNN": [
        c("range:num_classes=0", lambda: D.SmallCNN(0), V, r"num_classes"),
        c("range:image_size=2", lambda: D.SmallCNN(image_size=2), V, r"image_size"),
        c("range:channels=(0, 10)", lambda: D.SmallCNN(channels=(0, 10)), V, r"channels"),
        c("range:hidden=0", lambda: D.SmallCNN(hidden=0), V, r"hidden"),
    ],
    "WideResNet": [
        c("range:depth=15", lambda: D.WideResNet(depth=15), V, r"depth"),
        c("range:widen_factor=0", lambda: D.WideResNet(widen_factor=0), V, r"widen_factor"),
        c("range:dropout=1.5", lambda: D.WideResNet(dropout=1.5), V, r"dropout"),
        c("range:num_classes=0", lambda: D.WideResNet(0), V, r"num_classes"),
    ],
    "make_model": [
        c("name:name=transformer", lambda: D.make_model("transformer", in_shape=4, num_classes=3), V, r"name"),
        c("range:num_classes=0", lambda: D.make_model("mlp", in_shape=4, num_classes=0), V, r"num_classes"),
        c("range:in_shape=0", lambda: D.make_model("mlp", in_shape=0, num_classes=3), V, r"in_shape"),
    ],
    "count_parameters": [
        c("type:model=str", lambda: D.count_parameters("net"), T, r"model"),
    ],
}


# --------------------------------------------------------------------------- viz and widgets
# The figure builders and panels import plotly / ipywidgets, so these cases import them on call; their
# names are covered against ``dro_course.figures.__all__`` / ``dro_course.panels.__all__``.


#: The course's figure and panel modules: the shared ones and those a lesson keeps in its own package.
FIGURE_MODULES = [
    "dro_course.figures",
    "dro_course.lessons.dro_foundations.figures",
    "dro_course.lessons.hardness_weighted_sampling.figures",
    "dro_course.lessons.importance_sampling.figures",
]
PANEL_MODULES = [
    "dro_course.panels",
    "dro_course.lessons.comparison.panels",
    "dro_course.lessons.dro_foundations.panels",
    "dro_course.lessons.hardness_weighted_sampling.panels",
    "dro_course.lessons.importance_sampling.panels",
]
#: Lesson 07's study: what its figure draws (the methods, the runs, their summary and Pareto front).
STUDY_MODULES = ["dro_course.lessons.comparison.study"]


def _names_of(modules, extra=()):
    import importlib
    import types

    names = {}
    for module in [importlib.import_module(m) for m in modules] + [importlib.import_module(m) for m in extra]:
        names.update({name: getattr(module, name) for name in module.__all__})
    return types.SimpleNamespace(**names)


def VZ():
    # lesson 02's sampling_summary and age_survival and lesson 07's study, what their figures draw, are checked here
    return _names_of(FIGURE_MODULES, extra=["dro_course.lessons.hardness_weighted_sampling", *STUDY_MODULES])


def WG():
    return _names_of(PANEL_MODULES)


def EXP_RESULT():
    from dro_lab.experiments import ExperimentResult

    run = dict(seed=0, method="m", setting={}, final={"a": 0.5}, curves={"a": [0.4, 0.5]}, seconds=1.0)
    return ExperimentResult("e", "t", "p", "digits", "smoke", [0], {}, ["m"], runs=[run])


def NP(n=5):
    return np.linspace(0.1, 1.0, n)


def LINE(a):
    """A one-knob figure builder for slider_figure."""
    import plotly.graph_objects as go

    return go.Figure(go.Scatter(y=[0.0, a]))


def KNOB(**kw):
    return {"a": {"values": [1.0, 2.0], "default": 1.0, **kw}}


def TOY():
    torch.manual_seed(0)
    return dro_lab.LogisticRegression(2, 2), torch.rand(6, 2, generator=_gen()), torch.arange(6) % 2


def ATTACK_TOY(**kw):
    args = dict(
        grid_x=[0.0, 1.0], grid_y=[0.0, 1.0], grid_prob=np.zeros((2, 2)), points=np.zeros((2, 2)), labels=[0, 1]
    )
    args.update(kw)
    return VZ().attack_toy_figure(
        args.pop("grid_x"), args.pop("grid_y"), args.pop("grid_prob"), args.pop("points"), args.pop("labels"), **args
    )


VIZ_BAD_INPUTS: dict[str, list] = {
    # ---------------------------------------------------------------- lesson 07's study (what comparison_figure draws)
    "available_methods": [
        c("type:smoke_only='yes'", lambda: VZ().available_methods(smoke_only="yes"), T, r"smoke_only"),
    ],
    "make_benchmark": [
        c("range:keep_fraction=1.5", lambda: VZ().make_benchmark(keep_fraction=1.5), V, r"keep_fraction"),
        c("name:groups=random", lambda: VZ().make_benchmark(groups="random"), V, r"groups"),
        c("groups:minority_classes=[99]", lambda: VZ().make_benchmark(minority_classes=[99]), V, r"minority_classes"),
        c("groups:minority_classes=[]", lambda: VZ().make_benchmark(minority_classes=[]), V, r"minority_classes"),
        c("range:test_fraction=0", lambda: VZ().make_benchmark(test_fraction=0.0), V, r"test_fraction"),
    ],
    "run_comparison": [
        c("name:methods=[foo]", lambda: VZ().run_comparison(["foo"], progress=False), V, r"methods"),
        c("empty:seeds=[]", lambda: VZ().run_comparison(["ERM"], seeds=[], progress=False), V, r"seeds"),
        c("range:epochs=0", lambda: VZ().run_comparison(["ERM"], epochs=0, progress=False), V, r"epochs"),
        c("range:batch_size=0", lambda: VZ().run_comparison(["ERM"], batch_size=0, progress=False), V, r"batch_size"),
        c("range:lr=-1", lambda: VZ().run_comparison(["ERM"], lr=-1.0, progress=False), V, r"\blr\b"),
        c("beta<0:beta=-1", lambda: VZ().run_comparison(["ERM"], beta=-1.0, progress=False), V, r"beta"),
        c(
            "alpha-range:cvar_alpha=1.5",
            lambda: VZ().run_comparison(["ERM"], cvar_alpha=1.5, progress=False),
            V,
            r"cvar_alpha",
        ),
        c(
            "alpha-range:is_alpha=-0.1",
            lambda: VZ().run_comparison(["ERM"], is_alpha=-0.1, progress=False),
            V,
            r"is_alpha",
        ),
        c("eps<0:eps=-0.1", lambda: VZ().run_comparison(["ERM"], eps=-0.1, progress=False), V, r"eps"),
        c("name:device=tpu", lambda: VZ().run_comparison(["ERM"], device="tpu", progress=False), V, r"device"),
        c("type:data=str", lambda: VZ().run_comparison(["ERM"], data="digits", progress=False), T, r"data"),
        c(
            "groups:data without groups",
            lambda: VZ().run_comparison(["ERM"], data=(DS(groups=False), DS(groups=False)), progress=False),
            V,
            r"data",
        ),
    ],
    "summarise": [
        c("empty:rows=[]", lambda: VZ().summarise([]), V, r"rows"),
        c("shape:row lacks keys", lambda: VZ().summarise([{"method": "ERM"}]), V, r"rows"),
        c("type:reference=3", lambda: VZ().summarise(ROWS(), reference=3), T, r"reference"),
        c("type:rows=3", lambda: VZ().summarise(3), T, r"rows"),
    ],
    "pareto_front": [
        c("empty:summary=[]", lambda: VZ().pareto_front([]), V, r"summary"),
        c("name:x=foo", lambda: VZ().pareto_front(SUMMARY(), x="foo"), V, r"foo"),
        c(
            "nan-inf:nan value",
            lambda: VZ().pareto_front([{**s, "avg_acc": math.nan} for s in SUMMARY()]),
            V,
            r"summary",
        ),
    ],
    "paired_differences": [
        c("empty:rows=[]", lambda: VZ().paired_differences([]), V, r"rows"),
        c("name:metric=foo", lambda: VZ().paired_differences(ROWS(), metric="foo"), V, r"metric"),
        c("name:reference=foo", lambda: VZ().paired_differences(ROWS(), reference="foo"), V, r"reference"),
    ],
    "MethodSpec": [
        c("name:strategy=NoSuchStrategy", lambda: VZ().MethodSpec("X", "—", "d", "NoSuchStrategy"), V, r"strategy"),
        c("name:family=neither", lambda: VZ().MethodSpec("X", "—", "d", "ERM", family="neither"), V, r"family"),
        c("type:name=3", lambda: VZ().MethodSpec(3, "—", "d", "ERM"), T, r"\bname\b"),
        c("type:options=3", lambda: VZ().MethodSpec("X", "—", "d", "ERM", options=3), T, r"options"),
    ],
    "weights_figure": [
        c("shape:q length", lambda: VZ().weights_figure(NP(5), {"q": [0.5, 0.5]}), V, r"weights|\bq\b"),
        c("nan-inf:nan loss", lambda: VZ().weights_figure(np.array([0.1, np.nan]), {"q": [0.5, 0.5]}), V, r"losses"),
    ],
    "robust_value_figure": [
        c("name:divergence=tv", lambda: VZ().robust_value_figure(NP(), divergence="tv"), V, r"divergence"),
        c("beta<0:betas=[-1]", lambda: VZ().robust_value_figure(NP(), [-1.0, 1.0]), V, r"beta"),
        c("nan-inf:nan loss", lambda: VZ().robust_value_figure(np.array([0.1, np.nan])), V, r"losses"),
    ],
    "duality_figure": [
        c("shape:radii vs betas", lambda: VZ().duality_figure([0.1, 0.2], [1.0]), V, r"radii|betas"),
        c("radius<0:radii=[-1]", lambda: VZ().duality_figure([-1.0], [1.0]), V, r"radii"),
        c("name:divergence=tv", lambda: VZ().duality_figure([0.1], [1.0], divergence="tv"), V, r"divergence"),
    ],
    "duality_curves_figure": [
        c("nan-inf:nan loss", lambda: VZ().duality_curves_figure(np.array([0.1, np.nan])), V, r"losses"),
        c("radius<0:radius=-1", lambda: VZ().duality_curves_figure(NP(), radius=-1.0), V, r"radius"),
        c("type:n_points=2.5", lambda: VZ().duality_curves_figure(NP(), n_points=2.5), T, r"n_points"),
    ],
    "toy_boundaries_figure": [
        c("type:toy=dict", lambda: VZ().toy_boundaries_figure({"ERM": TOY()[0]}), T, r"toy"),
    ],
    "toy_sweep_figure": [
        c("type:toy=list", lambda: VZ().toy_sweep_figure([], "beta"), T, r"toy"),
        c("name:knob=gamma", lambda: VZ().toy_sweep_figure(None, "gamma"), V, r"knob"),
    ],
    "decision_boundary_figure": [
        c("shape:3-D inputs", lambda: VZ().decision_boundary_figure({"m": TOY()[0]}, X(6, 3), Y(6)), V, r"\bx\b"),
        c(
            "range:resolution=1",
            lambda: VZ().decision_boundary_figure({"m": TOY()[0]}, *TOY()[1:], resolution=1),
            V,
            r"resolution",
        ),
        c("empty:models={}", lambda: VZ().decision_boundary_figure({}, *TOY()[1:]), V, r"models"),
        c("type:model=str", lambda: VZ().decision_boundary_figure({"m": "net"}, *TOY()[1:]), T, r"models"),
    ],
    "tradeoff_figure": [
        c("empty:rows=[]", lambda: VZ().tradeoff_figure([]), V, r"rows"),
        c(
            "name:x=gamma",
            lambda: VZ().tradeoff_figure(
                [{"method": "a", "beta": 1.0, "accuracy": 0.5, "worst_group_accuracy": 0.4}], x="gamma"
            ),
            V,
            r"gamma",
        ),
    ],
    "history_figure": [
        c("empty:histories={}", lambda: VZ().history_figure({}, "test_accuracy"), V, r"histories"),
        c(
            "name:metric=foo",
            lambda: VZ().history_figure({"a": D.History(records=[{"epoch": 1, "acc": 0.5}])}, "foo"),
            V,
            r"metric",
        ),
    ],
    "summarize_runs": [
        c("empty:rows=[]", lambda: VZ().summarize_runs([], by=["method"], metrics=["acc"]), V, r"rows"),
        c(
            "name:metric=foo",
            lambda: VZ().summarize_runs([{"method": "a", "acc": 1.0}], by=["method"], metrics=["foo"]),
            V,
            r"metrics|foo",
        ),
    ],
    "weights_for_knobs": [
        c("beta<0:beta=-1", lambda: VZ().weights_for_knobs(NP(), beta=-1.0, radius=0.1, alpha=0.2), V, r"beta"),
        c("radius<0:radius=-1", lambda: VZ().weights_for_knobs(NP(), beta=1.0, radius=-1.0, alpha=0.2), V, r"radius"),
        c("alpha-range:alpha=1.5", lambda: VZ().weights_for_knobs(NP(), beta=1.0, radius=0.1, alpha=1.5), V, r"alpha"),
        c(
            "nan-inf:nan loss",
            lambda: VZ().weights_for_knobs(np.array([0.1, np.nan]), beta=1.0, radius=0.1, alpha=0.2),
            V,
            r"losses",
        ),
    ],
    "history_curves": [
        c("empty:histories=[]", lambda: VZ().history_curves([], "acc"), V, r"histories"),
    ],
    "curves_figure": [
        c("empty:curves={}", lambda: VZ().curves_figure({}), V, r"curves"),
        c("shape:3-D curves", lambda: VZ().curves_figure({"a": np.zeros((2, 2, 2))}), V, r"curves"),
    ],
    "curves_grid_figure": [
        c("empty:panels={}", lambda: VZ().curves_grid_figure({}), V, r"panel"),
        c("range:cols=0", lambda: VZ().curves_grid_figure({"p": {"a": [[1.0, 2.0]]}}, cols=0), V, r"cols"),
    ],
    "sampling_summary": [
        c("shape:q vs labels", lambda: VZ().sampling_summary(NP(5), [0, 1]), V, r"\bq\b"),
        c("range:negative q", lambda: VZ().sampling_summary([-0.5, 1.5], [0, 1]), V, r"\bq\b"),
        c("groups:minority class 7", lambda: VZ().sampling_summary([0.5, 0.5], [0, 1], minority=7), V, r"minority"),
        c("range:batch_size=0", lambda: VZ().sampling_summary([0.5, 0.5], [0, 1], batch_size=0), V, r"batch_size"),
    ],
    "sampling_figure": [
        c("shape:losses vs q", lambda: VZ().sampling_figure(NP(5), [0.5, 0.5], [0, 1]), V, r"losses"),
    ],
    "hws_sampling_figure": [
        c("beta<0:beta=-1", lambda: VZ().hws_sampling_figure(NP(4), [0, 1, 0, 1], beta=-1.0), V, r"beta"),
        c(
            "name:divergence=tv",
            lambda: VZ().hws_sampling_figure(NP(4), [0, 1, 0, 1], beta=1.0, divergence="tv"),
            V,
            r"divergence",
        ),
        c("shape:losses vs labels", lambda: VZ().hws_sampling_figure(NP(4), [0, 1], beta=1.0), V, r"labels"),
    ],
    "age_survival": [
        c("empty:no written ages", lambda: VZ().age_survival([-1, -1]), V, r"ages"),
        c("range:kmax=0", lambda: VZ().age_survival([1, 2, 3], kmax=0), V, r"kmax"),
    ],
    "age_figure": [
        c("range:batch_size=0", lambda: VZ().age_figure({"a": ([1, 2], 10)}, batch_size=0), V, r"batch_size"),
        c("empty:runs={}", lambda: VZ().age_figure({}, batch_size=2), V, r"runs"),
    ],
    "mc_error_figure": [
        c("shape:errors length", lambda: VZ().mc_error_figure([1, 2], {"a": [1.0]}), V, r"errors"),
        c("range:ms=[0, 1]", lambda: VZ().mc_error_figure([0, 1], {"a": [1.0, 0.5]}), V, r"\bms\b"),
    ],
    "minority_mass_figure": [
        c("type:losses is a string", lambda: VZ().minority_mass_figure("abc", [0, 1, 0], minority=1), T, r"losses"),
        c("type:minority='1'", lambda: VZ().minority_mass_figure(NP(3), [0, 1, 0], minority="1"), T, r"minority"),
        c("shape:losses vs labels", lambda: VZ().minority_mass_figure(NP(4), [0, 1], minority=1), V, r"labels"),
        c("nan-inf:nan loss", lambda: VZ().minority_mass_figure([0.1, np.nan], [0, 1], minority=1), V, r"losses"),
        c(
            "range:betas=[0, 1]",
            lambda: VZ().minority_mass_figure(NP(3), [0, 1, 0], minority=1, betas=[0, 1]),
            V,
            r"betas",
        ),
        c("groups:minority=5 absent", lambda: VZ().minority_mass_figure(NP(3), [0, 1, 0], minority=5), V, r"minority"),
    ],
    "is_mixture": [
        c("range:negative grad norm", lambda: VZ().is_mixture([-1.0, 1.0], 0.5), V, r"grad_norms"),
        c("alpha-range:alpha=1.5", lambda: VZ().is_mixture([1.0, 2.0], 1.5), V, r"alpha"),
    ],
    "is_estimator_stats": [
        c("shape:gram vs p", lambda: VZ().is_estimator_stats(np.eye(3), [0.5, 0.5]), V, r"gram"),
        c("range:batch_size=0", lambda: VZ().is_estimator_stats(np.eye(2), [0.5, 0.5], batch_size=0), V, r"batch_size"),
        c("range:p has a zero", lambda: VZ().is_estimator_stats(np.eye(2), [1.0, 0.0]), V, r"\bp\b"),
    ],
    "is_variance_figure": [
        c("alpha-range:alpha=1.5", lambda: VZ().is_variance_figure(np.eye(3), alpha=1.5), V, r"alpha"),
        c("range:batch_size=0", lambda: VZ().is_variance_figure(np.eye(3), batch_size=0), V, r"batch_size"),
        c("shape:gram not square", lambda: VZ().is_variance_figure(np.ones((2, 3))), V, r"gram"),
    ],
    "is_cost_figure": [
        c("empty:seconds={}", lambda: VZ().is_cost_figure({}), V, r"seconds"),
    ],
    "is_cost_ratio_figure": [
        c("type:reference=str", lambda: VZ().is_cost_ratio_figure("importance"), T, r"reference"),
        c("type:live=dict", lambda: VZ().is_cost_ratio_figure(EXP_RESULT(), {}), T, r"live"),
        c("name:no 'SGD u' arm", lambda: VZ().is_cost_ratio_figure(EXP_RESULT()), V, r"SGD u"),
    ],
    "log_curves_figure": [
        c("type:runs=list", lambda: VZ().log_curves_figure([EXP_RESULT()], "a"), T, r"runs"),
        c("type:a run that is no result", lambda: VZ().log_curves_figure({"a": 3}, "a"), T, r"runs"),
        c("empty:runs={}", lambda: VZ().log_curves_figure({}, "a"), V, r"runs"),
        c(
            "name:methods=['zz']",
            lambda: VZ().log_curves_figure({"r": EXP_RESULT()}, "a", methods=["zz"]),
            V,
            r"methods",
        ),
    ],
    "loss_against_time_figure": [
        c("type:result=str", lambda: VZ().loss_against_time_figure("importance"), T, r"result"),
        c("name:methods=['zz']", lambda: VZ().loss_against_time_figure(EXP_RESULT(), methods=["zz"]), V, r"methods"),
        c("empty:methods=[]", lambda: VZ().loss_against_time_figure(EXP_RESULT(), methods=[]), V, r"methods"),
    ],
    "accuracy_beside_figure": [
        c("type:live=dict", lambda: VZ().accuracy_beside_figure(EXP_RESULT(), {}), T, r"live"),
        c(
            "name:methods=['zz']",
            lambda: VZ().accuracy_beside_figure(EXP_RESULT(), EXP_RESULT(), methods=["zz"]),
            V,
            r"methods",
        ),
    ],
    "forgotten_weights_figure": [
        c("type:paths=str", lambda: VZ().forgotten_weights_figure("u", [0.0, 0.0]), T, r"paths"),
        c("empty:paths={}", lambda: VZ().forgotten_weights_figure({}, [0.0, 0.0]), V, r"paths"),
        c("shape:a 1-D path", lambda: VZ().forgotten_weights_figure({"u": np.zeros(3)}, [0.0, 0.0]), V, r"paths"),
        c(
            "shape:theta_star of 1",
            lambda: VZ().forgotten_weights_figure({"u": np.zeros((3, 2))}, [0.0]),
            V,
            r"theta_star",
        ),
    ],
    "bilinear_traces": [
        c("empty:paths={}", lambda: VZ().bilinear_traces({}), V, r"paths"),
        c("shape:(3, 3) path", lambda: VZ().bilinear_traces({"a": np.zeros((3, 3))}), V, r"paths"),
    ],
    "bilinear_figure": [
        c("shape:(3, 3) path", lambda: VZ().bilinear_figure({"a": np.zeros((3, 3))}), V, r"paths"),
        c("empty:paths={}", lambda: VZ().bilinear_figure({}), V, r"paths"),
    ],
    "kl_to_prior": [
        c("shape:prior length", lambda: VZ().kl_to_prior([0.5, 0.5], prior=[1 / 3] * 3), V, r"prior"),
        c("range:negative pi", lambda: VZ().kl_to_prior([1.5, -0.5]), V, r"\bpi\b"),
    ],
    "pi_star": [
        c("beta<0:beta=-1", lambda: VZ().pi_star([1.0, 2.0], beta=-1.0), V, r"beta"),
        c("shape:prior length", lambda: VZ().pi_star([1.0, 2.0], [0.2, 0.3, 0.5], beta=1.0), V, r"prior"),
        c("nan-inf:nan group loss", lambda: VZ().pi_star([1.0, np.nan], beta=1.0), V, r"group_losses|losses"),
    ],
    "pi_star_figure": [
        c("beta<0:betas=[0]", lambda: VZ().pi_star_figure([1.0, 2.0], betas=[0.0, 1.0]), V, r"betas"),
        c("shape:labels length", lambda: VZ().pi_star_figure([1.0, 2.0], labels=["a"]), V, r"labels"),
    ],
    "pi_star_bar_figure": [
        c("beta<0:beta=-1", lambda: VZ().pi_star_bar_figure([1.0, 2.0], beta=-1.0), V, r"beta"),
        c("shape:labels length", lambda: VZ().pi_star_bar_figure([1.0, 2.0], beta=1.0, labels=["a"]), V, r"labels"),
    ],
    "saddle_distance_figure": [
        c("empty:distances={}", lambda: VZ().saddle_distance_figure({}), V, r"distances"),
        c("range:a zero distance", lambda: VZ().saddle_distance_figure({"a": [1.0, 0.0]}), V, r"distances"),
        c("nan-inf:nan distance", lambda: VZ().saddle_distance_figure({"a": [1.0, np.nan]}), V, r"distances"),
    ],
    "pi_trajectory_figure": [
        c("shape:1-D pi_history", lambda: VZ().pi_trajectory_figure(np.ones(3)), V, r"pi_history"),
        c("range:top=0", lambda: VZ().pi_trajectory_figure(np.ones((3, 2)) / 2, top=0), V, r"top"),
    ],
    "method_sweep_figure": [
        c(
            "shape:results columns",
            lambda: VZ().method_sweep_figure([1, 2], {"a": np.zeros((1, 3))}, x_title="x", y_title="y"),
            V,
            r"results",
        ),
    ],
    "method_tradeoff_figure": [
        c(
            "name:methods differ",
            lambda: VZ().method_tradeoff_figure({"a": [1.0]}, {"b": [1.0]}),
            V,
            r"average and worst",
        ),
    ],
    "done_weight_stats": [
        c("empty:weights=[]", lambda: VZ().done_weight_stats([]), V, r"weights"),
        c("nan-inf:nan weight", lambda: VZ().done_weight_stats([1.0, np.nan]), V, r"weights"),
    ],
    "done_weight_figure": [
        c("shape:weights vs labels", lambda: VZ().done_weight_figure([1.0, 2.0], [0]), V, r"weights and labels"),
    ],
    "attack_toy_figure": [
        c("name:norm=l3", lambda: ATTACK_TOY(norm="l3"), V, r"norm"),
        c("shape:grid_prob", lambda: ATTACK_TOY(grid_prob=np.zeros((3, 2))), V, r"grid_prob"),
        c("eps<0:eps=-0.1", lambda: ATTACK_TOY(eps=-0.1), V, r"eps"),
        c("range:n_balls=-1", lambda: ATTACK_TOY(n_balls=-1), V, r"n_balls"),
    ],
    "per_class_robust_figure": [
        c("empty:per_class={}", lambda: VZ().per_class_robust_figure({}), V, r"per_class"),
        c(
            "range:highlight_worst=-1",
            lambda: VZ().per_class_robust_figure({"a": [[0.5, 0.6]]}, highlight_worst=-1),
            V,
            r"highlight_worst",
        ),
    ],
    "attack_gap_figure": [
        c("name:methods differ", lambda: VZ().attack_gap_figure({"a": [0.5]}, {"b": [0.4]}), V, r"pgd and autoattack"),
    ],
    "experiment_per_class_figure": [
        c("type:result is a dict", lambda: VZ().experiment_per_class_figure({}), T, r"result"),
        c("name:no per-class metric", lambda: VZ().experiment_per_class_figure(EXP_RESULT()), V, r"per-class"),
        c("name:method", lambda: VZ().experiment_per_class_figure(EXP_RESULT(), methods=["x"]), V, r"unknown"),
    ],
    "final_metric_beside_figure": [
        c("type:live is a dict", lambda: VZ().final_metric_beside_figure(EXP_RESULT(), {}, "a"), T, r"live"),
        c("type:metric=3", lambda: VZ().final_metric_beside_figure(EXP_RESULT(), EXP_RESULT(), 3), T, r"metric"),
        c(
            "name:method",
            lambda: VZ().final_metric_beside_figure(EXP_RESULT(), EXP_RESULT(), "a", methods=["x"]),
            V,
            r"unknown",
        ),
    ],
    "final_metrics_figure": [
        c("type:result is a dict", lambda: VZ().final_metrics_figure({}, ["a"]), T, r"result"),
        c("type:metrics is a string", lambda: VZ().final_metrics_figure(EXP_RESULT(), "a"), T, r"metrics"),
        c("name:method", lambda: VZ().final_metrics_figure(EXP_RESULT(), ["a"], methods=["x"]), V, r"unknown"),
        c("shape:titles", lambda: VZ().final_metrics_figure(EXP_RESULT(), ["a"], titles=["x", "y"]), V, r"titles"),
    ],
    "r_schedule_figure": [
        c("shape:r_values length", lambda: VZ().r_schedule_figure([1, 2, 3], [1.0, 2.0]), V, r"r_values"),
        c("radius<0:r_values=-1", lambda: VZ().r_schedule_figure([1, 2], [1.0, -1.0]), V, r"r_values"),
    ],
    "shift_field_figure": [
        c(
            "shape:shifted rows",
            lambda: VZ().shift_field_figure(np.zeros((3, 2)), {"a": np.zeros((2, 2))}, [0, 1, 0]),
            V,
            r"shifted",
        ),
        c(
            "shape:labels length",
            lambda: VZ().shift_field_figure(np.zeros((3, 2)), {"a": np.zeros((3, 2))}, [0, 1]),
            V,
            r"labels",
        ),
    ],
    "transport_vs_gamma_figure": [
        c("range:gammas=[-1, 1]", lambda: VZ().transport_vs_gamma_figure([-1.0, 1.0], {"a": [1.0, 2.0]}), V, r"gammas"),
        c("shape:costs length", lambda: VZ().transport_vs_gamma_figure([0.1, 1.0], {"a": [1.0]}), V, r"costs"),
    ],
    "ls_regularizer_values": [
        c("range:k=1", lambda: VZ().ls_regularizer_values([0.5], 0.1, k=1), V, r"\bk\b"),
        c("alpha-range:alpha=1.5", lambda: VZ().ls_regularizer_values([0.5], 1.5), V, r"alpha"),
        c("range:p_true=1.5", lambda: VZ().ls_regularizer_values([1.5], 0.1), V, r"p_true"),
    ],
    "regularizer_figure": [
        c("shape:values length", lambda: VZ().regularizer_figure([0.5, 0.6], {0.1: [1.0]}), V, r"values"),
    ],
    "generated_images_figure": [
        c(
            "shape:x vs x_shifted",
            lambda: VZ().generated_images_figure(np.zeros((2, 1, 4, 4)), np.zeros((3, 1, 4, 4))),
            V,
            r"x_shifted",
        ),
        c(
            "range:n=0",
            lambda: VZ().generated_images_figure(np.zeros((2, 1, 4, 4)), np.zeros((2, 1, 4, 4)), n=0),
            V,
            r"\bn\b",
        ),
    ],
    "cost_vs_T_figure": [
        c("empty:one T value", lambda: VZ().cost_vs_T_figure([1], [1.0]), V, r"\bT"),
        c("shape:seconds length", lambda: VZ().cost_vs_T_figure([1, 2, 3], [1.0, 2.0]), V, r"seconds"),
    ],
    "bo_progress_figure": [
        c("empty:values['a']=[]", lambda: VZ().bo_progress_figure({"a": []}), V, r"values"),
        c("empty:values={}", lambda: VZ().bo_progress_figure({}), V, r"values"),
    ],
    "comparison_figure": [
        c("empty:summary=[]", lambda: VZ().comparison_figure([]), V, r"summary"),
        c(
            "name:front names unknown method",
            lambda: VZ().comparison_figure(VZ().summarise(ROWS()), front=["foo"]),
            V,
            r"front",
        ),
        c("type:summary=str", lambda: VZ().comparison_figure("ERM"), T, r"summary"),
        c("range:width=10", lambda: VZ().comparison_figure(VZ().summarise(ROWS()), width=10), V, r"width"),
    ],
    "experiment_curves_figure": [
        c("type:result is a dict", lambda: VZ().experiment_curves_figure({}, "accuracy"), T, r"ExperimentResult"),
        c("name:unknown method", lambda: VZ().experiment_curves_figure(EXP_RESULT(), "a", methods=["x"]), V, r"x"),
        c("empty:methods=[]", lambda: VZ().experiment_curves_figure(EXP_RESULT(), "a", methods=[]), V, r"methods"),
    ],
    "expected_validation_figure": [
        c("type:result is a dict", lambda: VZ().expected_validation_figure({}), T, r"ExperimentResult"),
        c("empty:no tuning trials", lambda: VZ().expected_validation_figure(EXP_RESULT()), V, r"no tuning trials"),
    ],
    "experiment_seeds_figure": [
        c("type:result is a list", lambda: VZ().experiment_seeds_figure([], "accuracy"), T, r"ExperimentResult"),
        c("name:unknown metric", lambda: VZ().experiment_seeds_figure(EXP_RESULT(), "nope"), V, r"nope"),
    ],
    "reference_beside_live_figure": [
        c("type:live is a dict", lambda: VZ().reference_beside_live_figure(EXP_RESULT(), {}, "a"), T, r"live"),
        c("type:reference is None", lambda: VZ().reference_beside_live_figure(None, EXP_RESULT(), "a"), T, r"Result"),
        c(
            "name:method not in the live run",
            lambda: VZ().reference_beside_live_figure(EXP_RESULT(), EXP_RESULT(), "a", methods=["x"]),
            V,
            r"unknown methods \['x'\]",
        ),
    ],
    "slider_figure": [
        c("type:build=3", lambda: VZ().slider_figure(3, KNOB()), T, r"build"),
        c("type:knobs=list", lambda: VZ().slider_figure(LINE, [1.0]), T, r"knobs"),
        c("type:a knob is a list", lambda: VZ().slider_figure(LINE, {"a": [1.0, 2.0]}), T, r"knobs\['a'\]"),
        c("empty:knobs={}", lambda: VZ().slider_figure(LINE, {}), V, r"knobs"),
        c("empty:values=[]", lambda: VZ().slider_figure(LINE, KNOB(values=[])), V, r"values"),
        c("name:default not among the values", lambda: VZ().slider_figure(LINE, KNOB(default=3.0)), V, r"default"),
        c("name:unknown key", lambda: VZ().slider_figure(LINE, KNOB(colour="red")), V, r"colour"),
        c("nan-inf:nan value", lambda: VZ().slider_figure(LINE, KNOB(values=[1.0, math.nan])), V, r"finite"),
        c("type:build returns a dict", lambda: VZ().slider_figure(lambda a: {}, KNOB()), T, r"go.Figure"),
        c("range:digits=1", lambda: VZ().slider_figure(LINE, KNOB(), digits=1), V, r"digits"),
    ],
    # ---------------------------------------------------------------- widgets.py
    "beta_slider": [
        c("beta<0:value=-1", lambda: WG().beta_slider(-1.0), V, r"value|β"),
        c("type:value='1'", lambda: WG().beta_slider("1"), T, r"value|β"),
        c("range:min_exp > max_exp", lambda: WG().beta_slider(1.0, min_exp=3, max_exp=-2), V, r"min_exp"),
    ],
    "radius_slider": [
        c("radius<0:value=-0.1", lambda: WG().radius_slider(-0.1), V, r"value|radius"),
    ],
    "cvar_alpha_slider": [
        c("alpha-range:value=1.5", lambda: WG().cvar_alpha_slider(1.5), V, r"value|α"),
        c("alpha-range:value=0", lambda: WG().cvar_alpha_slider(0.0), V, r"value|α"),
    ],
    "divergence_toggle": [
        c("name:value=tv", lambda: WG().divergence_toggle("tv"), V, r"value|divergence"),
    ],
    "panel": [
        c("type:figure_fn=3", lambda: WG().panel(3, {"a": WG().beta_slider()}), T, r"figure_fn"),
        c("type:controls=list", lambda: WG().panel(lambda **k: None, [1]), T, r"controls"),
        c("type:twin=3", lambda: WG().panel(LINE, {"a": WG().beta_slider()}, twin=3), T, r"twin"),
        c("name:twin names no control", lambda: WG().panel(LINE, {"a": WG().beta_slider()}, twin={"b": 1}), V, r"'b'"),
    ],
    "run_panel": [
        c("type:run_fn=3", lambda: WG().run_panel(3, {"a": WG().beta_slider()}), T, r"run_fn"),
        c("type:controls=list", lambda: WG().run_panel(lambda **k: None, [1]), T, r"controls"),
        c("type:twin='a'", lambda: WG().run_panel(LINE, {"a": WG().beta_slider()}, twin="a"), T, r"twin"),
    ],
    "training_panel": [
        c("type:train=3", lambda: WG().training_panel(3), T, r"train"),
        c("type:a control without a value", lambda: WG().training_panel(print, {"a": 1}), T, r"controls"),
        c("type:metrics='loss'", lambda: WG().training_panel(print, metrics="loss"), T, r"metrics"),
        c("empty:metrics=[]", lambda: WG().training_panel(print, metrics=[]), V, r"metrics"),
        c("type:twin=3", lambda: WG().training_panel(print, twin=3), T, r"twin"),
    ],
    "experiment_training_panel": [
        c("type:experiment=3", lambda: WG().experiment_training_panel(3, None, {}), T, r"experiment"),
        c("name:experiment=foo", lambda: WG().experiment_training_panel("foo", None, {}), V, r"experiment"),
        c("type:splits=list", lambda: WG().experiment_training_panel("hws", [1], {}), T, r"splits"),
    ],
    "weights_panel": [
        c("beta<0:beta=-1", lambda: WG().weights_panel(NP(), beta=-1.0), V, r"beta|β"),
        c("alpha-range:alpha=1.5", lambda: WG().weights_panel(NP(), alpha=1.5), V, r"alpha|α"),
        c("nan-inf:nan loss", lambda: WG().weights_panel(np.array([0.1, np.nan])), V, r"losses"),
    ],
    "toy_panel": [
        c("beta<0:beta=-1", lambda: WG().toy_panel(beta=-1.0), V, r"beta"),
        c("radius<0:radius=-1", lambda: WG().toy_panel(radius=-1.0), V, r"radius"),
        c("alpha-range:alpha=0", lambda: WG().toy_panel(alpha=0.0), V, r"alpha"),
        c("type:seed=1.5", lambda: WG().toy_panel(seed=1.5), T, r"seed"),
        c("type:unknown argument", lambda: WG().toy_panel(kl_betas=[1.0]), T, r"kl_betas"),
    ],
    "hws_panel": [
        c("beta<0:beta=-1", lambda: WG().hws_panel(NP(4), [0, 1, 0, 1], beta=-1.0), V, r"beta|β"),
        c("name:divergence=tv", lambda: WG().hws_panel(NP(4), [0, 1, 0, 1], divergence="tv"), V, r"divergence"),
        c("shape:losses vs labels", lambda: WG().hws_panel(NP(4), [0, 1]), V, r"labels"),
    ],
    "is_alpha_slider": [
        c("alpha-range:value=1.5", lambda: WG().is_alpha_slider(1.5), V, r"value|α"),
    ],
    "weight_exponent_slider": [
        c("range:value=-0.1", lambda: WG().weight_exponent_slider(-0.1), V, r"value|exponent"),
    ],
    "is_variance_panel": [
        c("alpha-range:alpha=1.5", lambda: WG().is_variance_panel(np.eye(3), alpha=1.5), V, r"alpha|α"),
        c("range:batch_size=0", lambda: WG().is_variance_panel(np.eye(3), batch_size=0), V, r"batch_size"),
    ],
    "experiment_panel": [
        c("range:lr=0", lambda: WG().experiment_panel("digits", "smoke", lr=0.0), V, r"lr"),
        c("name:dataset='mnist'", lambda: WG().experiment_panel("mnist", "smoke"), V, r"digits"),
    ],
    "optimism_slider": [
        c("alpha-range:value=-1", lambda: WG().optimism_slider(-1.0), V, r"value|α"),
    ],
    "group_beta_slider": [
        c("beta<0:value=-1", lambda: WG().group_beta_slider(-1.0), V, r"value|β"),
    ],
    "bilinear_panel": [
        c("range:lr=-1", lambda: WG().bilinear_panel(lr=-1.0), V, r"\blr\b"),
        c("range:steps=0", lambda: WG().bilinear_panel(steps=0), V, r"steps"),
    ],
    "tau_panel": [
        c("beta<0:beta=-1", lambda: WG().tau_panel([1.0, 2.0], beta=-1.0), V, r"beta|β"),
        c("shape:prior length", lambda: WG().tau_panel([1.0, 2.0], [0.2, 0.3, 0.5]), V, r"prior"),
    ],
    "pi_run_panel": [
        c("type:simulate=3", lambda: WG().pi_run_panel(3), T, r"simulate"),
        c("beta<0:beta=-1", lambda: WG().pi_run_panel(lambda **k: {}, beta=-1.0), V, r"beta|β"),
    ],
    "also_training_panel": [
        c("type:splits=list", lambda: WG().also_training_panel([1], {}), T, r"splits"),
        c("range:pi_lr=1", lambda: WG().also_training_panel([1], {}, pi_lr=1.0), V, r"pi_lr"),
        c("range:tau=0", lambda: WG().also_training_panel([1], {}, tau=0.0), V, r"\btau\b"),
        c("alpha-range:alpha=-1", lambda: WG().also_training_panel([1], {}, alpha=-1.0), V, r"value|α"),
    ],
    "done_r_slider": [
        c("range:value=-1", lambda: WG().done_r_slider(-1.0), V, r"value|\br\b"),
    ],
    "attack_eps_slider": [
        c("eps<0:value=-0.1", lambda: WG().attack_eps_slider(-0.1), V, r"value|ε"),
    ],
    "attack_alpha_slider": [
        c("range:value=-0.01", lambda: WG().attack_alpha_slider(-0.01), V, r"value|α"),
        c("range:lo > hi", lambda: WG().attack_alpha_slider(0.05, lo=0.5, hi=0.1), V, r"\blo\b|\bhi\b"),
    ],
    "done_r_panel": [
        c("range:r=-1", lambda: WG().done_r_panel(NP(4), [0, 1, 0, 1], r=-1.0), V, r"\br\b"),
        c("shape:losses vs labels", lambda: WG().done_r_panel(NP(4), [0, 1]), V, r"labels"),
    ],
    "attack_toy_panel": [
        c("eps<0:eps=-0.1", lambda: WG().attack_toy_panel(*TOY(), eps=-0.1), V, r"eps|ε"),
        c("name:norm=l3", lambda: WG().attack_toy_panel(*TOY(), norm="l3"), V, r"norm"),
        c("range:grid=1", lambda: WG().attack_toy_panel(*TOY(), grid=1), V, r"grid"),
        c("type:model=str", lambda: WG().attack_toy_panel("net", *TOY()[1:]), T, r"model"),
    ],
    "ls_alpha_slider": [
        c("alpha-range:value=-0.1", lambda: WG().ls_alpha_slider(-0.1), V, r"value|α"),
    ],
    "gils_steps_slider": [
        c("range:value=-1", lambda: WG().gils_steps_slider(-1), V, r"value|T"),
        c("type:value=2.5", lambda: WG().gils_steps_slider(2.5), T, r"value|T"),
    ],
    "gils_gamma_slider": [
        c("range:value=-1", lambda: WG().gils_gamma_slider(-1.0), V, r"value|γ"),
    ],
    "target_radius_slider": [
        c("radius<0:value=-1", lambda: WG().target_radius_slider(-1.0), V, r"value|\br\b"),
    ],
    "gamma_for_radius": [
        c("radius<0:radius=-1", lambda: WG().gamma_for_radius(lambda g: 1.0 / g, -1.0), V, r"radius"),
        c("type:shift=3", lambda: WG().gamma_for_radius(3, 0.1), T, r"shift"),
        c("range:lo > hi", lambda: WG().gamma_for_radius(lambda g: 1.0 / g, 0.1, lo=10.0, hi=1.0), V, r"\blo\b"),
    ],
    "gils_toy_panel": [
        c("alpha-range:alpha=1.5", lambda: WG().gils_toy_panel(*TOY(), alpha=1.5), V, r"alpha|α"),
        c("range:steps=-1", lambda: WG().gils_toy_panel(*TOY(), steps=-1), V, r"steps|T"),
        c("range:gamma=-1", lambda: WG().gils_toy_panel(*TOY(), gamma=-1.0), V, r"gamma|γ"),
        c("range:grid=1", lambda: WG().gils_toy_panel(*TOY(), grid=1), V, r"grid"),
        c("type:model=str", lambda: WG().gils_toy_panel("net", *TOY()[1:]), T, r"model"),
    ],
    "comparison_panel": [
        c("empty:methods=[]", lambda: WG().comparison_panel(lambda **k: None, []), V, r"methods"),
        c(
            "name:selected unknown",
            lambda: WG().comparison_panel(lambda **k: None, ["ERM"], selected=["foo"]),
            V,
            r"selected",
        ),
        c("beta<0:beta=-1", lambda: WG().comparison_panel(lambda **k: None, ["ERM"], beta=-1.0), V, r"beta|β"),
        c("type:run_fn=3", lambda: WG().comparison_panel(3, ["ERM"]), T, r"run_fn"),
        c("type:options=list", lambda: WG().comparison_panel(options=[1]), T, r"options"),
        c("name:options={'seeds': …}", lambda: WG().comparison_panel(options={"seeds": [1]}), V, r"options"),
        c("range:epochs=0", lambda: WG().comparison_panel(options={}, epochs=0), V, r"epochs"),
    ],
    "front_end": [
        c("type:environ=list", lambda: WG().front_end(["VSCODE_PID"]), T, r"environ"),
        c("name:DRO_LAB_FRONT_END=foo", lambda: WG().front_end({"DRO_LAB_FRONT_END": "foo"}), V, r"DRO_LAB_FRONT_END"),
    ],
}

VIZ_NO_INPUT = {
    "PALETTE": "a constant list of colours",
    "TEMPLATE": "a constant: the name of the figures' plotly template",
    "METHODS": "lesson 07's constant read-only method registry",
    "FAMILIES": "lesson 07's constant read-only map of method families",
}

NO_INPUT = {
    "DIVERGENCES": "a constant tuple of divergence names",
    "GILS_SEARCH_SPACE": "a constant read-only search space (tune's default; tune validates a given space)",
    "Strategy": "the strategy base class: its constructor takes no arguments",
    "Batch": "a named tuple (x, y, groups) that Strategy.transform returns; fit checks what it gets",
    "ERM": "no constructor arguments",
    "UpsamplingStrategy": "no constructor arguments",
    "StaticWeightsStrategy": "no constructor arguments",
    "History": "a dataclass of training records that fit fills in (not built by users)",
    "SamplingQuality": "a dataclass of results that sampling_quality returns (not built by users)",
    "DatasetUnavailableError": "an exception class; its only argument is the message",
    "FASHION_MNIST_CLASSES": "a constant tuple of the 10 Fashion-MNIST class names",
}


def _cases():
    for name, cases in [*BAD_INPUTS.items(), *VIZ_BAD_INPUTS.items()]:
        for label, call, exc, match, pending in cases:
            marks = [pytest.mark.xfail(strict=True, reason=f"validation pending in {pending}")] if pending else []
            yield pytest.param(name, label, call, exc, match, marks=marks, id=f"{name}[{label}]")


ALL_CASES = list(_cases())
N_CASES = len(ALL_CASES)
N_NAMES = len(BAD_INPUTS) + len(VIZ_BAD_INPUTS)


def test_every_public_name_is_covered():
    public = set(dro_lab._EXPORTS)
    in_both = set(BAD_INPUTS) & set(NO_INPUT)
    assert not in_both, f"in both BAD_INPUTS and NO_INPUT: {sorted(in_both)}"
    missing = public - set(BAD_INPUTS) - set(NO_INPUT)
    assert not missing, (
        f"public names with no bad-input cases: {sorted(missing)}; add them to BAD_INPUTS "
        "in tests/test_bad_inputs.py (or to NO_INPUT with a reason)"
    )
    stale = (set(BAD_INPUTS) | set(NO_INPUT)) - public
    assert not stale, f"names in the tables that are no longer public: {sorted(stale)}"
    assert all(BAD_INPUTS[name] for name in BAD_INPUTS), "every BAD_INPUTS entry needs at least one case"


def test_a_wrong_type_is_a_type_error():
    """The one rule of dro_lab._validation: TypeError for a value of the wrong type, ValueError for a bad value."""
    wrong = [
        f"{name}[{case[0]}]"
        for table in (BAD_INPUTS, VIZ_BAD_INPUTS)
        for name, cases in table.items()
        for case in cases
        if case[0].startswith("type:") and case[2] is not TypeError
    ]
    assert not wrong, f"type cases that expect another exception than TypeError: {wrong}"


@pytest.mark.parametrize("module", FIGURE_MODULES + PANEL_MODULES + STUDY_MODULES)
def test_every_figure_and_panel_name_is_covered(module):
    mod = pytest.importorskip(module)
    public = set(mod.__all__) - {"TOY_COLORS", "TWIN_TOY"}  # constants, no input
    tables = set(VIZ_BAD_INPUTS) | set(VIZ_NO_INPUT)
    missing = public - tables
    assert not missing, (
        f"public names of {module} with no bad-input cases: {sorted(missing)}; add them to "
        "VIZ_BAD_INPUTS in tests/test_bad_inputs.py (or to VIZ_NO_INPUT with a reason)"
    )
    assert not set(VIZ_BAD_INPUTS) & set(VIZ_NO_INPUT)
    stale = tables - set(vars(VZ())) - set(vars(WG()))
    assert not stale, f"names in the figure and panel tables that are no longer public: {sorted(stale)}"


@pytest.mark.parametrize(("name", "label", "call", "exc", "match"), ALL_CASES)
def test_bad_input_is_rejected(name, label, call, exc, match):
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    err = info.value
    assert type(err) is exc or isinstance(err, exc), (
        f"{name} with {label}: expected {exc.__name__}, got {type(err).__name__}: {err}"
    )
    assert re.search(match, str(err)), f"{name} with {label}: message {str(err)!r} does not name {match!r}"


def summary() -> dict:
    """Counts for the issue note: names, cases, cases per category, pending (xfail) cases."""
    per_category, per_exception = collections.Counter(), collections.Counter()
    pending = 0
    for p in ALL_CASES:
        per_category[p.values[1].split(":")[0]] += 1
        per_exception[p.values[3].__name__] += 1
        pending += bool(p.marks)
    return {
        "names_with_cases": N_NAMES,
        "top_level_names_with_cases": len(BAD_INPUTS),
        "viz_widgets_names_with_cases": len(VIZ_BAD_INPUTS),
        "names_without_input": len(NO_INPUT) + len(VIZ_NO_INPUT),
        "cases": N_CASES,
        "pending": pending,
        "per_exception": dict(sorted(per_exception.items())),
        "per_category": dict(sorted(per_category.items())),
    }


def test_summary_counts_every_category():
    s = summary()
    assert s["cases"] >= 2 * s["names_with_cases"] - 20  # most names get several bad inputs
    assert set(s["per_category"]) == set(CATEGORIES), set(CATEGORIES) - set(s["per_category"])


if __name__ == "__main__":  # python tests/test_bad_inputs.py prints the counts
    import json

    print(json.dumps(summary(), indent=1))
