"""The worked example's notebook: the lesson's "In code", at the view's seed, tokens and embeddings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from notebooks.builder import HEATMAP, SOFTMAX, Notebook

TITLE = "Worked example: three tokens, by hand"


def settings(state: Mapping[str, Any]) -> dict[str, Any]:
    """The controls the notebook sets: the seed of W_q, W_k, W_v, the tokens and their embeddings X."""
    return {"seed": int(state["seed"]), "tokens": [str(t) for t in state["tokens"]],
            "X": [[float(x) for x in row] for row in state["X"]]}


def cells(nb: Notebook) -> None:
    nb.md(r"""
## 1 · Embeddings X

One row per token: the input the head starts from.

$$X \in \mathbb{R}^{T \times d_{model}}$$
""")
    nb.code("""
X = np.array(X)  # (T, d_model)
T, d_model = X.shape
print(f"X ({T} tokens x {d_model}-dim embedding):\\n", X)
""")
    nb.md(r"""
## 2 · Queries, keys and values

Three weight matrices project each embedding three ways: the **query** (what the token looks for), the **key**
(what it offers to be matched on) and the **value** (what it hands over once matched). Here the matrices are
random draws rounded to one decimal, as in the lesson; a trained model learns them.

$$Q = X W_q,\qquad K = X W_k,\qquad V = X W_v$$
""")
    nb.code("""
rng = np.random.default_rng(seed)
W_q = np.round(rng.normal(0, 1, size=(d_model, d_model)), 1)
W_k = np.round(rng.normal(0, 1, size=(d_model, d_model)), 1)
W_v = np.round(rng.normal(0, 1, size=(d_model, d_model)), 1)

Q = X @ W_q  # (T, d_model) @ (d_model, d_model) -> (T, d_model): what each token looks for
K = X @ W_k  # (T, d_model): what each token offers to be matched against
V = X @ W_v  # (T, d_model): what each token sends once matched
print("Q = X @ W_q (queries):\\n", Q)
print("\\nK = X @ W_k (keys):\\n", K)
print("\\nV = X @ W_v (values):\\n", V)
""")
    nb.md(r"""
## 3 · Raw scores

Entry (i, j) is the dot product of query i with key j: how well token j matches what token i looks for.

$$S = Q K^\top,\qquad S_{ij} = q_i \cdot k_j$$
""")
    nb.code("""
d_k = K.shape[1]
raw_scores = Q @ K.T  # (T, d_k) @ (d_k, T) -> (T, T)
print(f"raw scores Q @ K^T (d_k={d_k}):\\n", raw_scores)
""")
    nb.md(r"""
## 4 · Scaling by √d_k

Dividing by √d_k keeps the scores from growing with the key width, which would push the softmax into saturation.

$$\tilde S = \frac{Q K^\top}{\sqrt{d_k}}$$
""")
    nb.code("""
scaled_scores = raw_scores / np.sqrt(d_k)  # (T, T)
print(f"scaled scores (divided by sqrt({d_k}) = {np.sqrt(d_k):g}):\\n", scaled_scores)
""")
    nb.md(r"""
## 5 · Softmax: attention weights

Softmax turns each row of scaled scores into a probability distribution: how much attention the query token pays
to every token, itself included.

$$A_{ij} = \frac{e^{\tilde S_{ij}}}{\sum_{j'} e^{\tilde S_{ij'}}},\qquad \sum_j A_{ij} = 1$$
""")
    nb.code(SOFTMAX + """
weights = softmax(scaled_scores, axis=-1)  # (T, T): each ROW sums to 1
print("attention weights (softmax over each row):\\n", weights)
print("\\nrow sums (should be 1.0):", weights.sum(axis=1))
""")
    nb.md(r"""
## 6 · Output: a weighted blend of the values

$$\text{output} = A V,\qquad \text{output}_i = \sum_j A_{ij}\, v_j$$
""")
    nb.code("""
output = weights @ V  # (T, T) @ (T, d_model) -> (T, d_model)
print(f"output = weights @ V ({T} tokens x {d_model}-dim, one output vector per token):\\n", output)
for i, token in enumerate(tokens):
    terms = " + ".join(f"{weights[i, j]:.3f} * v{j + 1}" for j in range(T))
    print(f"output of {token!r} = {terms}")
""")
    nb.md("""
## The maps

The same matrices as the page draws them (hover over a cell for its value).
""")
    nb.code(HEATMAP + """
dims = [str(j) for j in range(d_model)]
alt.hconcat(heatmap(X, tokens, dims, "embeddings X"),
            heatmap(weights, tokens, tokens, "attention weights A"),
            heatmap(output, tokens, dims, "output = A V"))
""")
    nb.md("""
## Cross-check with PyTorch

The same Q, K and V, in float32, through `torch.nn.functional.scaled_dot_product_attention`. The NumPy code above
runs in float64, so they agree to float32 precision (about 1e-7).
""")
    nb.code("""
q, k, v = (torch.from_numpy(m).float() for m in (Q, K, V))
reference = F.scaled_dot_product_attention(q, k, v)  # (T, d_model)
print("max |NumPy - PyTorch| of the output:", np.abs(output - reference.numpy()).max())
""")
