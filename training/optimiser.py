"""Adam, written out (importing ``torch.optim`` would load ``torch._dynamo``, which this app never uses)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch
from torch import nn


class Adam:
    r"""Adam (Kingma and Ba, 2015), written out: the update ``torch.optim.Adam`` makes, with its defaults.

    For every parameter :math:`\theta` with gradient :math:`g`, at step :math:`t`:

    .. math::

        m \leftarrow \beta_1 m + (1 - \beta_1)\, g,\qquad
        v \leftarrow \beta_2 v + (1 - \beta_2)\, g^2,\qquad
        \theta \leftarrow \theta - \mathrm{lr}\,
            \frac{m / (1 - \beta_1^t)}{\sqrt{v / (1 - \beta_2^t)} + \epsilon}

    Written here rather than taken from ``torch.optim``: the first ``torch.optim`` optimiser created in a
    process imports ``torch._dynamo`` (with SymPy and more), which this app never uses (docs/performance.md).
    The test suite checks it step for step against ``torch.optim.Adam``.
    """

    def __init__(self, params: Iterator[nn.Parameter], lr: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8) -> None:
        self.params = [p for p in params if p.requires_grad]
        self.lr, (self.beta1, self.beta2), self.eps = lr, betas, eps
        self.t = 0
        self.m = [torch.zeros_like(p) for p in self.params]  # first moments, one per parameter
        self.v = [torch.zeros_like(p) for p in self.params]  # second moments

    def descend(self, loss: torch.Tensor) -> float:
        """One step down `loss`'s gradient: clear the old gradients, backpropagate, update. Returns the loss."""
        self.zero_grad()
        loss.backward()
        self.step()
        return loss.item()

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        self.t += 1
        bias1, bias2 = 1 - self.beta1**self.t, 1 - self.beta2**self.t
        for p, m, v in zip(self.params, self.m, self.v, strict=True):
            if p.grad is None:
                continue
            m.mul_(self.beta1).add_(p.grad, alpha=1 - self.beta1)
            v.mul_(self.beta2).addcmul_(p.grad, p.grad, value=1 - self.beta2)
            denom = (v.sqrt() / math.sqrt(bias2)).add_(self.eps)
            p.addcdiv_(m, denom, value=-self.lr / bias1)
