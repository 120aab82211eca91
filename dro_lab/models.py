"""Small, device-agnostic networks: the ones the papers use, and small ones for a CPU.

Every model here

* maps a batch ``x`` to logits of shape ``(batch, num_classes)``;
* exposes ``penultimate(x)``, the features ``h`` fed to the last layer, and ``.classifier``, that last
  :class:`torch.nn.Linear` (``model(x) == model.classifier(model.penultimate(x))``), for feature-space
  pictures and the last-layer gradient bound of importance sampling;
* creates no tensor on a fixed device: move it with ``model.to(device)``. :func:`make_model` builds one by name.

Paper models: :class:`SmallCNN` is the CNN of the importance-sampling paper (App. F);
:class:`DigitsCNN` is the CPU-sized digits stand-in for the networks of the doubly-robust-AT (DONE) and
hardness-weighted-sampling papers; :class:`WideResNet` (``"wrn16_1"``) is the WRN-16-1 of the
hardness-weighted-sampling paper (GPU scale).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from ._validation import check_int, check_number

__all__ = [
    "num_classes_of",
    "count_parameters",
    "LogisticRegression",
    "MLP",
    "DigitsCNN",
    "SmallCNN",
    "WideResNet",
    "available_models",
    "make_model",
]

_ACTIVATIONS: dict[str, Callable[[], nn.Module]] = {
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "gelu": nn.GELU,
    "elu": nn.ELU,
    "leaky_relu": nn.LeakyReLU,
    "sigmoid": nn.Sigmoid,
    "softplus": nn.Softplus,
}


def num_classes_of(model: nn.Module) -> int | None:
    """The number of classes of a dro_lab classifier (its ``classifier`` layer's outputs), or None if unknown."""
    classifier = getattr(model, "classifier", None)
    return getattr(classifier, "out_features", None)


def count_parameters(model: nn.Module, *, trainable_only: bool = True) -> int:
    """Number of (trainable) scalar parameters of ``model``.

    Args:
        model: any ``nn.Module``.
        trainable_only: count only the parameters with ``requires_grad=True``.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)


class _Classifier(nn.Module):
    """Shared shape of every model: ``forward(x) = classifier(penultimate(x))``."""

    classifier: nn.Linear

    def penultimate(self, x: Tensor) -> Tensor:  # pragma: no cover - overridden
        raise NotImplementedError

    def forward(self, x: Tensor) -> Tensor:
        """Logits, shape ``(batch, num_classes)``."""
        return self.classifier(self.penultimate(x))

    @property
    def num_classes(self) -> int:
        """Number of outputs."""
        return self.classifier.out_features


class LogisticRegression(_Classifier):
    """Multinomial logistic regression: one linear layer on the flattened input.

    ``penultimate(x)`` is the flattened input itself, so the last-layer gradient is the whole
    gradient (a convex model, handy for checking the theory).

    Args:
        in_features: Number of input features (after flattening).
        num_classes: Number of classes.
    """

    def __init__(self, in_features: int, num_classes: int) -> None:
        super().__init__()
        self.in_features = check_int(in_features, "in_features")
        self.classifier = nn.Linear(self.in_features, check_int(num_classes, "num_classes"))

    def penultimate(self, x: Tensor) -> Tensor:
        """The flattened input, shape ``(batch, in_features)``."""
        return x.flatten(1)


class MLP(_Classifier):
    """A fully connected network: ``Flatten → [Linear → activation → Dropout] × len(hidden) → Linear``.

    The hardness-weighted-sampling theory (its Theorem 3.1) is stated for such ReLU networks;
    with ``hidden=()`` it is :class:`LogisticRegression`.

    Args:
        in_features: Number of input features (the input is flattened).
        num_classes: Number of classes.
        hidden: Widths of the hidden layers, e.g. ``(64, 64)``.
        activation: One of ``"relu"``, ``"tanh"``, ``"gelu"``, ``"elu"``, ``"leaky_relu"``,
            ``"sigmoid"``, ``"softplus"``.
        dropout: Dropout probability after each hidden activation, in [0, 1).
    """

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        hidden: Sequence[int] = (64, 64),
        activation: str = "relu",
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        in_features = check_int(in_features, "in_features")
        num_classes = check_int(num_classes, "num_classes")
        if isinstance(hidden, int):
            hidden = (hidden,)
        hidden = tuple(check_int(h, "each hidden width") for h in hidden)
        if activation not in _ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; valid: {', '.join(_ACTIVATIONS)}")
        check_number(dropout, "dropout", low=0.0, high=1.0, high_open=True)
        self.in_features = in_features
        self.hidden = hidden
        layers: list[nn.Module] = [nn.Flatten()]
        width = in_features
        for h in hidden:
            layers += [nn.Linear(width, h), _ACTIVATIONS[activation]()]
            if dropout > 0:
                layers.append(nn.Dropout(dropout))
            width = h
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(width, num_classes)

    def penultimate(self, x: Tensor) -> Tensor:
        """The last hidden layer's output, shape ``(batch, hidden[-1])`` (flattened input if no hidden layer)."""
        return self.features(x)


def _check_image_args(in_channels: Any, image_size: Any) -> tuple[int, int]:
    return check_int(in_channels, "in_channels"), check_int(image_size, "image_size")


class DigitsCNN(_Classifier):
    """A tiny CNN for 8×8 digits, small enough to train on a CPU (~9.8 k parameters).

    ``Conv(in→w, 3, pad 1) → ReLU → Conv(w→2w, 3, pad 1) → ReLU → MaxPool 2 → Flatten →
    Linear(2w·(s/2)² → hidden) → ReLU → Linear(hidden → num_classes)``, no BatchNorm. With the defaults it
    is the digits stand-in for DONE's ResNet-18 (Sow et al., 2024, §4.1), the HWS digits experiment's net,
    ALSO's "small CNN" (§6.3) and GI-LS's (small / medium / large: ``width`` 8 / 16 / 32).

    Args:
        num_classes: Number of classes.
        in_channels: Input channels (1 for digits).
        image_size: Side of the square input, at least 2 (8 for digits).
        width: Channels of the first convolution (the second has ``2 * width``).
        hidden: Width of the hidden fully connected layer (the penultimate features).
    """

    def __init__(
        self, num_classes: int = 10, in_channels: int = 1, *, image_size: int = 8, width: int = 8, hidden: int = 32
    ) -> None:
        super().__init__()
        in_channels, image_size = _check_image_args(in_channels, image_size)
        if image_size < 2:
            raise ValueError(f"image_size must be at least 2 for the 2×2 max-pool, got {image_size}")
        width = check_int(width, "width")
        hidden = check_int(hidden, "hidden")
        side = image_size // 2
        self.in_shape = (in_channels, image_size, image_size)
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, width, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(2 * width * side * side, hidden),
            nn.ReLU(),
        )
        self.classifier = nn.Linear(hidden, check_int(num_classes, "num_classes"))

    def penultimate(self, x: Tensor) -> Tensor:
        """The hidden fully connected features, shape ``(batch, hidden)``."""
        return self.features(x)


