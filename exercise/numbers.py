"""How the checker writes a number in a message: `number`, the one formatter every message template uses.

A number is written to a few significant digits, in plain decimals between 1e-4 and 1e6 (``0.0123``,
``1.5``, ``4096``) and with a short exponent outside them (``1.23e-7``, ``1e308``); the special values are
``inf``, ``-inf`` and ``nan``, and negative zero is ``0``. So no number, however extreme, is written with
more than a few characters.

A function that writes numbers into a message is a message template: it is marked with `message_template`,
which lists it in `MESSAGE_TEMPLATES`, so that the tests can pass extreme values through every one of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import TypeVar

__all__ = ["MESSAGE_TEMPLATES", "message_template", "number", "numbers"]

#: Decimal exponents written without an exponent: 10^-4 <= |x| < 10^6.
FIXED_EXPONENTS = range(-4, 6)

Template = TypeVar("Template", bound=Callable[..., str])
#: Every function that writes numbers into a message (filled as the modules defining them are imported).
MESSAGE_TEMPLATES: list[Callable[..., str]] = []


def message_template(fn: Template) -> Template:
    """Mark `fn` as a message template: a function that writes numbers into text, always through `number`."""
    MESSAGE_TEMPLATES.append(fn)
    return fn


def _without_trailing_zeros(digits: str) -> str:
    """``1.500`` -> ``1.5``, ``2.000`` -> ``2``; a whole number is left as it is."""
    return digits.rstrip("0").rstrip(".") if "." in digits else digits


def number(x: float, digits: int = 3) -> str:
    """`x` to `digits` significant digits, as a student reads it: ``0.123``, ``1.23e-7``, ``1e308``, ``inf``,
    ``-inf``, ``nan``; negative zero is ``0``."""
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "-inf" if x < 0 else "inf"
    if x == 0:
        return "0"
    mantissa, _, exponent = f"{x:.{digits - 1}e}".partition("e")  # the exponent after rounding: 9.996 -> 1.00e+01
    e = int(exponent)
    if e in FIXED_EXPONENTS:
        return _without_trailing_zeros(f"{x:.{max(digits - 1 - e, 0)}f}")
    return f"{_without_trailing_zeros(mantissa)}e{e}"


def numbers(xs: Iterable[float], digits: int = 3) -> str:
    """A row of numbers in brackets: ``[0.5, -1.25, inf]``."""
    return "[" + ", ".join(number(x, digits) for x in xs) + "]"
