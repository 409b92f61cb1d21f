r"""The whole Transformer block: attention, the residual stream, layer normalisation and the feed-forward network.

.. math::

    \text{post-LN (the original paper):}\quad
    h = \operatorname{LN}_1(x + \operatorname{MHA}(x)),\qquad y = \operatorname{LN}_2(h + \operatorname{FFN}(h))

    \text{pre-LN (GPT-2 and most later models):}\quad
    h = x + \operatorname{MHA}(\operatorname{LN}_1(x)),\qquad y = h + \operatorname{FFN}(\operatorname{LN}_2(h))

    \operatorname{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} + \beta,\qquad
    \operatorname{FFN}(x) = \phi(x W_1 + b_1)\, W_2 + b_2

with μ and σ² each row's (each token's) mean and biased variance, and φ ReLU or GELU. Row vectors throughout
(``x @ W``), as in the rest of `core`. The block starts from the worked example: the lesson's X (widened by
fixed columns when d_model > 4) and W_q, W_k, W_v drawn by the lesson's recipe, so that with one head the
attention sub-layer's heads are the worked example's, and seed 0 gives the lesson's numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core._checks import as_float_array, positive_int
from core.attention import causal_mask
from core.multihead_steps import MultiHeadSteps, multi_head_steps
from core.worked_example import LESSON_TOKENS, LESSON_X

ACTIVATIONS: tuple[str, ...] = ("relu", "gelu")
#: Where the norm goes: after each residual sum (the paper) or before each sub-layer (GPT-2).
PLACEMENTS: tuple[str, ...] = ("post", "pre")
#: PyTorch's default ε of nn.LayerNorm and nn.TransformerEncoderLayer.
LN_EPS = 1e-5
#: The fixed generator of the columns that widen the lesson's X beyond its 4 dimensions.
WIDENING_SEED = 2017
#: GPT-2 small's widths, for the weight count of a real model.
GPT2_SMALL = (768, 3072)


def block_input(d_model: int) -> np.ndarray:
    """X ``(3, d_model)``: the lesson's X, then (for d_model > 4) fixed columns rounded to one decimal.

    The extra columns do not depend on the seed: like the lesson's X, the input stays put while the seed
    draws other weights.
    """
    d_model = positive_int(d_model, "d_model")
    if d_model < LESSON_X.shape[1]:
        raise ValueError(f"d_model must be at least the lesson's {LESSON_X.shape[1]} dimensions, got {d_model}.")
    extra = np.round(np.random.default_rng(WIDENING_SEED).normal(size=(LESSON_X.shape[0], d_model - 4)), 1)
    X = np.concatenate([LESSON_X, extra], axis=1)  # (3, 4) | (3, d_model - 4) -> (3, d_model)
    X.setflags(write=False)
    return X


@dataclass(frozen=True)
class BlockWeights:
    """One block's parameters, applied as ``x @ W`` (row vectors)."""

    W_q: np.ndarray  # (d_model, d_model)
    W_k: np.ndarray  # (d_model, d_model)
    W_v: np.ndarray  # (d_model, d_model)
    W_o: np.ndarray  # (d_model, d_model)
    W_1: np.ndarray  # (d_model, d_ff)
    b_1: np.ndarray  # (d_ff,)
    W_2: np.ndarray  # (d_ff, d_model)
    b_2: np.ndarray  # (d_model,)
    gamma_1: np.ndarray  # (d_model,)
    beta_1: np.ndarray  # (d_model,)
    gamma_2: np.ndarray  # (d_model,)
    beta_2: np.ndarray  # (d_model,)

    @property
    def d_model(self) -> int:
        return int(self.W_q.shape[0])

    @property
    def d_ff(self) -> int:
        return int(self.W_1.shape[1])