class SmallCNN(_Classifier):
    """The small CNN of the importance-sampling paper (Appendix F), for 28×28 images.

    ``Conv(in→5, 5) → ReLU → Conv(5→10, 5) → ReLU → Flatten (10·(s−8)²) → Linear(→100) → ReLU →
    Linear(100 → num_classes)``: no padding, pooling, dropout or BatchNorm; 401 692 parameters at 28×28 for
    the paper's 2 classes; logits, not the paper's log-softmax (cross-entropy is the same loss). On the
    offline stand-in use ``load_digits(size=28)``.

    Args:
        num_classes: Number of classes.
        in_channels: Input channels (1 for MNIST / digits, 3 for CIFAR-10).
        image_size: Side of the square input, at least 9.
        channels: Output channels of the two convolutions.
        hidden: Width of the hidden fully connected layer (the penultimate features).
    """

    def __init__(
        self,
        num_classes: int = 10,
        in_channels: int = 1,
        image_size: int = 28,
        *,
        channels: tuple[int, int] = (5, 10),
        hidden: int = 100,
    ) -> None:
        super().__init__()
        in_channels, image_size = _check_image_args(in_channels, image_size)
        if image_size < 9:
            raise ValueError(
                f"image_size must be at least 9 for two unpadded 5×5 convolutions, got {image_size}; "
                "for 8×8 digits use DigitsCNN or load_digits(size=28)"
            )
        c1, c2 = (check_int(c, "channels") for c in channels)
        hidden = check_int(hidden, "hidden")
        side = image_size - 8
        self.in_shape = (in_channels, image_size, image_size)
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, c1, 5),
            nn.ReLU(),
            nn.Conv2d(c1, c2, 5),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(c2 * side * side, hidden),
            nn.ReLU(),
        )
        self.classifier = nn.Linear(hidden, check_int(num_classes, "num_classes"))

    def penultimate(self, x: Tensor) -> Tensor:
        """The hidden fully connected features, shape ``(batch, hidden)``."""
        return self.features(x)


