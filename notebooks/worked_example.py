"""The worked example's notebook: the lesson's "In code", at the view's weights (random from the seed, or designed
ones written as data), tokens and embeddings, up to the stage the page revealed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from notebooks.builder import HEATMAP, SOFTMAX, Notebook
from notebooks.values import md_code

TITLE = "Worked example: three tokens, by hand"
#: The page's stages, in order; a view reveals the first few of them.
STAGES = ("X", "Q, K, V", "raw scores", "scaled scores", "softmax", "output")
#: The settings that choose the notebook's cells (the weights' recipe, the stages shown) rather than set a value.
CHOOSES_CELLS = ("weights", "reveal")
#: The weights' recipes by their link value: random from a seed, or a preset made by hand (`core.designed_weights`'
#: presets, kept equal to them by a test, since a notebook module does not import the app's maths).
WEIGHTS = ("random", "designed", "previous word")


def settings(state: Mapping[str, Any]) -> dict[str, Any]:
    """The controls the notebook sets: the weights (random from a seed, or any designed preset, named by its link value:
    W_q, W_k, W_v as given), the
    tokens and their embeddings X, and the last stage revealed."""
    reveal, weights = str(state.get("reveal", STAGES[-1])), str(state.get("weights", "random"))
    tokens, X = [str(t) for t in state["tokens"]], [[float(x) for x in row] for row in state["X"]]
    if reveal not in STAGES or weights not in WEIGHTS or not X or len(tokens) != len(X) \
            or any(len(row) != len(X[0]) for row in X):
        raise ValueError(f"weights {weights!r}, stage {reveal!r}, {len(tokens)} tokens for {len(X)} rows of X.")
    if weights == "random":
        return {"weights": weights, "seed": int(state["seed"]), "tokens": tokens, "X": X, "reveal": reveal}
    d = len(X[0])
    matrices = {name: [[float(w) for w in row] for row in state[name]] for name in ("W_q", "W_k", "W_v")}
    if any(len(m) != d or any(len(row) != len(m[0]) for row in m) for m in matrices.values()) \
            or len(matrices["W_q"][0]) != len(matrices["W_k"][0]):
        raise ValueError(f"W_q, W_k, W_v that do not fit X's {d} columns.")
    return {"weights": weights, "tokens": tokens, "X": X, **matrices, "reveal": reveal}


def cells(nb: Notebook, weights: str = "random", reveal: str = STAGES[-1]) -> None:
    """The stages up to `reveal`, the `weights` made as the view made them, then the maps of what was revealed."""
    stage = STAGES.index(reveal)
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
    stages = [projection_cells, scores_cells, scaling_cells, softmax_cells, output_cells][:stage]
    for add in stages:
        add(nb, weights)
    maps_cells(nb, stage)
    if stage == len(STAGES) - 1:
        torch_cells(nb)
    else:
        nb.md(f"""
## Next: {STAGES[stage + 1]}

