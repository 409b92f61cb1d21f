"""Scores scaled by the wrong width: 1/√n for a width n the student's code has (the model's width ``d_model``, or
heads × d_k), found by comparing n with the numbers the source gives names to (`exercise.reading`'s constants).

In multi-head attention the model's width is split into heads, :math:`d_{model} = h \\cdot d_k`, and each head's
scores are divided by :math:`\\sqrt{d_k}`, the head's width, not by :math:`\\sqrt{d_{model}}`.
"""

from __future__ import annotations

import math

from exercise.numbers import message_template, number
from exercise.results import SourceLine, SourceReading

#: Words in a name that say it is a model's width (``d_model``, ``n_embd``, ``embed_dim``, ``hidden_size``).
WIDTH_WORDS = ("model", "embd", "embed", "hidden", "width")
#: Words in a name that say it counts heads (``n_heads``, ``num_heads``, ``n_head``).
HEAD_WORDS = ("head",)


def _whole(x: float) -> int | None:
    """`x` as a whole number, when it is one (to 1 part in 1000)."""
    n = round(x)
    return n if n >= 1 and abs(x - n) <= 1e-3 * x else None


def _named(constants: tuple[SourceLine, ...], words: tuple[str, ...], value: float) -> SourceLine | None:
    """The constant of the source named with one of `words` whose number is `value`."""
    return next((c for c in constants if c.value == value and any(w in c.name.lower() for w in words)), None)


@message_template
def width_message(divisor: float, width: int, d_k: int, named: str) -> str:
    """Scores divided by √`width` (= `divisor`), a width of the student's code `named`, instead of √`d_k`."""
    return (f"You divide the scores by √{width} = {number(divisor)}, and {named}: the model's width, not the head's "
            f"d_k. Each head divides by the square root of its own width, the size of the last dimension of Q and K: "
            f"√d_k = √{d_k} = {number(math.sqrt(d_k))} here, `Q.size(-1) ** 0.5`.")


def width_diagnosis(reading: SourceReading, factor: float, d_k: int) -> str | None:
    """The width n of the student's code with ``factor = 1/√n`` (n ≠ d_k): a constant named like a model's width,
    or a number of heads times d_k; None when the source names no such width."""
    if not factor > 0 or not math.isfinite(factor):
        return None
    width = _whole(1 / factor**2)
    if width is None or width == d_k:
        return None
    model = _named(reading.constants, WIDTH_WORDS, float(width))
    if model is not None:
        named = f"{width} is `{model.name}`, set on {model.shown()}"
        return width_message(math.sqrt(width), width, d_k, named)
    heads = _named(reading.constants, HEAD_WORDS, width / d_k) if width % d_k == 0 else None
    if heads is not None:
        named = f"{width} = {width // d_k} × {d_k} is heads × d_k, `{heads.name}` (set on {heads.shown()}) times d_k"
        return width_message(math.sqrt(width), width, d_k, named)
    return None
