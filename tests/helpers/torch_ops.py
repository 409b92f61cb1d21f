"""What PyTorch's operators make while a piece of code runs, seen below autograd (the backward pass included)."""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class OutputShapes(TorchDispatchMode):
    """Every shape an operator returns while the mode is on, the backward pass's included."""

    def __init__(self) -> None:
        super().__init__()
        self.shapes: list[tuple[int, ...]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.shapes += [tuple(t.shape) for t in (out if isinstance(out, (tuple, list)) else [out])
                        if isinstance(t, torch.Tensor)]
        return out

    def square_maps(self, T: int) -> list[tuple[int, ...]]:
        """The shapes of attention weights over `T` positions, ``(B, H, T, T)``, among those seen."""
        return [s for s in self.shapes if len(s) == 4 and s[-2:] == (T, T)]
