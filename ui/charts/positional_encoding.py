"""The positional-encoding page's charts: the table, the sine and cosine curves with every dimension's
wavelength, and the similarity of positions. A matrix too big for rect marks is drawn as one image."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from core.positional_analysis import EncodingTable, SampledWaves
from ui.charts.arrange import side_by_side
from ui.charts.heatmap import heatmap_part
from ui.charts.palette import CATEGORY, REFERENCE_GREY
from ui.charts.raster import default_domain, raster_image_uri, raster_part
from ui.charts.template import Part, compose, frames_part, part_spec

#: Draw a matrix as rect marks (with tooltips) up to this many cells; above it, as one image.
MAX_RECT_CELLS = 2500
#: Smallest rect cell (px) before switching to the image; cells print their values from `LABEL_CELL` px.
MIN_CELL, LABEL_CELL, MAX_CELL = 8, 46, 58
#: Width in px a heatmap aims for.
TARGET_PX = 620
MAX_DOTS = 64  # draw the table's values as dots on the curves up to this many positions


#: The column that orders the waves' series (the dimension's index): their legend and colours follow it, so a
#: series' label (which quotes its wavelength, and so changes with d_model) is data, not structure.
SERIES_ORDER = "dimension"


#: Line dashes by series, in the colours' order: a solid round through `CATEGORY`, then a dashed one, so two
#: curves that share a colour never share a dash.
SOLID, DASHED = [1, 0], [6, 3]
SERIES_DASHES = [SOLID] * len(CATEGORY) + [DASHED] * len(CATEGORY)


def _by_dimension() -> alt.EncodingSortField:
    return alt.EncodingSortField(field=SERIES_ORDER, op="min", order="ascending")


def series_colour(legend: alt.Legend | None) -> alt.Color:
    """The colour of each series, in the order of its `SERIES_ORDER` column (``dim 2`` before ``dim 10``)."""
    return alt.Color(field="series", type="nominal", title=None, sort=_by_dimension(),
                     scale=alt.Scale(range=list(CATEGORY)), legend=legend)


def series_dash(legend: alt.Legend | None) -> alt.StrokeDash:
    """The dash of each series, in the order of `series_colour`. Given with the colour on every mark of the
    series (and resolved like it, `waves_beside_ladder`), it joins the colour's legend."""
    return alt.StrokeDash(field="series", type="nominal", title=None, sort=_by_dimension(),
                          scale=alt.Scale(range=SERIES_DASHES), legend=legend)


def waves_beside_ladder(waves: alt.LayerChart, ladder: alt.LayerChart) -> alt.HConcatChart:
    """`side_by_side`, with each chart's dash scale its own as its colour scale is: the waves' colour and dash
    then have one domain, which Vega-Lite needs to draw them as one legend of dashed, coloured strokes."""
    chart = side_by_side(waves, ladder)
    chart.resolve = alt.Resolve(scale=alt.ScaleResolveMap(color="independent", strokeDash="independent"))
    return chart


def wave_chart(
    curves: pd.DataFrame,
    samples: pd.DataFrame | None = None,
    *,
    title: str = "",
    width: int = 480,
    height: int = 260,
) -> alt.LayerChart:
    """Smooth curves (`curves`: ``position``, ``value``, ``series``, ``dimension``) and, optionally, dots at the
    table's positions.

    `samples` has the same columns at integer positions: the values the encoding table actually holds. The legend,
    the colours and the dashes go by ``dimension`` (`series_colour`, `series_dash`).
    """
    legend = alt.Legend(orient="bottom", columns=2, labelLimit=320, symbolType="stroke", symbolStrokeWidth=2,
                        symbolSize=300)  # a stroke about 17 px long: long enough to show its dash
    color, dash = series_colour(legend), series_dash(legend)
    x = alt.X(field="position", type="quantitative", title="position p", axis=alt.Axis(tickMinStep=1))
    y = alt.Y(field="value", type="quantitative", title="PE value", scale=alt.Scale(domain=[-1.05, 1.05]))
    tooltip = [alt.Tooltip(field="series", type="nominal", title="dimension"),
               alt.Tooltip(field="position", type="quantitative", title="position", format=".2f"),
               alt.Tooltip(field="value", type="quantitative", title="value", format=".3f")]
    layers = [alt.Chart(curves).mark_line(strokeWidth=2).encode(x=x, y=y, color=color, strokeDash=dash,
                                                                 tooltip=tooltip)]
    if samples is not None:
        layers.append(alt.Chart(samples).mark_point(filled=True, size=45, opacity=1).encode(
            x=x, y=y, color=color, strokeDash=dash, tooltip=tooltip))
    return alt.layer(*layers, title=title or alt.Undefined).properties(width=width, height=height)


