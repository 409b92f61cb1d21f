"""Charts whose structure is built once per shape: a new setting costs its data, not a new Altair chart.

A chart's Vega-Lite spec has two parts: its structure (marks, encodings, scales, axes, titles, sizes) and its
data. Moving a seed or a temperature slider changes only the data; the sizes and labels change with the
shape. Building and exporting the structure with Altair is most of what a new setting costs, so a chart is
described by a `Part`:

* ``tables``: its data, as `Rows` (columns), computed for every setting;
* ``make``: a function that builds its Altair chart, given a data reference for each table in turn;
* ``key``: what the structure depends on: the builder's arguments, with every NumPy array replaced by its shape
  and type.

`part_spec` builds and exports the structure once per key (with the data referenced by name, ``d0``, ``d1``, …)
and hands out ``{**structure, "datasets": {"d0": tables[0], …}}`` for every setting of that shape. `chart_of`
gives the same chart as a plain Altair chart with its data inline, for tests and for other compositions.

The rule a builder must keep (`part_builder`): **its structure depends on its arguments' shapes and non-array
values only**; anything read from an array's values (a colour domain, a title quoting a number, the text colour
of a cell) goes in a table. `tests/ui/charts/test_template.py` checks every page against charts built anew.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import inspect
from collections.abc import Callable, Hashable, Mapping
from typing import Any, ParamSpec

import altair as alt
import numpy as np
import pandas as pd

from ui.charts.inline_data import Rows
from ui.charts.spec import CANVAS, stable_spec
from ui.remembered import Remembered

P = ParamSpec("P")
#: Gives a builder the data reference of its next table (inline `Rows`, or a named dataset).
DataSource = Callable[[], alt.InlineData | alt.NamedData]
#: Builds a chart, asking the source for each of its tables' data in the order of its ``tables``.
Make = Callable[[DataSource], alt.TopLevelMixin]


class Deferred:
    """A part's key worked out when first asked for (``key_of()``), not when the part is made."""

    __slots__ = ("key_of",)

    def __init__(self, key_of: Callable[[], Hashable]) -> None:
        self.key_of = key_of


@dataclasses.dataclass(frozen=True, eq=False)
class Part:
    """A chart as its structure's key, its builder and its tables (see the module docstring).

    The key may be given `Deferred`: a part drawn only as a piece of another chart (a row that a builder draws
    inside its own chart) is then never keyed on its own. The builders of this module defer theirs.
    """

    given_key: Hashable | Deferred
    make: Make
    tables: tuple[Rows, ...]

    @functools.cached_property
    def key(self) -> Hashable:
        """What the part's structure depends on (`_key`); None when an argument has no key."""
        given = self.given_key
        return given.key_of() if isinstance(given, Deferred) else given


class UnkeyableError(TypeError):
    """An argument that `frozen` cannot turn into a key: the chart is then built anew every time."""


#: The plain kinds of value `frozen` keys as they are.
_PLAIN = frozenset({str, int, float, bool, type(None)})


def frozen(value: Any) -> Hashable:
    """A hashable stand-in for an argument's part in a chart's structure: an array by its shape and type, a
    mapping, sequence or dataclass by its items, a plain value as it is."""
    if type(value) in _PLAIN:  # most arguments: no subclass to tell apart
        return value
    if isinstance(value, np.ndarray):
        return ("array", value.shape, value.dtype.str)
    if value is None or isinstance(value, str | int | float | bool | np.generic) or value is alt.Undefined:
        return value
    if isinstance(value, Mapping):
        return ("mapping", tuple((frozen(k), frozen(v)) for k, v in value.items()))
    if isinstance(value, list | tuple | range):
        return ("sequence", tuple(frozen(v) for v in value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__qualname__,
                tuple(frozen(getattr(value, f.name)) for f in dataclasses.fields(value)))
    raise UnkeyableError(f"no key for a {type(value).__name__}")


def _key(func: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Hashable:
    """A call's key: the function and its arguments (`frozen`); None when an argument has no key."""
    try:
        return (func.__module__, func.__qualname__, frozen(args), frozen(dict(sorted(kwargs.items()))))
    except UnkeyableError:
        return None


def part_builder(*, data: tuple[str, ...] = ()) -> Callable[[Callable[P, tuple[list[Rows], Make]]],
                                                            Callable[P, Part]]:
    """Make a `Part` from a builder that returns its tables and its ``make``, keyed by the builder's arguments.

    `data` names arguments that only feed the tables (labels, a colour domain, an image): they are left out of
    the key, so that charts differing only in them share one structure.
    """

    def decorate(builder: Callable[P, tuple[list[Rows], Make]]) -> Callable[P, Part]:
        parameters = inspect.signature(builder).parameters
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY) for p in parameters.values()):
            raise TypeError(f"{builder.__qualname__}: a part builder's arguments must all have names")
        if unknown := set(data) - set(parameters):
            raise TypeError(f"{builder.__qualname__} has no arguments {sorted(unknown)}")
        names = list(parameters)

        @functools.wraps(builder)
        def build(*args: P.args, **kwargs: P.kwargs) -> Part:
            tables, make = builder(*args, **kwargs)  # raises for arguments it does not take
            if data:  # the arguments given, by name, without those that only feed the tables
                named = dict(zip(names, args, strict=False)) | kwargs  # the builder took them: no more args than names
                args, kwargs = (), {name: value for name, value in named.items() if name not in data}
            return Part(Deferred(lambda: _key(builder, args, kwargs)), make, tuple(tables))

        return build

    return decorate


