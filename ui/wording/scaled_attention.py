"""The scaling page's sentences about the d_k sweep and the ringed points, from `core.scaling` results."""

from __future__ import annotations

import numpy as np

from core.scaling import ScalingExample, ScoreSweep


def _ends(values: np.ndarray, d_k: np.ndarray, fmt: str = ".2f") -> str:
    """``rises from 0.31 at d_k = 1 to 0.98 at d_k = 1024`` (or falls), from a curve's first and last point."""
    first, last = float(values[0]), float(values[-1])
    verb = "rises" if last > first else "falls" if last < first else "stays"
    return f"{verb} from {first:{fmt}} at d_k = {d_k[0]} to {last:{fmt}} at d_k = {d_k[-1]}"


def _between(values: np.ndarray, fmt: str = ".2f") -> str:
    return f"between {float(values.min()):{fmt}} and {float(values.max()):{fmt}}"


def variance_text(variance: float) -> str:
    """A score variance as the page's metric prints it: three significant digits, whole numbers from 1000 up."""
    return f"{variance:.3g}" if variance < 1000 else f"{variance:,.0f}"


def ringed_points(sweep: ScoreSweep, example: ScalingExample, scaled: bool, series: str) -> str:
    """What the ring marks (the sweep's mean at the current d_k) against the one draw section 1 shows."""
    d_k = example.Q.shape[1]
    i = int(np.flatnonzero(sweep.d_k == d_k)[0])
    variance = sweep.var_scaled if scaled else sweep.var_raw
    max_weight = sweep.max_weight_scaled if scaled else sweep.max_weight_raw
    return (f"The dotted line marks the current d_k = {d_k}; the ringed points are the {series} means there "
            f"(score variance {variance_text(float(variance[i]))}, largest weight {float(max_weight[i]):.3f}), not the one "
            f"draw of section 1, whose score variance is {variance_text(float(example.scores.var()))} and largest weight "
            f"{example.stats.max_weight:.3f}.")


def sweep_bullets(sweep: ScoreSweep) -> tuple[str, str]:
    """The four panels' trends, each quoted with the values it goes between: the score variance and the largest
    weight (the idea), then the row entropy and the softmax Jacobian (the detail)."""
    d = sweep.d_k
    ratio = sweep.var_raw / d
    j_raw = sweep.jacobian_norm_raw
    peak = int(np.argmax(j_raw))
    first_rises = (
        f" Here, with T = {sweep.seq_len}, the unscaled curve first rises, to {float(j_raw[peak]):.3f} at d_k = "
        f"{d[peak]}: a row spread thinly over T keys passes back little gradient too, and it is largest when a row "
        "splits its weight between a few keys." if peak > 0 else ""
    )
    idea = (
        f"- **Score variance** (log scale): unscaled it follows the theory d_k (measured over theory "
        f"{_between(ratio)}); scaled it stays {_between(sweep.var_scaled)}, around 1.\n"
        f"- **Largest weight**: unscaled it {_ends(sweep.max_weight_raw, d)} (1: one key takes everything); "
        f"scaled it stays {_between(sweep.max_weight_scaled)}."
    )
    detail = (
        "- **Row entropy** H = −Σ_j p_j ln p_j, in nats (the natural logarithm's unit): how spread out a row is, "
        f"from ln T = {np.log(sweep.seq_len):.2f} (uniform) down to 0 (one-hot). Unscaled it "
        f"{_ends(sweep.entropy_raw, d)}; scaled it stays {_between(sweep.entropy_scaled)}.\n"
        "- **Softmax Jacobian norm**: the size of ∂softmax/∂scores, the gradient that trains W_q and W_k. "
        f"Unscaled it {_ends(j_raw, d, '.3f')} as the softmax saturates, and scaled it stays "
        f"{_between(sweep.jacobian_norm_scaled, '.3f')}: this is the lesson's reason for the √d_k." + first_rises
    )
    return idea, detail
