"""The masked attention page's notebook: the causal mask, the exact zeros it makes, and one generation step."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from notebooks.builder import EMBEDDINGS, HEATMAP, POSITIONAL, SOFTMAX, Notebook

TITLE = "Masked self-attention (the decoder)"


def settings(state: Mapping[str, Any]) -> dict[str, Any]:
    """The seed, the number of tokens T, whether the causal mask is on, and the generation step t (1 … T)."""
    seq_len, step = int(state["seq_len"]), int(state["step"])
    if not 1 <= step <= seq_len:
        raise ValueError(f"step {step} is not between 1 and T = {seq_len}.")
    return {"seed": int(state["seed"]), "seq_len": seq_len, "causal": bool(state["causal"]), "step": step}


def cells(nb: Notebook) -> None:
    nb.md(r"""
A decoder writes one token at a time, so while it trains, token i must not take anything from the tokens after it.
The causal mask sets the scores of those later keys to −∞ before the softmax, and e^(−∞) = 0 exactly.

$$A = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}} + M\right),\qquad
M_{ij} = \begin{cases} 0 & j \le i \\ -\infty & j > i \end{cases}$$

The tokens: the first T words of the page's sentence, each a random 8-dimensional embedding plus its positional
encoding; W_q, W_k, W_v are random 8 × 8 matrices, so d_k = 8.
""")
    nb.code(SOFTMAX + EMBEDDINGS + POSITIONAL + """
d_model = 8
tokens = "the cat sat on the mat and then it fell fast asleep".split()[:seq_len]
X = embed_tokens(tokens, d_model, seed) + positional_encoding(seq_len, d_model)  # (T, d_model)
W_q, W_k, W_v = random_projections(d_model, seed, n=3)
Q, K, V = X @ W_q, X @ W_k, X @ W_v  # each (T, d_model) @ (d_model, d_model) -> (T, d_k)
print("tokens:", tokens)
""")
    nb.md("""
## 1 · The mask and the scores

Row i is the query of token i, column j the key of token j. The causal mask lets row i see columns 0 … i: the
diagonal and everything below it. Above the diagonal, the scaled score is replaced by −∞. With the mask switched
off, every cell may attend, as in the encoder.
""")
    nb.code("""
mask = np.tri(seq_len, dtype=bool) if causal else np.ones((seq_len, seq_len), dtype=bool)  # True: may attend
scores = Q @ K.T / np.sqrt(d_model)  # (T, d_k) @ (d_k, T) -> (T, T)
masked_scores = np.where(mask, scores, -np.inf)  # (T, T)
print("mask (1: may attend):\\n", mask.astype(int))
print("\\nmasked scaled scores:\\n", masked_scores)
""")
    nb.md("""
## 2 · The weights

After the softmax every row still sums to 1; under the mask the cells above the diagonal are exactly zero, not
merely small: no token can take information from a later one.
""")
    nb.code("""
weights = softmax(masked_scores, axis=-1)  # (T, T); exp(-inf) = 0 exactly
output = weights @ V  # (T, T) @ (T, d_v) -> (T, d_v)
upper = weights[np.triu_indices(seq_len, k=1)]  # every weight a token gives to a later one
print("attention weights:\\n", weights)
print("\\nmax weight above the diagonal:", upper.max() if upper.size else 0.0)
print("total weight on future tokens:", upper.sum())
print("max |row sum - 1|:", np.abs(weights.sum(axis=1) - 1).max())
""")
    nb.code(HEATMAP + """
heatmap(weights, tokens, tokens, "attention weights A")
""")
    nb.md(r"""
## 3 · One generation step

At step t only tokens 1 … t exist, and token t's query is compared with their keys alone: no mask is needed, the
future keys are simply not there. The result is row t of the masked weights, which is the point of the mask; and
it is row t of the unmasked weights with the future dropped and the rest rescaled to sum to 1.

$$A^{\text{mask}}_{tj} = \frac{A_{tj}}{\sum_{j' \le t} A_{tj'}}\ (j \le t),\qquad A^{\text{mask}}_{tj} = 0\ (j > t)$$
""")
    nb.code("""
t = step - 1
prefix_weights = softmax(Q[t] @ K[:step].T / np.sqrt(d_model))  # (t,): only the keys written so far
prefix_output = prefix_weights @ V[:step]  # (d_v,)
unmasked_row = softmax(scores[t])  # (T,): the same query over the whole sentence
renormalised = np.where(np.arange(seq_len) <= t, unmasked_row, 0.0) / unmasked_row[:step].sum()
print(f"step {step}: {' '.join(tokens[:step])!r} exist; {tokens[t]!r} attends over them:", prefix_weights)
print("unmasked row (weight on words not written yet included):", unmasked_row)
print("renormalised visible part:", renormalised)
rows = pd.DataFrame({"key": [f"{j}:{w}" for j, w in enumerate(tokens)] * 2,
                     "weight": np.concatenate([unmasked_row, renormalised]),
                     "row": ["without the mask"] * seq_len + ["with the mask"] * seq_len})
alt.Chart(rows, title=f"weights of {tokens[t]!r} at step {step}").mark_bar().encode(
    x=alt.X("key:N", sort=None), y="weight:Q", color="row:N", xOffset="row:N")
""")
    nb.md("""
## Cross-check with PyTorch

The same Q, K and V, in float32, through `torch.nn.functional.scaled_dot_product_attention` with `is_causal`:
PyTorch builds its own mask from that flag.
""")
    nb.code("""
q, k, v = (torch.from_numpy(m).float() for m in (Q, K, V))
reference = F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # (T, d_v)
print(f"max |NumPy - PyTorch| of the output (is_causal={causal}):", np.abs(output - reference.numpy()).max())
""")