def compose(arrange: Callable[..., alt.TopLevelMixin], *parts: Part, **options: Any) -> Part:
    """``arrange(*charts, **options)`` (side by side, a grid, …) of the parts' charts, as one `Part`."""
    def key_of() -> Hashable:
        keys = tuple(p.key for p in parts)
        options_key = _key(arrange, (), options)
        return None if None in keys or options_key is None else (options_key, keys)

    return Part(Deferred(key_of), lambda data: arrange(*(p.make(data) for p in parts), **options),
                tuple(t for p in parts for t in p.tables))


def frames_part(builder: Callable[..., alt.TopLevelMixin], *frames: pd.DataFrame | Mapping[str, Any],
                **options: Any) -> Part:
    """A `Part` of a builder that takes its data as DataFrames (``builder(*frames, **options)``): the frames become
    `Rows`, and the structure is keyed by the builder, the frames' columns and the options (a structure that
    reads its data by reference does not depend on how many rows it has).

    A frame may also be given as its columns, ``{name: values}``: they become `Rows` as they are, with no
    DataFrame made on the way (for a table of many rows, most of what it costs)."""
    tables = tuple(Rows.from_frame(f) if isinstance(f, pd.DataFrame) else Rows(f) for f in frames)
    options_key = Deferred(lambda: _key(builder, tuple(tuple(t.columns) for t in tables), options))
    return Part(options_key, lambda data: builder(*(data() for _ in tables), **options), tables)


def chart_of(part: Part) -> alt.TopLevelMixin:
    """The part's Altair chart with its tables inline as rows, as a builder that knew nothing of parts would make
    it (a whole chart that Altair can validate)."""
    tables = iter(part.tables)
    return part.make(lambda: alt.InlineData(values=next(tables).rows()))


def dataset_names(n: int) -> list[str]:
    """The names the tables of a part go by in its spec: ``d0``, ``d1``, … (as `stable_spec` names datasets)."""
    return [f"d{k}" for k in range(n)]


def structure_of(part: Part, canvas: bool = False) -> dict[str, Any]:
    """The part's spec without its datasets, its views reading ``d0``, ``d1``, … (exported unvalidated: the tests
    validate). ``canvas=True`` draws it on a canvas (`ui.charts.spec.CANVAS`)."""
    names = iter(dataset_names(len(part.tables)))
    spec = part.make(lambda: alt.NamedData(name=next(names))).to_dict(validate=False)
    # `stable_spec` resolves `THIS_DATA` (the expressions reading a view's own first row) against the datasets'
    # names; the values are filled in per setting.
    spec = stable_spec({**spec, "datasets": dict.fromkeys(dataset_names(len(part.tables)))})
    del spec["datasets"]
    if canvas:
        meta = spec.get("usermeta")
        spec["usermeta"] = {**(meta if isinstance(meta, dict) else {}), **CANVAS}
    return spec


class _Structures:
    """The structures built last, by part key and canvas, most recently used last (at most `max_entries`)."""

    def __init__(self, max_entries: int) -> None:
        self.built = Remembered(max_entries)

    @property
    def entries(self) -> collections.OrderedDict[Hashable, tuple[Any, Any]]:
        """The structures kept, by ``(part key, canvas)``."""
        return self.built.entries

    def get(self, part: Part, canvas: bool) -> dict[str, Any]:
        if part.key is None:
            return structure_of(part, canvas)
        return self.built.get((part.key, canvas), None, lambda: structure_of(part, canvas))

    def clear(self) -> None:
        self.built.clear()


#: Every structure of the process, shared by every session (a structure is never changed once built).
STRUCTURES = _Structures(max_entries=1024)


def part_spec(part: Part, *, canvas: bool = False) -> dict[str, Any]:
    """The part's spec as the app draws it: its structure, built once per key, with this setting's tables."""
    structure = STRUCTURES.get(part, canvas)
    return {**structure, "datasets": dict(zip(dataset_names(len(part.tables)), part.tables, strict=True))}
