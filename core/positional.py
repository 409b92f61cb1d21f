r"""Sinusoidal positional encoding (Vaswani et al., 2017).

.. math::

    PE_{p,\,2i} = \sin\!\left(\frac{p}{10000^{2i/d_{model}}}\right),\qquad
    PE_{p,\,2i+1} = \cos\!\left(\frac{p}{10000^{2i/d_{model}}}\right)

Each pair of dimensions is a sine/cosine at one frequency; the frequencies fall
geometrically from 1 (dims 0, 1) to about 1/10000, so every position gets a
distinct, fixed vector that is added to its token embedding.
"""

from __future__ import annotations

import numpy as np

from core._checks import positive_int


def positional_encoding(seq_len: int, d_model: int) -> np.ndarray:
    """Sinusoidal positional encoding of shape ``(seq_len, d_model)``.

    Even dimensions hold sines, odd dimensions cosines; dimensions ``2i`` and
    ``2i + 1`` share the angular frequency ``1 / 10000^(2i / d_model)``.
    An odd `d_model` simply ends on a sine.
    """
    seq_len = positive_int(seq_len, "seq_len")
    d_model = positive_int(d_model, "d_model")
    pos = np.arange(seq_len, dtype=np.float64)[:, None]  # (T, 1)
    pair = np.arange(d_model) // 2  # (d_model,): dims 2i and 2i+1 share index i
    rates = 1.0 / np.power(10000.0, 2 * pair / d_model)  # (d_model,)
    angles = pos * rates[None, :]  # (T, 1) * (1, d_model) -> (T, d_model)
    pe = np.empty((seq_len, d_model))
    pe[:, 0::2] = np.sin(angles[:, 0::2])  # even dims: sine
    pe[:, 1::2] = np.cos(angles[:, 1::2])  # odd dims: cosine
    return pe
