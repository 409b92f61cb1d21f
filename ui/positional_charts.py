"""Chart builders for the positional-encoding and masked-attention pages (pure: data in, `alt.Chart` out).

Same conventions as `ui.charts` (diverging ``blueorange`` centred at 0 for signed
values, ``viridis`` for weights, values in the cells of small matrices), plus:

* `raster_heatmap`: a big matrix (up to 512 x 512 = 262 144 cells) drawn as one
  PNG image, one pixel per cell, coloured with exactly the Vega scheme the
  rect heatmaps use. One image mark instead of 262 144 rect marks keeps the
  browser fast and shows every cell (no downsampling, so no aliasing of the
  fast sine waves).
* `wave_chart`, `wavelength_chart`: the encoding's sine/cosine curves and the
  wavelength of every dimension.
* `mask_chart`, `masked_heatmap`, `step_bars`: the causal mask, scores with
  ``-inf`` drawn as grey "−∞" cells, and one query's weights with and without the mask.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd
from PIL import Image

from ui.charts import (
    DIVERGING_SCHEME,
    SEQUENTIAL_SCHEME,
    domain_from_data,
    emphasis_encoding,
    extra_tooltip_lines,
    independent_colours,
    matrix_frame,
)

#: Colour stops of the Vega schemes (from vega-scale), interpolated linearly in RGB as Vega does.
SCHEME_STOPS: dict[str, str] = {
    DIVERGING_SCHEME: "134b852f78b35da2cb9dcae1d2e5eff2f0ebfce0bafbbf74e8932fc5690d994a07",
    SEQUENTIAL_SCHEME: (
        "440154470e61481a6c482575472f7d443a834144873d4e8a39568c35608d31688e2d708e2a788e27818e23888e21918d"
        "1f988b1fa08822a8842ab07f35b77943bf7154c56866cc5d7ad1518fd744a5db36bcdf27d2e21be9e51afde725"
    ),
}
MASKED_GREY = "#c8c8c8"
#: "may attend" / "masked" colours of the mask: a dark viridis blue and a light grey (safe for colour-blindness).
MASK_COLOURS = ("#3b528b", "#e3e3e3")
#: Bars of keys a query may see, and of future keys (no mask: the weight that would leak).
SEEN_COLOUR, FUTURE_COLOUR = "#21918c", "#e8932f"


def _stops(scheme: str) -> np.ndarray:
    hexes = SCHEME_STOPS[scheme]
    return np.array([[int(hexes[i + c : i + c + 2], 16) for c in (0, 2, 4)] for i in range(0, len(hexes), 6)],
                    dtype=np.float64)  # (n_stops, 3)


def default_domain(matrix: np.ndarray, signed: bool) -> tuple[float, float]:
    """Symmetric ``[-m, m]`` around 0 for signed values (m = largest |finite value|), ``[0, 1]`` for weights."""
    if not signed:
        return (0.0, 1.0)
    finite = np.asarray(matrix, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    m = float(np.max(np.abs(finite))) if finite.size else 0.0
    return (-(m or 1.0), m or 1.0)


def colorize(matrix: np.ndarray, *, signed: bool = True, domain: tuple[float, float] | None = None) -> np.ndarray:
    """RGB image ``(rows, cols, 3)`` uint8 of `matrix` under the app's colour scale (values clipped to `domain`)."""
    m = np.asarray(matrix, dtype=np.float64)
    if m.ndim != 2 or m.size == 0:
        raise ValueError(f"colorize needs a non-empty 2-D matrix, got shape {m.shape}.")
    lo, hi = domain if domain is not None else default_domain(m, signed)
    stops = _stops(DIVERGING_SCHEME if signed else SEQUENTIAL_SCHEME)
    t = np.clip((m - lo) / ((hi - lo) or 1.0), 0.0, 1.0) * (len(stops) - 1)  # position along the stops
    k = np.minimum(t.astype(np.int64), len(stops) - 2)  # left stop of each cell's segment
    frac = (t - k)[..., None]  # (rows, cols, 1)
    rgb = stops[k] * (1 - frac) + stops[k + 1] * frac  # (rows, cols, 3)
    return np.rint(rgb).astype(np.uint8)


