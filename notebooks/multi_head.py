"""The multi-head page's notebook: d_model cut into heads, a map per head, concatenated and mixed by W_o."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from notebooks.builder import EMBEDDINGS, SOFTMAX, Notebook

TITLE = "Multi-head attention"


def settings(state: Mapping[str, Any]) -> dict[str, Any]:
    """The seed, d_model, the number of heads H (a divisor of d_model) and the number of tokens T."""
    d_model, n_heads = int(state["d_model"]), int(state["heads"])
    if n_heads < 1 or d_model % n_heads:
        raise ValueError(f"{n_heads} heads do not divide d_model = {d_model}.")
    return {"seed": int(state["seed"]), "d_model": d_model, "n_heads": n_heads, "seq_len": int(state["seq_len"])}


def cells(nb: Notebook) -> None:
    nb.md(r"""
One attention head gives every token one way of weighing the others. Multi-head attention runs several heads in
parallel on the *same* tokens: the projected queries, keys and values are cut into H narrow slices of
d_k = d_model / H columns, every slice runs ordinary scaled dot-product attention on its own, and the H results are
glued back together and mixed by one more matrix, W_o.

$$\operatorname{MultiHead}(X) = \operatorname{Concat}(\text{head}_1, \dots, \text{head}_H)\,W_o,\qquad
\text{head}_h = \operatorname{softmax}\!\left(\frac{Q_h K_h^\top}{\sqrt{d_k}}\right) V_h$$

The input: the first T words of the page's sentence, each embedded as a random vector (the same word always gets
the same vector), and random weight matrices.
""")
    nb.code(EMBEDDINGS + """
sentence = "the cat sat on the mat because it was tired and the dog ran off home"
tokens = sentence.split()[:seq_len]
X = embed_tokens(tokens, d_model, seed)  # (T, d_model)
W_q, W_k, W_v, W_o = random_projections(d_model, seed)  # each (d_model, d_model)
d_k = d_model // n_heads
print(f"input: {' '.join(tokens)!r}, X of shape {X.shape}; {n_heads} heads of d_k = {d_model}/{n_heads} = {d_k}")
""")
    nb.md(r"""
## 1 · Project, then cut into heads

Q, K and V are computed once, full width. Head h then reads only its own block of columns. Slicing the columns of Q
is the same as giving each head its own narrower matrix W_q^(h), the matching d_k columns of W_q.

$$Q = X W_q,\quad K = X W_k,\quad V = X W_v,\qquad Q_h = Q[:,\ (h-1)\,d_k : h\,d_k]$$
""")
    nb.code("""
Q, K, V = X @ W_q, X @ W_k, X @ W_v  # each (T, d_model) @ (d_model, d_model) -> (T, d_model)

def split_heads(M):
    return M.reshape(seq_len, n_heads, d_k).transpose(1, 0, 2)  # (T, d_model) -> (T, H, d_k) -> (H, T, d_k)

Q_heads, K_heads, V_heads = split_heads(Q), split_heads(K), split_heads(V)
print("Q:\\n", Q)
print(f"\\nhead 1 reads columns 0 to {d_k - 1} of Q:\\n", Q_heads[0])
""")
    nb.md(r"""
## 2 · One attention map per head

Every head runs the whole attention recipe on its slice: its own scores, its own softmax, its own map. With random
weights the patterns are arbitrary; in a trained model heads specialise.

$$A_h = \operatorname{softmax}\!\left(\frac{Q_h K_h^\top}{\sqrt{d_k}}\right)$$
""")
    nb.code(SOFTMAX + """
scores = Q_heads @ K_heads.transpose(0, 2, 1) / np.sqrt(d_k)  # (H, T, d_k) @ (H, d_k, T) -> (H, T, T)
weights = softmax(scores, axis=-1)  # (H, T, T): one map per head, rows sum to 1
for h in range(n_heads):
    print(f"head {h + 1} attention weights:\\n", weights[h])
peak = weights.max(axis=-1).mean(axis=-1)  # (H,): a query's top weight, averaged over the queries
print("\\nmost focused head:", int(np.argmax(peak)) + 1, "  least focused:", int(np.argmin(peak)) + 1,
      f"  (uniform would be {1 / seq_len:.3f})")
print("largest difference between two heads' weights for the same pair:", np.ptp(weights, axis=0).max())
""")
    nb.code("""
labels = [f"{i}:{t}" for i, t in enumerate(tokens)]
maps = pd.DataFrame([(f"head {h + 1}", labels[i], labels[j], weights[h, i, j])
                     for h in range(n_heads) for i in range(seq_len) for j in range(seq_len)],
                    columns=["head", "query", "key", "weight"])
alt.Chart(maps).mark_rect().encode(
    x=alt.X("key:N", sort=labels), y=alt.Y("query:N", sort=labels),
    color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues", domain=[0, 1])),
    tooltip=["head", "query", "key", alt.Tooltip("weight:Q", format=".3f")],
).properties(width=180, height=180).facet(facet="head:N", columns=4)
""")
    nb.md(r"""
## 3 · Concatenate, then mix with W_o

Each head returns a d_k-wide blend of its value slice. Putting the H results side by side rebuilds a d_model-wide
matrix, block by block in head order; W_o then mixes the blocks, so every output dimension can draw on every head.

$$\text{head}_h = A_h V_h,\qquad \text{output} = [\,\text{head}_1 \;\cdots\; \text{head}_H\,]\; W_o$$
""")
    nb.code("""
head_outputs = weights @ V_heads  # (H, T, T) @ (H, T, d_k) -> (H, T, d_k)
concat = head_outputs.transpose(1, 0, 2).reshape(seq_len, d_model)  # (H, T, d_k) -> (T, H, d_k) -> (T, d_model)
output = concat @ W_o  # (T, d_model) @ (d_model, d_model) -> (T, d_model)
print("Concat(heads):\\n", concat)
print(f"\\noutput = Concat @ W_o, shape {output.shape} (the input's):\\n", output)
""")
    nb.md("""
## Cross-check with torch.nn.MultiheadAttention

The same X and weights through `torch.nn.MultiheadAttention(d_model, n_heads, bias=False, batch_first=True)`, in
float64. PyTorch stores weights the `nn.Linear` way (it computes x Wᵀ), so it gets the transposes:
`in_proj_weight` = [W_qᵀ; W_kᵀ; W_vᵀ] stacked, `out_proj.weight` = W_oᵀ.
""")
    nb.code("""
mha = torch.nn.MultiheadAttention(d_model, n_heads, bias=False, batch_first=True, dtype=torch.float64)
with torch.no_grad():
    mha.in_proj_weight.copy_(torch.from_numpy(np.concatenate([W_q.T, W_k.T, W_v.T])))  # (3 d_model, d_model)
    mha.out_proj.weight.copy_(torch.from_numpy(W_o.T))
    x = torch.from_numpy(X).unsqueeze(0)  # (1, T, d_model): a batch of one
    torch_output, torch_weights = mha(x, x, x, need_weights=True, average_attn_weights=False)
print("max |NumPy - PyTorch|, output:", np.abs(output - torch_output[0].numpy()).max())
print("max |NumPy - PyTorch|, per-head weights:", np.abs(weights - torch_weights[0].numpy()).max())
""")
