"""Every number in every message of the checker reads like a number: one formatter (`exercise.numbers.number`),
used by every message template, each template found from the source and fed extreme values."""

from __future__ import annotations

import ast
import importlib
import math
import pkgutil
import re
import typing
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import exercise
from exercise.numbers import MESSAGE_TEMPLATES, number, numbers

PACKAGE = Path(exercise.__file__).parent
FORMATTERS = {"number", "numbers"}
EXTREMES = (math.inf, -math.inf, math.nan, 1e308, -1e308, 1e-320, -0.0)
#: What an unreadable number looks like: a long run of digits, Python's exponent (``e+308``, ``e-07``), or
#: a negative zero.
UNREADABLE = re.compile(r"\d{13,}|e\+|e-0|(?<![\w.])-0(?![.\d])")


@pytest.mark.parametrize(
    ("x", "written"),
    [(math.inf, "inf"), (-math.inf, "-inf"), (math.nan, "nan"), (1e308, "1e308"), (-1e308, "-1e308"),
     (1.7976931348623157e308, "1.8e308"), (1e-320, "1e-320"), (-0.0, "0"), (0.0, "0"), (0.5, "0.5"),
     (1.0, "1"), (16.0, "16"), (1234.5, "1234"), (999.95, "1000"), (1e6, "1e6"), (1.25e-4, "0.000125"),
     (8.9e-8, "8.9e-8"), (0.1 + 0.2, "0.3"), (-1.10712, "-1.11"), (np.float32(0.25), "0.25")],
)
def test_a_number_is_written_to_significant_digits(x, written):
    assert number(x) == written


def test_a_row_of_numbers():
    assert numbers([-1.10712, 1.0581, math.inf, -0.0], 4) == "[-1.107, 1.058, inf, 0]"


def _modules() -> list[str]:
    return [f"exercise.{m.name}" for m in pkgutil.iter_modules([str(PACKAGE)])]


def _all_templates() -> list[Callable[..., str]]:
    """`MESSAGE_TEMPLATES` once every module of the package is imported (importing one registers its templates)."""
    for name in _modules():
        importlib.import_module(name)
    return MESSAGE_TEMPLATES


def _functions_that_write_numbers() -> set[str]:
    """``module.function`` for every function in the package that calls `number` or `numbers`."""
    found = set()
    for name in _modules():
        if name == "exercise.numbers":
            continue
        tree = ast.parse((PACKAGE / (name.split(".")[1] + ".py")).read_text())
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef) and any(
                    isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in FORMATTERS
                    for c in ast.walk(fn)):
                found.add(f"{name}.{fn.name}")
    return found


def test_no_message_formats_a_number_itself():
    """Format specs such as ``{x:.3f}`` or ``{x:g}`` belong to the formatter; ``{n:,}`` (a count) is allowed."""
    offenders = []
    for name in _modules():
        path = PACKAGE / (name.split(".")[1] + ".py")
        if name == "exercise.numbers":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
                spec = "".join(v.value for v in node.format_spec.values if isinstance(v, ast.Constant))
                if spec != ",":
                    offenders.append(f"{path.name}:{node.lineno} {{…:{spec}}}")
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) \
                    and isinstance(node.left.value, str):
                offenders.append(f"{path.name}:{node.lineno} %-formatting")
    assert offenders == []


def test_every_function_that_writes_a_number_is_a_registered_template():
    registered = {f"{fn.__module__}.{fn.__name__}" for fn in _all_templates()}
    assert _functions_that_write_numbers() == registered
    assert len(registered) >= 10


def _arguments(template: Callable[..., str], x: float) -> dict[str, typing.Any]:
    """Arguments for `template`: `x` for every number, a row holding `x` for every array."""
    hints = typing.get_type_hints(template)
    samples = {float: x, np.ndarray: np.array([x, 0.5, x]), int: 16, bool: False, str: "inside your function"}
    return {p: samples[hints[p]] for p in hints if p != "return"}


@pytest.mark.parametrize("x", EXTREMES, ids=repr)
def test_extreme_values_through_every_message_template(x):
    for template in _all_templates():
        text = template(**_arguments(template, x))
        assert isinstance(text, str) and len(text) < 1000, template.__name__
        assert not UNREADABLE.search(text), (template.__name__, text)
        takes_numbers = {float, np.ndarray} & set(typing.get_type_hints(template).values())
        if not math.isfinite(x) and takes_numbers:
            assert "inf" in text or "nan" in text, (template.__name__, text)