def raster_image_uri(matrix: np.ndarray, *, signed: bool = True, domain: tuple[float, float] | None = None) -> str:
    """`matrix` as a ``data:image/png;base64,...`` URI, one pixel per cell (row 0 at the top)."""
    buf = io.BytesIO()
    Image.fromarray(colorize(matrix, signed=signed, domain=domain), mode="RGB").save(buf, format="PNG",
                                                                                   compress_level=6)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def raster_heatmap(
    image_uri: str,
    shape: tuple[int, int],
    *,
    domain: tuple[float, float],
    signed: bool = True,
    title: str = "",
    x_title: str = "column",
    y_title: str = "row",
    max_size: int = 560,
    min_size: int = 220,
) -> alt.Chart:
    """A heatmap drawn as one image (see `raster_image_uri`), with numeric axes and a colour legend.

    Cell ``(i, j)`` covers ``[j, j+1] x [i, i+1]`` on the axes; row 0 is at the top,
    as in a printed matrix. The colour legend shows `domain` on the same scale
    the image was painted with. Streamlit fits the whole chart (title, axes and legend included) into
    width x height, hence `min_size`: a one-row matrix still gets a visible band.
    """
    n_rows, n_cols = shape
    width = int(np.clip(max_size * n_cols / max(n_rows, n_cols), min_size, max_size))
    height = int(np.clip(max_size * n_rows / max(n_rows, n_cols), min_size, max_size))
    lo, hi = domain
    scale = (alt.Scale(scheme=DIVERGING_SCHEME, domain=[lo, hi], domainMid=0) if signed
             else alt.Scale(scheme=SEQUENTIAL_SCHEME, domain=[lo, hi]))
    x = alt.X(field="x", type="quantitative", title=x_title, scale=alt.Scale(domain=[0, n_cols], nice=False, zero=True),
              axis=alt.Axis(orient="top", tickMinStep=1, format="d"))
    y = alt.Y(field="y", type="quantitative", title=y_title,
              scale=alt.Scale(domain=[0, n_rows], nice=False, zero=True, reverse=True),
              axis=alt.Axis(tickMinStep=1, format="d"))
    # x/x2 and y/y2 pin the image's corners to the axes, so it stays aligned however the chart is sized.
    # The colour channel paints nothing on an image; it only draws the legend of the scale the image
    # was coloured with (one mark, no extra layer).
    data = pd.DataFrame({"x": [0.0], "y": [0.0], "x2": [float(n_cols)], "y2": [float(n_rows)], "value": [lo],
                         "url": [image_uri]})
    legend = alt.Legend(orient="right", gradientLength=int(np.clip(height - 80, 60, 240)))
    return alt.Chart(data, title=title or alt.Undefined).mark_image(aspect=False, smooth=False).encode(
        x=x, y=y, x2=alt.X2(field="x2"), y2=alt.Y2(field="y2"), url=alt.Url(field="url", type="nominal"),
        color=alt.Color(field="value", type="quantitative", scale=scale, title=None, legend=legend),
    ).properties(width=width, height=height)


def with_legend_length(chart: alt.LayerChart, length: int) -> alt.LayerChart:
    """A copy of a `ui.charts.heatmap` whose colour legend is `length` px long.

    `heatmap` sizes its legend for its default 44 px cells (40 px per row); with
    small cells that legend would be far taller than the matrix.
    """
    out = chart.copy(deep=True)
    out.layer[0].encoding.color.legend = alt.Legend(orient="right", gradientLength=int(length))
    return out