def wavelength_chart(
    ladder: pd.DataFrame,
    chosen: pd.DataFrame,
    *,
    title: str = "",
    width: int = 260,
    height: int = 260,
) -> alt.LayerChart:
    """Wavelength of every dimension on a log axis (`ladder`: ``dimension``, ``wavelength``), chosen dims marked.

    `chosen` has ``dimension``, ``wavelength``, ``series`` for the curves drawn
    next to it, coloured like them (`series_colour`).
    """
    x = alt.X(field="dimension", type="quantitative", title="dimension", scale=alt.Scale(nice=False),
              axis=alt.Axis(format="d", tickMinStep=1))
    y = alt.Y(field="wavelength", type="quantitative", title="wavelength λ (positions, log scale)",
              scale=alt.Scale(type="log"))
    tooltip = [alt.Tooltip(field="dimension", type="quantitative", title="dimension"),
               alt.Tooltip(field="wavelength", type="quantitative", title="wavelength λ", format=",.2f")]
    line = alt.Chart(ladder).mark_line(color=REFERENCE_GREY, interpolate="step-after").encode(x=x, y=y, tooltip=tooltip)
    marks = alt.Chart(chosen).mark_point(filled=True, size=90, opacity=1).encode(
        x=x, y=y, tooltip=tooltip, color=series_colour(legend=None))
    return alt.layer(line, marks, title=title or alt.Undefined).properties(width=width, height=height)


def with_legend_length(chart: alt.LayerChart, length: int) -> alt.LayerChart:
    """A copy of a `ui.charts.heatmap` whose colour legend is `length` px long.

    `heatmap` sizes its legend for its default 44 px cells (40 px per row); with
    small cells that legend would be far taller than the matrix.
    """
    out = chart.copy(deep=True)
    out.layer[0].encoding.color.legend = alt.Legend(orient="right", gradientLength=int(length))
    return out


