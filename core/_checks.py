"""Input validation shared by the `core` functions.

Every public function in `core` promises that bad input raises a `ValueError`
whose message names the problem and the shapes involved, instead of a NumPy
traceback or a silent NaN. The small helpers here keep those messages uniform.
"""

from __future__ import annotations

import numbers

import numpy as np


def as_float_array(x: object, name: str, min_ndim: int = 0) -> np.ndarray:
    """Return `x` as a finite float64 array, or raise a `ValueError` that says why not."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric; could not convert it to floats ({exc}).") from None
    if arr.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimensions, got shape {arr.shape}.")
    if arr.size == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape}); every size must be positive.")
    if not np.all(np.isfinite(arr)):
        n_bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"{name} contains {n_bad} NaN or infinite value(s) (shape {arr.shape}).")
    return arr


def positive_int(value: object, name: str) -> int:
    """Return `value` as a Python int if it is a positive integer, else raise `ValueError`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    if value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value}.")
    return int(value)
