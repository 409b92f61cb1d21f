"""The training page's sentence on a model trained without positional encoding, from its measured accuracy."""

from __future__ import annotations


def without_positions(task: str, accuracy: float, vocab: int) -> str:
    """Why a model without positions cannot learn `task`, with its held-out accuracy against guessing (1 / vocab);
    it is said to beat guessing only when it does."""
    guessing = 1 / vocab
    against = (
        "It beats guessing only by betting on digits it knows are in the sequence." if accuracy > guessing else
        "It does no better than guessing."
    )
    return (
        f"**Without positional encoding the model cannot learn to {task}.** It reached {accuracy:.1%} per-token "
        f"accuracy on held-out sequences (guessing: {guessing:.1%}). Attention alone is blind to order: every "
        "position sees the same set of tokens plus its own, so position i cannot tell that it is position i, nor "
        f"which key holds its answer. {against} Switch positional encoding back on and train again."
    )