def wave_chart(
    curves: pd.DataFrame,
    samples: pd.DataFrame | None = None,
    *,
    series_order: Sequence[str] | None = None,
    title: str = "",
    width: int = 480,
    height: int = 260,
) -> alt.LayerChart:
    """Smooth curves (`curves`: ``position``, ``value``, ``series``) and, optionally, dots at the table's positions.

    `samples` has the same columns at integer positions: the values the encoding
    table actually holds. `series_order` fixes the legend order and colours.
    """
    domain = list(series_order) if series_order is not None else alt.Undefined
    color = alt.Color(field="series", type="nominal", title=None, sort=domain,
                      scale=alt.Scale(scheme="tableau10", domain=domain),
                      legend=alt.Legend(orient="bottom", columns=2, labelLimit=320))
    x = alt.X(field="position", type="quantitative", title="position p", axis=alt.Axis(tickMinStep=1))
    y = alt.Y(field="value", type="quantitative", title="PE value", scale=alt.Scale(domain=[-1.05, 1.05]))
    tooltip = [alt.Tooltip(field="series", type="nominal", title="dimension"),
               alt.Tooltip(field="position", type="quantitative", title="position", format=".2f"),
               alt.Tooltip(field="value", type="quantitative", title="value", format=".3f")]
    layers = [alt.Chart(curves).mark_line(strokeWidth=2).encode(x=x, y=y, color=color, tooltip=tooltip)]
    if samples is not None and len(samples):
        layers.append(alt.Chart(samples).mark_point(filled=True, size=45, opacity=1).encode(
            x=x, y=y, color=color, tooltip=tooltip))
    return alt.layer(*layers, title=title or alt.Undefined).properties(width=width, height=height)


def wavelength_chart(
    ladder: pd.DataFrame,
    chosen: pd.DataFrame,
    *,
    series_order: Sequence[str],
    title: str = "",
    width: int = 260,
    height: int = 260,
) -> alt.LayerChart:
    """Wavelength of every dimension on a log axis (`ladder`: ``dimension``, ``wavelength``), chosen dims marked.

    `chosen` has ``dimension``, ``wavelength``, ``series`` for the curves drawn
    next to it, coloured like them.
    """
    x = alt.X(field="dimension", type="quantitative", title="dimension", scale=alt.Scale(nice=False),
              axis=alt.Axis(format="d", tickMinStep=1))
    y = alt.Y(field="wavelength", type="quantitative", title="wavelength λ (positions, log scale)",
              scale=alt.Scale(type="log"))
    tooltip = [alt.Tooltip(field="dimension", type="quantitative", title="dimension"),
               alt.Tooltip(field="wavelength", type="quantitative", title="wavelength λ", format=",.2f")]
    line = alt.Chart(ladder).mark_line(color="#9e9e9e", interpolate="step-after").encode(x=x, y=y, tooltip=tooltip)
    marks = alt.Chart(chosen).mark_point(filled=True, size=90, opacity=1).encode(
        x=x, y=y, tooltip=tooltip,
        color=alt.Color(field="series", type="nominal", sort=list(series_order), legend=None,
                        scale=alt.Scale(scheme="tableau10", domain=list(series_order))),
    )
    return alt.layer(line, marks, title=title or alt.Undefined).properties(width=width, height=height)


