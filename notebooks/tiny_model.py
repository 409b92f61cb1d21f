"""The code the training page's and the decoder's notebooks share: the tiny Transformer (its attention taking an
optional mask, as the decoder's does) and Adam, written as `training.model` and `training.optimiser` compute them,
operation for operation, so a notebook's run reaches the page's losses."""

from notebooks.builder import Notebook

MODEL = '''
import math
from torch import nn

def positional_encoding(seq_len, d_model):
    """Sines in the even dims, cosines in the odd ones; dims 2i and 2i+1 share the frequency 1/10000^(2i/d_model)."""
    pos = np.arange(seq_len, dtype=np.float64)[:, None]  # (T, 1)
    rates = 1.0 / np.power(10000.0, 2 * (np.arange(d_model) // 2) / d_model)  # (d_model,)
    angles = pos * rates[None, :]  # (T, d_model)
    pe = np.empty((seq_len, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angles[:, 0::2]), np.cos(angles[:, 1::2])
    return pe

class MultiHeadSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, mask=None, need_weights=True):
        """x (B, T, d_model) -> (output (B, T, d_model), weights (B, H, T, T)); mask (T, T): True = may attend.
        need_weights=False (training, scoring): the same formula in PyTorch's fused kernel, which keeps no weights."""
        B, T, d_model = x.shape
        split = lambda t: t.view(B, T, self.n_heads, self.d_k).transpose(1, 2)  # (B, T, d_model) -> (B, H, T, d_k)
        q, k, v = split(self.W_q(x)), split(self.W_k(x)), split(self.W_v(x))
        weights = None
        if need_weights:
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)  # (B, H, T, d_k) @ (B, H, d_k, T) -> (B, H, T, T)
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))  # a masked key gets weight exactly 0
            weights = scores.softmax(dim=-1)  # (B, H, T, T): each row sums to 1
            heads = weights @ v  # (B, H, T, T) @ (B, H, T, d_k) -> (B, H, T, d_k)
        else:  # softmax(Q K^T / sqrt(d_k) + M) V, M the causal mask (the only mask here) when there is one
            heads = F.scaled_dot_product_attention(q, k, v, is_causal=mask is not None)  # (B, H, T, d_k)
        merged = heads.transpose(1, 2).reshape(B, T, d_model)  # (B, H, T, d_k) -> (B, T, d_model)
        return self.W_o(merged), weights

class Block(nn.Module):
    """Pre-norm: attention, then the MLP, each added back to the residual stream."""
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = MultiHeadSelfAttention(d_model, n_heads)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.ReLU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x, mask=None, need_weights=True):
        a, weights = self.attn(self.ln1(x), mask, need_weights)  # (B, T, d_model), (B, H, T, T) or None
        x = x + a
        return x + self.mlp(self.ln2(x)), weights

class TinyTransformer(nn.Module):
    def __init__(self, vocab, seq_len, d_model, n_heads, n_layers, pos):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        if pos == "sinusoidal":
            self.register_buffer("P", torch.tensor(positional_encoding(seq_len, d_model), dtype=torch.float32))
        elif pos == "learned":
            self.P = nn.Parameter(0.5 * torch.randn(seq_len, d_model))
        else:  # "none": every position looks the same
            self.register_buffer("P", torch.zeros(seq_len, d_model))
        self.blocks = nn.ModuleList(Block(d_model, n_heads) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.out = nn.Linear(d_model, vocab)

    def forward(self, tokens, mask=None, need_weights=True):
        """tokens (B, T) -> logits (B, T, vocab) and every layer's attention (B, n_layers, H, T, T), or None."""
        x = self.embed(tokens) + self.P[: tokens.shape[1]]  # (B, T, d_model) + (T, d_model)
        maps = []
        for block in self.blocks:
            x, weights = block(x, mask, need_weights)
            maps.append(weights)
        return self.out(self.ln_f(x)), torch.stack(maps, dim=1) if need_weights else None

'''

#: Adam as `training.optimiser.Adam` computes it, operation for operation.
ADAM = '''
class Adam:
    def __init__(self, params, lr, betas=(0.9, 0.999), eps=1e-8):
        self.params = [p for p in params if p.requires_grad]
        self.lr, (self.beta1, self.beta2), self.eps, self.t = lr, betas, eps, 0
        self.m = [torch.zeros_like(p) for p in self.params]  # first moments
        self.v = [torch.zeros_like(p) for p in self.params]  # second moments

    def descend(self, loss):
        """Clear the old gradients, backpropagate, update; the loss as a number."""
        for p in self.params:
            p.grad = None
        loss.backward()
        self.step()
        return loss.item()

    @torch.no_grad()
    def step(self):
        self.t += 1
        bias1, bias2 = 1 - self.beta1**self.t, 1 - self.beta2**self.t
        for p, m, v in zip(self.params, self.m, self.v):
            if p.grad is None:
                continue
            m.mul_(self.beta1).add_(p.grad, alpha=1 - self.beta1)
            v.mul_(self.beta2).addcmul_(p.grad, p.grad, value=1 - self.beta2)
            denom = (v.sqrt() / math.sqrt(bias2)).add_(self.eps)
            p.addcdiv_(m, denom, value=-self.lr / bias1)
'''


def adam_cells(nb: Notebook) -> None:
    """Adam's update, then Adam written out and made for the notebook's `model` at its `lr`."""
    nb.md(r"""
## 3 · Adam, written out

For every parameter θ with gradient g, at step t (β₁ = 0.9, β₂ = 0.999, ε = 10⁻⁸, as `torch.optim.Adam`):

$$m \leftarrow \beta_1 m + (1-\beta_1)\,g,\quad v \leftarrow \beta_2 v + (1-\beta_2)\,g^2,\quad
\theta \leftarrow \theta - \mathrm{lr}\,\frac{m / (1-\beta_1^t)}{\sqrt{v / (1-\beta_2^t)} + \epsilon}$$
""")
    nb.code(ADAM + """
optimiser = Adam(model.parameters(), lr=lr)
""")