def block_weights(seed: int, d_model: int, d_ff: int) -> BlockWeights:
    """The page's block: W_q, W_k, W_v by the lesson's recipe (rounded standard normals, first from
    ``default_rng(seed)``, as `core.worked_example.lesson_weight_matrices`), then from the same generator W_o,
    W_1, W_2 as normals of variance 1/fan_in, small biases, γ near 1 and β near 0, all rounded to two decimals.

    The attention sub-layer's and the first norm's weights are drawn before the feed-forward network's: they do not
    depend on d_ff."""
    d_model, d_ff = positive_int(d_model, "d_model"), positive_int(d_ff, "d_ff")
    rng = np.random.default_rng(seed)
    W_q, W_k, W_v = (np.round(rng.normal(0, 1, size=(d_model, d_model)), 1) for _ in range(3))
    W_o = np.round(rng.normal(0, 1 / math.sqrt(d_model), size=(d_model, d_model)), 2)
    gamma_1 = np.round(1 + rng.normal(0, 0.1, size=d_model), 2)
    beta_1 = np.round(rng.normal(0, 0.1, size=d_model), 2)
    W_1 = np.round(rng.normal(0, 1 / math.sqrt(d_model), size=(d_model, d_ff)), 2)
    b_1 = np.round(rng.normal(0, 0.1, size=d_ff), 2)
    W_2 = np.round(rng.normal(0, 1 / math.sqrt(d_ff), size=(d_ff, d_model)), 2)
    b_2 = np.round(rng.normal(0, 0.1, size=d_model), 2)
    gamma_2 = np.round(1 + rng.normal(0, 0.1, size=d_model), 2)
    beta_2 = np.round(rng.normal(0, 0.1, size=d_model), 2)
    weights = BlockWeights(W_q=W_q, W_k=W_k, W_v=W_v, W_o=W_o, W_1=W_1, b_1=b_1, W_2=W_2, b_2=b_2,
                           gamma_1=gamma_1, beta_1=beta_1, gamma_2=gamma_2, beta_2=beta_2)
    for a in vars(weights).values():
        a.setflags(write=False)
    return weights


@dataclass(frozen=True)
class LayerNormSteps:
    """One LayerNorm, row by row: each token's mean and variance, the normalised rows, then γ and β."""

    input: np.ndarray  # (T, d)
    mean: np.ndarray  # (T,): μ of each row
    var: np.ndarray  # (T,): σ² of each row (biased, as PyTorch)
    normalised: np.ndarray  # (T, d): (x − μ) / √(σ² + ε), each row mean 0, variance σ²/(σ² + ε)
    output: np.ndarray  # (T, d): γ ⊙ normalised + β


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = LN_EPS) -> LayerNormSteps:
    r"""LayerNorm over the last axis: :math:`\gamma \odot (x - \mu) / \sqrt{\sigma^2 + \varepsilon} + \beta`."""
    x = as_float_array(x, "x", min_ndim=1)
    mean = x.mean(axis=-1)  # (..., d) -> (...)
    var = ((x - mean[..., None]) ** 2).mean(axis=-1)  # (...): biased variance, 1/d
    normalised = (x - mean[..., None]) / np.sqrt(var[..., None] + eps)  # (..., d)
    output = normalised * np.asarray(gamma) + np.asarray(beta)  # (..., d) ⊙ (d,) + (d,)
    return LayerNormSteps(input=x, mean=mean, var=var, normalised=normalised, output=output)


def gelu(x: np.ndarray) -> np.ndarray:
    r"""GELU, exact (PyTorch's default): :math:`x\,\Phi(x) = \tfrac{x}{2}\,(1 + \operatorname{erf}(x/\sqrt2))`."""
    x = np.asarray(x, dtype=np.float64)
    erf = np.frompyfunc(math.erf, 1, 1)(x / math.sqrt(2)).astype(np.float64)  # elementwise erf
    return 0.5 * x * (1.0 + erf)


def relu(x: np.ndarray) -> np.ndarray:
    """ReLU: max(0, x)."""
    return np.maximum(np.asarray(x, dtype=np.float64), 0.0)


