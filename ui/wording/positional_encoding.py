"""The positional-encoding page's sentences about its frequencies, the wavelengths and the similarity against the
offset."""

from __future__ import annotations

import numpy as np

from core.positional_analysis import EncodingTable, angular_frequencies, wavelengths

#: λ of a pair whose exponent 2i/d_model reaches 1: the bound the wavelengths approach as d_model grows.
LONGEST_POSSIBLE = 2 * np.pi * 10000


def speeds(table: EncodingTable) -> str:
    """How many frequencies this width has, how fast the first and the last turn (over the table's positions too),
    and whether every position of the table gets a vector of its own."""
    positions, d_model = table.pe.shape
    omega, lam = angular_frequencies(d_model), wavelengths(d_model)
    last = (d_model - 1) // 2  # the last frequency's index i: dims 2i and 2i + 1, or a lone sine at an odd width

    def dims(i: int) -> str:
        return f"dims {2 * i} and {2 * i + 1}" if 2 * i + 1 < d_model else f"dim {2 * i}, a sine without its cosine"

    if last == 0:
        what = "one sine (dim 0)" if d_model == 1 else "one sine and its cosine (dims 0 and 1)"
        text = (f"With d_model = {d_model} there is a single frequency: {what}, turning "
                f"{omega[0]:g} radian per position and repeating every 2π ≈ {lam[0]:.2f} positions.")
    else:
        over = (f", {omega[2 * last] * (positions - 1):.3g} radians over these {positions} positions,"
                if positions > 1 else "")
        text = (f"With d_model = {d_model} there are {last + 1} frequencies, each turning at its own speed: the first "
                f"({dims(0)}) turns {omega[0]:g} radian per position and repeats every {lam[0]:.2f} positions; the "
                f"last ({dims(last)}) turns {omega[2 * last]:.3g} radians per position{over} and repeats every "
                f"{lam[2 * last]:,.0f} positions.")
    if positions == 1:
        return text
    if table.distinct == positions:
        return text + f" Together they give each of the {positions} positions a vector of its own."
    return (text + f" Only {table.distinct} of the {positions} positions get vectors of their own (to 9 decimals): "
            "at this width some positions cannot be told apart.")


def columns(d_model: int) -> str:
    """What the table's columns hold at this width: sines and cosines, and whether they slow down left to right."""
    if d_model == 1:
        return "Its single column holds a sine."
    if d_model == 2:
        return "Column 0 holds a sine, column 1 its cosine, both turning at the same speed."
    lone = f", and the last, column {d_model - 1}, a sine without its cosine" if d_model % 2 else ""
    return f"Even columns hold sines, odd columns cosines{lone}; read left to right, the waves get slower."


def offset_only(d_model: int) -> str:
    """Why the dot product of two positions depends on their offset alone, as far as it does at this width."""
    circle = "Each sine/cosine pair is a point on a circle turned by ω_i·p"
    if d_model == 1:
        return ("With d_model = 1 there is no sine/cosine pair, only a sine: the dot product sin(p)·sin(p + k) "
                "depends on where the positions are, not only on their offset k (the gap below).")
    if d_model % 2:
        return (f"{circle}, so the pairs' part of the dot product of two position vectors only depends on the offset "
                "k between the positions; the last, unpaired sine adds a part that depends on where they are (the "
                "gap below). Attention can still read relative position from the pairs.")
    return (f"{circle}, so the dot product of two position vectors only depends on the offset k between the "
            "positions, not on where they are: attention can read relative position from it.")


def wavelength_range(d_model: int) -> str:
    """From the first pair's 2π to the last pair's λ, and how close that comes to 2π · 10000 at this width."""
    lam = wavelengths(d_model)
    last_pair = (d_model - 1) // 2
    if last_pair == 0:
        return (f"With d_model = {d_model} there is a single frequency, ω_0 = 1: every dimension repeats every "
                f"λ_0 = 2π ≈ {lam[0]:.2f} positions.")
    return (
        f"λ grows geometrically with i, from 2π ≈ {lam[0]:.2f} at the first pair (i = 0) to {lam[-1]:,.0f} "
        f"positions at the last frequency (i = {last_pair}). That is {lam[-1] / LONGEST_POSSIBLE:.0%} of 2π · 10000 ≈ "
        f"{LONGEST_POSSIBLE:,.0f}, which the last frequency approaches only as d_model grows, since its exponent "
        f"2i/d_model = {2 * last_pair}/{d_model} stays below 1."
    )


def similarity_trend(table: EncodingTable) -> str:
    """How PE_0 · PE_k (the offset chart) changes with k at this setting: steadily falling, or not."""
    s = table.similarity[0]  # (T,): PE_0 · PE_k for k = 0 … T − 1
    positions, d_model = table.pe.shape
    if positions == 1:
        return "With one position there is no offset to compare: add positions."
    if np.ptp(s) < 1e-12:
        return f"Here it is {s[0]:.2f} at every offset: with d_model = 1 the only dimension is a sine, 0 at position 0."
    rises = np.flatnonzero(np.diff(s) > 1e-12)  # k - 1 for every offset k where the similarity goes up again
    if rises.size == 0:
        return (f"Here, with d_model = {d_model} over {positions} positions, it falls steadily with the offset: "
                f"from {s[0]:.2f} at offset 0 to {s[-1]:.2f} at offset {positions - 1}.")
    dip = int(rises[0])
    back = dip + 1 + int(np.argmax(s[dip + 1:]))
    return (
        f"Here, with d_model = {d_model} over {positions} positions, it does not fall steadily: from {s[0]:.2f} at "
        f"offset 0 it falls to {s[dip]:.2f} at offset {dip}, then rises again to {s[back]:.2f} at offset {back}, "
        + ("as its one sine/cosine pair comes back round its circle. It is largest at offset 0, a position with "
           "itself." if d_model // 2 == 1 else
           "as the fast pairs come back round their circles. It is largest at offset 0, a position with itself; "
           "nearer positions are more alike only where the slow pairs outweigh the fast ones.")
    )
