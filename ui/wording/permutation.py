"""The permutation page's sentences on whether the shuffled run agrees with the original, from the differences."""

from __future__ import annotations

from core.permutation import PermutationCheck

#: Differences up to this are float64 rounding: the two runs agree.
ROUNDING = 1e-9


def maps_agree(check: PermutationCheck) -> str:
    """Whether the shuffled map and the reordered original agree, as their largest difference says."""
    if check.weights_diff > ROUNDING:
        return f"here the middle and right maps differ, by up to {check.weights_diff:.2f}."
    if check.add_pe:
        return ("here the middle and right maps agree all the same: this shuffle puts every word where an equal word "
                "was, so no input changes.")
    return "without positional encoding the middle and right maps are identical, up to rounding."


def outputs_agree(check: PermutationCheck) -> str:
    """Whether the un-shuffled outputs agree with the original's, as their largest difference says."""
    if check.output_diff > ROUNDING:
        return f"Here they differ, by up to {check.output_diff:.2f}: attention now knows where each word was."
    if check.add_pe:
        return ("Here they agree even with positional encoding: this shuffle puts every word where an equal word was, "
                "so no input changes.")
    return "Without positional encoding they agree to the last few bits of float64."
