r"""A BERT encoder's forward pass, written out in PyTorch: all-MiniLM-L6-v2 without a framework.

all-MiniLM-L6-v2 is a small BERT encoder (6 layers, 12 heads, ``d_model = 384``). Its
weights are plain named arrays in ``model.safetensors``; this module reads them (memory-mapped,
so the 30,522-row embedding table costs memory only for the rows a sentence uses), splits text
into WordPiece tokens with the ``tokenizers`` library and ``tokenizer.json``, and runs the
encoder with nothing but tensor arithmetic, so every step of the lesson is visible:

.. math::

    X^{(0)} &= \operatorname{LayerNorm}\big(E_\text{word}[\text{ids}] + E_\text{pos}[0..T-1]
        + E_\text{type}[\text{types}]\big)\\
    Q, K, V &= X W_q + b_q,\ X W_k + b_k,\ X W_v + b_v
        \qquad \text{(cut into } n_\text{heads} \text{ blocks of width } d_k\text{)}\\
    A_h &= \operatorname{softmax}\!\left(\frac{Q_h K_h^\top}{\sqrt{d_k}}\right),\qquad \text{head}_h = A_h V_h\\
    Y &= \operatorname{LayerNorm}\big(X + \operatorname{Concat}(\text{head}_1..\text{head}_H)\, W_o + b_o\big)\\
    X^{(l+1)} &= \operatorname{LayerNorm}\big(Y + \operatorname{GELU}(Y W_1 + b_1)\, W_2 + b_2\big)

That is the encoder of *Attention Is All You Need* with BERT's details: a bias on every
projection, learned (not sinusoidal) positions, a token-type embedding, the exact (erf) GELU,
and LayerNorm *after* each residual addition. Inference only: float32, no dropout, no autograd.

Shapes (the convention of `core`): ``B`` sentences of ``T`` tokens, ``H = n_heads`` heads of
width ``d_k = d_model / n_heads``; per-head tensors are ``(B, H, T, d_k)``. Matrices act on
row vectors, ``x @ W``; PyTorch's ``nn.Linear`` (which produced the file) stores ``Wᵀ``, so
`load_minilm` transposes (a view, no copy). A batch holds sentences of the same length: there
is no padding mask. The test suite checks this module against Hugging Face ``transformers``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file
from tokenizers import Tokenizer


@dataclass(frozen=True)
class MiniLMConfig:
    """The sizes of a BERT encoder, read from the model's ``config.json`` (Hugging Face's key names in comments)."""

    vocab_size: int  # vocab_size: rows of the word-embedding table
    d_model: int  # hidden_size: width of every token's vector
    n_layers: int  # num_hidden_layers
    n_heads: int  # num_attention_heads
    d_ff: int  # intermediate_size: width of the feed-forward's hidden layer
    max_positions: int  # max_position_embeddings: the longest input, in tokens
    type_vocab_size: int  # type_vocab_size: token types (sentence A / B)
    layer_norm_eps: float  # layer_norm_eps: added to the variance in every LayerNorm

    @property
    def d_k(self) -> int:
        """Per-head width: ``d_model / n_heads``."""
        return self.d_model // self.n_heads

    @classmethod
    def from_json(cls, path: str | Path) -> MiniLMConfig:
        """Read ``config.json``; refuse a model this forward pass does not implement, saying why."""
        cfg = json.loads(Path(path).read_text(encoding="utf-8"))
        supported = {"model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "absolute"}
        for key, value in supported.items():
            if cfg.get(key, value) != value:
                raise ValueError(f"{path}: {key} is {cfg[key]!r}; this BERT forward pass implements {value!r} only.")
        try:
            config = cls(
                vocab_size=int(cfg["vocab_size"]), d_model=int(cfg["hidden_size"]),
                n_layers=int(cfg["num_hidden_layers"]), n_heads=int(cfg["num_attention_heads"]),
                d_ff=int(cfg["intermediate_size"]), max_positions=int(cfg["max_position_embeddings"]),
                type_vocab_size=int(cfg["type_vocab_size"]), layer_norm_eps=float(cfg["layer_norm_eps"]),
            )
        except KeyError as exc:
            raise ValueError(f"{path} lacks the key {exc.args[0]!r}.") from None
        if config.d_model % config.n_heads:
            raise ValueError(f"{path}: hidden_size={config.d_model} is not divisible by "
                             f"num_attention_heads={config.n_heads}.")
        return config


@dataclass(frozen=True)
class Embeddings:
    """The input layer: one learned vector per word-piece, per position and per token type, then a LayerNorm."""

    word: torch.Tensor  # (vocab_size, d_model)
    position: torch.Tensor  # (max_positions, d_model)
    token_type: torch.Tensor  # (type_vocab_size, d_model)
    gamma: torch.Tensor  # (d_model,) LayerNorm scale
    beta: torch.Tensor  # (d_model,) LayerNorm shift


@dataclass(frozen=True)
class LayerWeights:
    """One encoder layer's learned parameters, for row vectors (``x @ W + b``)."""

    W_q: torch.Tensor  # (d_model, d_model); head h owns columns h*d_k:(h+1)*d_k
    b_q: torch.Tensor  # (d_model,)
    W_k: torch.Tensor  # (d_model, d_model)
    b_k: torch.Tensor  # (d_model,)
    W_v: torch.Tensor  # (d_model, d_model)
    b_v: torch.Tensor  # (d_model,)
    W_o: torch.Tensor  # (d_model, d_model): mixes the concatenated heads
    b_o: torch.Tensor  # (d_model,)
    gamma_1: torch.Tensor  # (d_model,) LayerNorm after attention + residual
    beta_1: torch.Tensor  # (d_model,)
    W_1: torch.Tensor  # (d_model, d_ff): feed-forward, widen
    b_1: torch.Tensor  # (d_ff,)
    W_2: torch.Tensor  # (d_ff, d_model): feed-forward, back to d_model
    b_2: torch.Tensor  # (d_model,)
    gamma_2: torch.Tensor  # (d_model,) LayerNorm after feed-forward + residual
    beta_2: torch.Tensor  # (d_model,)