def activate(x: np.ndarray, activation: str) -> np.ndarray:
    """φ(x) for φ one of `ACTIVATIONS`."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}.")
    return relu(x) if activation == "relu" else gelu(x)


@dataclass(frozen=True)
class FeedForwardSteps:
    """The position-wise feed-forward network: widen, activate, narrow."""

    input: np.ndarray  # (T, d_model)
    pre_activation: np.ndarray  # (T, d_ff) = x W_1 + b_1
    hidden: np.ndarray  # (T, d_ff) = φ(x W_1 + b_1)
    output: np.ndarray  # (T, d_model) = hidden W_2 + b_2


def feed_forward(x: np.ndarray, weights: BlockWeights, activation: str) -> FeedForwardSteps:
    r"""FFN(x) = φ(x W_1 + b_1) W_2 + b_2, applied to every row (position) on its own."""
    x = as_float_array(x, "x", min_ndim=1)
    pre = x @ weights.W_1 + weights.b_1  # (T, d_model) @ (d_model, d_ff) + (d_ff,) -> (T, d_ff)
    hidden = activate(pre, activation)  # (T, d_ff)
    output = hidden @ weights.W_2 + weights.b_2  # (T, d_ff) @ (d_ff, d_model) + (d_model,) -> (T, d_model)
    return FeedForwardSteps(input=x, pre_activation=pre, hidden=hidden, output=output)


@dataclass(frozen=True)
class BlockSteps:
    """Every intermediate of one block, in the order they are computed for its `placement`.

    post: attention on X, residual_1 = X + attn, norm_1 of it, FFN of that, residual_2 = norm_1 + FFN, norm_2.
    pre:  norm_1 of X, attention on it, residual_1 = X + attn, norm_2 of it, FFN of that, residual_2 = residual_1
    + FFN, which is the output.
    """

    placement: str
    activation: str
    input: np.ndarray  # (T, d_model)
    attention: MultiHeadSteps  # its `output` is Concat(heads) W_o, (T, d_model)
    residual_1: np.ndarray  # (T, d_model)
    norm_1: LayerNormSteps
    ffn: FeedForwardSteps
    residual_2: np.ndarray  # (T, d_model)
    norm_2: LayerNormSteps
    output: np.ndarray  # (T, d_model)


def transformer_block(x: np.ndarray, weights: BlockWeights, n_heads: int, *, activation: str = "relu",
                      placement: str = "post", causal: bool = False, eps: float = LN_EPS) -> BlockSteps:
    """One block (no dropout) over ``x`` ``(T, d_model)``, every intermediate kept; `causal` masks the future
    as a decoder's block does."""
    x = as_float_array(x, "x", min_ndim=2)
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {PLACEMENTS}, got {placement!r}.")
    if x.ndim != 2 or x.shape[1] != weights.d_model:
        raise ValueError(f"x must be (tokens, d_model = {weights.d_model}), got shape {x.shape}.")
    qkvo = (weights.W_q, weights.W_k, weights.W_v, weights.W_o)
    mask = causal_mask(x.shape[0]) if causal else None  # (T, T), True = may attend
    if placement == "post":
        attention = multi_head_steps(x, *qkvo, n_heads, mask)  # (T, d_model)
        residual_1 = x + attention.output  # x + MHA(x)
        norm_1 = layer_norm(residual_1, weights.gamma_1, weights.beta_1, eps)  # h = LN_1(x + MHA(x))
        ffn = feed_forward(norm_1.output, weights, activation)
        residual_2 = norm_1.output + ffn.output  # h + FFN(h)
        norm_2 = layer_norm(residual_2, weights.gamma_2, weights.beta_2, eps)  # y = LN_2(h + FFN(h))
        output = norm_2.output
    else:
        norm_1 = layer_norm(x, weights.gamma_1, weights.beta_1, eps)  # LN_1(x)
        attention = multi_head_steps(norm_1.output, *qkvo, n_heads, mask)
        residual_1 = x + attention.output  # h = x + MHA(LN_1(x))
        norm_2 = layer_norm(residual_1, weights.gamma_2, weights.beta_2, eps)  # LN_2(h)
        ffn = feed_forward(norm_2.output, weights, activation)
        residual_2 = residual_1 + ffn.output  # y = h + FFN(LN_2(h))
        output = residual_2
    return BlockSteps(placement=placement, activation=activation, input=x, attention=attention,
                      residual_1=residual_1, norm_1=norm_1, ffn=ffn, residual_2=residual_2, norm_2=norm_2,
                      output=output)


