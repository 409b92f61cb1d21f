"""The whole-block page's notebook: the lesson's three tokens through attention, add & norm, the feed-forward
network and add & norm again (post-LN or pre-LN); a deep stack at random initialisation with its gradient by
autograd; the FFN's per-position check; the same block through torch.nn.TransformerEncoderLayer."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from notebooks.builder import HEATMAP, SOFTMAX, Notebook

TITLE = "The whole Transformer block"
ACTIVATIONS = ("relu", "gelu")
PLACEMENTS = ("post", "pre")
#: The deep stack's depths, as the page's slider offers them.
MAX_LAYERS = 24
LESSON_D_MODEL, LESSON_TOKENS = 4, 3


def settings(state: Mapping[str, Any]) -> dict[str, Any]:
    """The block's seed, d_model, heads (a divisor of d_model), d_ff, activation and norm placement; the deep
    stack's depth and switches; the order of the shuffled positions."""
    d_model, n_heads, d_ff, layers = (int(state[k]) for k in ("d_model", "heads", "d_ff", "layers"))
    activation, placement = str(state["act"]).lower(), str(state["ln"])
    perm = [int(i) for i in state["perm"]]
    if d_model < LESSON_D_MODEL or n_heads < 1 or d_model % n_heads or d_ff < 1:
        raise ValueError(f"d_model = {d_model} (at least 4) with {n_heads} heads (a divisor) and d_ff = {d_ff}.")
    if activation not in ACTIVATIONS or placement not in PLACEMENTS or not 1 <= layers <= MAX_LAYERS:
        raise ValueError(f"activation {activation!r}, placement {placement!r}, {layers} layers.")
    if tuple(perm) not in itertools.permutations(range(LESSON_TOKENS)):
        raise ValueError(f"{perm} is not an order of the positions 0, 1, 2.")
    return {"seed": int(state["seed"]), "d_model": d_model, "n_heads": n_heads, "d_ff": d_ff,
            "activation": activation, "placement": placement, "layers": layers,
            "residual": bool(state["residual"]), "norm": bool(state["norm"]), "perm": perm}


def cells(nb: Notebook) -> None:
    block_cells(nb)
    placement_cells(nb)
    stack_cells(nb)
    per_position_cells(nb)
    torch_cells(nb)


