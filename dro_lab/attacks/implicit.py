"""DONE's implicit term (Sow et al., 2024, §3.2): the log-barrier attack's implicit-gradient correction."""

from __future__ import annotations

import torch
from torch import Tensor

from .._validation import check_number

__all__ = ["implicit_correction"]


def implicit_correction(
    losses: Tensor,
    x_adv: Tensor,
    x: Tensor,
    weights: Tensor,
    *,
    eps: float,
    barrier: float,
    clamp: tuple[float, float] = (0.0, 1.0),
    tol: float = 1e-7,
) -> Tensor:
    r"""CID's implicit term through the log-barrier attack, with the Hessian of the attack loss neglected.

    Sow et al. (2024), §3.2: Proposition 1 with :math:`\nabla^2_\delta\ell'\approx0`, as the text after it proposes.

    :math:`\mathrm{corr}=\sum_i\omega_i\langle G_i,\ \mathrm{sg}(C_i^{-1}G_i)\rangle`,
    :math:`G_i=\nabla_\delta\ell_i` at the attack's δ (built with ``create_graph`` so that its θ-gradient is
    :math:`\nabla_{\theta\delta}\ell_i\,C_i^{-1}G_i`),
    :math:`[C_i]_{jj}=c\,(1/(u_j-\delta_j)^2+1/(\delta_j-l_j)^2)`, :math:`u_j=\min(\epsilon, hi-x_j)`,
    :math:`l_j=-\min(\epsilon, x_j-lo)`, and :math:`C^{-1}=0` on coordinates at a face of the box (where
    Proposition 1's :math:`\gamma_k=1/(b_k-a_k^\top\delta)^2` is infinite).
    ``x_adv`` must require grad and ``losses`` must come from it; the model should have no batch-dependent
    layers in train mode (BatchNorm couples the examples, so the input gradient of the summed loss is not
    each example's own).

    Cost: one input-gradient pass that records its graph (``G``), O(p) elementwise work for :math:`C^{-1}`, and,
    in the caller's backward, one double backward through that pass. The weights are folded into the stopped
    factor (:math:`\mathrm{corr}=\langle G,\ \mathrm{sg}(\omega\odot C^{-1}G)\rangle`), so the graph gains only a
    product and a sum. Only the parameters need this backward: :meth:`DONEStrategy.backward` skips ``x_adv``'s.

    Args:
        losses: the per-sample losses at ``x_adv``, with their graph.
        x_adv, x: the attack's inputs (requiring grad) and the clean ones.
        weights: ω, one per example (detached).
        eps, clamp: the attack's ε and valid range; ``barrier``: c > 0.
        tol: coordinates within ``tol`` of a face of the box count as on it.
    """
    check_number(barrier, "barrier", low=0, low_open=True)
    check_number(eps, "eps", low=0)
    if x_adv.shape != x.shape:
        raise ValueError(f"x_adv must have the shape of x {tuple(x.shape)}, got {tuple(x_adv.shape)}")
    if losses.shape != (x.shape[0],):
        raise ValueError(f"losses must have one entry per example ({x.shape[0]},), got {tuple(losses.shape)}")
    if weights.shape != losses.shape:
        raise ValueError(f"weights must have the shape of losses {tuple(losses.shape)}, got {tuple(weights.shape)}")
    if not bool(torch.isfinite(losses.detach()).all()):
        raise ValueError("losses contain NaN or inf")
    return _implicit_correction(losses, x_adv, x, weights, eps=eps, barrier=barrier, clamp=clamp, tol=tol)


def _implicit_correction(
    losses: Tensor,
    x_adv: Tensor,
    x: Tensor,
    weights: Tensor,
    *,
    eps: float,
    barrier: float,
    clamp: tuple[float, float] = (0.0, 1.0),
    tol: float = 1e-7,
) -> Tensor:
    """:func:`implicit_correction` unchecked and without a host sync (DONE's per-batch path)."""
    (grad,) = torch.autograd.grad(losses, x_adv, grad_outputs=torch.ones_like(losses), create_graph=True)
    with torch.no_grad():
        xa = x_adv.detach()
        # the distances u_j − δ_j and δ_j − l_j to the box's faces min(x + ε, hi) and max(x − ε, lo)
        gap_u = torch.clamp(x + eps, max=clamp[1]).sub_(xa)
        gap_l = xa - torch.clamp(x - eps, min=clamp[0])
        interior = torch.minimum(gap_u, gap_l) > tol
        gap_u.square_()
        gap_l.square_()
        # C⁻¹ = 1 / (c (1/gu² + 1/gl²)) = gu² gl² / (c (gu² + gl²)); 0 off the interior, where γ_k = ∞
        c_inv = torch.where(interior, (gap_u * gap_l).div_((gap_u + gap_l).mul_(barrier)), 0.0)
        v = c_inv.mul_(grad).mul_(weights.detach().reshape(-1, *([1] * (grad.dim() - 1))))
    return (grad * v).sum()
