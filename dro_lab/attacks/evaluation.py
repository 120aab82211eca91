"""Robust accuracy: clean, robust, per-class, worst-class and tail accuracy under PGD, FGSM, APGD and an
AutoAttack-style cascade (through torchattacks, imported when asked for).

PGD-20 alone overstates the robustness of reweighting methods; the AutoAttack-style cascade (APGD-CE → APGD-DLR →
APGD-T → FAB-T → Square) is the evaluation Sow et al. (2024, §4) report beside it.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from .._validation import check_choice, check_int, check_module, check_number
from ..data.datasets import fetch_batch
from ..metrics import accuracy_report
from ..utils import model_device
from .gradient import NORMS, fgsm_attack, pgd_attack

__all__ = ["robust_accuracy_report"]


_REPORT_ATTACKS = ("pgd", "fgsm", "apgd-ce", "apgd-dlr", "autoattack")


def _import_torchattacks():
    try:
        import torchattacks
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the APGD / AutoAttack evaluations need torchattacks; install the 'attacks' extra: "
            "pip install 'dro-lab[attacks]'"
        ) from err
    return torchattacks


class _FrozenImageModel(torch.nn.Module):
    """``model`` seen by torchattacks: 4-D inputs (APGD assumes images), detached parameters.

    Inputs of any shape ``(n, *s)`` are passed to torchattacks as ``(n, 1, 1, prod(s))`` and reshaped
    back here; the parameters are detached in the forward (``torch.func.functional_call``), so attacks
    that call ``.backward()`` (FAB) cannot write into ``.grad``.
    """

    def __init__(self, model: torch.nn.Module, sample_shape: torch.Size):
        super().__init__()
        self.model = model
        self.sample_shape = tuple(sample_shape)

    def forward(self, x: Tensor) -> Tensor:
        params = {name: p.detach() for name, p in self.model.named_parameters()}
        x = x.reshape(x.shape[0], *self.sample_shape)
        return torch.func.functional_call(self.model, params, (x,))


def _torchattacks_attack(
    model: torch.nn.Module,
    x: Tensor,
    y: Tensor,
    *,
    name: str,
    eps: float,
    steps: int,
    norm: str,
    seed: int,
    num_classes: int,
) -> Tensor:
    """Adversarial inputs from torchattacks' APGD-CE / APGD-DLR / an AutoAttack ensemble; the global RNG untouched."""
    torchattacks = _import_torchattacks()
    wrapped = _FrozenImageModel(model, x.shape[1:])
    ta_norm = "Linf" if norm == "linf" else "L2"
    common = dict(norm=ta_norm, eps=eps, seed=seed)
    if name == "autoattack":  # AutoAttack's standard list, plus untargeted APGD-DLR; each on the survivors
        atk = torchattacks.MultiAttack(
            [
                torchattacks.APGD(wrapped, steps=steps, loss="ce", **common),
                torchattacks.APGD(wrapped, steps=steps, loss="dlr", **common),
                torchattacks.APGDT(wrapped, steps=steps, n_classes=num_classes, **common),
                torchattacks.FAB(wrapped, multi_targeted=True, n_classes=num_classes, **common),
                torchattacks.Square(wrapped, n_queries=5000, **common),
            ]
        )
    else:
        atk = torchattacks.APGD(wrapped, steps=steps, loss=name.removeprefix("apgd-"), **common)
    devices = [x.device] if x.device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):  # torchattacks reseeds the global RNG (manual_seed)
        x4 = x.reshape(x.shape[0], 1, 1, -1)
        adv = atk(x4, y)
    return adv.reshape(x.shape).to(x.dtype).detach()


def _tail_mean(values: list[float], fraction: float) -> float:
    finite = sorted(v for v in values if v == v)
    if not finite:
        return float("nan")
    m = max(1, math.ceil(round(fraction * len(finite), 9)))  # round: 0.3 * 10 must give 3, not 4
    return sum(finite[:m]) / m


