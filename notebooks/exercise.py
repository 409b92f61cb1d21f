"""The exercise's notebook: the task, an empty function to write, and the checker's checks as plain asserts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exercise.cases import SKELETON
from notebooks.builder import Notebook

TITLE = "Build this: write attention yourself"


def settings(state: Mapping[str, Any]) -> dict[str, Any]:
    """The seed of the checker's random test inputs (the page has no other control)."""
    return {"seed": int(state["seed"])}


def cells(nb: Notebook) -> None:
    nb.md(r"""
The lesson ends with an exercise: write `scaled_dot_product_attention(Q, K, V)` in PyTorch from memory, in about
twenty lines. Scores, scale, softmax, weighted sum: four steps, and each one has a classic way of going wrong.

$$\operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V$$

Write your function in the next cell, then run the cells below it: they are the app's checks, in the lesson's order,
as plain `assert`s. The first one that fails says what is wrong.

1. The function exists and runs
2. Output shape is (2, 5, 16)
3. Each row of the weights sums to 1
4. `torch.allclose` with `F.scaled_dot_product_attention`
5. Stretch: the worked example in float32
6. Stretch: causal mask, exact zeros above the diagonal
""")
    nb.code(SKELETON)  # the page's own skeleton: the same task, word for word
    nb.md("""
## The test inputs

The lesson's random test: Q, K, V of shape (batch = 2, seq_len = 5, d_k = 16), standard normal, in float32. The
stretch: the worked example's three tokens (Q = X W_q and so on, seed 0), without a batch dimension.
""")
    nb.code("""
rng = np.random.default_rng(seed)
Q, K, V = (torch.from_numpy(rng.standard_normal((2, 5, 16)).astype(np.float32)) for _ in range(3))

X = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [1.0, 1.0, 0.0, 0.0]])  # the lesson's three tokens
w_rng = np.random.default_rng(0)
W_q, W_k, W_v = (np.round(w_rng.normal(0, 1, size=(4, 4)), 1) for _ in range(3))
Q_worked, K_worked, V_worked = (torch.from_numpy(X @ W).float() for W in (W_q, W_k, W_v))  # (3, 4) each
scores = (X @ W_q) @ (X @ W_k).T / 2.0  # float64, the lesson's: sqrt(d_k) = 2
e = np.exp(scores - scores.max(axis=1, keepdims=True))
lesson_output = e / e.sum(axis=1, keepdims=True) @ (X @ W_v)  # the lesson's printed output, (3, 4)
print("Q:", tuple(Q.shape), " worked example's Q:", tuple(Q_worked.shape))
""")
    nb.md("## 1 · The function exists and runs, returning (output, weights)")
    nb.code("""
result = scaled_dot_product_attention(Q, K, V)
assert isinstance(result, tuple) and len(result) == 2, "Return two things: `return output, weights`."
output, weights = result
""")
    nb.md("## 2 · Output shape is (2, 5, 16)")
    nb.code("""
assert tuple(output.shape) == (2, 5, 16), f"The output has shape {tuple(output.shape)}, expected (2, 5, 16)."
print("output shape:", tuple(output.shape))
""")
    nb.md("## 3 · Each row of the weights sums to 1")
    nb.code("""
assert tuple(weights.shape) == (2, 5, 5), f"The weights have shape {tuple(weights.shape)}, expected (2, 5, 5)."
row_sums = weights.sum(dim=-1)
print("weights.sum(dim=-1):", row_sums)
assert torch.allclose(row_sums, torch.ones_like(row_sums), atol=1e-5), (
    "The rows do not sum to 1: is the softmax over dim=-1, the keys?")
assert weights.min() >= 0, "Some weights are negative: they are not a softmax."
""")
    nb.md("## 4 · `torch.allclose` with `F.scaled_dot_product_attention`")
    nb.code("""
expected = F.scaled_dot_product_attention(Q, K, V)  # (2, 5, 16)
difference = (output - expected).abs().max().item()
print("largest difference from PyTorch's:", difference)
assert torch.allclose(output, expected, rtol=1e-5, atol=1e-6), (
    f"torch.allclose is False (largest difference {difference:.3g}): the bug is almost always the scaling factor "
    "or which dimension the softmax runs over.")
""")
    nb.md("## 5 · Stretch: the worked example in float32 (no batch dimension)")
    nb.code("""
worked_output, _ = scaled_dot_product_attention(Q_worked, K_worked, V_worked)
worked_difference = np.abs(worked_output.numpy() - lesson_output).max()
print("your output:\\n", worked_output.numpy(), "\\nthe lesson's:\\n", lesson_output)
assert worked_difference <= 1e-5, (
    f"Your output differs from the lesson's by {worked_difference:.3g}. Counting dimensions from the end "
    "(K.transpose(-2, -1), softmax(dim=-1), Q.size(-1)) makes the same code work with and without a batch.")
""")
    nb.md("## 6 · Stretch: causal mask, exact zeros above the diagonal")
    nb.code("""
for name, (q, k, v) in {"worked example": (Q_worked, K_worked, V_worked), "random test": (Q, K, V)}.items():
    T = q.shape[-2]
    mask = torch.tril(torch.ones(T, T))
    causal_output, causal_weights = scaled_dot_product_attention(q, k, v, mask=mask)
    above = torch.triu(causal_weights, diagonal=1)
    assert (above == 0).all(), f"{name}: weights above the diagonal are not exactly 0 (largest {above.max():.3g})."
    reference = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.bool())
    assert torch.allclose(causal_output, reference, rtol=1e-5, atol=1e-6), (
        f"{name}: with the mask, your output differs from PyTorch's by {(causal_output - reference).abs().max():.3g}.")
print("causal weights of the worked example:\\n", scaled_dot_product_attention(
    Q_worked, K_worked, V_worked, mask=torch.tril(torch.ones(3, 3)))[1])
print("Every check passed.")
""")
