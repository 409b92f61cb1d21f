"""The permutation page's notebook: self-attention on a sentence and on its shuffle, with or without positions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from notebooks.builder import EMBEDDINGS, HEATMAP, MULTI_HEAD, POSITIONAL, SOFTMAX, Notebook

TITLE = "Order and permutation"


def settings(state: Mapping[str, Any]) -> dict[str, Any]:
    """The sentence, the seed, the permutation (perm[i]: the old position of the word now at i) and the PE toggle."""
    text, perm = str(state["text"]), [int(p) for p in state["perm"]]
    if sorted(perm) != list(range(len(text.split()))):
        raise ValueError(f"{perm} is not a permutation of the sentence's {len(text.split())} positions.")
    return {"text": text, "seed": int(state["seed"]), "perm": perm, "add_pe": bool(state["pe"])}


def cells(nb: Notebook) -> None:
    nb.md(r"""
Nothing in softmax(QKᵀ/√d_k)V mentions *where* a token sits: every score compares a query with a key by content
only. So shuffle the words and self-attention hands back exactly the same output vectors, shuffled the same way.
Write the shuffle as a permutation matrix P (row i of PX is row perm[i] of X):

$$\operatorname{Attn}(PX) = \operatorname{softmax}\!\left(\frac{P Q K^\top P^\top}{\sqrt{d_k}}\right) P V
= P A P^\top P V = P\,\operatorname{Attn}(X)$$

The page runs the lesson's `nn.MultiheadAttention(embed_dim=16, num_heads=4)` shape: d_model = 16, 4 heads, random
embeddings (a repeated word gets the same vector) and random weights.
""")
    nb.code(SOFTMAX + EMBEDDINGS + MULTI_HEAD + POSITIONAL + """
d_model, n_heads = 16, 4
tokens = text.split()
T = len(tokens)
perm = np.array(perm)
E = embed_tokens(tokens, d_model, seed)  # (T, d_model)
W_q, W_k, W_v, W_o = random_projections(d_model, seed)
print("original:", " ".join(tokens))
print("shuffled:", " ".join(tokens[p] for p in perm))
""")
    nb.md("""
## 1 · What goes in

Without positional encoding the shuffled input is literally the same rows in a new order. With it, the encoding
belongs to the *slot*, not to the word: after shuffling, each word gets the encoding of the position it moved to.
""")
    nb.code("""
pe = positional_encoding(T, d_model) if add_pe else np.zeros((T, d_model))  # (T, d_model)
X = E + pe  # the original input
PX = E[perm] + pe  # rows reordered, then each position's encoding
print(f"X{' + PE' if add_pe else ''}:\\n", X)
print(f"\\nPX{' + PE' if add_pe else ''}:\\n", PX)
""")
    nb.md(r"""
## 2 · Attention maps: reordered, not changed

The map computed from scratch on the shuffled sentence, beside the original map with its rows and columns simply
put in the shuffled order (PAPᵀ). Without positional encoding they are identical.
""")
    nb.code("""
output, weights = multi_head_attention(X, W_q, W_k, W_v, W_o, n_heads)  # (T, d_model), (H, T, T)
output_perm, weights_perm = multi_head_attention(PX, W_q, W_k, W_v, W_o, n_heads)
weights_expected = weights[:, perm][:, :, perm]  # P A P^T, every head: (H, T, T)
print("head 1, shuffled input:\\n", weights_perm[0])
print("\\nhead 1, P A P^T:\\n", weights_expected[0])
print("\\nmax |A(PX) - P A P^T| over every head:", np.abs(weights_perm - weights_expected).max())
""")
    nb.code(HEATMAP + """
labels = [f"{i}:{t}" for i, t in enumerate(tokens)]
shuffled = [labels[p] for p in perm]
alt.hconcat(heatmap(weights[0], labels, labels, "head 1, original"),
            heatmap(weights_perm[0], shuffled, shuffled, "head 1, shuffled"),
            heatmap(weights_expected[0], shuffled, shuffled, "head 1, P A P^T"))
""")
    nb.md(r"""
## 3 · Outputs: undo the shuffle and compare

Move each output row of the shuffled run back to where its word came from (Pᵀ) and compare with the original run.

$$\max\,\bigl|\operatorname{Attn}(X) - P^\top \operatorname{Attn}(PX)\bigr|$$
""")
    nb.code("""
inverse = np.empty_like(perm)
inverse[perm] = np.arange(T)  # x[perm][inverse] == x
output_unpermuted = output_perm[inverse]  # P^T Attn(PX)
output_diff = np.abs(output - output_unpermuted).max()
print("max |Attn(X) - P^T Attn(PX)|:", output_diff)
""")
    nb.md("""
## The lesson's check with torch.nn.MultiheadAttention

The lesson permutes a batch with `x[:, perm, :]`, runs it through `nn.MultiheadAttention`, and undoes the shuffle
with `out_unpermuted[:, perm, :] = out_permuted`; here on this view's embeddings and weights, in float32.
""")
    nb.code("""
mha = torch.nn.MultiheadAttention(d_model, n_heads, bias=False, batch_first=True)
with torch.no_grad():
    mha.in_proj_weight.copy_(torch.tensor(np.concatenate([W_q.T, W_k.T, W_v.T]), dtype=torch.float32))
    mha.out_proj.weight.copy_(torch.tensor(W_o.T, dtype=torch.float32))
    x = torch.tensor(E[None], dtype=torch.float32)  # (1, T, d_model)
    p = torch.tensor(pe[None], dtype=torch.float32)
    idx = torch.from_numpy(perm)
    x_permuted = x[:, idx, :]
    out, _ = mha(x + p, x + p, x + p)
    out_permuted, _ = mha(x_permuted + p, x_permuted + p, x_permuted + p)
out_unpermuted = torch.empty_like(out_permuted)
out_unpermuted[:, idx, :] = out_permuted
print("max difference between original output and un-permuted permuted-output:",
      (out - out_unpermuted).abs().max().item())
""")
