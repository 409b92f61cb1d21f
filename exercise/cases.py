"""The exercise as the lesson sets it: the skeleton a student starts from, and the inputs every check uses.

The lesson asks for attention written from memory in PyTorch, tested on random ``(batch=2,
seq_len=5, d_k=16)`` tensors and, as a stretch, on the worked example (2-D, no batch) with a
causal mask. Shapes: ``(B, T, d_k)`` for the random test, ``(T, d_model)`` for the worked example.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from core.attention import scaled_dot_product_attention
from core.worked_example import worked_example
from exercise.runner import FUNCTION_NAME

__all__ = ["CHANGED", "FUNCTION_NAME", "REPEAT", "SKELETON", "Case", "exercise_cases"]

#: The lesson's test shape: batch = 2, seq_len = 5, d_k = 16.
BATCH, SEQ_LEN, D_K = 2, 5, 16
#: ``torch.allclose`` tolerances of the main check (the lesson uses ``atol=1e-6``).
ALLCLOSE_RTOL, ALLCLOSE_ATOL = 1e-5, 1e-6
#: Largest difference from the lesson's float64 worked-example output accepted in float32.
WORKED_ATOL = 1e-5
#: How far a row of weights may sum from 1 in float32.
ROW_SUM_ATOL = 1e-5

SKELETON = '''\
import torch
import torch.nn.functional as F


def scaled_dot_product_attention(Q, K, V, mask=None):
    """Scaled dot-product attention, written by you: softmax(Q Kᵀ / √d_k) V.

    Args:
        Q: queries, shape (batch, seq_len, d_k), or (seq_len, d_k) with no batch.
        K: keys, shape (batch, seq_len, d_k).
        V: values, shape (batch, seq_len, d_v).
        mask: optional (seq_len, seq_len) tensor, 1 where a query may attend to a
            key and 0 where it may not (the stretch: torch.tril(torch.ones(T, T))).

    Returns:
        (output, weights): output of shape (batch, seq_len, d_v) and the
        attention weights of shape (batch, seq_len, seq_len), rows summing to 1.
    """
    raise NotImplementedError("write your attention here")
'''


#: The optional call with the random test's inputs again, and those with one input changed, by the input's name.
REPEAT = "random_again"
CHANGED = {name: f"random_other_{name}" for name in "QKV"}


@dataclass(frozen=True)
class Case:
    """One set of test inputs, float32 (as the student's PyTorch code sees them)."""

    name: str
    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    mask: np.ndarray | None = None
    #: A call that only adds evidence to a diagnosis: skipped when the function is slow (`exercise.runner`).
    optional: bool = False

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "Q": self.Q.tolist(), "K": self.K.tolist(), "V": self.V.tolist(),
                "mask": None if self.mask is None else self.mask.tolist(), "optional": self.optional}


def exercise_cases(seed: int = 0) -> tuple[Case, ...]:
    """The inputs every submission is called on.

    * ``random``: Q, K, V of shape ``(2, 5, 16)``, standard normal, as the lesson asks;
    * ``probe``: ``(4, 4, 4)``: batch = T = d_k, so that even a mistaken transpose runs and
      can be recognised;
    * ``worked``: the lesson's worked example, ``Q = X W_q`` etc. in float32, ``(3, 4)``;
    * ``worked_causal``: the same with the causal mask ``tril(ones(3, 3))``;
    * ``random_causal``: the random test's tensors with the causal mask ``tril(ones(5, 5))``, so that a
      function's mask is also checked on batched input;

    and the optional calls (`REPEAT`, `CHANGED`), on the random test's tensors:

    * ``random_again``: the very same inputs a second time, so that a function whose output is random (dropout
      left on) shows it;
    * ``random_other_Q``, ``random_other_K``, ``random_other_V``: one input replaced by fresh random numbers,
      so that a function that never uses that input shows it (its output does not move).
    """
    rng = np.random.default_rng(seed)
    f32 = np.float32
    rand = [rng.standard_normal((BATCH, SEQ_LEN, D_K)).astype(f32) for _ in range(3)]
    probe = [rng.standard_normal((4, 4, 4)).astype(f32) for _ in range(3)]
    others = [rng.standard_normal((BATCH, SEQ_LEN, D_K)).astype(f32) for _ in range(3)]  # drawn last: the rest stay
    ex = worked_example(0)
    X = ex.X.astype(f32)
    Q, K, V = (X @ W.astype(f32) for W in (ex.W_q, ex.W_k, ex.W_v))  # (3, 4) @ (4, 4) -> (3, 4), float32
    n = X.shape[0]
    return (
        Case("random", *rand),
        Case("probe", *probe),
        Case("worked", Q, K, V),
        Case("worked_causal", Q, K, V, np.tril(np.ones((n, n), dtype=f32))),
        Case("random_causal", *rand, np.tril(np.ones((SEQ_LEN, SEQ_LEN), dtype=f32))),
        Case(REPEAT, *rand, optional=True),
        *(Case(CHANGED[name], *(other if i == j else x for j, x in enumerate(rand)), optional=True)
          for i, (name, other) in enumerate(zip("QKV", others))),
    )


@dataclass(frozen=True)
class WorkedAnswers:
    """What a right solution returns on the worked-example cases, to draw beside a student's numbers."""

    tokens: tuple[str, ...]
    output: np.ndarray  #: (3, 4) the lesson's worked-example output, float64
    causal_weights: np.ndarray  #: (3, 3) the weights of ``worked_causal``, from the float32 inputs


def worked_answers() -> WorkedAnswers:
    """The right output of the worked example and the right weights under the causal mask."""
    ex = worked_example(0)
    causal = next(c for c in exercise_cases() if c.name == "worked_causal")
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (causal.Q, causal.K, causal.V))
    _, causal_weights = scaled_dot_product_attention(Q, K, V, mask=causal.mask == 1)  # (3, 3)
    return WorkedAnswers(tokens=tuple(ex.tokens), output=ex.output, causal_weights=causal_weights)

