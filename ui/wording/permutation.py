"""The permutation page's sentences on whether the shuffled run agrees with the original, from the differences."""

from __future__ import annotations

from core.permutation import PermutationCheck

#: Differences up to this are float64 rounding: the two runs agree.
ROUNDING = 1e-9
#: Why the runs agree with positional encoding on: the shuffle changed no input.
NO_INPUT_CHANGED = "this shuffle puts every word where an equal word was, so no input changes."


def _agreement(difference: float, add_pe: bool, differ: str, agree_all_the_same: str, agree: str) -> str:
    """`differ` (with ``{difference}`` filled in) beyond rounding; otherwise why they agree: no input changed (with
    positional encoding), or attention is blind to order (without)."""
    if difference > ROUNDING:
        return differ.format(difference=difference)
    return f"{agree_all_the_same} {NO_INPUT_CHANGED}" if add_pe else agree


def maps_agree(check: PermutationCheck) -> str:
    """Whether the shuffled map and the reordered original agree, as their largest difference says."""
    return _agreement(check.weights_diff, check.add_pe, "here the middle and right maps differ, by up to "
                      "{difference:.2f}.", "here the middle and right maps agree all the same:",
                      "without positional encoding the middle and right maps are identical, up to rounding.")


def outputs_agree(check: PermutationCheck) -> str:
    """Whether the un-shuffled outputs agree with the original's, as their largest difference says."""
    return _agreement(check.output_diff, check.add_pe, "Here they differ, by up to {difference:.2f}: attention now "
                      "knows where each word was.", "Here they agree even with positional encoding:",
                      "Without positional encoding they agree to the last few bits of float64.")
