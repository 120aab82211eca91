"""Batch transformations: the data-mixing baselines of the GI-LS paper (Mixup, CutMix, Cutout), and the input
transformations of the ALSO paper's robust-training experiment (§6) as groups.

Every random draw comes from the ``generator`` passed in (the training engine's), so runs repeat. The input
transformations are built as callables ``t(x, y, model, generator) -> x'``, the form
:class:`dro_lab.TransformGroupsStrategy` takes (an attack such as :func:`dro_lab.attacks.fgsm_transform` is one
too); torchvision is imported when a rotation or a blur is applied.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from .._validation import check_bounds, check_int, check_number
from ..losses import check_num_classes

__all__ = [
    "mixup_batch",
    "cutmix_batch",
    "cutout_batch",
    "InputTransform",
    "identity_transform",
    "rotation_transform",
    "noise_transform",
    "blur_transform",
    "shift_transform",
]


def _beta_draw(beta_param: float, generator: torch.Generator | None) -> float:
    """λ ~ Beta(a, a) by inversion of a uniform drawn from ``generator`` (torch's Beta takes no generator)."""
    from scipy.special import betaincinv

    u = float(torch.rand((), generator=generator, dtype=torch.float64))
    return float(betaincinv(beta_param, beta_param, u))


def _one_hot(y: Tensor, num_classes: int, dtype: torch.dtype) -> Tensor:
    if y.dim() == 2 and y.dtype.is_floating_point:
        return y.to(dtype)
    return F.one_hot(y.long(), check_num_classes(num_classes)).to(dtype)


def _perm(b: int, generator: torch.Generator | None, device: torch.device) -> Tensor:
    gen_device = generator.device if generator is not None else torch.device("cpu")
    return torch.randperm(b, generator=generator, device=gen_device).to(device)


def mixup_batch(
    x: Tensor, y: Tensor, num_classes: int, *, beta_param: float = 1.0, generator: torch.Generator | None = None
) -> tuple[Tensor, Tensor, float, Tensor]:
    r"""Mixup (Zhang et al. 2018): mixed inputs and labels with one λ per batch.

    :math:`\tilde x=\lambda x+(1-\lambda)x_\pi`, :math:`\tilde y=\lambda e_y+(1-\lambda)e_{y_\pi}`.

    One λ ~ Beta(a, a) per batch and a random permutation π, both from ``generator``. ``y`` may
    already be soft ``(b, k)``. Returns ``(x_mix, soft_targets, λ, π)``.
    """
    a = check_number(beta_param, "beta_param", low=0, low_open=True)
    lam = _beta_draw(a, generator)
    perm = _perm(x.shape[0], generator, x.device)
    onehot = _one_hot(y, num_classes, x.dtype)
    return lam * x + (1 - lam) * x[perm], lam * onehot + (1 - lam) * onehot[perm], lam, perm


def _uniform_int(high: int, generator: torch.Generator | None) -> int:
    return int(torch.randint(high, (), generator=generator))


def cutmix_batch(
    x: Tensor, y: Tensor, num_classes: int, *, beta_param: float = 1.0, generator: torch.Generator | None = None
) -> tuple[Tensor, Tensor, float, tuple[int, int, int, int], Tensor]:
    r"""CutMix (Yun et al. 2019): paste a box of a permuted batch; mix the labels by the kept area.

    As the official code: λ ~ Beta(a, a); a box of side ⌊H√(1−λ)⌋ × ⌊W√(1−λ)⌋ centred at a uniform
    pixel, clipped to the image; one box per batch; the label weight is the area actually kept,
    :math:`\lambda' = 1 - \text{box area}/(HW)`. ``x`` must be ``(b, c, H, W)``. Returns
    ``(x_mix, soft_targets, λ', (top, bottom, left, right), π)``.
    """
    if x.dim() != 4:
        raise ValueError(f"cutmix needs image batches (b, c, H, W), got shape {tuple(x.shape)}")
    a = check_number(beta_param, "beta_param", low=0, low_open=True)
    lam = _beta_draw(a, generator)
    perm = _perm(x.shape[0], generator, x.device)
    h, w = x.shape[-2:]
    cut = math.sqrt(1.0 - lam)
    ch, cw = int(h * cut), int(w * cut)
    cy, cx = _uniform_int(h, generator), _uniform_int(w, generator)
    top, bottom = min(max(cy - ch // 2, 0), h), min(max(cy + ch // 2, 0), h)
    left, right = min(max(cx - cw // 2, 0), w), min(max(cx + cw // 2, 0), w)
    out = x.clone()
    out[:, :, top:bottom, left:right] = x[perm][:, :, top:bottom, left:right]
    kept = 1.0 - (bottom - top) * (right - left) / (h * w)
    onehot = _one_hot(y, num_classes, x.dtype)
    return out, kept * onehot + (1 - kept) * onehot[perm], kept, (top, bottom, left, right), perm


def cutout_batch(x: Tensor, *, size: int, generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
    """Cutout (DeVries & Taylor 2017): zero a ``size`` × ``size`` square per image at a uniform centre, clipped.

    Returns ``(x_cut, mask)``, the mask ``(b, 1, H, W)`` being 0 on the cut pixels and 1 elsewhere.
    """
    if x.dim() != 4:
        raise ValueError(f"cutout needs image batches (b, c, H, W), got shape {tuple(x.shape)}")
    size = check_int(size, "size")
    b, h, w = x.shape[0], x.shape[-2], x.shape[-1]
    gen_device = generator.device if generator is not None else torch.device("cpu")
    cy = torch.randint(h, (b,), generator=generator, device=gen_device).to(x.device)
    cx = torch.randint(w, (b,), generator=generator, device=gen_device).to(x.device)
    rows = torch.arange(h, device=x.device).view(1, h, 1)
    cols = torch.arange(w, device=x.device).view(1, 1, w)
    lo_y, lo_x = (cy - size // 2).view(b, 1, 1), (cx - size // 2).view(b, 1, 1)
    inside = (rows >= lo_y) & (rows < lo_y + size) & (cols >= lo_x) & (cols < lo_x + size)
    mask = (~inside).to(x.dtype).unsqueeze(1)
    return x * mask, mask


#: An input transformation ``t(x, y, model, generator) -> x'`` (a batch in, a batch of the same shape out).
InputTransform = Callable[[Tensor, Tensor, torch.nn.Module, torch.Generator], Tensor]


def identity_transform() -> InputTransform:
    """The input unchanged (the clean group)."""
    return lambda x, y, model, generator: x


def rotation_transform(degrees: float = 20.0) -> InputTransform:
    """A rotation by ``+degrees`` or ``−degrees`` (one sign per batch, drawn from the generator); needs torchvision."""
    degrees = check_number(degrees, "degrees")

    def rotate(x, y, model, generator):
        import torchvision.transforms.v2.functional as TF  # optional dependency (the vision extra)

        sign = 1.0 if float(torch.rand((), generator=generator)) < 0.5 else -1.0
        return TF.rotate(x, degrees * sign)

    return rotate


def noise_transform(sigma: float = 0.3, clamp: tuple[float, float] | None = (0.0, 1.0)) -> InputTransform:
    """Gaussian pixel noise of standard deviation ``sigma`` (drawn from the generator), clamped to the input range."""
    sigma = check_number(sigma, "sigma", low=0)
    clamp = check_bounds(clamp)

    def noise(x, y, model, generator):
        out = x + sigma * torch.randn(x.shape, generator=generator).to(x.device)
        return out.clamp(*clamp) if clamp is not None else out

    return noise


def blur_transform(kernel_size: int = 3, sigma: float = 1.0) -> InputTransform:
    """A Gaussian blur of the images (``kernel_size`` odd, ``sigma`` in pixels); needs torchvision."""
    kernel_size = check_int(kernel_size, "kernel_size")
    if kernel_size % 2 == 0:
        raise ValueError(f"kernel_size must be odd, got {kernel_size}")
    sigma = check_number(sigma, "sigma", low=0, low_open=True)

    def blur(x, y, model, generator):
        import torchvision.transforms.v2.functional as TF  # optional dependency (the vision extra)

        return TF.gaussian_blur(x, kernel_size=[kernel_size, kernel_size], sigma=[sigma, sigma])

    return blur


def shift_transform(pixels: int = 1) -> InputTransform:
    """The images shifted right by ``pixels`` columns, zeros entering from the left."""
    pixels = check_int(pixels, "pixels")
    return lambda x, y, model, generator: F.pad(x, (pixels, 0, 0, 0))[..., :, :-pixels]
