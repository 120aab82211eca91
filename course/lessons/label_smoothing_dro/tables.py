r"""The Markdown tables of lesson 06's checks: the numbers are computed in the lesson's cells (or, for the flip of
the shift's direction, by :func:`~dro_course.lessons.label_smoothing_dro.ls_dro.outward_share`); here they are
only laid out, so that each check cell reads as the computation it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from dro_course.lessons.label_smoothing_dro.ls_dro import outward_share
from dro_lab._validation import check_nonempty

__all__ = [
    "ascent_markdown",
    "dual_bound_markdown",
    "flip_markdown",
    "gamma_perturbation_markdown",
    "regulariser_ratio_markdown",
    "shift_bound_markdown",
]


def dual_bound_markdown(multiples: Sequence[float], bounds: Sequence[float]) -> str:
    r"""One row of the dual bound :math:`\gamma\rho+\mathrm{mean}\,\phi_\gamma` at each γ, a multiple of the
    concavity threshold."""
    check_nonempty(list(multiples), "multiples")
    if len(bounds) != len(multiples):
        raise ValueError(f"bounds must have one value per multiple ({len(multiples)}), got {len(bounds)}")
    head = "| γ / threshold | " + " | ".join(f"{m:g}" for m in multiples) + " |"
    rule = "|---" + "|---" * len(multiples) + "|"
    row = "| dual bound γρ + mean φ_γ | " + " | ".join(f"{b:.6f}" for b in bounds) + " |"
    return "\n".join([head, rule, row])


def regulariser_ratio_markdown(ratios: Mapping[float, torch.Tensor]) -> str:
    r"""For each multiple of the threshold, the exact :math:`(\phi_\gamma-\ell_\alpha)\cdot\gamma/\|g\|^2` over the
    samples (mean, min – max) beside the corrected factor ½ and the paper's printed 1."""
    check_nonempty(list(ratios), "ratios")
    rows = [
        "| γ / threshold | exact (φ_γ − ℓ_α)·γ/‖g‖²: mean (min – max) over the samples | corrected factor "
        "| the paper's factor |",
        "|---|---|---|---|",
    ]
    for m, r in ratios.items():
        spread = f"{float(r.mean()):.4f} ({float(r.min()):.4f} – {float(r.max()):.4f})"
        rows.append(f"| {m:g} | {spread} | ½ | 1 |")
    return "\n".join(rows)


def shift_bound_markdown(moved: Mapping[float, float], lipschitz: float, threshold: float) -> str:
    r"""For each multiple m of the threshold (γ = m × threshold), the largest distance a sample's maximiser moved
    beside the bound :math:`L_0/\gamma` and the paper's looser :math:`3L_0/\gamma`."""
    check_nonempty(list(moved), "moved")
    rows = ["| γ / threshold | largest ‖z★ − z′‖ of the samples | L₀/γ | 3L₀/γ (the paper's) |", "|---|---|---|---|"]
    for m, distance in moved.items():
        gamma = m * threshold
        rows.append(f"| {m:g} | {distance:.4f} | {lipschitz / gamma:.4f} | {3 * lipschitz / gamma:.4f} |")
    return "\n".join(rows)


def flip_markdown(model, x, y, shifted: Mapping[float, tuple], *, alpha: float) -> str:
    r"""For each α of ``shifted`` (``α -> (x_moved, cost)``, from :func:`~dro_lab.attacks.gils_shift`), the share
    of confident points (:math:`p_\text{true}>1-\alpha` at the given ``alpha``) whose margin grew, their mean margin
    change, the others' share, and the mean realised transport cost ρ̂."""
    check_nonempty(list(shifted), "shifted")
    rows = [
        f"| α | confident points (p_true > 1 − {alpha:g}): share pushed outward | their mean margin change "
        "| the others: share pushed outward | ρ̂ |",
        "|---|---|---|---|---|",
    ]
    for a, (x_moved, cost) in shifted.items():
        flip = outward_share(model, x, y, x_moved, alpha=alpha)
        rows.append(
            f"| {a:g} | {flip['confident_outward']:.2f} (n = {flip['confident']}) | {flip['confident_change']:+.3f} "
            f"| {flip['others_outward']:.2f} (n = {flip['others']}) | {float(cost.mean()):.4f} |"
        )
    return "\n".join(rows)


def ascent_markdown(rows: Sequence[tuple[int, float, float, float, float]], *, images: int | None = None) -> str:
    """The ascent's check, one row per T: ``(T, penalised objective summed over the images, mean realised cost,
    smallest pixel, largest pixel)``."""
    check_nonempty(list(rows), "rows")
    over = f"summed over {images} images" if images else "summed over the images"
    out = [f"| T | penalised objective, {over} | mean realised cost ρ̂ | pixel range |", "|---|---|---|---|"]
    for steps, value, cost, low, high in rows:
        out.append(f"| {steps} | {value:.3f} | {cost:.2e} | [{low:.2f}, {high:.2f}] |")
    return "\n".join(out)


def gamma_perturbation_markdown(differences: Mapping[str, float], *, reference: str = "10⁻³") -> str:
    """One row: for each perturbed γ, the largest pixel difference between the images generated at it and at the
    ``reference`` γ (:func:`~dro_course.lessons.label_smoothing_dro.studies.gamma_perturbation_shift`)."""
    check_nonempty(list(differences), "differences")
    head = "| γ | " + " | ".join(differences) + " |"
    rule = "|---" * (len(differences) + 1) + "|"
    row = f"| largest pixel difference from γ = {reference} | " + " | ".join(f"{v:.1e}" for v in differences.values())
    return "\n".join([head, rule, row + " |"])