def block_cells(nb: Notebook) -> None:
    """The input and weights, then every stage of one block in the order of its placement."""
    nb.md(r"""
Attention is half of a Transformer block. Around it sit a **residual connection** (a sub-layer's output is added
to its input), **layer normalisation** (each token's vector brought to mean 0 and variance 1, then scaled by a
learned γ and shifted by a learned β) and a **feed-forward network** that works on every token on its own.

$$\text{post-LN (the paper)}:\quad h = \operatorname{LN}_1(x + \operatorname{MHA}(x)),\quad
y = \operatorname{LN}_2(h + \operatorname{FFN}(h))$$
$$\text{pre-LN (GPT-2)}:\quad h = x + \operatorname{MHA}(\operatorname{LN}_1(x)),\quad
y = h + \operatorname{FFN}(\operatorname{LN}_2(h))$$

## 0 · The input and the weights

X is the worked example's three tokens (4 dimensions); a wider d_model adds fixed columns (rounded to one decimal,
from their own generator, so they do not move with the seed). W_q, W_k, W_v follow the lesson's recipe; the rest
come from the same generator: W_o, then the first norm's γ₁ (near 1) and β₁ (near 0), then W_1, W_2 with variance
1/fan_in, small biases, and the second norm's γ₂, β₂.
""")
    nb.code("""
tokens = ["the", "cat", "sat"]
lesson_X = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [1.0, 1.0, 0.0, 0.0]])  # (3, 4)
extra = np.round(np.random.default_rng(2017).normal(size=(3, d_model - 4)), 1)  # (3, d_model - 4)
X = np.concatenate([lesson_X, extra], axis=1)  # (3, d_model)
T = len(tokens)
d_k = d_model // n_heads

rng = np.random.default_rng(seed)
W_q, W_k, W_v = (np.round(rng.normal(0, 1, size=(d_model, d_model)), 1) for _ in range(3))
W_o = np.round(rng.normal(0, 1 / np.sqrt(d_model), size=(d_model, d_model)), 2)
gamma_1 = np.round(1 + rng.normal(0, 0.1, size=d_model), 2)
beta_1 = np.round(rng.normal(0, 0.1, size=d_model), 2)
W_1 = np.round(rng.normal(0, 1 / np.sqrt(d_model), size=(d_model, d_ff)), 2)
b_1 = np.round(rng.normal(0, 0.1, size=d_ff), 2)
W_2 = np.round(rng.normal(0, 1 / np.sqrt(d_ff), size=(d_ff, d_model)), 2)
b_2 = np.round(rng.normal(0, 0.1, size=d_model), 2)
gamma_2 = np.round(1 + rng.normal(0, 0.1, size=d_model), 2)
beta_2 = np.round(rng.normal(0, 0.1, size=d_model), 2)
print(f"X ({T} tokens x d_model = {d_model}):\\n", X)
print(f"\\n{n_heads} head(s) of d_k = {d_k}; d_ff = {d_ff}; activation {activation}; {placement}-LN")
""")
    nb.md(r"""
## 1 · LayerNorm, the recipe

Each token's row on its own: subtract the row's mean μ, divide by its standard deviation √(σ² + ε) (σ² the biased
variance, ε = 10⁻⁵ as in PyTorch), then scale by γ and shift by β, one of each per dimension.

$$\operatorname{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} + \beta$$
""")
    nb.code('''
eps = 1e-5

def layer_norm(x, gamma, beta):
    """(each row's mean, its variance, the normalised rows, the rows after gamma and beta)."""
    mean = x.mean(axis=-1)  # (T, d) -> (T,)
    var = ((x - mean[:, None]) ** 2).mean(axis=-1)  # (T,): biased, 1/d
    normalised = (x - mean[:, None]) / np.sqrt(var[:, None] + eps)  # (T, d)
    return mean, var, normalised, normalised * gamma + beta  # (T, d) * (d,) + (d,)
''')
    nb.md(r"""
## 2 · Attention

The sub-layer the other pages explain: each head's map, the heads side by side, mixed by W_o. With post-LN it reads
the block's input X; with pre-LN it reads X normalised by LN₁. (Seed 0, d_model 4, one head, post-LN: Concat(heads)
is the worked example's output.)

$$\operatorname{MHA}(z) = \operatorname{Concat}(\text{head}_1, \dots, \text{head}_H)\,W_o,\qquad
\text{head}_h = \operatorname{softmax}\!\left(\frac{Q_h K_h^\top}{\sqrt{d_k}}\right) V_h$$
""")
    nb.code(SOFTMAX + '''
def multi_head_attention(z, mask=None):
    """(output (T, d_model), weights (H, T, T), Concat(heads) (T, d_model)); mask (T, T): True = may attend."""
    Q, K, V = ((z @ W).reshape(len(z), n_heads, d_k).transpose(1, 0, 2) for W in (W_q, W_k, W_v))  # (H, T, d_k)
    scores = Q @ K.transpose(0, 2, 1) / np.sqrt(d_k)  # (H, T, d_k) @ (H, d_k, T) -> (H, T, T)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)  # a masked key's weight becomes exactly 0
    weights = softmax(scores, axis=-1)  # (H, T, T)
    concat = (weights @ V).transpose(1, 0, 2).reshape(len(z), d_model)  # (H, T, d_k) -> (T, H, d_k) -> (T, d_model)
    return concat @ W_o, weights, concat  # (T, d_model) @ (d_model, d_model) -> (T, d_model)

if placement == "pre":
    mean_1, var_1, normalised_1, norm_1 = layer_norm(X, gamma_1, beta_1)  # pre-LN: LN_1(x) first
    attention_input = norm_1
else:
    attention_input = X
attention_output, attention_weights, concat = multi_head_attention(attention_input)
print("attention's input:\\n", attention_input)
for h in range(n_heads):
    print(f"\\nhead {h + 1} attention weights:\\n", attention_weights[h])
print("\\nConcat(heads):\\n", concat)
print("\\nW_o:\\n", W_o)
print("\\nMHA = Concat(heads) @ W_o:\\n", attention_output)
''')
    nb.md(r"""
## 3 · Add: the residual stream

Attention's output does not replace its input: it is *added* to it. The stream of token vectors carries on, and
each sub-layer writes an update into it.

$$x + \operatorname{MHA}(\cdot)$$
""")
    nb.code("""
residual_1 = X + attention_output  # (T, d_model)
print("x + MHA:\\n", residual_1)
""")
    nb.md(r"""
## 4 · Norm

Post-LN normalises that sum; pre-LN normalised X before attention (section 2). Either way, LN₁ row by row: first
each row's mean and variance, then the normalised rows (mean 0 and variance σ²/(σ² + ε), a hair under 1), then γ
and β.
""")
    nb.code("""
if placement == "post":
    mean_1, var_1, normalised_1, norm_1 = layer_norm(residual_1, gamma_1, beta_1)  # h = LN_1(x + MHA(x))
print("each row's mean:", mean_1, "  variance:", var_1)
print("\\nnormalised rows:\\n", normalised_1)
print("their means:", normalised_1.mean(axis=1), "  variances:", normalised_1.var(axis=1))
print("\\ngamma_1:", gamma_1, "\\nbeta_1: ", beta_1)
print("\\nLN_1 = gamma_1 * normalised + beta_1:\\n", norm_1)
""")
    nb.md(r"""
## 5 · The feed-forward network

Each token's vector is widened to d_ff, passed through φ, and narrowed back: the same two matrices at every
position, and no position reads another. φ is ReLU (the paper) or GELU (GPT-2, BERT), here the exact GELU with
the error function, as PyTorch's default. Post-LN feeds it h = LN₁(…); pre-LN feeds it LN₂(h), h = x + MHA(…).

$$\operatorname{FFN}(h) = \varphi(h W_1 + b_1)\, W_2 + b_2,\qquad
\operatorname{ReLU}(a) = \max(0, a),\quad
\operatorname{GELU}(a) = \frac{a}{2}\left(1 + \operatorname{erf}\frac{a}{\sqrt 2}\right)$$
""")
    nb.code('''
import math

erf = np.vectorize(math.erf)

def phi(a):
    """The activation, elementwise."""
    return np.maximum(a, 0.0) if activation == "relu" else 0.5 * a * (1 + erf(a / math.sqrt(2)))

def feed_forward(h):
    """(pre-activation (T, d_ff), hidden (T, d_ff), output (T, d_model))."""
    pre = h @ W_1 + b_1  # (T, d_model) @ (d_model, d_ff) + (d_ff,) -> (T, d_ff)
    hidden = phi(pre)  # (T, d_ff)
    return pre, hidden, hidden @ W_2 + b_2  # (T, d_ff) @ (d_ff, d_model) + (d_model,) -> (T, d_model)

if placement == "pre":
    mean_2, var_2, normalised_2, norm_2 = layer_norm(residual_1, gamma_2, beta_2)  # LN_2(h)
    ffn_input = norm_2
else:
    ffn_input = norm_1
pre_activation, hidden, ffn_output = feed_forward(ffn_input)
print("W_1:\\n", W_1, "\\nb_1:", b_1)
print(f"\\nh W_1 + b_1 ({T} x {d_ff}):\\n", pre_activation)
print(f"\\n{activation}(h W_1 + b_1):\\n", hidden)
print("\\nW_2:\\n", W_2, "\\nb_2:", b_2)
print("\\nFFN output:\\n", ffn_output)
''')
    nb.md(r"""
## 6 · Add and norm again

The FFN's output is added to its input's stream, as attention's was. Post-LN then normalises that sum with LN₂
(its own γ and β), which is the block's output; pre-LN used LN₂ before the FFN, and the sum is the output.
""")
    nb.code("""
if placement == "post":
    residual_2 = norm_1 + ffn_output  # h + FFN(h)
    mean_2, var_2, normalised_2, norm_2 = layer_norm(residual_2, gamma_2, beta_2)  # y = LN_2(h + FFN(h))
    output = norm_2
else:
    residual_2 = residual_1 + ffn_output  # y = h + FFN(LN_2(h))
    output = residual_2
print("second residual sum:\\n", residual_2)
print("\\nLN_2's rows: means", mean_2, " variances", var_2)
print("gamma_2:", gamma_2, "\\nbeta_2: ", beta_2)
print("\\nthe block's output:\\n", output)
""")
    nb.code(HEATMAP + """
stages = {"attention": attention_output, "x + MHA": residual_1, "LN_1": norm_1, "FFN": ffn_output,
          "second sum": residual_2, "LN_2": norm_2}
dims = [f"d{j}" for j in range(d_model)]
alt.hconcat(*[heatmap(m, tokens, dims, name, scheme="redblue") for name, m in stages.items()])
""")