class _PreActBlock(nn.Module):
    """Pre-activation basic block: BN → ReLU → conv3×3 → BN → ReLU → conv3×3, plus shortcut."""

    def __init__(self, in_planes: int, planes: int, stride: int, dropout: float) -> None:
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_planes)
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.shortcut = (
            nn.Conv2d(in_planes, planes, 1, stride=stride, bias=False) if stride != 1 or in_planes != planes else None
        )

    def forward(self, x: Tensor) -> Tensor:
        out = torch.relu(self.bn1(x))
        # The projection shortcut reads the pre-activated input (as in Zagoruyko & Komodakis).
        shortcut = x if self.shortcut is None else self.shortcut(out)
        out = self.conv1(out)
        out = self.conv2(self.dropout(torch.relu(self.bn2(out))))
        return out + shortcut


class WideResNet(_Classifier):
    """Wide residual network WRN-depth-k (Zagoruyko & Komodakis 2016), pre-activation blocks.

    The hardness-weighted-sampling paper trains WRN-16-1 on MNIST: ``conv3×3(in→16)``, three
    groups of ``(depth − 4) / 6`` blocks with ``16k, 32k, 64k`` channels (strides 1, 2, 2),
    BN → ReLU → global average pool → ``Linear(64k → num_classes)``. WRN-16-1 (174 778 parameters for
    1-channel input and 10 classes) is GPU-scale. Its BatchNorm makes per-sample gradients need ``eval()``.

    Args:
        num_classes: Number of classes.
        in_channels: Input channels.
        depth: Total depth, ``6N + 4`` (16 gives N = 2 blocks per group).
        widen_factor: Width multiplier k.
        dropout: Dropout between the two convolutions of each block, in [0, 1).
    """

    def __init__(
        self,
        num_classes: int = 10,
        in_channels: int = 1,
        *,
        depth: int = 16,
        widen_factor: int = 1,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        in_channels = check_int(in_channels, "in_channels")
        depth = check_int(depth, "depth")
        k = check_int(widen_factor, "widen_factor")
        if (depth - 4) % 6 != 0 or depth < 10:
            raise ValueError(f"depth must be 6N + 4 with N >= 1 (10, 16, 22, 28, ...), got {depth}")
        check_number(dropout, "dropout", low=0.0, high=1.0, high_open=True)
        n = (depth - 4) // 6
        widths = (16 * k, 32 * k, 64 * k)
        layers: list[nn.Module] = [nn.Conv2d(in_channels, 16, 3, padding=1, bias=False)]
        in_planes = 16
        for width, stride in zip(widths, (1, 2, 2)):
            for i in range(n):
                layers.append(_PreActBlock(in_planes, width, stride if i == 0 else 1, float(dropout)))
                in_planes = width
        layers += [nn.BatchNorm2d(in_planes), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten()]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(in_planes, check_int(num_classes, "num_classes"))

    def penultimate(self, x: Tensor) -> Tensor:
        """Globally pooled features, shape ``(batch, 64 * widen_factor)``."""
        return self.features(x)


# --------------------------------------------------------------------------- registry


def _image_shape(name: str, in_shape: tuple[int, ...]) -> tuple[int, int]:
    if len(in_shape) != 3 or in_shape[1] != in_shape[2]:
        raise ValueError(
            f"{name!r} needs square images, in_shape=(channels, size, size), got {in_shape}; "
            "load images with flatten=False"
        )
    return in_shape[0], in_shape[1]


def _build_logreg(in_shape, num_classes, **kw):
    return LogisticRegression(math.prod(in_shape), num_classes, **kw)


def _build_mlp(in_shape, num_classes, **kw):
    return MLP(math.prod(in_shape), num_classes, **kw)


def _build_digits_cnn(in_shape, num_classes, **kw):
    c, s = _image_shape("digits_cnn", in_shape)
    return DigitsCNN(num_classes, c, image_size=s, **kw)


def _build_small_cnn(in_shape, num_classes, **kw):
    c, s = _image_shape("small_cnn", in_shape)
    return SmallCNN(num_classes, c, s, **kw)


def _build_wrn16_1(in_shape, num_classes, **kw):
    c, _ = _image_shape("wrn16_1", in_shape)
    kw = {"depth": 16, "widen_factor": 1, **kw}
    return WideResNet(num_classes, c, **kw)


_REGISTRY: dict[str, Callable[..., nn.Module]] = {
    "logreg": _build_logreg,
    "mlp": _build_mlp,
    "digits_cnn": _build_digits_cnn,
    "small_cnn": _build_small_cnn,
    "wrn16_1": _build_wrn16_1,
}


def available_models() -> tuple[str, ...]:
    """The names :func:`make_model` accepts."""
    return tuple(_REGISTRY)


def make_model(name: str, *, in_shape: int | Sequence[int], num_classes: int, **kw: Any) -> nn.Module:
    """Build a model by name for inputs of shape ``in_shape``.

    * ``logreg``: :class:`LogisticRegression`, any ``in_shape`` (flattened);
    * ``mlp``: :class:`MLP` (``hidden``, ``activation``, ``dropout``), any ``in_shape`` (flattened);
    * ``digits_cnn``: :class:`DigitsCNN` (``width``, ``hidden``), ``in_shape`` ``(C, S, S)``;
    * ``small_cnn``: :class:`SmallCNN` (``channels``, ``hidden``), ``(C, S, S)`` with S ≥ 9;
    * ``wrn16_1``: :class:`WideResNet` of depth 16 and width k = 1, ``(C, S, S)``.

    Args:
        name: A name from :func:`available_models`.
        in_shape: Shape of one input without the batch dimension (``(1, 8, 8)`` for digits images); an int
            means ``(in_shape,)``.
        num_classes: Number of classes.
        **kw: Extra keyword arguments of the model class.

    Returns:
        The model, on the CPU, initialised from torch's global RNG (seed it with
        ``torch.manual_seed`` for a reproducible initialisation).

    Raises:
        ValueError: An unknown name (the message lists the valid ones) or an ``in_shape`` that
            does not fit the model.

    Example:
        >>> model = make_model("digits_cnn", in_shape=(1, 8, 8), num_classes=10)
        >>> model(torch.zeros(5, 1, 8, 8)).shape
        torch.Size([5, 10])
    """
    if name not in _REGISTRY:
        raise ValueError(f"unknown model {name!r}; valid names: {', '.join(_REGISTRY)}")
    if isinstance(in_shape, int) and not isinstance(in_shape, bool):
        in_shape = (in_shape,)
    try:
        in_shape = tuple(int(d) for d in in_shape)
    except TypeError:
        raise TypeError(f"in_shape must be an int or a sequence of ints, got {in_shape!r}") from None
    if not in_shape or any(d < 1 for d in in_shape):
        raise ValueError(f"in_shape must be a non-empty shape of positive sizes, got {in_shape}")
    return _REGISTRY[name](in_shape, num_classes, **kw)
