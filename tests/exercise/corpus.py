"""Attention functions as people write them: correct ones in several styles, and the bugs students and published
code make.

Each entry is a whole submission, the verdict it must get (does every check pass?) and phrases its checklist or
diagnosis must contain. They are modelled on public tutorials, textbooks and libraries, rewritten for the
exercise's signature ``scaled_dot_product_attention(Q, K, V, mask=None)``.
"""

from __future__ import annotations

from typing import NamedTuple


class Submission(NamedTuple):
    source: str
    passes: bool
    says: tuple[str, ...] = ()  # phrases the report must contain (checks' messages and diagnoses, plain text)


CORRECT: dict[str, Submission] = {
    "the lesson's": Submission('''
import math
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    d_k = Q.size(-1)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights
''', True),
    "einsum": Submission('''
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", Q, K) * Q.shape[-1] ** -0.5
    if mask is not None:
        scores = torch.where(mask.bool(), scores, torch.tensor(float("-inf")))
    weights = scores.softmax(dim=-1)
    return torch.einsum("...qk,...kd->...qd", weights, V), weights
''', True),
    "nn.Softmax module and .mT": Submission('''
import torch
from torch import nn

softmax = nn.Softmax(dim=-1)

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = torch.matmul(Q, K.mT) / (K.shape[-1] ** 0.5)
    if mask is not None:
        scores[..., mask == 0] = float("-inf")
    weights = softmax(scores)
    return torch.matmul(weights, V), weights
''', True),
    "the Annotated Transformer's -1e9": Submission('''
import math
import torch.nn.functional as F
import torch

def scaled_dot_product_attention(query, key, value, mask=None):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = F.softmax(scores, dim=-1)
    return torch.matmul(p_attn, value), p_attn
''', True),
    "through NumPy": Submission('''
import numpy as np
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    q, k, v = (t.numpy().astype(np.float64) for t in (Q, K, V))
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask.numpy() == 0, -np.inf, scores)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    return torch.from_numpy(weights @ v).float(), torch.from_numpy(weights).float()
''', True),
    "batched only, with torch.bmm": Submission('''
import math
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = torch.bmm(Q, K.transpose(1, 2)) / math.sqrt(Q.shape[2])
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = torch.softmax(scores, dim=2)
    return torch.bmm(weights, V), weights
''', True, ("needs a batch dimension", "added one")),
    "batched only, through a heads axis": Submission('''
import math
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    B, T, d = Q.shape
    q = Q.view(B, T, 1, d).transpose(1, 2)  # (B, heads=1, T, d)
    k = K.view(B, T, 1, d).transpose(1, 2)
    v = V.view(B, T, 1, d).transpose(1, 2)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = scores.softmax(dim=-1)
    out = (weights @ v).transpose(1, 2).reshape(B, T, d)
    return out, weights.squeeze(1)
''', True, ("needs a batch dimension",)),
}

