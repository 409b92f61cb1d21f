"""Adam, written out (importing ``torch.optim`` would load ``torch._dynamo``, which this app never uses)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch
from torch import nn
from torch.nn.utils import parameters_to_vector, vector_to_parameters


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

    Every parameter becomes a view of one vector of all of them (`flat`), so a step updates them all at once
    rather than one parameter after another (a small model has dozens).
    """

    def __init__(self, params: Iterator[nn.Parameter], lr: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8) -> None:
        self.params = [p for p in params if p.requires_grad]
        if not self.params:
            raise ValueError("Adam needs at least one parameter that requires a gradient.")
        self.lr, (self.beta1, self.beta2), self.eps = lr, betas, eps
        self.t = 0
        self.flat = parameters_to_vector(self.params).detach()  # (n,) every parameter's numbers, in order
        vector_to_parameters(self.flat, self.params)  # each parameter is now a view of its slice of `flat`
        self.m = torch.zeros_like(self.flat)  # (n,) first moments
        self.v = torch.zeros_like(self.flat)  # (n,) second moments

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
        """The update above for every parameter; one without a gradient (unused by the loss) keeps its value and
        its moments."""
        self.t += 1
        if all(p.grad is not None for p in self.params):
            self._update(self.flat, parameters_to_vector(p.grad for p in self.params), self.m, self.v)
            return
        offset = 0
        for p in self.params:
            n = p.numel()
            if p.grad is not None:
                self._update(p, p.grad, self.m[offset:offset + n].view_as(p), self.v[offset:offset + n].view_as(p))
            offset += n

    def _update(self, theta: torch.Tensor, g: torch.Tensor, m: torch.Tensor, v: torch.Tensor) -> None:
        """Adam's update of `theta` in place, with its gradient `g` and its moments `m` and `v` (all one shape)."""
        bias1, bias2 = 1 - self.beta1**self.t, 1 - self.beta2**self.t
        m.mul_(self.beta1).add_(g, alpha=1 - self.beta1)
        v.mul_(self.beta2).addcmul_(g, g, value=1 - self.beta2)
        denom = (v.sqrt() / math.sqrt(bias2)).add_(self.eps)
        theta.addcdiv_(m, denom, value=-self.lr / bias1)