@dataclass(frozen=True)
class MiniLM:
    """A loaded encoder: its sizes, its weights and its tokenizer."""

    config: MiniLMConfig
    embeddings: Embeddings
    layers: tuple[LayerWeights, ...]
    tokenizer: Tokenizer  # WordPiece, from tokenizer.json; no padding, no truncation


@dataclass(frozen=True)
class WordPieces:
    """A text as the model reads it. ``word_ids[t]`` is the word token ``t`` comes from (None for [CLS]/[SEP])."""

    ids: tuple[int, ...]  # rows of the word-embedding table
    tokens: tuple[str, ...]  # "[CLS]", "token", "##ization", ..., "[SEP]"
    word_ids: tuple[int | None, ...]
    type_ids: tuple[int, ...]  # 0 for a single sentence


@dataclass(frozen=True)
class EncoderOutput:
    """Everything the encoder computed for a batch (float32)."""

    hidden_states: torch.Tensor  # (L + 1, B, T, d_model): [0] the embeddings, [l] the input of layer l (0-based)
    weights: torch.Tensor  # (L, B, H, T, T): every layer's and head's attention, rows sum to 1


def load_minilm(path: str | Path) -> MiniLM:
    """Load the encoder from a folder with ``config.json``, ``model.safetensors`` and ``tokenizer.json``.

    Reads local files only. ``safetensors`` memory-maps the weights: tensors point into the file, and
    the operating system pages in only what is read. Raises `ValueError` naming a missing or misshapen
    tensor (`FileNotFoundError` for a missing file).
    """
    path = Path(path)
    config = MiniLMConfig.from_json(path / "config.json")
    tensors = load_file(path / "model.safetensors")  # {name: tensor}, memory-mapped, float32
    d, f = config.d_model, config.d_ff

    def get(name: str, shape: tuple[int, ...]) -> torch.Tensor:
        if name not in tensors:
            raise ValueError(f"{path / 'model.safetensors'} has no tensor {name!r}.")
        t = tensors[name]
        if tuple(t.shape) != shape or t.dtype != torch.float32:
            raise ValueError(f"{name} is {tuple(t.shape)} {t.dtype}; config.json implies {shape} torch.float32.")
        return t

    def linear(name: str, d_in: int, d_out: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(W, b)`` of an ``nn.Linear``: it stores ``(d_out, d_in)`` for ``x Wᵀ``; we use ``x W``."""
        return get(f"{name}.weight", (d_out, d_in)).T, get(f"{name}.bias", (d_out,))  # (d_in, d_out), (d_out,)

    embeddings = Embeddings(
        word=get("embeddings.word_embeddings.weight", (config.vocab_size, d)),
        position=get("embeddings.position_embeddings.weight", (config.max_positions, d)),
        token_type=get("embeddings.token_type_embeddings.weight", (config.type_vocab_size, d)),
        gamma=get("embeddings.LayerNorm.weight", (d,)), beta=get("embeddings.LayerNorm.bias", (d,)),
    )
    layers = []
    for i in range(config.n_layers):
        p = f"encoder.layer.{i}."
        W_q, b_q = linear(p + "attention.self.query", d, d)
        W_k, b_k = linear(p + "attention.self.key", d, d)
        W_v, b_v = linear(p + "attention.self.value", d, d)
        W_o, b_o = linear(p + "attention.output.dense", d, d)
        W_1, b_1 = linear(p + "intermediate.dense", d, f)
        W_2, b_2 = linear(p + "output.dense", f, d)
        layers.append(LayerWeights(
            W_q=W_q, b_q=b_q, W_k=W_k, b_k=b_k, W_v=W_v, b_v=b_v, W_o=W_o, b_o=b_o,
            gamma_1=get(p + "attention.output.LayerNorm.weight", (d,)),
            beta_1=get(p + "attention.output.LayerNorm.bias", (d,)),
            W_1=W_1, b_1=b_1, W_2=W_2, b_2=b_2,
            gamma_2=get(p + "output.LayerNorm.weight", (d,)), beta_2=get(p + "output.LayerNorm.bias", (d,)),
        ))
    tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    tokenizer.no_padding()  # the file asks for padding to 128 and truncation at 128 (a training setting):
    tokenizer.no_truncation()  # we want the real tokens, and callers refuse texts that are too long
    return MiniLM(config=config, embeddings=embeddings, layers=tuple(layers), tokenizer=tokenizer)


def tokenize(text: str, model: MiniLM) -> WordPieces:
    """Split `text` into WordPiece tokens: lower-cased, punctuation split off, ``[CLS] … [SEP]`` around it.

    A word missing from the vocabulary is cut into known pieces (``tokenization`` → ``token ##ization``);
    the ``##`` marks a piece that continues the word before it.
    """
    enc = model.tokenizer.encode(text)
    return WordPieces(ids=tuple(enc.ids), tokens=tuple(enc.tokens), word_ids=tuple(enc.word_ids),
                      type_ids=tuple(enc.type_ids))


def layer_norm(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float) -> torch.Tensor:
    r"""Normalise every token's vector to mean 0 and variance 1, then scale and shift it (learned).

    .. math:: \operatorname{LayerNorm}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} + \beta

    with ``μ`` and ``σ²`` the mean and (biased) variance over the last dimension, ``d_model``.
    """
    mu = x.mean(dim=-1, keepdim=True)  # (..., d_model) -> (..., 1)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)  # (..., 1)
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta  # (..., d_model)


def gelu(x: torch.Tensor) -> torch.Tensor:
    r"""The exact GELU: :math:`x\,\Phi(x) = \tfrac{x}{2}\,(1 + \operatorname{erf}(x/\sqrt{2}))`, a smooth ReLU."""
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """``(B, T, d_model) -> (B, H, T, d_k)``: head ``h`` gets columns ``h*d_k:(h+1)*d_k`` (as `core.split_heads`)."""
    b, t, d_model = x.shape
    x = x.reshape(b, t, n_heads, d_model // n_heads)  # (B, T, d_model) -> (B, T, H, d_k)
    return x.transpose(1, 2)  # (B, T, H, d_k) -> (B, H, T, d_k)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """``(B, H, T, d_k) -> (B, T, H * d_k)``: the heads' outputs side by side (Concat)."""
    b, h, t, d_k = x.shape
    x = x.transpose(1, 2)  # (B, H, T, d_k) -> (B, T, H, d_k)
    return x.reshape(b, t, h * d_k)  # (B, T, H, d_k) -> (B, T, d_model)


def scaled_dot_product_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The lesson's formula, returning ``(output, weights)``: the PyTorch twin of `core.scaled_dot_product_attention`.

    .. math:: A = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right),\qquad \text{output} = A V

    ``q, k`` are ``(..., T, d_k)`` and ``v`` ``(..., T, d_v)``. No mask: every token of a sentence
    sees every other (an encoder), and a batch of equal-length sentences has no padding to hide.
    The weights are returned because they are what the page draws; a fused kernel
    (``torch.nn.functional.scaled_dot_product_attention``) never forms them.
    """
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., T, d_k) @ (..., d_k, T) -> (..., T, T)
    weights = torch.softmax(scores, dim=-1)  # (..., T, T), every row sums to 1
    return weights @ v, weights  # (..., T, T) @ (..., T, d_v) -> (..., T, d_v)


def embed(ids: torch.Tensor, type_ids: torch.Tensor, emb: Embeddings, eps: float) -> torch.Tensor:
    """``(B, T)`` token ids -> ``(B, T, d_model)``: word + position + token-type vectors, then LayerNorm.

    Attention itself ignores order (permute the tokens and the outputs permute with them); the
    position vector added here is what tells the model which token came where.
    """
    t = ids.shape[1]
    x = emb.word[ids] + emb.position[:t] + emb.token_type[type_ids]  # (B, T, d) + (T, d) + (B, T, d) -> (B, T, d)
    return layer_norm(x, emb.gamma, emb.beta, eps)


def encoder_layer(
    x: torch.Tensor, w: LayerWeights, n_heads: int, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """One encoder layer: multi-head self-attention, then a feed-forward, each "add & norm". Returns (x, weights).

    Args:
        x: ``(B, T, d_model)`` the hidden state entering the layer.
        w: the layer's weights.
        n_heads: ``H``; each head works on ``d_k = d_model / H`` columns.
        eps: LayerNorm's epsilon.

    Returns:
        the ``(B, T, d_model)`` hidden state leaving the layer, and the ``(B, H, T, T)`` attention weights.
    """
    # (B, T, d_model) @ (d_model, d_model) -> (B, T, d_model), cut into heads -> (B, H, T, d_k)
    q = split_heads(x @ w.W_q + w.b_q, n_heads)
    k = split_heads(x @ w.W_k + w.b_k, n_heads)  # (B, T, d_model) -> (B, H, T, d_k)
    v = split_heads(x @ w.W_v + w.b_v, n_heads)  # (B, T, d_model) -> (B, H, T, d_k)
    heads, weights = scaled_dot_product_attention(q, k, v)  # (B, H, T, d_k), (B, H, T, T)
    attended = merge_heads(heads) @ w.W_o + w.b_o  # (B, T, d_model) @ (d_model, d_model) -> (B, T, d_model)
    x = layer_norm(x + attended, w.gamma_1, w.beta_1, eps)  # residual, then LayerNorm: (B, T, d_model)
    hidden = gelu(x @ w.W_1 + w.b_1)  # (B, T, d_model) @ (d_model, d_ff) -> (B, T, d_ff)
    out = hidden @ w.W_2 + w.b_2  # (B, T, d_ff) @ (d_ff, d_model) -> (B, T, d_model)
    x = layer_norm(x + out, w.gamma_2, w.beta_2, eps)  # residual, then LayerNorm: (B, T, d_model)
    return x, weights


def encode(model: MiniLM, ids: torch.Tensor, type_ids: torch.Tensor | None = None) -> EncoderOutput:
    """Run the encoder on a batch of token ids, keeping every layer's hidden state and attention weights.

    Args:
        model: a `load_minilm` result.
        ids: ``(B, T)`` integer token ids (`tokenize`), sentences of equal length, ``T <= max_positions``.
        type_ids: ``(B, T)`` token types; all 0 (one sentence) when None.

    Raises:
        ValueError: wrong shape, an id outside the vocabulary, or more than ``max_positions`` tokens.
    """
    cfg = model.config
    ids = torch.as_tensor(ids)
    type_ids = torch.zeros_like(ids) if type_ids is None else torch.as_tensor(type_ids)
    if ids.ndim != 2 or ids.shape[1] == 0 or ids.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"ids must be a (B, T) integer tensor with T >= 1, got shape {tuple(ids.shape)} {ids.dtype}.")
    if type_ids.shape != ids.shape:
        raise ValueError(f"type_ids {tuple(type_ids.shape)} must have the shape of ids {tuple(ids.shape)}.")
    if ids.shape[1] > cfg.max_positions:
        raise ValueError(f"{ids.shape[1]} tokens; the model has positions for {cfg.max_positions} at most.")
    for name, t, n in (("ids", ids, cfg.vocab_size), ("type_ids", type_ids, cfg.type_vocab_size)):
        if t.min() < 0 or t.max() >= n:
            raise ValueError(f"{name} must lie in 0..{n - 1}, got values in {int(t.min())}..{int(t.max())}.")
    with torch.inference_mode():  # no autograd bookkeeping: this is inference only
        x = embed(ids, type_ids, model.embeddings, cfg.layer_norm_eps)  # (B, T, d_model)
        hidden_states, weights = [x], []
        for w in model.layers:
            x, a = encoder_layer(x, w, cfg.n_heads, cfg.layer_norm_eps)  # (B, T, d_model), (B, H, T, T)
            hidden_states.append(x)
            weights.append(a)
        return EncoderOutput(hidden_states=torch.stack(hidden_states),  # (L + 1) x (B, T, d) -> (L + 1, B, T, d)
                             weights=torch.stack(weights))  # L x (B, H, T, T) -> (L, B, H, T, T)
