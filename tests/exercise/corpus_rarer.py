"""Rarer mistakes, as tutorials and research code make them, rewritten for the exercise's signature: dropout left
on, an input never used, and more (`tests.exercise.corpus` holds the usual ones, and the `Submission` type).

Each is a whole submission, the verdict it must get and phrases its checklist or diagnosis must contain.
"""

from __future__ import annotations

from tests.exercise.corpus import Submission

RARER: dict[str, Submission] = {
    'F.dropout on the weights, training by default': Submission('''
import math
import torch
import torch.nn.functional as F

def scaled_dot_product_attention(Q, K, V, mask=None, dropout_p=0.1):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    weights = F.dropout(weights, p=dropout_p)
    return weights @ V, weights
''', False, ('Dropout is still active', 'called twice with the same Q, K and V', '= 1/(1 − 0.1), so dropout with p = 0.1 is on', 'line 11 (`weights = F.dropout(weights, p=dropout_p)`)', '`training=self.training`', "They are a softmax's with dropout left on")),
    "the Annotated Transformer's nn.Dropout made in the call": Submission('''
import math
import torch
from torch import nn

def scaled_dot_product_attention(query, key, value, mask=None):
    dropout = nn.Dropout(p=0.1)
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn
''', False, ('Dropout is still active', 'dropout with p = 0.1 is on', 'line 7 (`dropout = nn.Dropout(p=0.1)`) and line 14 (`p_attn = dropout(p_attn)`)', 'in `__init__`')),
    'dropout on the output only, the weights returned before it': Submission('''
import math
import torch
import torch.nn as nn

attn_drop = nn.Dropout(0.2)

def scaled_dot_product_attention(q, k, v, mask=None):
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    if mask is not None:
        att = att.masked_fill(mask == 0, float('-inf'))
    att = torch.softmax(att, dim=-1)
    y = attn_drop(att) @ v
    return y, att
''', False, ('Dropout is still active: called twice with the same Q, K and V, your function returned different outputs', 'line 13 (`y = attn_drop(att) @ v`)', 'your numbers change from call to call')),
    'values taken from the keys': Submission('''
import math
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ K, weights
''', False, ('Your function never uses V', 'It uses K where V belongs', '`V` (line 5) is never read', '`weights @ V`')),
    'queries built from the keys': Submission('''
import math
import torch
import torch.nn.functional as F

def scaled_dot_product_attention(query, key, value, mask=None):
    scores = torch.matmul(key, key.transpose(-2, -1)) / math.sqrt(key.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    p_attn = F.softmax(scores, dim=-1)
    return torch.matmul(p_attn, value), p_attn
''', False, ('Your function never uses Q', 'It uses K where Q belongs', '`query` (line 6) is never read')),
    'one input for all three, as in self-attention': Submission('''
import torch

def scaled_dot_product_attention(x, K, V, mask=None):
    scores = x @ x.transpose(-2, -1) / x.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights @ x, weights
''', False, ('Your function never uses K or V', 'It uses Q where K and V belong', '`K` and `V` (line 4) are never read')),
    "the model's width as a constant": Submission('''
import math
import torch

d_model = 512
n_heads = 8

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_model)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights
''', False, ('You divide the scores by √512 = 22.6', '`d_model`, set on line 5', "the model's width, not the head's d_k", '√16 = 4')),
    "nanoGPT's n_embd ** -0.5": Submission('''
import torch
import torch.nn.functional as F

n_embd = 384
n_head = 6
head_size = n_embd // n_head

def scaled_dot_product_attention(q, k, v, mask=None):
    wei = q @ k.transpose(-2, -1) * n_embd ** -0.5
    if mask is not None:
        wei = wei.masked_fill(mask == 0, float('-inf'))
    wei = F.softmax(wei, dim=-1)
    out = wei @ v
    return out, wei
''', False, ('√384', '`n_embd`, set on line 5 (`n_embd = 384`)', "not the head's d_k")),
    'heads times d_k': Submission('''
import math
import torch

num_heads = 8

def scaled_dot_product_attention(Q, K, V, mask=None):
    d_k = Q.size(-1)
    d_model = num_heads * d_k
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_model)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    attn = torch.softmax(scores, dim=-1)
    return torch.matmul(attn, V), attn
''', False, ('√128', '128 = 8 × 16 is heads × d_k, `num_heads` (set on line 5', "not the head's d_k")),
    'a key-padding mask of ones filled where it is 1': Submission('''
import math
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    T = Q.size(-2)
    if mask is None:
        mask = torch.ones(T, T)  # nothing to pad
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))
    scores = scores.masked_fill(mask == 1, -1e9)
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights
''', False, ('Every weight is the same, 1/5 = 0.2 in every row', 'the mean of V', 'your mask is filled where it is 1', 'on line 10 (`scores = scores.masked_fill(mask == 1, -1e9)`)', 'Mask polarity reversed')),
    'torch.where with the branches swapped': Submission('''
import math
import torch

def scaled_dot_product_attention(q, k, v, mask=None):
    if mask is None:
        mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    scores = torch.where(mask.bool(), torch.tensor(-1e4), scores)
    attn = torch.softmax(scores, dim=-1)
    return attn @ v, attn
''', False, ('Every weight is the same', 'your mask is filled where it is 1', 'on line 9')),
    'a temperature far too large': Submission('''
import torch
import torch.nn.functional as F

TEMPERATURE = 1e6

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1) / TEMPERATURE
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return weights @ V, weights
''', False, ('Every weight is the same', 'divided by 1e6, `TEMPERATURE` set on line 5', 'each query spreads its weight equally over the keys it may see')),
    'the scores returned as the second value': Submission('''
import math
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, scores
''', False, ('Your output is right, but the second value you return is the scores, `Q @ K.transpose(-2, -1) / √d_k`, before the softmax', 'They are the scores', "before the softmax (with the mask's fill where a key is forbidden)")),
    'the logits returned, as a library does': Submission('''
import torch
import torch.nn.functional as F

def scaled_dot_product_attention(q, k, v, mask=None):
    attn_logits = torch.matmul(q, k.transpose(-2, -1)) / q.size(-1) ** 0.5
    if mask is not None:
        attn_logits = attn_logits.masked_fill(mask == 0, -9e15)
    attention = F.softmax(attn_logits, dim=-1)
    values = torch.matmul(attention, v)
    return values, attn_logits
''', False, ('the second value you return is the scores', "with the mask's fill")),
    'log-softmax returned as the weights': Submission('''
import math
import torch
import torch.nn.functional as F

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    log_weights = F.log_softmax(scores, dim=-1)
    return log_weights.exp() @ V, log_weights
''', False, ('the second value you return is the log of the weights (`log_softmax`)', 'They are the log of the weights')),
    'tanh after the mask': Submission('''
import math
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    scores = torch.tanh(scores)
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights
''', False, ('Your scores go through tanh(scores) after the mask, on line 9 (`scores = torch.tanh(scores)`)', "turns the mask's -inf into -1")),
    'sigmoid after the mask': Submission('''
import math
import torch
import torch.nn.functional as F

def scaled_dot_product_attention(query, key, value, mask=None):
    energy = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.size(-1))
    if mask is not None:
        energy = energy.masked_fill(mask == 0, -1e10)
    attention = F.softmax(torch.sigmoid(energy), dim=-1)
    return torch.matmul(attention, value), attention
''', False, ('sigmoid(scores) after the mask, on line 10', 'into 0, a finite score')),
    'logit soft-capping after the mask': Submission('''
import math
import torch

SOFTCAP = 5.0

def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    scores = SOFTCAP * torch.tanh(scores / SOFTCAP)
    weights = scores.softmax(dim=-1)
    return weights @ v, weights
''', False, ('5 · tanh(scores / 5) after the mask, on line 11', 'into -5')),
    "Gemma's soft cap of 50, written in the line": Submission('''
import math
import torch
import torch.nn.functional as F

def scaled_dot_product_attention(query, key, value, mask=None):
    attn = torch.matmul(query, key.transpose(-2, -1)) * query.shape[-1] ** -0.5
    if mask is not None:
        attn = attn.masked_fill(mask == 0, torch.finfo(attn.dtype).min)
    attn = torch.tanh(attn / 50.0) * 50.0
    attn = F.softmax(attn, dim=-1)
    return attn @ value, attn
''', False, ('50 · tanh(scores / 50) after the mask, on line 10', 'into -50, a finite score, so a forbidden key keeps weight')),
    '2-D only: T, d_k = Q.shape, the mask ignored': Submission('''
import math
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    T, d_k = Q.shape
    scores = Q @ K.T / math.sqrt(d_k)
    weights = torch.softmax(scores, dim=1)
    return weights @ V, weights
''', False, ('too many values to unpack', "Without a batch, on the worked example's 3×4 tensors, it ran", 'Not checked: your function raised on the batched test', 'Your first row is [-1.107, 1.058, 1.509, 1.857]', 'Your mask has no effect (your function never reads `mask`, its fourth parameter)')),
    '2-D only: torch.mm': Submission('''
import math
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = torch.mm(Q, K.t()) / math.sqrt(K.size(1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return torch.mm(weights, V), weights
''', False, ('Without a batch', '`torch.matmul` instead of `torch.mm`', 'On the worked example, yes; on the batched 2×5×16 test with the causal mask, no')),
    'the weights transposed, and no scaling': Submission('''
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = torch.einsum("bqd,bkd->bqk", Q, K)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    attn = torch.softmax(scores, dim=-1)
    return torch.einsum("bqk,bqd->bkd", attn, V), attn
''', False, ('No scaling', 'Your output is `weights.transpose(-2, -1) @ V`')),
    'a causal mask of its own, and no scaling': Submission('''
import torch
import torch.nn.functional as F

def scaled_dot_product_attention(q, k, v, mask=None):
    T = q.shape[-2]
    tril = torch.tril(torch.ones(T, T))
    wei = q @ k.transpose(-2, -1)
    wei = wei.masked_fill(tril == 0, float('-inf'))
    wei = F.softmax(wei, dim=-1)
    return wei @ v, wei
''', False, ('No scaling', 'Called without a mask, your function still masks the future')),
    'V on the wrong side, divided by d_k': Submission('''
import torch

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = torch.matmul(Q, K.transpose(-2, -1)) / Q.size(-1)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float('-inf'))
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(V, weights), weights
''', False, ('Scaled by d_k instead of √d_k', 'Your output is `V @ weights`')),
}
