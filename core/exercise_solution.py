"""Reference solution of the lesson's "Build this" exercise, in PyTorch.

This whole module is what a student would hand in: the exercise page shows its source
(after a first attempt) and the tests submit it, unchanged, to the sandboxed checker.
It imports nothing but PyTorch, so it runs inside the sandbox as it is.
"""

import torch


def scaled_dot_product_attention(Q, K, V, mask=None):
    r"""Scaled dot-product attention: ``softmax(Q Kᵀ / √d_k) V``, returning ``(output, weights)``.

    Args:
        Q: queries, shape ``(..., T_q, d_k)``: ``(batch, seq_len, d_k)`` or just ``(seq_len, d_k)``.
        K: keys, shape ``(..., T_k, d_k)``.
        V: values, shape ``(..., T_k, d_v)``.
        mask: optional ``(T_q, T_k)`` tensor, 1 (or True) where a query may attend to a key and
            0 (False) where it may not; ``torch.tril(torch.ones(T, T))`` is the causal mask.

    Returns:
        ``output`` of shape ``(..., T_q, d_v)`` and ``weights`` of shape ``(..., T_q, T_k)``,
        whose rows sum to 1.
    """
    d_k = Q.size(-1)  # the LAST dimension: the width of a query / key
    scores = Q @ K.transpose(-2, -1) / d_k**0.5  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))  # forbidden keys: e^-inf = exactly 0
    weights = torch.softmax(scores, dim=-1)  # over the keys: each query's row sums to 1
    output = weights @ V  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)
    return output, weights