def placement_cells(nb: Notebook) -> None:
    nb.md(r"""
## 7 · Post-LN or pre-LN

The paper normalises after each residual sum; GPT-2 and most later models normalise each sub-layer's input, so the
stream itself is never normalised inside the block: x passes through untouched, plus the updates. The whole block
as one function, both ways: post-LN's last norm sets each output row's size (about √d_model times γ); pre-LN's rows
are the input's plus two updates.
""")
    nb.code('''
def block(x, placement, causal=False):
    """One block (no dropout) on x (T, d_model); causal masks the later tokens as a decoder does."""
    mask = np.tril(np.ones((len(x), len(x)), dtype=bool)) if causal else None  # (T, T), True = may attend
    ln_1 = lambda z: layer_norm(z, gamma_1, beta_1)[-1]
    ln_2 = lambda z: layer_norm(z, gamma_2, beta_2)[-1]
    mha = lambda z: multi_head_attention(z, mask)[0]
    ffn = lambda z: feed_forward(z)[-1]
    if placement == "post":
        h = ln_1(x + mha(x))
        return ln_2(h + ffn(h))
    h = x + mha(ln_1(x))
    return h + ffn(ln_2(h))

assert np.allclose(block(X, placement), output)  # the stages above, in one function
lengths = {p: np.linalg.norm(block(X, p), axis=1) for p in ("post", "pre")}  # (T,) each
print(f"output rows' lengths, post-LN: {lengths['post']}  (sqrt(d_model) = {np.sqrt(d_model):.2f})")
print(f"output rows' lengths, pre-LN:  {lengths['pre']}  (the input's: {np.linalg.norm(X, axis=1)})")
''')


