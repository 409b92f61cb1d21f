"""The cross-attention page's notebook: one encoder layer, one decoder layer, and the decoder reading the source."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from notebooks.builder import EMBEDDINGS, HEATMAP, POSITIONAL, SOFTMAX, Notebook

TITLE = "Encoder, decoder and cross-attention"


def settings(state: Mapping[str, Any]) -> dict[str, Any]:
    """The source and target sentences, the seed and d_model (one head, so d_k = d_model)."""
    src, tgt = str(state["src"]), str(state["tgt"])
    if not src.split() or not tgt.split():
        raise ValueError("both sentences need at least one word.")
    return {"src": src, "tgt": tgt, "seed": int(state["seed"]), "d_model": int(state["d_model"])}


def cells(nb: Notebook) -> None:
    nb.md(r"""
The original Transformer translates with two stacks. The **encoder** reads the whole source sentence with
self-attention; the **decoder** writes the translation with masked self-attention, and reads the source through
**cross-attention**: queries from the decoder, keys and values from the encoder's output M (the *memory*). One layer
and one head each, with the paper's residual connections (its layer norms and feed-forward blocks left out):

$$M = X_{src} + \operatorname{Attn}(X_{src}),\qquad H = X_{tgt} + \operatorname{Attn}_{\text{causal}}(X_{tgt}),\qquad
Y = H + \operatorname{Attn}(H W_q^{x},\, M W_k^{x},\, M W_v^{x})$$

## 1 · Where Q, K and V come from

Both sentences are embedded (same word, same vector) and get the sinusoidal positional encoding added, so a repeated
word still gets two different rows. Nine random weight matrices: encoder, decoder and cross W_q, W_k, W_v.
""")
    nb.code(SOFTMAX + EMBEDDINGS + POSITIONAL + '''
def attend(x_query, x_memory, W_q, W_k, W_v, mask=None):
    """Queries from x_query, keys and values from x_memory: (attended (T_q, d_v), weights (T_q, T_k))."""
    Q, K, V = x_query @ W_q, x_memory @ W_k, x_memory @ W_v  # (T_q, d_k), (T_k, d_k), (T_k, d_v)
    scores = Q @ K.T / np.sqrt(K.shape[1])  # (T_q, d_k) @ (d_k, T_k) -> (T_q, T_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)  # True: may attend
    weights = softmax(scores, axis=-1)  # (T_q, T_k)
    return weights @ V, weights  # (T_q, T_k) @ (T_k, d_v) -> (T_q, d_v)

src_tokens, tgt_tokens = src.split(), tgt.split()
X_src = embed_tokens(src_tokens, d_model, seed) + positional_encoding(len(src_tokens), d_model)  # (T_src, d_model)
X_tgt = embed_tokens(tgt_tokens, d_model, seed) + positional_encoding(len(tgt_tokens), d_model)  # (T_tgt, d_model)
W = random_projections(d_model, seed, n=9)  # encoder, decoder, cross: W_q, W_k, W_v each
print(f"source {src_tokens} -> X_src {X_src.shape};  target {tgt_tokens} -> X_tgt {X_tgt.shape}")
''')
    nb.md("""
## 2 · The two self-attentions

**Encoder:** the source sentence exists in full, so every source word may look at every other. **Decoder:** the
translation is written word by word, so each target word sees only itself and the words before it (the causal mask).
""")
    nb.code("""
encoder_attended, encoder_weights = attend(X_src, X_src, *W[0:3])  # (T_src, T_src) map
memory = X_src + encoder_attended  # M: the encoder's output, all the decoder will see of the source
causal = np.tri(len(tgt_tokens), dtype=bool)  # (T_tgt, T_tgt), True on and below the diagonal
decoder_attended, decoder_weights = attend(X_tgt, X_tgt, *W[3:6], mask=causal)
decoder_hidden = X_tgt + decoder_attended  # H
print("encoder self-attention weights:\\n", encoder_weights)
print("\\ndecoder masked self-attention weights:\\n", decoder_weights)
""")
    nb.md(r"""
## 3 · Cross-attention: the decoder reads the source

Each **target** word asks a question (its query comes from H) and the **source** words answer (keys and values come
from M). So the rows are target words and the columns source words: the map is T_tgt × T_src. There is no mask: the
whole source is known before the decoder starts.

$$A^{x} = \operatorname{softmax}\!\left(\frac{(H W_q^{x})(M W_k^{x})^\top}{\sqrt{d_k}}\right),\qquad
Y = H + A^{x}\,M W_v^{x}$$
""")
    nb.code("""
cross_attended, cross_weights = attend(decoder_hidden, memory, *W[6:9])  # (T_tgt, T_src) map
output = decoder_hidden + cross_attended  # Y: (T_tgt, d_model)
print("cross-attention weights (rows: target, columns: source):\\n", cross_weights)
for i, word in enumerate(tgt_tokens):
    print(f"{word!r} reads most from {src_tokens[int(np.argmax(cross_weights[i]))]!r}")
""")
    nb.code(HEATMAP + """
alt.hconcat(heatmap(encoder_weights, src_tokens, src_tokens, "encoder self-attention"),
            heatmap(decoder_weights, tgt_tokens, tgt_tokens, "decoder masked self-attention"),
            heatmap(cross_weights, tgt_tokens, src_tokens, "cross-attention"))
""")
    nb.md("""
## 4 · Cross-check with PyTorch

The same Q, K and V, in float32, through `torch.nn.functional.scaled_dot_product_attention` (the decoder's with its
causal mask).
""")
    nb.code("""
def torch_attended(x_query, x_memory, W_q, W_k, W_v, mask=None):
    q, k, v = (torch.from_numpy(m).float() for m in (x_query @ W_q, x_memory @ W_k, x_memory @ W_v))
    return F.scaled_dot_product_attention(q, k, v, attn_mask=None if mask is None else torch.from_numpy(mask)).numpy()

for name, mine, theirs in [
        ("encoder self-attention", encoder_attended, torch_attended(X_src, X_src, *W[0:3])),
        ("decoder masked self-attention", decoder_attended, torch_attended(X_tgt, X_tgt, *W[3:6], causal)),
        ("cross-attention", cross_attended, torch_attended(decoder_hidden, memory, *W[6:9]))]:
    print(f"max |NumPy - PyTorch|, {name}: {np.abs(mine - theirs).max():.2e}")
""")
