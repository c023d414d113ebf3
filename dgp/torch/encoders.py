"""Small encoders for the verification experiments: an MLP and a small CNN."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from dgp.errors import InputError, check_dim
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
    """A small CNN for ``C x H x W`` images: two conv-ReLU-maxpool blocks, then an MLP head.

    Parameters
    ----------
    in_channels : int
    image_size : int or (int, int)
        Height and width of the input images (at least 4 pixels each).
    out_dim : int
        Embedding dimension ``d``.
    channels : (int, int)
        Channels of the two conv blocks.
    hidden : int
        Width of the hidden layer of the head.

    Raises
    ------
    TypeError, ValueError
        If a size is not a positive integer or the images are smaller than 4 x 4.

    Examples
    --------
    >>> enc = ConvEncoder(image_size=8, out_dim=4)
    >>> tuple(enc(torch.zeros(3, 1, 8, 8)).shape)
    (3, 4)
    """

    def __init__(
        self,
        *,
        in_channels: int = 1,
        image_size: int | tuple[int, int],
        out_dim: int,
        channels: tuple[int, int] = (32, 64),
        hidden: int = 256,
    ) -> None:
        super().__init__()
        hw = (image_size, image_size) if isinstance(image_size, int) else tuple(image_size)
        if len(hw) != 2:
            raise InputError(f"image_size must be an int or (height, width), got {image_size!r}")
        h, w = (check_dim(v, "image_size") for v in hw)
        if min(h, w) < 4:
            raise InputError(f"image_size must be at least 4 x 4 pixels, got {h} x {w}")
        c1, c2 = _check_widths(channels, "channels")
        self.features = nn.Sequential(
            nn.Conv2d(check_dim(in_channels, "in_channels"), c1, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(c1, c2, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.head = nn.Sequential(
            nn.Flatten(),
            nn.Linear(c2 * (h // 4) * (w // 4), check_dim(hidden, "hidden")),
            nn.ReLU(),
            nn.Linear(hidden, check_dim(out_dim, "out_dim")),
        )

    def forward(self, x):
        if x.ndim == 3:
            x = x[:, None]
        return self.head(self.features(x))