def stack_cells(nb: Notebook) -> None:
    nb.md(r"""
## 8 · Why the residual, and why the norm: a deep stack

Stack `layers` blocks, freshly initialised (weights N(0, 1/fan_in), no biases, γ = 1, β = 0, from the fixed seed 0),
at the lesson's width (d_model 4, one head, d_ff 16), with the activation and placement above, and the residual
and the norms switched on or off. Per depth: the stream's size against each block's update, each token's cosine
with its own input, the mean cosine between tokens, and the gradient reaching each block's six weight matrices
from the loss L = Σ R ⊙ y (R a fixed random direction of norm 1), by autograd through the whole stack.

$$\text{residual on: } x \leftarrow x + F(\cdot),\qquad \text{off: } x \leftarrow F(\cdot)$$
""")
    nb.code('''
S_D, S_HEADS, S_FF, S_SEED = 4, 1, 16, 0
shapes = {"W_q": (S_D, S_D), "W_k": (S_D, S_D), "W_v": (S_D, S_D), "W_o": (S_D, S_D),
          "W_1": (S_D, S_FF), "W_2": (S_FF, S_D)}
sizes = [int(np.prod(s)) for s in shapes.values()]
draws = np.random.default_rng(S_SEED).standard_normal((layers, sum(sizes)))  # block l's weights: row l
stack_W, start = {}, 0
for (name, shape), size in zip(shapes.items(), sizes):
    w = draws[:, start:start + size].reshape(layers, *shape) / np.sqrt(shape[0])  # N(0, 1/fan_in)
    stack_W[name] = torch.from_numpy(w).requires_grad_()  # (layers, fan_in, fan_out)
    start += size

def stack_block(x, w):
    """One block of the stack, its residuals and norms on or off."""
    nrm = lambda z: F.layer_norm(z, z.shape[-1:], eps=1e-5) if norm else z
    add = lambda stream, update: stream + update if residual else update
    def mha(z):
        dk = S_D // S_HEADS
        q, k, v = ((z @ w[n]).reshape(len(z), S_HEADS, dk).transpose(0, 1) for n in ("W_q", "W_k", "W_v"))
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dk), dim=-1)  # (H, T, T)
        return (a @ v).transpose(0, 1).reshape(len(z), S_D) @ w["W_o"]  # (T, d_model)
    def ffn(z):
        hid = z @ w["W_1"]  # (T, d_ff)
        return (F.relu(hid) if activation == "relu" else F.gelu(hid)) @ w["W_2"]  # exact GELU
    if placement == "post":
        h = nrm(add(x, mha(x)))
        return nrm(add(h, ffn(h)))
    h = add(x, mha(nrm(x)))
    return add(h, ffn(nrm(h)))

states = [torch.from_numpy(lesson_X)]  # the lesson's three tokens, (3, 4)
for l in range(layers):
    states.append(stack_block(states[-1], {n: w[l] for n, w in stack_W.items()}))
R = torch.randn(states[-1].shape, generator=torch.Generator().manual_seed(S_SEED + 1), dtype=torch.float64)
R = R / R.norm()
loss = (R * states[-1]).sum()  # L = sum R * y
grads = torch.autograd.grad(loss, list(stack_W.values()))  # each (layers, fan_in, fan_out)
with torch.no_grad():
    S = torch.stack(states)  # (layers + 1, T, d_model)
    row_norms = S.norm(dim=-1)  # (layers + 1, T)
    stream = row_norms.mean(dim=-1).numpy()  # mean length of a token's vector
    update = (S[1:] - S[:-1]).norm(dim=-1).mean(dim=-1).numpy()  # what each block changed
    self_cosine = F.cosine_similarity(S, S[:1].expand_as(S), dim=-1, eps=1e-300).numpy()  # (layers + 1, T)
    unit = S / row_norms.clamp_min(1e-300)[..., None]
    gram = unit @ unit.transpose(-1, -2)  # (layers + 1, T, T): cosines between tokens
    token_cosine = ((gram.sum(dim=(-1, -2)) - gram.diagonal(dim1=-2, dim2=-1).sum(-1)) / (T * (T - 1))).numpy()
    grad_norm = sum(g.pow(2).sum(dim=(1, 2)) for g in grads).sqrt().numpy()  # (layers,)
ratio = grad_norm[0] / grad_norm[-1] if grad_norm[-1] > 0 else float("inf")
print(f"{layers} blocks, residual {'on' if residual else 'off'}, norm {'on' if norm else 'off'}:")
print(f"stream length {stream[0]:.3g} at the input, {stream[-1]:.3g} at the top; last update {update[-1]:.3g}")
print("cosine of each token with its input at the top:", self_cosine[-1].round(2),
      f"  between tokens: {token_cosine[-1]:.2f} (input {token_cosine[0]:.2f})")
print(f"gradient at block 1: {grad_norm[0]:.3g}, at block {layers}: {grad_norm[-1]:.3g}, ratio {ratio:.3g}")
''')
    nb.code("""
depths = np.arange(layers + 1)
sizes_df = pd.DataFrame({"depth": np.concatenate([depths, depths[1:]]), "value": np.concatenate([stream, update]),
                         "series": ["residual stream"] * (layers + 1) + ["block's update"] * layers})
cos_df = pd.DataFrame([(d, f"token {t + 1} vs its input", self_cosine[d, t]) for d in depths for t in range(T)]
                      + [(d, "between tokens (mean)", token_cosine[d]) for d in depths],
                      columns=["depth", "series", "value"])
grad_df = pd.DataFrame({"block": np.arange(1, layers + 1), "value": grad_norm})
line = lambda df, x, title, scale: alt.Chart(df[df["value"] > 0] if scale == "log" else df, title=title).mark_line(
    point=True).encode(x=f"{x}:Q", y=alt.Y("value:Q", scale=alt.Scale(type=scale)),
                       color="series:N" if "series" in df else alt.value("black")).properties(width=250, height=200)
alt.hconcat(line(sizes_df, "depth", "Stream and updates", "log"),
            line(cos_df, "depth", "What is left of each token", "linear"),
            line(grad_df, "block", "Gradient reaching each block", "log")).resolve_scale(color="independent")
""")


