r"""The original Transformer's three attentions: encoder, masked decoder, and cross-attention.

One layer of each, one head each, so every weight map can be drawn:

.. math::

    \begin{aligned}
    X_{src} &= E(\text{src}) + PE, & M &= X_{src} + \operatorname{Attn}(X_{src} W_q^{enc},\, X_{src} W_k^{enc},\,
        X_{src} W_v^{enc})\\
    X_{tgt} &= E(\text{tgt}) + PE, & H &= X_{tgt} + \operatorname{Attn}_{\text{causal}}(X_{tgt} W_q^{dec},\,
        X_{tgt} W_k^{dec},\, X_{tgt} W_v^{dec})\\
    & & Y &= H + \operatorname{Attn}(H W_q^{x},\, M W_k^{x},\, M W_v^{x})
    \end{aligned}

The encoder's output ``M`` (the *memory*) is the only thing the decoder sees of the
source sentence: cross-attention takes its queries from the decoder (``T_tgt`` rows)
and its keys and values from ``M`` (``T_src`` rows), so its weight map is
``(T_tgt, T_src)``, square only when the two sentences happen to have the same length.

The residual connections (``X + Attn(...)``) are the paper's; its layer norms,
feed-forward blocks and extra heads are left out to keep one map per attention.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core._checks import as_float_array, positive_int
from core.attention import causal_mask, scaled_dot_product_attention
from core.embeddings import embed_tokens, random_projections
from core.positional import positional_encoding


@dataclass(frozen=True)
class AttentionBlock:
    """One single-head attention and everything that went into it (arrays are read-only).

    Shapes, with ``T_q`` queries and ``T_k`` keys: Q ``(T_q, d_model)``; K, V ``(T_k, d_model)``;
    weights and mask ``(T_q, T_k)``; attended ``= weights @ V`` ``(T_q, d_model)``.
    ``mask`` is None when every query may attend to every key.
    """

    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    weights: np.ndarray
    attended: np.ndarray
    mask: np.ndarray | None


@dataclass(frozen=True)
class EncoderDecoderAttention:
    """One encoder layer and one decoder layer, every intermediate kept (arrays are read-only).

    Shapes: X_src, memory ``(T_src, d_model)``; X_tgt, decoder_hidden, output ``(T_tgt, d_model)``;
    ``encoder.weights`` ``(T_src, T_src)``, ``decoder.weights`` ``(T_tgt, T_tgt)``,
    ``cross.weights`` ``(T_tgt, T_src)``.
    """

    src_tokens: tuple[str, ...]
    tgt_tokens: tuple[str, ...]
    X_src: np.ndarray
    X_tgt: np.ndarray
    encoder: AttentionBlock
    memory: np.ndarray
    decoder: AttentionBlock
    decoder_hidden: np.ndarray
    cross: AttentionBlock
    output: np.ndarray

    @property
    def d_model(self) -> int:
        """Embedding width, also the width of every query, key and value here (one head)."""
        return int(self.X_src.shape[-1])


def attend(
    x_query: np.ndarray,
    x_memory: np.ndarray,
    W_q: np.ndarray,
    W_k: np.ndarray,
    W_v: np.ndarray,
    mask: np.ndarray | None = None,
) -> AttentionBlock:
    r"""Project and attend: queries from `x_query`, keys and values from `x_memory`.

    .. math::

        Q = X_{query} W_q,\quad K = X_{memory} W_k,\quad V = X_{memory} W_v,\quad
        A = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right),\quad \text{attended} = A V

    Self-attention is the call with ``x_query is x_memory``; cross-attention passes the
    decoder's states as `x_query` and the encoder's output as `x_memory`. That is the
    whole difference between the two.

    Args:
        x_query: ``(T_q, d_model)``, one row per position that asks.
        x_memory: ``(T_k, d_model)``, one row per position that can be looked at.
        W_q, W_k, W_v: ``(d_model, d_k)`` projection matrices, applied as ``x @ W``.
        mask: optional boolean ``(T_q, T_k)``, True = may attend.
    """
    x_query = as_float_array(x_query, "x_query", min_ndim=2)
    x_memory = as_float_array(x_memory, "x_memory", min_ndim=2)
    if x_query.ndim != 2 or x_memory.ndim != 2 or x_query.shape[1] != x_memory.shape[1]:
        raise ValueError(
            f"x_query and x_memory must be (T, d_model) matrices of the same width, "
            f"got {x_query.shape} and {x_memory.shape}."
        )
    d_model = x_query.shape[1]
    mats = []
    for name, w in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v)):
        w = as_float_array(w, name, min_ndim=2)
        if w.ndim != 2 or w.shape[0] != d_model:
            raise ValueError(f"{name} must have shape (d_model, d_k) with d_model={d_model}, got {w.shape}.")
        mats.append(w)
    W_q, W_k, W_v = mats
    Q = x_query @ W_q  # (T_q, d_model) @ (d_model, d_k) -> (T_q, d_k)
    K = x_memory @ W_k  # (T_k, d_model) @ (d_model, d_k) -> (T_k, d_k)
    V = x_memory @ W_v  # (T_k, d_model) @ (d_model, d_v) -> (T_k, d_v)
    attended, weights = scaled_dot_product_attention(Q, K, V, mask=mask)  # (T_q, d_v), (T_q, T_k)
    arrays = [Q, K, V, weights, attended]
    if mask is not None:
        mask = np.array(mask, dtype=bool)  # a private copy, (T_q, T_k)
        arrays.append(mask)
    for a in arrays:
        a.setflags(write=False)
    return AttentionBlock(Q=Q, K=K, V=V, weights=weights, attended=attended, mask=mask)


def _tokens(tokens: Sequence[str], name: str, role: str) -> tuple[str, ...]:
    if isinstance(tokens, str):
        raise ValueError(f"{name} must be a list of tokens, not a string ({tokens!r}); split it first.")
    tokens = tuple(str(t) for t in tokens)
    if not tokens:
        raise ValueError(f"{name} is empty: the {role} needs at least one token.")
    return tokens


#: The token a decoder's input starts with: it reads nothing yet and predicts the target's first word.
START = "<s>"


def shifted_right(target: Sequence[str], start: str = START) -> tuple[str, ...]:
    """The decoder's input when it learns a translation: `start`, then the target without its last word.

    Position i of the decoder reads target words 0 … i − 1 and predicts target word i (teacher forcing): the input
    has as many positions as the target, and the target's last word is only ever predicted, never read.
    """
    words = _tokens(target, "target", "decoder")
    return (start, *words[:-1])


def encoder_decoder_attention(
    src_tokens: Sequence[str],
    tgt_tokens: Sequence[str],
    d_model: int = 16,
    seed: int = 0,
) -> EncoderDecoderAttention:
    r"""Run a source and a target sentence through one encoder layer and one decoder layer.

    .. math::

        \underbrace{A^{enc}}_{T_{src} \times T_{src}} = \operatorname{softmax}\!\left(
            \frac{(X_{src} W_q^{enc})(X_{src} W_k^{enc})^\top}{\sqrt{d_k}}\right),\quad
        \underbrace{A^{dec}}_{T_{tgt} \times T_{tgt}} = \operatorname{softmax}\!\left(
            \frac{(X_{tgt} W_q^{dec})(X_{tgt} W_k^{dec})^\top}{\sqrt{d_k}} + \text{causal}\right),\quad
        \underbrace{A^{x}}_{T_{tgt} \times T_{src}} = \operatorname{softmax}\!\left(
            \frac{(H W_q^{x})(M W_k^{x})^\top}{\sqrt{d_k}}\right)

    Token embeddings come from `embed_tokens` (same word, same vector) plus the sinusoidal
    positional encoding; the nine weight matrices are ``random_projections(d_model, seed, n=9)``
    in the order encoder W_q, W_k, W_v, decoder W_q, W_k, W_v, cross W_q, W_k, W_v.

    Raises:
        ValueError: if either token list is empty or `d_model` is not a positive integer.
    """
    src = _tokens(src_tokens, "src_tokens", "encoder")
    tgt = _tokens(tgt_tokens, "tgt_tokens", "decoder")
    d_model = positive_int(d_model, "d_model")
    X_src = embed_tokens(src, d_model, seed) + positional_encoding(len(src), d_model)  # (T_src, d_model)
    X_tgt = embed_tokens(tgt, d_model, seed) + positional_encoding(len(tgt), d_model)  # (T_tgt, d_model)
    W = random_projections(d_model, seed, n=9)  # 9 x (d_model, d_model)

    encoder = attend(X_src, X_src, *W[0:3])  # bidirectional: weights (T_src, T_src)
    memory = X_src + encoder.attended  # (T_src, d_model), the encoder's output
    decoder = attend(X_tgt, X_tgt, *W[3:6], mask=causal_mask(len(tgt)))  # weights (T_tgt, T_tgt)
    decoder_hidden = X_tgt + decoder.attended  # (T_tgt, d_model)
    cross = attend(decoder_hidden, memory, *W[6:9])  # queries: decoder, keys/values: encoder -> (T_tgt, T_src)
    output = decoder_hidden + cross.attended  # (T_tgt, d_model)

    for a in (X_src, X_tgt, memory, decoder_hidden, output):
        a.setflags(write=False)
    return EncoderDecoderAttention(
        src_tokens=src, tgt_tokens=tgt, X_src=X_src, X_tgt=X_tgt, encoder=encoder, memory=memory,
        decoder=decoder, decoder_hidden=decoder_hidden, cross=cross, output=output,
    )