def mask_chart(
    mask: np.ndarray,
    labels: Sequence[str],
    *,
    title: str = "mask",
    cell_size: int = 36,
    font_size: int = 12,
    extra: Mapping[str, np.ndarray] | None = None,
    highlight_rows: Sequence[int] | None = None,
    highlight_cols: Sequence[int] | None = None,
) -> alt.LayerChart:
    """The boolean mask as a two-colour grid, "may attend" (1) or "masked" (0), with 1/0 in the cells.

    `extra`, `highlight_rows` and `highlight_cols` work as in `ui.charts.heatmap`.
    """
    m = np.asarray(mask)
    if m.dtype != np.bool_ or m.ndim != 2:
        raise ValueError(f"mask must be a 2-D boolean matrix, got dtype {m.dtype} and shape {m.shape}.")
    df = matrix_frame(m.astype(np.float64), labels, labels)
    df["state"] = np.where(m.ravel(), "may attend", "masked")
    df["ink"] = np.where(m.ravel(), "white", "black")
    extra_lines = extra_tooltip_lines(df, extra, m.shape, ".3f")
    emphasis = emphasis_encoding(df, highlight_rows, highlight_cols)
    x = alt.X(field="col", type="ordinal", sort=None, title="key token (attended to)",
              axis=alt.Axis(labelAngle=-45 if cell_size >= 30 else -90, orient="top",
                            labelOverlap=False))
    y = alt.Y(field="row", type="ordinal", sort=None, title="query token")
    color = alt.Color(field="state", type="nominal", title=None,
                      scale=alt.Scale(domain=["may attend", "masked"], range=list(MASK_COLOURS)),
                      legend=alt.Legend(orient="bottom"))
    tooltip = [alt.Tooltip(field="row", type="nominal", title="query"),
               alt.Tooltip(field="col", type="nominal", title="key"),
               alt.Tooltip(field="state", type="nominal", title="mask"), *extra_lines]
    rect = alt.Chart().mark_rect(stroke="white", strokeWidth=2 if emphasis else 1).encode(color=color, **emphasis)
    text = alt.Chart().mark_text(fontSize=font_size).encode(
        text=alt.Text(field="value", type="quantitative", format="d"),
        color=alt.Color(field="ink", type="nominal", scale=None),  # the column holds the colours themselves
    )
    # One constructor call: chained `.encode().properties()` deep-copies the chart at each step (`ui.charts.heatmap`).
    return alt.LayerChart(layer=[rect, text], data=df, title=title or alt.Undefined,
                          encoding=alt.FacetedEncoding(x=x, y=y, tooltip=tooltip),
                          width=alt.Step(cell_size), height=alt.Step(cell_size))


def masked_heatmap(
    matrix: np.ndarray,
    labels: Sequence[str],
    *,
    title: str = "",
    x_title: str = "key token (attended to)",
    y_title: str = "query token",
    value_format: str = ".3f",
    cell_size: int = 44,
    font_size: int = 12,
    show_values: bool = True,
    extra: Mapping[str, np.ndarray] | None = None,
    highlight_rows: Sequence[int] | None = None,
    highlight_cols: Sequence[int] | None = None,
) -> alt.LayerChart:
    """A signed heatmap in which ``-inf`` cells are grey and read "−∞" (a colour scale cannot hold -inf).

    The data keep the true ``value`` (``-inf`` included; Streamlit sends it to the
    browser as null), so the colour uses a finite copy ``shade`` and the text a ``label``.
    `extra`, `highlight_rows` and `highlight_cols` work as in `ui.charts.heatmap`.
    """
    df = matrix_frame(matrix, labels, labels)
    v = df["value"].to_numpy()
    masked = np.isneginf(v)
    if np.isnan(v).any() or np.isposinf(v).any():
        raise ValueError(f"masked_heatmap accepts finite values and -inf only (shape {np.shape(matrix)}).")
    lo, hi = default_domain(v, signed=True)
    df["masked"] = masked
    df["shade"] = np.where(masked, 0.0, v)
    df["label"] = [("−∞" if mk else format(x, value_format)) for x, mk in zip(v, masked, strict=True)]
    dark = ~masked & (np.abs((df["shade"].to_numpy() - lo) / (hi - lo) - 0.5) > 0.3)
    df["ink"] = np.where(dark, "white", "black")
    df["lo"], df["hi"] = lo, hi  # the colour domain, read by `domain_from_data`
    extra_lines = extra_tooltip_lines(df, extra, np.shape(matrix), value_format)
    emphasis = emphasis_encoding(df, highlight_rows, highlight_cols)
    scale = alt.Scale(scheme=DIVERGING_SCHEME, domain=domain_from_data(), domainMid=0)
    x = alt.X(field="col", type="ordinal", sort=None, title=x_title,
              axis=alt.Axis(labelAngle=-45, orient="top", labelOverlap=False))
    y = alt.Y(field="row", type="ordinal", sort=None, title=y_title)
    tooltip = [alt.Tooltip(field="row", type="nominal", title=y_title),
               alt.Tooltip(field="col", type="nominal", title=x_title),
               alt.Tooltip(field="label", type="nominal", title="value"), *extra_lines]
    rect = alt.Chart().mark_rect(stroke="white", strokeWidth=2 if emphasis else 1).encode(
        color=alt.condition("datum.masked", alt.value(MASKED_GREY),
                            alt.Color(field="shade", type="quantitative", scale=scale, title=None,
                                      legend=alt.Legend(orient="right"))),
        **emphasis,
    )
    layers: list[alt.Chart] = [rect]
    if show_values:
        layers.append(alt.Chart().mark_text(fontSize=font_size).encode(
            text=alt.Text(field="label", type="nominal"),
            color=alt.Color(field="ink", type="nominal", scale=None),  # the column holds the colours themselves
        ))
    return alt.LayerChart(layer=layers, data=df, title=title or alt.Undefined,
                          encoding=alt.FacetedEncoding(x=x, y=y, tooltip=tooltip),
                          resolve=independent_colours(),  # the cells' colour scale is not the text's ink
                          width=alt.Step(cell_size), height=alt.Step(cell_size))


