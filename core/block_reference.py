r"""PyTorch's own Transformer block holding the page's weights: ``torch.nn.TransformerEncoderLayer``.

PyTorch multiplies by the transposed weight (``x @ W.T``, the ``nn.Linear`` convention), so with our row-vector
``x @ W`` convention:

.. math::

    \texttt{self\_attn.in\_proj\_weight} = [W_q^\top; W_k^\top; W_v^\top],\quad
    \texttt{self\_attn.out\_proj.weight} = W_o^\top,\quad
    \texttt{linear1.weight} = W_1^\top,\quad \texttt{linear2.weight} = W_2^\top

The attention's biases are 0 (the lesson's attention has none); ``linear1.bias`` = b_1, ``linear2.bias`` = b_2,
``norm1`` = (γ_1, β_1), ``norm2`` = (γ_2, β_2). ``norm_first=True`` is pre-LN, False post-LN.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn

from core._checks import as_float_array
from core.transformer_block import ACTIVATIONS, LN_EPS, PLACEMENTS, BlockWeights


def empty_encoder_layer(d_model: int, n_heads: int, d_ff: int, *, activation: str = "relu", placement: str = "post",
                        dtype: torch.dtype = torch.float64) -> nn.TransformerEncoderLayer:
    """A ``TransformerEncoderLayer(d_model, n_heads, d_ff, dropout=0, batch_first=True)`` in eval mode, its
    parameters on PyTorch's "meta" device (shapes and types, no values) until `load_block_weights` gives them the
    page's: nothing drawn from PyTorch's random generator, and no memory filled only to be overwritten."""
    if activation not in ACTIVATIONS or placement not in PLACEMENTS:
        raise ValueError(f"activation must be one of {ACTIVATIONS} and placement one of {PLACEMENTS}, "
                         f"got {activation!r} and {placement!r}.")
    if d_model % n_heads:
        raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}.")
    layer = nn.TransformerEncoderLayer(d_model, n_heads, dim_feedforward=d_ff, dropout=0.0, activation=activation,
                                       layer_norm_eps=LN_EPS, batch_first=True, norm_first=placement == "pre",
                                       device="meta", dtype=dtype)
    return layer.eval()


def load_block_weights(layer: nn.TransformerEncoderLayer, weights: BlockWeights) -> nn.TransformerEncoderLayer:
    """Give `layer` (of their d_model and d_ff) `weights`, transposed as PyTorch holds them: copied into its
    parameters, or, for a layer still on the meta device (`empty_encoder_layer`), as its parameters; returns it."""
    d_model = weights.d_model
    if (layer.linear1.in_features, layer.linear1.out_features) != (d_model, weights.d_ff):
        raise ValueError(f"a layer of d_model {layer.linear1.in_features} and d_ff {layer.linear1.out_features} "
                         f"cannot hold weights of d_model {d_model} and d_ff {weights.d_ff}.")
    in_proj = np.concatenate([weights.W_q.T, weights.W_k.T, weights.W_v.T], axis=0)  # -> (3 d_model, d_model)
    values = {
        "self_attn.in_proj_weight": in_proj, "self_attn.in_proj_bias": np.zeros(3 * d_model),
        "self_attn.out_proj.weight": weights.W_o.T, "self_attn.out_proj.bias": np.zeros(d_model),
        "linear1.weight": weights.W_1.T, "linear1.bias": weights.b_1,  # (d_ff, d_model), (d_ff,)
        "linear2.weight": weights.W_2.T, "linear2.bias": weights.b_2,  # (d_model, d_ff), (d_model,)
        "norm1.weight": weights.gamma_1, "norm1.bias": weights.beta_1,
        "norm2.weight": weights.gamma_2, "norm2.bias": weights.beta_2,
    }
    params = dict(layer.named_parameters())
    if any(p.is_meta for p in params.values()):  # nothing to copy into: the values become its parameters
        layer.load_state_dict({name: torch.tensor(np.asarray(value), dtype=params[name].dtype)
                               for name, value in values.items()}, strict=True, assign=True)
        return layer
    with torch.no_grad():
        for name, value in values.items():
            params[name].copy_(torch.tensor(np.asarray(value), dtype=params[name].dtype))
    return layer


def torch_encoder_layer(weights: BlockWeights, n_heads: int, *, activation: str = "relu", placement: str = "post",
                        dtype: torch.dtype = torch.float64) -> nn.TransformerEncoderLayer:
    """A ``TransformerEncoderLayer(d_model, n_heads, d_ff, dropout=0, batch_first=True)`` holding `weights`."""
    layer = empty_encoder_layer(weights.d_model, n_heads, weights.d_ff, activation=activation, placement=placement,
                                dtype=dtype)
    return load_block_weights(layer, weights)


def torch_block_outputs(x: np.ndarray, weights: BlockWeights, n_heads: int, *, activation: str = "relu",
                        placement: str = "post", causal: tuple[bool, ...] = (False, True),
                        layer: nn.TransformerEncoderLayer | None = None) -> list[np.ndarray]:
    """``TransformerEncoderLayer`` (float64) on ``x`` ``(T, d_model)`` with `weights`, once per entry of `causal`
    (a causal mask where True), all in one batch: one copy of ``x`` per entry, each under its own mask. `layer`: an
    `empty_encoder_layer` of these sizes, activation and placement to load the weights into (it then holds them),
    instead of a new one."""
    x = as_float_array(x, "x", min_ndim=2)
    if layer is None:
        layer = torch_encoder_layer(weights, n_heads, activation=activation, placement=placement)
    else:
        load_block_weights(layer, weights)
    t = x.shape[0]
    xt = torch.tensor(x, dtype=torch.float64).expand(len(causal), t, x.shape[1])  # (T, d) -> (B, T, d)
    future = nn.Transformer.generate_square_subsequent_mask(t, dtype=torch.float64)  # (T, T): −∞ above the diagonal
    masks = torch.stack([future if masked else torch.zeros_like(future) for masked in causal])  # (B, T, T)
    src_mask = masks.repeat_interleave(n_heads, dim=0)  # (B, T, T) -> (B · H, T, T): every head of a copy its mask
    with torch.no_grad():
        outputs = layer(xt, src_mask=src_mask).numpy()  # (B, T, d)
    return list(outputs)


def torch_block_output(x: np.ndarray, weights: BlockWeights, n_heads: int, *, activation: str = "relu",
                       placement: str = "post", causal: bool = False) -> np.ndarray:
    """``TransformerEncoderLayer`` (float64) on ``x`` ``(T, d_model)`` with `weights`; a causal mask if `causal`."""
    (out,) = torch_block_outputs(x, weights, n_heads, activation=activation, placement=placement, causal=(causal,))
    return out
