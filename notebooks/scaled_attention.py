"""The √d_k lab's notebook: random Q, K, V at the view's T and d_k, scaled or not, and the sweep over every d_k."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from notebooks.builder import HEATMAP, SOFTMAX, Notebook

TITLE = "Scaling by √d_k: the saturation lab"


def settings(state: Mapping[str, Any]) -> dict[str, Any]:
    """The seed, the sequence length T, the key width d_k, and whether the scores are divided by √d_k."""
    return {"seed": int(state["seed"]), "seq_len": int(state["seq_len"]), "d_k": int(state["d_k"]),
            "scaled": bool(state["scaled"])}


def cells(nb: Notebook) -> None:
    nb.md(r"""
A score is a dot product, a sum of d_k products qᵢkᵢ. If the entries of q and k are random with variance 1, each
product has variance 1 too, and the variances of a sum add up: the scores' spread grows like √d_k. Wide heads would
then feed the softmax numbers in the tens, and the softmax turns into an argmax: one weight near 1, all others near
0. There it is flat (its gradient vanishes), so the queries and keys barely learn. Dividing by √d_k puts the
variance back to 1 at every width.

$$\operatorname{Attention}(Q,K,V) = \operatorname{softmax}\!\Big(\frac{QK^\top}{\sqrt{d_k}}\Big)V,
\qquad \operatorname{Var}(q\cdot k) = d_k,\qquad \operatorname{Var}\Big(\frac{q\cdot k}{\sqrt{d_k}}\Big) = 1$$

## 1 · The attention map at these settings

Q, K and V are T × d_k matrices of standard-normal numbers. They are cut from one (32, 1024) draw per matrix, as on
the page, so a longer sequence only adds tokens and a wider d_k only adds dimensions.
""")
    nb.code(SOFTMAX + """
rng = np.random.default_rng(seed)
full = rng.standard_normal(size=(3, 32, 1024))  # Q, K, V stacked: (3, T_max, d_k_max)
Q, K, V = full[:, :seq_len, :d_k]  # each (T, d_k)
scale = 1 / np.sqrt(d_k) if scaled else 1.0
scores = (Q @ K.T) * scale  # (T, d_k) @ (d_k, T) -> (T, T)
weights = softmax(scores, axis=-1)  # (T, T), rows sum to 1
output = weights @ V  # (T, T) @ (T, d_k) -> (T, d_k)
print(f"scores {'QK^T / sqrt(d_k)' if scaled else 'QK^T'} (T={seq_len}, d_k={d_k}), variance {scores.var():.3g}:")
print(scores)
print("\\nattention weights:\\n", weights)
""")
    nb.md(r"""
How saturated is the softmax? The largest weight of a row is 1/T for a uniform row and 1 for a one-hot one; the row
entropy is ln T uniform and 0 one-hot; the softmax's Jacobian, the gradient it passes back, tends to 0 as the row
becomes one-hot.

$$H(p) = -\sum_j p_j \ln p_j,\qquad J = \operatorname{diag}(p) - p\,p^\top$$
""")
    nb.code("""
def row_entropy(p):
    return -(p * np.log(np.where(p > 0, p, 1.0))).sum(axis=-1)  # (...,): 0 ln 0 = 0

def jacobian_norm(p):
    J = p[..., :, None] * (np.eye(p.shape[-1]) - p[..., None, :])  # (..., N, N): diag(p) - p p^T
    return np.sqrt((J ** 2).sum(axis=(-2, -1)))  # Frobenius norm per row

max_weight = weights.max(axis=-1).mean()
entropy = row_entropy(weights).mean()
jacobian = jacobian_norm(weights).mean()
print(f"largest weight (mean over rows): {max_weight:.3f}   (1/T = {1 / seq_len:.3f} uniform, 1 one-hot)")
print(f"row entropy (mean, nats): {entropy:.3f}   (ln T = {np.log(seq_len):.3f} uniform, 0 one-hot)")
print(f"softmax Jacobian norm (mean): {jacobian:.3g}")
""")
    nb.code(HEATMAP + """
labels = [f"t{i}" for i in range(seq_len)]
alt.hconcat(heatmap(scores, labels, labels, "scores", scheme="redblue"),
            heatmap(weights, labels, labels, "attention weights"))
""")
    nb.md("""
## 2 · The same story over every d_k

Each point averages independent random T × T score matrices (about 512 softmax rows), with and without the
scaling. The columns of Q and K are drawn block by block, so each width reuses the narrower one's scores.
""")
    nb.code("""
d_ks = [2 ** i for i in range(11)]  # 1, 2, 4, ..., 1024
n_samples = -(-512 // seq_len)  # ceil(512 / T)
sweep_rng = np.random.default_rng([seed, 1])
S = np.zeros((n_samples, seq_len, seq_len))  # (samples, T, T): the running Q K^T
sweep = {name: [] for name in ("var_raw", "var_scaled", "max_weight_raw", "max_weight_scaled")}
prev = 0
for width in d_ks:
    q_new = sweep_rng.standard_normal(size=(n_samples, seq_len, width - prev))  # new columns of Q
    k_new_t = sweep_rng.standard_normal(size=(n_samples, width - prev, seq_len))  # new columns of K, transposed
    S += q_new @ k_new_t  # (samples, T, new) @ (samples, new, T) -> (samples, T, T)
    prev = width
    for suffix, s in (("raw", S), ("scaled", S / np.sqrt(width))):
        sweep[f"var_{suffix}"].append(s.var())
        sweep[f"max_weight_{suffix}"].append(softmax(s, axis=-1).max(axis=-1).mean())
sweep = pd.DataFrame(sweep, index=pd.Index(d_ks, name="d_k"))
print(sweep.round(3))
""")
    nb.code("""
long = sweep.reset_index().melt("d_k", ["max_weight_raw", "max_weight_scaled"], var_name="scores",
                                value_name="largest weight")
alt.Chart(long, title="largest weight (mean over rows) against d_k").mark_line(point=True).encode(
    x=alt.X("d_k:Q", scale=alt.Scale(type="log", base=2)), y="largest weight:Q", color="scores:N",
) + alt.Chart(pd.DataFrame({"d_k": [d_k]})).mark_rule(strokeDash=[4, 4]).encode(x="d_k:Q")
""")
    nb.md("""
## Cross-check with PyTorch

The same Q, K and V through `torch.nn.functional.scaled_dot_product_attention`, in float64.
""")
    nb.code("""
q, k, v = (torch.from_numpy(np.ascontiguousarray(m)) for m in (Q, K, V))
reference = F.scaled_dot_product_attention(q, k, v, scale=scale)  # (T, d_k)
print("max |NumPy - PyTorch| of the output:", np.abs(output - reference.numpy()).max())
""")
