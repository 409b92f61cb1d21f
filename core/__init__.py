"""`core`: the attention maths of the app, NumPy (float64) and PyTorch only.

Nothing here imports Streamlit or Altair, so every function can be tested and
reused on its own. Shape convention: ``(B, H, T, d_k)`` — batch, heads,
sequence length, per-head width; single-head functions take ``(..., T, d_k)``.
"""

from core.attention import causal_mask, scaled_dot_product_attention, softmax
from core.multihead import merge_heads, multi_head_attention, split_heads
from core.positional import positional_encoding
from core.worked_example import LESSON_TOKENS, LESSON_X, WorkedExample, worked_example

__all__ = [
    "LESSON_TOKENS",
    "LESSON_X",
    "WorkedExample",
    "causal_mask",
    "merge_heads",
    "multi_head_attention",
    "positional_encoding",
    "scaled_dot_product_attention",
    "softmax",
    "split_heads",
    "worked_example",
]
