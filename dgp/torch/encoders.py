"""Small encoders for the verification experiments: an MLP and a small CNN."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from dgp.errors import check_dim
from dgp.torch._compat import require_torch

torch = require_torch()
nn = torch.nn

__all__ = ["ConvEncoder", "MLPEncoder"]


def _check_widths(widths: Sequence[int], name: str) -> tuple[int, ...]:
    out = tuple(widths)
    for k, w in enumerate(out):
        check_dim(w, f"{name}[{k}]")
    return out


class MLPEncoder(nn.Module):
    """A multilayer perceptron ``in_dim -> hidden... -> out_dim`` (inputs are flattened).

    Parameters
    ----------
    in_dim : int
        Number of input features (after flattening).
    out_dim : int
        Embedding dimension ``d``.
    hidden : sequence of int
        Widths of the hidden layers (GELU activations).

    Raises
    ------
    TypeError, ValueError
        If a width is not an integer ``>= 1``.
    """

    def __init__(self, *, in_dim: int, out_dim: int, hidden: Sequence[int] = (256, 256)) -> None:
        super().__init__()
        widths = (check_dim(in_dim, "in_dim"), *_check_widths(hidden, "hidden"))
        layers: list[nn.Module] = []
        for a, b in itertools.pairwise(widths):
            layers += [nn.Linear(a, b), nn.GELU()]
        layers.append(nn.Linear(widths[-1], check_dim(out_dim, "out_dim")))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x.flatten(1))


class ConvEncoder(nn.Module):
    """A small CNN for ``C x H x W`` images: two conv blocks, then an MLP head.

    Parameters
    ----------
    in_channels : int
    image_size : int
        Height and width of the (square) input images, divisible by 4.
    out_dim : int
        Embedding dimension ``d``.
    channels : (int, int)
        Channels of the two conv blocks.
    hidden : int
        Width of the hidden layer of the head.

    Raises
    ------
    TypeError, ValueError
        If a size is not a positive integer or ``image_size`` is not divisible by 4.
    """

    def __init__(
        self,
        *,
        in_channels: int = 1,
        image_size: int,
        out_dim: int,
        channels: tuple[int, int] = (16, 32),
        hidden: int = 128,
    ) -> None:
        super().__init__()
        size = check_dim(image_size, "image_size")
        if size % 4:
            raise ValueError(f"image_size must be divisible by 4, got {size}")
        c1, c2 = _check_widths(channels, "channels")
        self.features = nn.Sequential(
            nn.Conv2d(check_dim(in_channels, "in_channels"), c1, 3, padding=1),
            nn.GELU(),
            nn.AvgPool2d(2),
            nn.Conv2d(c1, c2, 3, padding=1),
            nn.GELU(),
            nn.AvgPool2d(2),
        )
        self.head = nn.Sequential(
            nn.Flatten(),
            nn.Linear(c2 * (size // 4) ** 2, check_dim(hidden, "hidden")),
            nn.GELU(),
            nn.Linear(hidden, check_dim(out_dim, "out_dim")),
        )

    def forward(self, x):
        if x.ndim == 3:
            x = x[:, None]
        return self.head(self.features(x))
