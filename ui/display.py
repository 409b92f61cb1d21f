"""Drawing charts and offering them for slides: `show_chart`, clicks on a chart, the export menu.

`show_chart` hands a chart's Vega-Lite spec to the browser (its datasets as Arrow tables) and
collects it for the page's one export menu (`one_export_menu`, used by `ui.layout.page_fragment`),
where any chart can be downloaded as PNG or SVG and any matrix as CSV or LaTeX.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import altair as alt
import pandas as pd
import pyarrow as pa
import streamlit as st
from altair.utils.schemapi import disable_debug_mode

from ui.chart_names import ChartName
from ui.charts.inline_data import Rows, use_inline_rows
from ui.charts.spec import (
    at_its_own_size,
    drawn_on_canvas,
    for_projector,
    readable_text,
    stable_spec,
    to_spec,
    view_title,
    without_aria,
)
from ui.export import chart_matrix, chart_to_png, chart_to_svg, matrix_titles, matrix_to_csv, matrix_to_latex
from ui.numbers_tables import numbers_tables
from ui.remembered import Remembered
from ui.url_state import presenter_mode


def prepare_altair() -> None:
    """Set Altair up for building the app's charts, through its public API. Called by the router before every
    page; idempotent. (What replaces Altair's private code is in `ui.patches`, installed once.)

    * No validation while building: Altair's "debug mode" checks every schema object (an axis, a scale, a step)
      against the Vega-Lite schema as it is created. The app's charts are fixed code and the test suite
      validates every whole spec, so it is switched off. That also ends a race between sessions' threads:
      Altair's ``copy`` switches the flag off and back on around each copy.
    * A chart's tables become inline rows without Altair's copy of every column (`ui.charts.inline_data`, a
      registered data transformer), and with no row limit: the pages bound their own data sizes.
    """
    disable_debug_mode()
    use_inline_rows()


def arrow_datasets(spec: dict) -> dict:
    """The spec with each inline dataset as Arrow IPC bytes, what the browser receives.

    ``st.vega_lite_chart`` ships every dataset to the browser as Arrow, serialising it on every call unless it is
    given the bytes. `Rows` (what the chart modules make) become an Arrow table straight from their columns; a list
    of row dicts goes through `pyarrow.Table.from_pylist`. Either is made into bytes once per spec (`show_chart`
    remembers the result); a DataFrame (the pretrained page's specs) through `pyarrow.Table.from_pandas`, as
    Streamlit converts one. A column Arrow cannot type (one mixing text and numbers) is sent as text, as Streamlit's
    own conversion would send it.
    """
    if not spec.get("datasets"):
        return spec
    datasets = {}
    for name, rows in spec["datasets"].items():
        try:
            if isinstance(rows, Rows):
                table = rows.to_arrow()
            elif isinstance(rows, pd.DataFrame):
                table = pa.Table.from_pandas(rows)  # as Streamlit converts a DataFrame
            else:
                table = pa.Table.from_pylist(rows)
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # a column mixing text and numbers
            as_rows = rows.to_dict("records") if isinstance(rows, pd.DataFrame) else rows
            table = _with_text_columns(as_rows.rows() if isinstance(as_rows, Rows) else as_rows)
        datasets[name] = arrow_bytes(table)
    return {**spec, "datasets": datasets}


def _with_text_columns(rows: list[dict]) -> pa.Table:
    """The rows as an Arrow table, a column Arrow cannot type as text (``None`` stays null)."""
    names = list(dict.fromkeys(k for row in rows for k in row))
    columns = {}
    for key in names:
        values = [row.get(key) for row in rows]
        try:
            columns[key] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            columns[key] = pa.array([None if v is None else str(v) for v in values], type=pa.string())
    return pa.table(columns)


#: Arrow's default IPC options, given rather than read again from the environment for every table.
_IPC_OPTIONS = pa.ipc.IpcWriteOptions()


def arrow_bytes(table: pa.Table) -> bytes:
    """The table in Arrow's IPC stream format, as Streamlit sends a dataset."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=_IPC_OPTIONS) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def show_chart(chart: alt.TopLevelMixin | dict, *, alt: str | ChartName | None = None, export: bool = True,
               **kwargs: Any) -> Any:
    """Draw an Altair chart (or its Vega-Lite spec) at its own width, and offer it in an export menu for slides.

    ``st.altair_chart`` re-validates the whole spec against the Vega-Lite JSON
    schema on every rerun, which costs more than building the chart. The chart
    builders are validated once, by the test suite (``chart.to_dict()``), so
    here the spec is exported unvalidated and handed to ``st.vega_lite_chart``.
    A page may also pass a spec it built (and cached) itself.
    In presenter mode fonts and cells are enlarged (`ui.charts.spec.for_projector`).

    Inside a `page_fragment` the chart joins the fragment's one export menu, drawn after the fragment's
    body; elsewhere it gets a menu of its own, right under it. Unless `export` is False.

    `alt` is the chart's accessible name; a `ui.chart_names.ChartName` also puts its numbers in a caption under
    the chart (the name stays the same while only the numbers change, so the chart's view is kept).
    """
    spec, drawn = _as_drawn(chart, presenter_mode())
    name = alt.alt if isinstance(alt, ChartName) else alt
    result = st.vega_lite_chart(drawn, width="content", alt=name, **kwargs)
    if isinstance(alt, ChartName):
        st.caption(alt.numbers)
    if export:
        pending = getattr(_collecting, "specs", None)
        if pending is None:  # not inside `one_export_menu`: a menu of its own, under the chart
            export_menu([spec])
        else:  # the page's fragment draws one menu for all its charts when its body is done
            pending.append(spec)
    return result


def _prepare(chart: alt.TopLevelMixin | dict, presenter: bool) -> tuple[dict, dict]:
    """The spec `show_chart` offers for export, and the spec it sends (datasets as Arrow, no ARIA on a canvas).

    Both with every font at least `ui.charts.spec.MIN_FONT_PX` (readable on a phone). For a spec dict the
    structure is prepared once (`_prepared_structure`) and only its datasets are converted for each setting.
    """
    if not isinstance(chart, dict):
        spec, drawn = _prepare_structure(to_spec(chart), presenter)
        return spec, arrow_datasets(drawn)
    datasets = chart.get("datasets") or {}
    spec, drawn = _prepared_structure(chart, presenter)
    # `stable_spec` may have renamed the datasets; in order, as `_prepare_structure` kept them
    renamed = dict(zip(spec.get("datasets", {}), datasets.values(), strict=True))
    if not renamed:
        return spec, drawn
    return {**spec, "datasets": renamed}, arrow_datasets({**drawn, "datasets": renamed})


def _prepare_structure(spec: dict, presenter: bool) -> tuple[dict, dict]:
    """`spec` made stable and readable (`_prepare` 's transformations, which read no dataset's values): the spec
    offered for export, and the one sent (no ARIA on a canvas), their datasets still as given."""
    spec = at_its_own_size(readable_text(stable_spec(spec)))  # no text below 11 px
    if presenter:
        spec = for_projector(spec)
    return spec, without_aria(spec) if drawn_on_canvas(spec) else spec


#: `_prepare_structure` 's results by the identities of a spec's parts other than its datasets, the datasets'
#: names and presenter mode. A page's charts of one shape share their structure's parts (`ui.charts.template`
#: ``part_spec`` puts each setting's tables beside the same objects), so a new setting of a known shape finds its
#: structure prepared.
_STRUCTURES_PREPARED = Remembered(max_entries=512)


def _prepared_structure(spec: dict, presenter: bool) -> tuple[dict, dict]:
    """`_prepare_structure` of `spec` with its datasets' values left out (``None``), remembered by the identities
    of the spec's other parts."""
    parts = tuple((k, v) for k, v in spec.items() if k != "datasets")
    names = tuple(spec.get("datasets") or ())
    key = (tuple((k, id(v)) for k, v in parts), names, presenter)
    bare = dict(parts) | ({"datasets": dict.fromkeys(names)} if "datasets" in spec else {})
    return _STRUCTURES_PREPARED.get(key, parts, lambda: _prepare_structure(bare, presenter))


#: `_prepare` 's results for the specs drawn last, by the spec's identity and presenter mode. A page caches its
#: specs with `ui.cache.shared_cache`, which hands every session the same dict, never changed: a slider step
#: back to a setting anyone has seen sends that setting's prepared spec again.
_PREPARED = Remembered(max_entries=512)


def _as_drawn(chart: alt.TopLevelMixin | dict, presenter: bool) -> tuple[dict, dict]:
    """`_prepare(chart, presenter)`, remembered for a spec dict (an Altair chart is a new object on every call)."""
    if not isinstance(chart, dict):
        return _prepare(chart, presenter)
    return _PREPARED.get((id(chart), presenter), chart, lambda: _prepare(chart, presenter))


def clicked_cell(key: str, shape: tuple[int, ...], param: str = "cell",
                 fields: Sequence[str] = ("i", "j")) -> tuple[int, ...] | None:
    """The cell last clicked on the chart drawn with widget `key`: its `fields` (``(i, j)`` by default).

    The chart has a click selection `param` on those fields (`ui.charts.heatmap(..., select=param)`)
    and is shown with ``on_select="rerun"``. None when nothing is selected, and for a click remembered
    from a larger map that lies outside `shape` now.
    """
    state = st.session_state.get(key)
    try:
        (point,) = state["selection"][param]
        cell = tuple(int(point[f]) for f in fields)
    except (KeyError, TypeError, ValueError):
        return None
    return cell if all(0 <= c < n for c, n in zip(cell, shape, strict=True)) else None


def _slug(text: str) -> str:
    """A file name stem from a title: ``"P A Pᵀ (original, reordered)" -> "p_a_p_original_reordered"``."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:80].rstrip("_") or "chart"


def _chart_name(spec: dict) -> str:
    """A chart's name for the export menu: its panels' titles, or its matrices' names (``""`` if it has neither)."""
    views = spec.get("hconcat") or spec.get("vconcat") or spec.get("concat") or [spec]
    titles = [t for v in views if (t := view_title(v, spec.get("datasets", {})))]
    titles = titles or [layout.get("name", "") for layout in spec.get("usermeta", {}).get("matrices", [])]
    return ", ".join(t for t in titles if t)


def export_menu(specs: Sequence[dict], key: str | None = None,
                page_files: Sequence[MenuFile] = ()) -> None:
    """A small popover: pick a file (the page's own `page_files`, a chart as PNG or SVG, any matrix in it as CSV or
    LaTeX), download it.

    One menu for several charts (a `page_fragment` draws one for all of its charts), made of one select box
    and one download button however many files it offers. Every element costs the browser something on
    every slider step, so a page has one menu rather than one under each chart, and one select box rather
    than a button per file and format. The matrices are listed from their titles alone (`ui.export.matrix_titles`);
    every file is made only when the button is clicked (a deferred callable), so the menu costs a rerun
    almost nothing. The two widgets exist only while the popover is open (opening it reruns the app);
    closed, the menu is a single button. Changing the choice reruns the app; the popover stays open.

    `key` names the popover (``<key>_open`` in session state); by default it is made from the charts' names
    and specs without data. A menu's select box and button are keyed by the files it offers, so a chart that
    changed shape offers its new files from the start.
    """
    if key is None:
        key = _menu_key(specs)
    # No hover help on the button: the browser redraws a tooltip wrapper per chart on every slider step, and the
    # menu's own select box explains the files.
    label = "Export" if len(specs) <= 1 else "Export charts and matrices"
    menu = st.popover(label, icon=":material/download:", key=f"{key}_open", on_change="rerun")
    with menu:
        if not menu.open:  # sent (and its files listed) only while open: a closed menu is one button
            return
        names = [_chart_name(spec) for spec in specs]
        # (option label, chart index or None for a page's own file, matrix index or None for the whole chart, file
        # extension or the page's file's index)
        choices: list[tuple[str, int | None, int | None, str | int]] = [(f.label, None, None, n)
                                                                         for n, f in enumerate(page_files)]
        for c, (spec, name) in enumerate(zip(specs, names, strict=True)):
            chart = "Chart" if len(specs) == 1 else (name or f"Chart {c + 1}")
            choices += [(f"{chart} · PNG image", c, None, "png"), (f"{chart} · SVG drawing", c, None, "svg")]
            for k, title in enumerate(matrix_titles(spec)):
                choices += [(f"{title} · CSV", c, k, "csv"), (f"{title} · LaTeX bmatrix", c, k, "tex")]
        files = hashlib.md5("\n".join(label for label, *_ in choices).encode()).hexdigest()[:8]
        choice = st.selectbox(
            # Wide enough for a chart's titles and the format after them: the popover grows to fit it.
            "File", range(len(choices)), format_func=lambda i: choices[i][0], key=f"{key}_{files}_file", width=620,
            help=" ".join([*(f.help for f in page_files if f.help), "A chart as an image (PNG at twice the screen "
                           "resolution, or SVG), or one of its matrices as CSV (full precision, with row and column "
                           "labels) or as a LaTeX bmatrix (3 decimals)."]),
        )
        _, c, k, ext = choices[choice]
        if c is None:  # a page's own file, made ready now (in this run) and built when clicked
            own = page_files[ext]
            file_name, mime, data = own.file_name, own.mime, own.ready()
        elif k is None:
            data = functools.partial(chart_to_png if ext == "png" else chart_to_svg, specs[c])
            file_name, mime = f"{_slug(names[c])}.{ext}", {"png": "image/png", "svg": "image/svg+xml"}[ext]
        else:
            data = functools.partial(_matrix_file, specs[c], k, ext)
            file_name = f"{_slug(matrix_titles(specs[c])[k])}.{ext}"
            mime = {"csv": "text/csv", "tex": "text/x-tex"}[ext]
        st.download_button(file_name, data=data, file_name=file_name, mime=mime, key=f"{key}_{files}_download",
                           on_click="ignore", icon=":material/download:")


def _menu_key(specs: Sequence[dict]) -> str:
    """A menu's key made from its charts' names and their specs without data (the same charts, the same key)."""
    names = "_".join(_chart_name(spec) for spec in specs)
    skeletons = json.dumps([{k: v for k, v in spec.items() if k != "datasets"} for spec in specs],
                           sort_keys=True, default=str)
    return f"export_{_slug(names)}_{hashlib.md5(skeletons.encode()).hexdigest()[:8]}"


def matrix_downloads(title: str, matrix: Any, row_labels: Sequence[str], col_labels: Sequence[str]) -> None:
    """CSV and LaTeX downloads of a matrix too large to travel inside its chart (drawn as one image).

    The files are made only when a button is clicked, like the Export menu's.
    """
    slug = _slug(title)
    with st.container(horizontal=True):
        st.download_button(f"{title} as CSV", data=functools.partial(matrix_to_csv, matrix, row_labels, col_labels),
                           file_name=f"{slug}.csv", mime="text/csv", key=f"matrix_{slug}_csv", on_click="ignore",
                           icon=":material/table:")
        st.download_button(f"{title} as LaTeX", data=functools.partial(matrix_to_latex, matrix),
                           file_name=f"{slug}.tex", mime="text/x-tex", key=f"matrix_{slug}_tex", on_click="ignore",
                           icon=":material/functions:")


def _matrix_file(spec: dict, k: int, kind: str) -> str:
    """The `k`-th matrix of a chart spec (`ui.export.chart_matrices` order) as CSV (``"csv"``) or LaTeX (``"tex"``).

    Run when its download button is clicked.
    """
    _, matrix, rows, cols = chart_matrix(spec, k)
    return matrix_to_csv(matrix, rows, cols) if kind == "csv" else matrix_to_latex(matrix)


#: The specs `show_chart` has drawn inside the innermost `one_export_menu` of the running script (each
#: session's script runs in its own thread), and the files its page offered (`offer_file`); None outside one.
_collecting = threading.local()


@dataclass(frozen=True)
class MenuFile:
    """A file a page offers in its export menu besides its charts' (`ui.take_home`'s notebook).

    `ready` runs in the script's run when the file is picked in the open menu (it may read the session); the
    callable it returns makes the file's content when the download button is clicked.
    """

    label: str
    file_name: str
    mime: str
    ready: Callable[[], Callable[[], str | bytes]]
    help: str = ""  #: one sentence for the menu's help, e.g. "The view as a notebook …"


def offer_file(file: MenuFile) -> None:
    """Offer `file` first in the innermost `one_export_menu` (its page's menu); outside one, nowhere."""
    files = getattr(_collecting, "files", None)
    if files is not None:
        files.append(file)


@contextlib.contextmanager
def one_export_menu(key: str) -> Iterator[None]:
    """Collect every chart `show_chart` draws in the body into one export menu, drawn when the body is done.

    One menu is one element on every step instead of one per chart. Nested uses each get their own menu,
    with their own charts only. When the body stops early (``st.stop()``), no menu is drawn.
    """
    outer = getattr(_collecting, "specs", None), getattr(_collecting, "files", None)
    _collecting.specs, _collecting.files = [], []
    try:
        yield
        if _collecting.specs or _collecting.files:
            export_menu(_collecting.specs, key=key, page_files=_collecting.files)
            numbers_tables(_collecting.specs, key=f"{key}_numbers")
    finally:
        _collecting.specs, _collecting.files = outer