def step_bars(
    rows: dict[str, np.ndarray],
    labels: Sequence[str],
    step: int,
    *,
    bar_size: int = 40,
    height: int = 200,
) -> alt.HConcatChart:
    """One query's weight row per panel (`rows`: panel title -> ``(T,)`` weights), future keys shaded grey.

    Keys ``j <= step - 1`` (0-based) are the ones token `step` can see; later keys
    sit on a grey background. The weight is printed above every bar.
    """
    panels = []
    n = len(labels)
    for panel_title, row in rows.items():
        row = np.asarray(row, dtype=np.float64)
        if row.shape != (n,):
            raise ValueError(f"panel {panel_title!r}: a weight row of shape {row.shape} for {n} labels.")
        df = pd.DataFrame({
            "key": list(labels), "j": np.arange(n), "weight": row,
            "status": np.where(np.arange(n) < step, "visible (j ≤ t)", "future (j > t)"),
        })
        df["label"] = [format(w, ".3f") for w in row]
        x = alt.X(field="key", type="ordinal", sort=list(labels), title="key token",
                  axis=alt.Axis(labelAngle=-45, labelOverlap=False))
        y = alt.Y(field="weight", type="quantitative", title="attention weight", scale=alt.Scale(domain=[0, 1]))
        tooltip = [alt.Tooltip(field="key", type="nominal", title="key"),
                   alt.Tooltip(field="weight", type="quantitative", title="weight", format=".4f"),
                   alt.Tooltip(field="status", type="nominal", title="key is")]
        shade = alt.Chart().transform_filter("datum.j >= " + str(step)).mark_bar(
            color="#eeeeee", width=alt.RelativeBandSize(1.0)).encode(x=x, y=alt.Y(datum=1), tooltip=tooltip)
        bars = alt.Chart().mark_bar().encode(
            x=x, y=y, tooltip=tooltip,
            color=alt.Color(field="status", type="nominal", title=None,
                            scale=alt.Scale(domain=["visible (j ≤ t)", "future (j > t)"],
                                            range=[SEEN_COLOUR, FUTURE_COLOUR]),
                            legend=alt.Legend(orient="bottom")),
        )
        text = alt.Chart().mark_text(dy=-7, fontSize=11).encode(x=x, y=y, text=alt.Text(field="label", type="nominal"))
        panels.append(alt.layer(shade, bars, text, data=df, title=panel_title)
                      .properties(width=alt.Step(bar_size), height=height))
    return alt.hconcat(*panels, spacing=28)