def per_position_cells(nb: Notebook) -> None:
    nb.md(r"""
## 9 · The feed-forward network works per position

Shuffle the tokens (row i of P x is token perm[i]): the FFN's output is shuffled the same way, exactly, because each
row goes through the same arithmetic wherever it stands. Only attention mixes positions. Then, where a block's
weights are: attention's four d_model × d_model matrices against the FFN's two.

$$\operatorname{FFN}(P\,x) = P\,\operatorname{FFN}(x)$$
""")
    nb.code("""
p = np.array(perm)
ffn_of_shuffled = feed_forward(X[p])[-1]  # FFN(P x)
shuffled_ffn = feed_forward(X)[-1][p]  # P FFN(x)
max_difference = np.abs(ffn_of_shuffled - shuffled_ffn).max()
print("shuffled:", [tokens[i] for i in p], "  max |FFN(P x) - P FFN(x)| =", max_difference)
widths = {f"this block ({d_model}, {d_ff})": (d_model, d_ff), "GPT-2 small (768, 3072)": (768, 3072)}
for name, (d, ff) in widths.items():
    attention_weights_count, ffn_weights_count = 4 * d * d, 2 * d * ff
    print(f"{name}: attention {attention_weights_count:,}, FFN {ffn_weights_count:,}, "
          f"FFN's share {ffn_weights_count / (attention_weights_count + ffn_weights_count):.1%}")
shuffled_tokens = [f"{i}:{tokens[j]}" for i, j in enumerate(p)]
alt.hconcat(heatmap(ffn_of_shuffled, shuffled_tokens, dims, "FFN(shuffled tokens)", scheme="redblue"),
            heatmap(shuffled_ffn, shuffled_tokens, dims, "FFN(tokens), shuffled", scheme="redblue"))
""")