def line_chart(
    df: pd.DataFrame,
    *,
    x: str,
    y: str,
    color: str | None = None,
    title: str = "",
    x_title: str | None = None,
    y_title: str | None = None,
    log_x: bool = False,
    log_y: bool = False,
    points: bool = True,
    width: int = 360,
    height: int = 240,
    y_format: str = ".3g",
    integer_x: bool = False,
) -> alt.Chart:
    """Lines of `y` against quantitative `x`, one per value of `color`, with a tooltip on every point; an
    `integer_x` axis has ticks at whole numbers only."""
    x_enc = alt.X(field=x, type="quantitative", title=x_title or x,
                  scale=alt.Scale(type="log", base=2) if log_x else alt.Undefined,
                  axis=alt.Axis(tickMinStep=1, format="d") if integer_x else alt.Undefined)
    y_enc = alt.Y(field=y, type="quantitative", title=y_title or y,
                  scale=alt.Scale(type="log") if log_y else alt.Undefined)
    tooltip = [alt.Tooltip(field=x, type="quantitative", title=x_title or x),
               alt.Tooltip(field=y, type="quantitative", title=y_title or y, format=y_format)]
    enc: dict = dict(x=x_enc, y=y_enc, tooltip=tooltip)
    if color is not None:
        enc["color"] = alt.Color(field=color, type="nominal", title=color,
                                 scale=alt.Scale(range=list(CATEGORY)), legend=alt.Legend(orient="bottom"))
        tooltip.insert(0, alt.Tooltip(field=color, type="nominal", title=color))
    mark = alt.Chart(df, title=title or alt.Undefined).mark_line(point=points, strokeWidth=2)
    return mark.encode(**enc).properties(width=width, height=height)


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def matrix_chart(matrix: np.ndarray, target_px: int = TARGET_PX, **kw) -> tuple[Part, bool]:
    """Rect heatmap (tooltips, values in small cells) when it fits, else one image; returns (its part, is_image)."""
    n_rows, n_cols = matrix.shape
    cell = min(MAX_CELL, target_px // max(n_rows, n_cols))
    if matrix.size <= MAX_RECT_CELLS and cell >= MIN_CELL:
        show = matrix.size <= 400 and cell >= LABEL_CELL
        legend_length = max(60, min(240, cell * n_rows - 20))  # its default suits 44 px cells only
        return heatmap_part(matrix, cell_size=cell, show_values=show, legend_length=legend_length, **kw), False
    kw = {k: v for k, v in kw.items() if k in ("title", "x_title", "y_title")}  # an image: redrawn anyway
    chart = raster_part(raster_image_uri(matrix, signed=True), matrix.shape, domain=default_domain(matrix, True),
                        max_size=target_px, **kw)
    return chart, True


def table_spec(table: EncodingTable) -> tuple[dict, bool]:
    """The encoding table as a Vega-Lite spec, and whether it is drawn as an image."""
    positions, d_model = table.pe.shape
    chart, is_image = matrix_chart(
        table.pe, row_labels=[str(p) for p in range(positions)], col_labels=[str(d) for d in range(d_model)],
        title=f"PE ({plural(positions, 'position')} × {plural(d_model, 'dim')})", x_title="dimension",
        y_title="position", title_in_data=True)
    return part_spec(chart, canvas=True), is_image


def wave_names(waves: SampledWaves) -> list[str]:
    """A legend label per chosen dimension: its index, sine or cosine, and its wavelength."""
    return [f"dim {d} · {'sin' if d % 2 == 0 else 'cos'} · λ = {waves.wavelengths[d]:,.2f}" for d in waves.dims]


def waves_spec(waves: SampledWaves) -> dict:
    """The chosen dimensions' waves beside the wavelength of every dimension."""
    names = wave_names(waves)
    n_fine, positions = len(waves.fine_positions), len(waves.table_values)
    # the tables as columns (`frames_part`): no DataFrame of thousands of rows per setting
    dims = np.asarray(waves.dims)
    curves = {"position": np.tile(waves.fine_positions, len(names)), "value": waves.fine_values.T.ravel(),
              "series": np.repeat(names, n_fine), SERIES_ORDER: np.repeat(dims, n_fine)}
    samples = {"position": np.tile(np.arange(positions, dtype=np.float64), len(names)),
               "value": waves.table_values.T.ravel(), "series": np.repeat(names, positions),
               SERIES_ORDER: np.repeat(dims, positions)}
    lam = waves.wavelengths
    ladder = {"dimension": np.arange(len(lam)), "wavelength": lam}
    chosen = {"dimension": dims, "wavelength": lam[dims], "series": names}
    waves = (frames_part(wave_chart, curves, samples, title="PE value against position") if positions <= MAX_DOTS
             else frames_part(wave_chart, curves, title="PE value against position"))
    lengths = frames_part(wavelength_chart, ladder, chosen, title="wavelength of every dimension")
    return part_spec(compose(waves_beside_ladder, waves, lengths), canvas=True)


def similarity_spec(table: EncodingTable) -> dict:
    """PE · PEᵀ beside the similarity against the offset."""
    positions = len(table.pe)
    labels = [str(p) for p in range(positions)]
    offset = {"offset k": np.arange(positions), "PE_0 · PE_k": table.similarity[0], "formula": table.offset_formula}
    sim_chart, _ = matrix_chart(table.similarity, row_labels=labels, col_labels=labels,
                                title="PE · PEᵀ (position × position)", x_title="position p + k", y_title="position p",
                                value_format=".2f", target_px=480)
    offset_chart = frames_part(line_chart, offset, x="offset k", y="PE_0 · PE_k", title="similarity against offset",
                               x_title="offset k", y_title="PE_0 · PE_k", points=positions <= MAX_DOTS,
                               integer_x=True)
    return part_spec(compose(side_by_side, sim_chart, offset_chart), canvas=True)
