"""A view's settings written as data: Python literals and Markdown code spans, never code.

Every value of a view's state reaches its notebook through `literal` (a Python literal that ``ast.literal_eval``
reads back) or `md_code` (a Markdown code span): a token ``"); import os`` stays a string. No nbformat here: a
page checks its state with `writable` on every run, and that must cost nothing.
"""

from __future__ import annotations

import math
import re
import urllib.parse
from collections.abc import Mapping
from typing import Any


class NotWritableError(ValueError):
    """A view's state holds a value that cannot be written as data (a NaN, an object, a nested table gone wrong)."""


def literal(value: Any) -> str:
    """`value` as a Python literal: None, a bool, an int, a finite float, a str, or a list of them (tuples and
    arrays become lists). ``ast.literal_eval(literal(v)) == v``. Anything else raises `NotWritableError`."""
    if hasattr(value, "tolist"):  # a NumPy array or scalar, by duck typing (no NumPy import here)
        value = value.tolist()
    if value is None or isinstance(value, bool | str):
        return repr(value)
    if isinstance(value, int):
        return repr(int(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotWritableError(f"{value!r} is not a finite number.")
        return repr(float(value))
    if isinstance(value, list | tuple):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    raise NotWritableError(f"a {type(value).__name__} cannot be written as data.")


def md_code(text: str) -> str:
    """`text` as a Markdown code span, fenced by more backticks than it holds (Markdown reads nothing inside)."""
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    ticks = "`" * (longest + 1)
    return f"{ticks} {text} {ticks}" if "`" in text else f"{ticks}{text}{ticks}"


def settings_source(settings: Mapping[str, Any]) -> str:
    """The first code cell: one ``name = literal`` line per control of the view."""
    lines = ["# The view's settings: change any of them and run all the cells again."]
    for name, value in settings.items():
        if not name.isidentifier():
            raise NotWritableError(f"{name!r} is not a Python name.")
        lines.append(f"{name} = {literal(value)}")
    return "\n".join(lines)


def safe_link(link: str) -> str:
    """The share link with every character Markdown could read as syntax percent-encoded."""
    return urllib.parse.quote(link, safe=":/?&=%#+,;~-._@!$'*")  # no (), [], <>, backticks or spaces


def writable(state: Mapping[str, Any]) -> bool:
    """Whether every value of `state` can be written as data."""
    try:
        for value in state.values():
            literal(value)
    except NotWritableError:
        return False
    return True
