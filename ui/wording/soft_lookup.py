"""The soft-lookup page's sentences about the temperature sweep, from a `core.lookup.LookupComparison`."""

from __future__ import annotations

import numpy as np

from core.lookup import LookupComparison


def temperature_limits(lookup: LookupComparison, values: np.ndarray) -> str:
    """Where the soft result goes at both ends of the temperature range, against the limits it tends to.

    The sweep only reaches the slider's largest τ, so the plain average (the τ → ∞ limit) is quoted with the
    distance the sweep's last point still has to go.
    """
    taus, results = lookup.sweep_temperatures, lookup.sweep_results
    average = float(np.mean(values))
    coldest, hottest = float(results[0]), float(results[-1])
    return (
        "As τ shrinks, the gaps between the scores are magnified before the softmax, so the best key's weight "
        f"tends to 1 and the soft result slides onto the hard one ({lookup.hard_result:.2f}; at τ = {taus[0]:g} it "
        f"is {coldest:.2f}). As τ grows, the scores are flattened, every weight tends to 1/{len(values)}, and the "
        f"result tends to the plain average of the values, {average:.2f}, reached only as τ → ∞: at τ = "
        f"{taus[-1]:g}, the slider's largest, it is {hottest:.2f}, still {abs(hottest - average):.2f} away."
    )


def sweep_ends(lookup: LookupComparison) -> str:
    """The temperature chart's numbers: the soft result at the sweep's first and last temperature."""
    taus, results = lookup.sweep_temperatures, lookup.sweep_results
    return (f"The result goes from {float(results[0]):.2f} at τ = {taus[0]:g} to {float(results[-1]):.2f} at "
            f"τ = {taus[-1]:g}.")
