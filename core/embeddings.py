"""Deterministic toy embeddings and projection matrices for the interactive pages.

Real models learn their embeddings; the pages only need vectors that are
reproducible (same seed, same numbers) and consistent (the same word always
gets the same vector, wherever it appears), so that effects such as
permutation invariance are visible and not an artefact of the randomness.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

from core._checks import positive_int


def tokenize(text: str) -> list[str]:
    """Whitespace tokenisation, the simplest one there is: ``"the cat sat" -> ["the", "cat", "sat"]``."""
    return text.split()


def embed_tokens(tokens: Sequence[str], d_model: int, seed: int = 0) -> np.ndarray:
    """One standard-normal vector per token, ``(T, d_model)``; equal tokens get equal vectors.

    Each token's vector is drawn from ``np.random.default_rng([seed, crc32(token)])``,
    so it depends only on the seed and the token's text, never on its position.
    """
    d_model = positive_int(d_model, "d_model")
    if len(tokens) == 0:
        raise ValueError("embed_tokens needs at least one token.")
    rows = [
        np.random.default_rng([seed, zlib.crc32(str(tok).encode("utf-8"))]).normal(size=d_model) for tok in tokens
    ]
    return np.stack(rows)  # T x (d_model,) -> (T, d_model)


def random_projections(d_model: int, seed: int = 0, n: int = 4, d_out: int | None = None) -> list[np.ndarray]:
    """`n` random ``(d_model, d_out)`` matrices scaled by ``1/sqrt(d_model)`` (W_q, W_k, W_v, W_o order).

    The scaling keeps projected vectors at about unit variance, as a standard
    initialisation would.
    """
    d_model = positive_int(d_model, "d_model")
    d_out = d_model if d_out is None else positive_int(d_out, "d_out")
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(d_model, d_out)) / np.sqrt(d_model) for _ in range(n)]