The page revealed the computation up to **{reveal}**, and so does this notebook. Write the next stage here
yourself, from the lesson's formula, then reveal it on the page and compare the numbers.
""")


def projection_cells(nb: Notebook, weights: str) -> None:
    made = (f"""Here the matrices were made by hand (the page's preset {md_code(weights)}) so that each query asks for something
you can name (the page explains the recipe); they are written below as data.""" if weights != "random" else """Here the matrices are random draws
rounded to one decimal, as in the lesson; a trained model learns them.""")
    nb.md(rf"""
## 2 · Queries, keys and values

Three weight matrices project each embedding three ways: the **query** (what the token looks for), the **key**
(what it offers to be matched on) and the **value** (what it hands over once matched). {made}

$$Q = X W_q,\qquad K = X W_k,\qquad V = X W_v$$
""")
    nb.code(("""
W_q, W_k, W_v = np.array(W_q), np.array(W_k), np.array(W_v)  # made by hand, (d_model, d_k) each
print("W_q:\\n", W_q, "\\nW_k:\\n", W_k, "\\nW_v:\\n", W_v)
""" if weights != "random" else """
rng = np.random.default_rng(seed)
W_q = np.round(rng.normal(0, 1, size=(d_model, d_model)), 1)
W_k = np.round(rng.normal(0, 1, size=(d_model, d_model)), 1)
W_v = np.round(rng.normal(0, 1, size=(d_model, d_model)), 1)
""") + """
Q = X @ W_q  # (T, d_model) @ (d_model, d_k) -> (T, d_k): what each token looks for
K = X @ W_k  # (T, d_k): what each token offers to be matched against
V = X @ W_v  # (T, d_v): what each token sends once matched
print("Q = X @ W_q (queries):\\n", Q)
print("\\nK = X @ W_k (keys):\\n", K)
print("\\nV = X @ W_v (values):\\n", V)
""")


def scores_cells(nb: Notebook, weights: str) -> None:
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


def scaling_cells(nb: Notebook, weights: str) -> None:
    nb.md(r"""
## 4 · Scaling by √d_k

Dividing by √d_k keeps the scores from growing with the key width, which would push the softmax into saturation.

$$\tilde S = \frac{Q K^\top}{\sqrt{d_k}}$$
""")
    nb.code("""
scaled_scores = raw_scores / np.sqrt(d_k)  # (T, T)
print(f"scaled scores (divided by sqrt({d_k}) = {np.sqrt(d_k):g}):\\n", scaled_scores)
""")


def softmax_cells(nb: Notebook, weights: str) -> None:
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
""" + ("""
for i, token in enumerate(tokens):  # what each designed query found
    j = int(np.argmax(weights[i]))
    print(f"{token!r} puts its largest weight, {weights[i, j]:.2f}, on {tokens[j]!r}")
""" if weights != "random" else ""))


def output_cells(nb: Notebook, weights: str) -> None:
    nb.md(r"""
## 6 · Output: a weighted blend of the values

$$\text{output} = A V,\qquad \text{output}_i = \sum_j A_{ij}\, v_j$$
""")
    nb.code("""
output = weights @ V  # (T, T) @ (T, d_v) -> (T, d_v)
print(f"output = weights @ V ({T} tokens, one output vector per token):\\n", output)
for i, token in enumerate(tokens):
    terms = " + ".join(f"{weights[i, j]:.3f} * v{j + 1}" for j in range(T))
    print(f"output of {token!r} = {terms}")
""")


#: The maps of each stage, as the notebook draws them: (first stage that shows it, its line of code).
MAPS = ((0, 'heatmap(X, tokens, [str(j) for j in range(X.shape[1])], "embeddings X")'),
        (1, 'heatmap(Q, tokens, [str(j) for j in range(Q.shape[1])], "queries Q")'),
        (1, 'heatmap(K, tokens, [str(j) for j in range(K.shape[1])], "keys K")'),
        (2, 'heatmap(raw_scores, tokens, tokens, "raw scores", scheme="redblue")'),
        (3, 'heatmap(scaled_scores, tokens, tokens, "scaled scores", scheme="redblue")'),
        (4, 'heatmap(weights, tokens, tokens, "attention weights A")'),
        (5, 'heatmap(output, tokens, [str(j) for j in range(output.shape[1])], "output = A V")'))


def maps_cells(nb: Notebook, stage: int) -> None:
    nb.md("""
## The maps

The matrices revealed so far, as the page draws them (hover over a cell for its value).
""")
    shown = [line for first, line in MAPS if first <= stage]
    rows = [shown[i : i + 3] for i in range(0, len(shown), 3)]
    nb.code(HEATMAP + "\nalt.vconcat(\n" + "".join(
        "    alt.hconcat(" + ", ".join(row) + "),\n" for row in rows) + ")")


def torch_cells(nb: Notebook) -> None:
    nb.md("""
## Cross-check with PyTorch

The same Q, K and V, in float32, through `torch.nn.functional.scaled_dot_product_attention`. The NumPy code above
runs in float64, so they agree to float32 precision (about 1e-7).
""")
    nb.code("""
q, k, v = (torch.from_numpy(m).float() for m in (Q, K, V))
reference = F.scaled_dot_product_attention(q, k, v)  # (T, d_v)
print("max |NumPy - PyTorch| of the output:", np.abs(output - reference.numpy()).max())
""")
