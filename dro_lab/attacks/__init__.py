"""Adversarial examples and input shifts, the pieces the adversarial and GI-LS strategies call.

* :mod:`~dro_lab.attacks.gradient` — FGSM and PGD (sign / GD / Adam steps, L∞ and L2), and FGSM as an input
  transformation;
* :mod:`~dro_lab.attacks.evaluation` — :func:`robust_accuracy_report` (PGD, FGSM, APGD, an AutoAttack-style
  cascade through torchattacks);
* :mod:`~dro_lab.attacks.implicit` — DONE's implicit term through the log-barrier attack;
* :mod:`~dro_lab.attacks.transformed` — :func:`transform_accuracies`, a model's accuracy under each of several
  input transformations (the ALSO paper's robust-training criterion);
* :mod:`~dro_lab.attacks.feature_shift` — GI-LS's shift in feature space, :func:`gils_shift_report` (how far a
  shift moves the inputs and how many keep their label) and the γ for a target radius.
"""

from __future__ import annotations

from .evaluation import robust_accuracy_report
from .feature_shift import GAMMA_RANGE, gamma_for_radius, gils_shift, gils_shift_report
from .gradient import NORMS, STEP_RULES, fgsm_attack, fgsm_transform, pgd_attack
from .implicit import implicit_correction
from .transformed import transform_accuracies

__all__ = [
    "GAMMA_RANGE",
    "NORMS",
    "STEP_RULES",
    "fgsm_attack",
    "fgsm_transform",
    "gamma_for_radius",
    "gils_shift",
    "gils_shift_report",
    "implicit_correction",
    "pgd_attack",
    "robust_accuracy_report",
    "transform_accuracies",
]