BUGS: dict[str, Submission] = {
    "divided by the square root of the number of dimensions": Submission('''
import math
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.dim())
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights
''', False, ("divided by 1.73", "√3", "√16 = 4")),
    "divided by a constant, output only": Submission('''
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1) / 8
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    return torch.softmax(scores, dim=-1) @ V
''', False, ("divided by 8", "√16 = 4")),
    "nn.Softmax() without dim on a 4-D tensor": Submission('''
import math
import torch
from torch import nn

def scaled_dot_product_attention(Q, K, V, mask=None):
    q, k, v = (t.unsqueeze(-3) for t in (Q, K, V))  # one head, multi-head style: (..., heads=1, T, d)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = nn.Softmax()(scores)
    return (weights @ v).squeeze(-3), weights.squeeze(-3)
''', False, ("exactly 1", "axis of length 1", "dim=-1")),
    "softmax over the queries": Submission('''
import math
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = torch.softmax(scores, dim=1)
    return weights @ V, weights
''', False, ("each column sums to 1",)),
    "PyTorch's documented reference, float mask added": Submission('''
import math
import torch

def scaled_dot_product_attention(query, key, value, attn_mask=None):
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1 / math.sqrt(query.size(-1))
    attn_bias = torch.zeros(L, S, dtype=query.dtype)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            attn_bias.masked_fill_(attn_mask.logical_not(), float("-inf"))
        else:
            attn_bias = attn_mask + attn_bias
    attn_weight = query @ key.transpose(-2, -1) * scale_factor
    attn_weight += attn_bias
    attn_weight = torch.softmax(attn_weight, dim=-1)
    return attn_weight @ value, attn_weight
''', False, ("added the mask to the scores", "float mask")),
    "mask reversed": Submission('''
import math
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 1, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights
''', False, ("Mask polarity reversed",)),
    "batched only, mask reversed": Submission('''
import math
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = torch.bmm(Q, K.transpose(1, 2)) / math.sqrt(Q.shape[2])
    if mask is not None:
        scores = scores.masked_fill(mask.bool(), float("-inf"))
    weights = torch.softmax(scores, dim=2)
    return torch.bmm(weights, V), weights
''', False, ("Mask polarity reversed",)),
    "a vision model's mask after the softmax": Submission('''
import torch

def scaled_dot_product_attention(q, k, v, mask=None):
    scale = q.shape[-1] ** -0.5
    attn = (q @ k.transpose(-2, -1)) * scale
    attn = attn.softmax(dim=-1)
    if mask is not None:
        attn = attn.masked_fill(mask == 0, float('-inf'))
    x = attn @ v
    return x, attn
''', False, ("The mask was applied after the softmax", "above it they are -inf", "before the softmax")),
    "the d2l.ai textbook's valid_lens": Submission('''
import math
import torch
from torch import nn


def sequence_mask(X, valid_len, value=0.0):
    """Set the entries of each row of X past its valid length to value."""
    maxlen = X.size(1)
    keep = torch.arange(maxlen, dtype=torch.float32, device=X.device)[None, :] < valid_len[:, None]
    X[~keep] = value
    return X


def masked_softmax(X, valid_lens):
    """Softmax over the last axis, ignoring the keys past each valid length. X is 3-D."""
    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    shape = X.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
    return nn.functional.softmax(X.reshape(shape), dim=-1)


class DotProductAttention(nn.Module):
    def __init__(self, dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    # queries: (batch_size, no. of queries, d), keys: (batch_size, no. of key-value pairs, d),
    # values: (batch_size, no. of key-value pairs, value dimension), valid_lens: (batch_size,) or
    # (batch_size, no. of queries)
    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


def scaled_dot_product_attention(Q, K, V, valid_lens=None):
    attention = DotProductAttention()
    attention.eval()
    return attention(Q, K, V, valid_lens), attention.attention_weights
''', False, ("needs a batch dimension", "ran on a batch of one", "reads its fourth argument as valid lengths",
              "[1, 2, 3]", "mask.sum(-1)")),
    "sequence first": Submission('''
import math
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    # (seq_len, batch, d_k), as nn.MultiheadAttention without batch_first
    q, k, v = (t.transpose(0, 1) for t in (Q, K, V))  # (batch, seq_len, d_k)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return (weights @ v).transpose(0, 1), weights
''', False, ("first dimension", "sequence")),
    "masked_fill whose result is thrown away": Submission('''
import math
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    d_k = Q.size(-1)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        scores.masked_fill(mask == 0, float('-inf'))
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights
''', False, ("`masked_fill` returns a new tensor; assign it: `scores = scores.masked_fill(mask == 0, float('-inf'))` "
              "on line 9",)),
    "masked_fill thrown away, on the if's line": Submission('''
import math
import torch.nn.functional as F
import torch

def scaled_dot_product_attention(query, key, value, mask=None):
    d_k = query.size()[-1]
    attn_logits = torch.matmul(query, key.transpose(-2, -1))
    attn_logits = attn_logits / math.sqrt(d_k)
    if mask is not None: attn_logits.masked_fill(mask == 0, -9e15)
    attention = F.softmax(attn_logits, dim=-1)
    values = torch.matmul(attention, value)
    return values, attention
''', False, ("assign it: `attn_logits = attn_logits.masked_fill(mask == 0, -9e15)` on line 10",)),
    "torch.masked_fill thrown away": Submission('''
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = torch.einsum("bqd,bkd->bqk", Q, K) / Q.shape[-1] ** 0.5
    if mask is not None:
        torch.masked_fill(scores, mask.logical_not(), float("-inf"))
    attn = scores.softmax(-1)
    return torch.einsum("bqk,bkd->bqd", attn, V), attn
''', False, ("assign it: `scores = torch.masked_fill(scores, mask.logical_not(), float(\"-inf\"))` on line 7",)),
    "a misspelled masked_fill": Submission('''
import math
import torch

def scaled_dot_product_attention(query, key, value, mask=None):
    d_k = query.size(-1)
    energy = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        energy = energy.mask_fill(mask == 0, float('-inf'))
    attention = torch.softmax(energy, dim=-1)
    return torch.matmul(attention, value), attention
''', False, ("no attribute 'mask_fill'", "Did you mean `masked_fill`?", "correct the name on line 9")),
    "a misspelled transpose": Submission('''
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.tranpose(-1, -2) / Q.size(-1) ** 0.5
    if mask is not None:
        scores = scores.masked_fil(mask == 0, float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights @ V, weights
''', False, ("no attribute 'tranpose'", "Did you mean `transpose`?", "correct the name on line 5")),
    "a misspelled softmax of torch.nn.functional": Submission('''
import math
import torch
import torch.nn.functional as F

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(Q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = F.soft_max(scores, dim=-1)
    return torch.matmul(weights, V), weights
''', False, ("Did you mean `softmax`?", "`torch.nn.functional` has no `soft_max`: correct the name on line 10")),
    "the scale after the softmax": Submission('''
import math
import torch
import torch.nn.functional as F

def scaled_dot_product_attention(Q, K, V, mask=None):
    d_k = Q.size(-1)
    scores = torch.matmul(Q, K.transpose(-2, -1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float('-inf'))
    weights = F.softmax(scores, dim=-1) / math.sqrt(d_k)
    return torch.matmul(weights, V), weights
''', False, ("Every row sums to 0.25 = 1/√16 = 1/√d_k", "as they should be. Every row sums to 0.5 = 1/√4",
              "the scale was applied after the softmax",
              "on line 11 (`weights = F.softmax(scores, dim=-1) / math.sqrt(d_k)`), take the softmax of")),
    "the scale after the softmax, as a power": Submission('''
import torch

def scaled_dot_product_attention(q, k, v, mask=None):
    scale = q.shape[-1] ** -0.5
    attn = q @ k.transpose(-2, -1)
    if mask is not None:
        attn = attn.masked_fill(~mask.bool(), float("-inf"))
    attn = attn.softmax(dim=-1) * scale
    return attn @ v, attn
''', False, ("Every row of your weights sums to 0.25 = 1/√16 = 1/√d_k",
              "on line 9 (`attn = attn.softmax(dim=-1) * scale`)")),
    "the scale after the softmax, output only": Submission('''
import math
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    return torch.softmax(scores, dim=-1) @ V / math.sqrt(Q.size(-1))
''', False, ("Your output is that of unscaled scores multiplied by 0.25 = 1/√16 = 1/√d_k", "on line 9",
              "the scale was applied after the softmax")),
    "is_causal=True with the mask ignored": Submission('''
import torch.nn.functional as F

def scaled_dot_product_attention(Q, K, V, mask=None):
    return F.scaled_dot_product_attention(Q, K, V, is_causal=True)
''', False, ("your masked output does match PyTorch's", "Called without a mask, your function still masks the future",
              "`is_causal=True` makes `F.scaled_dot_product_attention` mask the future whether or not a mask is given",
              "drop it on line 5 (`return F.scaled_dot_product_attention(Q, K, V, is_causal=True)`)")),
    "is_causal=True on a line of its own, weights returned": Submission('''
import math
import torch
import torch.nn.functional as F

def scaled_dot_product_attention(query, key, value, mask=None):
    out = F.scaled_dot_product_attention(
        query, key, value, attn_mask=None, dropout_p=0.0,
        is_causal=True)
    T = query.size(-2)
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    scores = scores.masked_fill(torch.ones(T, T).tril() == 0, float("-inf"))
    return out, scores.softmax(dim=-1)
''', False, ("whether or not a mask is given", "drop it on line 7 (`out = F.scaled_dot_product_attention(`)")),
    "a causal mask of its own, the mask ignored": Submission('''
import math
import torch
import torch.nn.functional as F

def scaled_dot_product_attention(q, k, v, mask=None):
    T = q.size(-2)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    bias = torch.tril(torch.ones(T, T))
    att = att.masked_fill(bias == 0, float('-inf'))
    att = F.softmax(att, dim=-1)
    return att @ v, att
''', False, ("Called without a mask, your function still masks the future", "the `mask` argument is ignored")),
    "the weights transposed": Submission('''
import math
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float('-inf'))
    weights = torch.softmax(scores, dim=-1)
    return weights.transpose(-2, -1) @ V, weights
''', False, ("Your output is `weights.transpose(-2, -1) @ V`", "`output = weights @ V`")),
    "the weights transposed by einsum, output only": Submission('''
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = torch.einsum("bqd,bkd->bqk", Q, K) / Q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    attn = torch.softmax(scores, dim=-1)
    return torch.einsum("bqk,bqd->bkd", attn, V)
''', False, ("Your output is `weights.transpose(-2, -1) @ V`",)),
    "V on the wrong side": Submission('''
import math
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(Q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float('-inf'))
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(V, weights), weights
''', False, ("Your output is `V @ weights`", "`output = weights @ V`")),
    "V transposed on the wrong side": Submission('''
import math
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(1, 2) / math.sqrt(K.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    return V.transpose(1, 2) @ p_attn, p_attn
''', False, ("Your output is `V.transpose(-2, -1) @ weights`",)),
    "a constant scale": Submission('''
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1) * 0.06
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float('-inf'))
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights
''', False, ("multiplied by 0.06 on every test", "a constant, not 1/√d_k",
              "√16 = 4 on the one and √4 = 2 on the other")),
    "a constant scale written as a square root": Submission('''
import math
import torch

D_K = 64

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = torch.bmm(Q, K.transpose(1, 2)) / math.sqrt(D_K)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = torch.softmax(scores, dim=2)
    return torch.bmm(weights, V), weights
''', False, ("divided by 8 on every test", "a constant, not 1/√d_k")),
    "a key-padding mask reshaped": Submission('''
import math
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    # mask: (batch, seq_len), 1 for real tokens and 0 for padding
    batch, seq_len, d_k = Q.shape
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        mask = mask.view(batch, 1, seq_len)  # one row, broadcast over the queries
        scores = scores.masked_fill(mask == 0, float('-inf'))
    weights = scores.softmax(dim=-1)
    return weights @ V, weights
''', False, ("shape '[1, 1, 3]' is invalid for input of size 9", "reads its fourth argument as a key-padding mask",
              "of shape (batch, seq_len) = (1, 3)", "of shape (seq_len, seq_len) = (3, 3)", "fail on line 10",
              "returns exactly attention without that key")),
    "nn.MultiheadAttention's key_padding_mask": Submission('''
import math
import torch

def scaled_dot_product_attention(query, key, value, key_padding_mask=None):
    scores = torch.bmm(query, key.transpose(1, 2)) / math.sqrt(query.size(-1))
    if key_padding_mask is not None:
        scores = scores.masked_fill(key_padding_mask.unsqueeze(1).bool(), float('-inf'))
    weights = torch.softmax(scores, dim=-1)
    return torch.bmm(weights, value), weights
''', False, ("reads its fourth argument as a key-padding mask", "(batch, seq_len) = (1, 3)",
              "(seq_len, seq_len) = (3, 3)", "It also reads 1 as padding")),
    "a constant scale, right for the lesson's d_k only": Submission('''
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1) / 4  # sqrt(16)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float('-inf'))
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights
''', False, ("divided by 4 on every test", "a constant, not 1/√d_k", "√4 = 2 on the other")),
    "masked_fill thrown away, output only": Submission('''
import math
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))
    if mask is not None:
        scores.masked_fill(mask == 0, -1e9)
    return torch.softmax(scores, dim=-1) @ V
''', False, ("the outputs are the same as without it", "assign it: `scores = scores.masked_fill(mask == 0, -1e9)` "
              "on line 8")),
}