def robust_accuracy_report(
    model: torch.nn.Module,
    dataset,
    *,
    attack: str = "pgd",
    eps: float,
    alpha: float | None = None,
    steps: int = 20,
    norm: str = "linf",
    batch_size: int = 256,
    generator: torch.Generator | None = None,
    tail_fraction: float = 0.3,
) -> dict:
    r"""Clean and robust accuracy of ``model`` on ``dataset`` under one attack: SA, RA, worst-class RA, RA-Tail.

    DONE's metrics (Sow et al., 2024, §4.1): SA = clean accuracy, RA-PGD / RA-AA = accuracy under PGD-20 /
    AutoAttack, RA-Tail-30 = the mean robust accuracy of the :math:`\lceil 0.3\,k\rceil` worst classes present.
    An example is robust only if classified correctly both clean and attacked (as AutoAttack counts).

    Attacks (``attack``):

    - ``"pgd"``: :func:`pgd_attack` with ``steps`` steps (PGD-20 by default), step α = ε/4 unless
      ``alpha`` is given, and **no random start** (as the Fast-BAT code DONE builds on, with 1 restart).
    - ``"fgsm"``: :func:`fgsm_attack` (L∞ only).
    - ``"apgd-ce"`` / ``"apgd-dlr"``: torchattacks' ``APGD`` with ``steps`` iterations, 1 restart,
      the cross-entropy or the DLR loss (DLR needs ≥ 3 classes).
    - ``"autoattack"``: the worst case per example over AutoAttack's standard ensemble (Croce & Hein, 2020)
      from torchattacks' parts: APGD-CE, APGD-DLR, APGD-T with ``steps`` iterations (the original: 100),
      then FAB-T and Square (5000 queries).

    torchattacks (the ``attacks`` extra) is imported only for the APGD / AutoAttack rows, seeded from
    ``generator`` (the global RNG state is restored). The model runs in eval mode (restored afterwards).

    Args:
        model: maps inputs (in the valid range [0, 1]) to logits.
        dataset: yields ``(x, y, index[, group])`` (see :func:`dro_lab.data.fetch_batch`).
        attack: one of ``"pgd"``, ``"fgsm"``, ``"apgd-ce"``, ``"apgd-dlr"``, ``"autoattack"``.
        eps: the budget ε ≥ 0 (0 gives robust = clean).
        alpha: PGD's step (default ε/4).
        steps: PGD / APGD iterations ≥ 1.
        norm: ``"linf"`` or ``"l2"``.
        batch_size: examples attacked at once.
        generator: randomness of the APGD / AutoAttack seeds.
        tail_fraction: the share of worst classes averaged into ``tail_robust_accuracy``, in (0, 1].

    Returns:
        ``clean_accuracy``, ``robust_accuracy``, ``per_class_clean_accuracy``,
        ``per_class_robust_accuracy`` (lists, ``nan`` for absent classes),
        ``worst_class_robust_accuracy``, ``tail_robust_accuracy``, and ``attack``, ``eps``, ``n``.
    """

    check_module(model)
    check_choice(attack, "attack", _REPORT_ATTACKS)
    eps = check_number(eps, "eps", low=0)
    steps = check_int(steps, "steps")
    batch_size = check_int(batch_size, "batch_size")
    check_choice(norm, "norm", NORMS)
    if attack == "fgsm" and norm != "linf":
        raise ValueError(f"norm must be 'linf' for attack='fgsm', got {norm!r}")
    alpha = eps / 4 if alpha is None else check_number(alpha, "alpha", low=0, low_open=True)
    check_number(tail_fraction, "tail_fraction", low=0, high=1, low_open=True)
    n = len(dataset)
    if n == 0:
        raise ValueError("dataset must not be empty")

    device = model_device(model, torch.device("cpu"))
    was_training = model.training
    model.eval()
    clean_pred, adv_pred, labels = [], [], []
    try:
        num_classes = None
        for start in range(0, n, batch_size):
            x, y, _, _ = fetch_batch(dataset, torch.arange(start, min(start + batch_size, n)))
            x, y = x.to(device), y.to(device)
            with torch.no_grad():
                logits = model(x)
            num_classes = num_classes or getattr(dataset, "num_classes", None) or logits.shape[1]
            if eps == 0:
                x_adv = x
            elif attack == "pgd":
                x_adv = pgd_attack(model, x, y, eps=eps, alpha=alpha, steps=steps, norm=norm, random_start=False)
            elif attack == "fgsm":
                x_adv = fgsm_attack(model, x, y, eps=eps)
            else:
                if attack == "apgd-dlr" and logits.shape[1] < 3:
                    raise ValueError(f"attack='apgd-dlr' needs at least 3 classes, the model has {logits.shape[1]}")
                seed = int(
                    torch.randint(
                        0,
                        2**31 - 1,
                        (1,),
                        generator=generator,
                        device=generator.device if generator is not None else "cpu",
                    )
                )
                x_adv = _torchattacks_attack(
                    model, x, y, name=attack, eps=eps, steps=steps, norm=norm, seed=seed, num_classes=logits.shape[1]
                )
            with torch.no_grad():
                adv_logits = model(x_adv)
            clean_ok = logits.argmax(1) == y
            clean_pred.append(logits.argmax(1).cpu())
            # robust = right on the clean AND the adversarial input (AutoAttack's robust flags start
            # from clean correctness), so RA ≤ SA even if an attack happens to fix a mistake
            adv_pred.append(torch.where(clean_ok, adv_logits.argmax(1), -1).cpu())
            labels.append(y.cpu())
    finally:
        model.train(was_training)
    y_all = torch.cat(labels)
    clean = accuracy_report(torch.cat(clean_pred), y_all, num_classes=num_classes)
    robust = accuracy_report(torch.cat(adv_pred), y_all, num_classes=num_classes)
    return {
        "attack": attack,
        "eps": eps,
        "n": robust["n"],
        "clean_accuracy": clean["accuracy"],
        "robust_accuracy": robust["accuracy"],
        "per_class_clean_accuracy": clean["per_class_accuracy"],
        "per_class_robust_accuracy": robust["per_class_accuracy"],
        "worst_class_robust_accuracy": robust["worst_class_accuracy"],
        "tail_robust_accuracy": _tail_mean(robust["per_class_accuracy"], float(tail_fraction)),
    }
