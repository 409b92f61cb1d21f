r"""What writing costs with and without the key-value cache, in multiply-adds of the decoder's matrix products.

One pass that reads ``n`` new positions against ``T_k`` keys costs, per layer,

.. math:: \underbrace{4 n d^2}_{W_q, W_k, W_v, W_o} + \underbrace{2 n T_k d}_{Q K^\top,\ A V}
          + \underbrace{8 n d^2}_{\text{MLP},\ d \to 4d \to d},

and the readout ``n d V``. Without the cache, the step that writes word ``t + 1`` reads all ``t`` words again
(``n = T_k = t``); with it, the prompt is read once and each later step reads one word (``n = 1``, ``T_k = t``).
Softmax, layer norm and additions are left out: they grow like ``n d`` or ``n T_k``, not like a product.
"""

from __future__ import annotations

from dataclasses import dataclass

from decoder.config import DecoderConfig
from decoder.language import VOCABULARY


def pass_multiply_adds(config: DecoderConfig, n_read: int, n_keys: int) -> int:
    """Multiply-adds of one pass reading `n_read` new positions against `n_keys` keys."""
    d = config.d_model
    per_layer = 4 * n_read * d * d + 2 * n_read * n_keys * d + 8 * n_read * d * d
    return config.n_layers * per_layer + n_read * d * len(VOCABULARY)


@dataclass(frozen=True)
class StepCost:
    """One writing step: the positions it attends over, the K and V rows it computes and reuses, and the work."""

    keys: int
    computed: int
    reused: int
    with_cache: int
    without_cache: int


def step_costs(config: DecoderConfig, n_prompt: int, n_text: int) -> list[StepCost]:
    """One `StepCost` per step that chose a word after the prompt, up to a text of `n_text` words."""
    costs = []
    for keys in range(n_prompt, n_text + 1):
        computed = n_prompt if keys == n_prompt else 1  # the first step reads the whole prompt
        costs.append(StepCost(keys, computed, keys - computed, pass_multiply_adds(config, computed, keys),
                              pass_multiply_adds(config, keys, keys)))
    return costs