def lesson_block(seed: int = 0, d_model: int = 4, n_heads: int = 1, d_ff: int | None = None, *,
                 activation: str = "relu", placement: str = "post") -> BlockSteps:
    """The page's block: the lesson's tokens (`block_input`) through `block_weights` (d_ff = 4·d_model by default)."""
    d_ff = 4 * d_model if d_ff is None else d_ff
    return transformer_block(block_input(d_model), block_weights(seed, d_model, d_ff), n_heads,
                             activation=activation, placement=placement)


@dataclass(frozen=True)
class WeightCounts:
    """The weights of one block's two sub-layers (biases and norms aside)."""

    d_model: int
    d_ff: int
    attention: int  # 4 · d_model²: W_q, W_k, W_v, W_o
    ffn: int  # 2 · d_model · d_ff: W_1, W_2

    @property
    def ffn_share(self) -> float:
        """The feed-forward network's share of the two sub-layers' weights."""
        return self.ffn / (self.attention + self.ffn)


def weight_counts(d_model: int, d_ff: int) -> WeightCounts:
    """Count the weight matrices' entries: attention's four d_model × d_model, the FFN's d_model × d_ff and back."""
    d_model, d_ff = positive_int(d_model, "d_model"), positive_int(d_ff, "d_ff")
    return WeightCounts(d_model=d_model, d_ff=d_ff, attention=4 * d_model * d_model, ffn=2 * d_model * d_ff)


@dataclass(frozen=True)
class PermutationCheck:
    """FFN of the shuffled tokens against the FFN's output shuffled the same way."""

    perm: tuple[int, ...]
    of_shuffled: np.ndarray  # (T, d_model) = FFN(P x)
    shuffled_output: np.ndarray  # (T, d_model) = P FFN(x)
    max_difference: float  # max |FFN(P x) − P FFN(x)|: exactly 0, row by row the same arithmetic


def ffn_permutation_check(x: np.ndarray, weights: BlockWeights, perm: tuple[int, ...],
                          activation: str = "relu") -> PermutationCheck:
    """Shuffle the rows of x by `perm` (row i of P x is row perm[i] of x) and compare FFN(P x) with P FFN(x)."""
    x = as_float_array(x, "x", min_ndim=2)
    p = np.asarray(perm, dtype=int)
    if sorted(p.tolist()) != list(range(x.shape[0])):
        raise ValueError(f"perm must be a permutation of 0..{x.shape[0] - 1}, got {tuple(perm)}.")
    of_shuffled = feed_forward(x[p], weights, activation).output  # FFN(P x)
    shuffled_output = feed_forward(x, weights, activation).output[p]  # P FFN(x)
    return PermutationCheck(perm=tuple(int(i) for i in p), of_shuffled=of_shuffled, shuffled_output=shuffled_output,
                            max_difference=float(np.max(np.abs(of_shuffled - shuffled_output))))


__all__ = ["ACTIVATIONS", "GPT2_SMALL", "LESSON_TOKENS", "LN_EPS", "PLACEMENTS", "BlockSteps", "BlockWeights",
           "FeedForwardSteps", "LayerNormSteps", "PermutationCheck", "WeightCounts", "activate", "block_input",
           "block_weights", "feed_forward", "ffn_permutation_check", "gelu", "layer_norm", "lesson_block", "relu",
           "transformer_block", "weight_counts"]