def torch_cells(nb: Notebook) -> None:
    nb.md("""
## 10 · Cross-check with PyTorch's own block

The same X and weights through `torch.nn.TransformerEncoderLayer` in float64, dropout 0, `norm_first` for pre-LN,
once as it is and once with a causal mask. PyTorch computes x Wᵀ (`nn.Linear`), so it holds the transposes:
`in_proj_weight` = [W_qᵀ; W_kᵀ; W_vᵀ], `out_proj.weight` = W_oᵀ, `linear1.weight` = W₁ᵀ, `linear2.weight` = W₂ᵀ;
the attention's biases are 0.
""")
    nb.code("""
layer = torch.nn.TransformerEncoderLayer(d_model, n_heads, dim_feedforward=d_ff, dropout=0.0, activation=activation,
                                         layer_norm_eps=eps, batch_first=True, norm_first=placement == "pre",
                                         dtype=torch.float64)
params = {layer.self_attn.in_proj_weight: np.concatenate([W_q.T, W_k.T, W_v.T]),  # (3 d_model, d_model)
          layer.self_attn.in_proj_bias: np.zeros(3 * d_model), layer.self_attn.out_proj.weight: W_o.T,
          layer.self_attn.out_proj.bias: np.zeros(d_model), layer.linear1.weight: W_1.T, layer.linear1.bias: b_1,
          layer.linear2.weight: W_2.T, layer.linear2.bias: b_2, layer.norm1.weight: gamma_1,
          layer.norm1.bias: beta_1, layer.norm2.weight: gamma_2, layer.norm2.bias: beta_2}
with torch.no_grad():
    for param, value in params.items():
        param.copy_(torch.from_numpy(np.ascontiguousarray(value)))
    layer.eval()
    x = torch.from_numpy(X).unsqueeze(0)  # (1, T, d_model): a batch of one
    torch_output = layer(x)[0].numpy()
    causal_mask = torch.nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64)
    torch_causal_output = layer(x, src_mask=causal_mask, is_causal=True)[0].numpy()
print("max |NumPy - PyTorch|, no mask:    ", np.abs(block(X, placement) - torch_output).max())
print("max |NumPy - PyTorch|, causal mask:", np.abs(block(X, placement, causal=True) - torch_causal_output).max())
""")
