"""The cost lab's charts: time and memory against sequence length on log–log axes, with the fitted slopes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd

from cost.measure import METHODS, CostRun, SlopeFit
from cost.sizes import DTYPE_BYTES
from ui.charts.palette import CATEGORY


def cost_charts(measurements: pd.DataFrame, fits: Sequence, labels: dict[str, str], *,
                matrix_bytes_per_value: int = 4) -> alt.HConcatChart:
    """Time and memory against T, side by side on log–log axes, with the fitted lines dashed.

    Args:
        measurements: one row per measurement with ``method``, ``n``, ``seconds`` and ``memory_bytes``.
        fits: `cost.measure.SlopeFit` s (anything with ``method``, ``n_min``, ``n_max``, ``seconds(n)``, ``memory(n)``).
        labels: display name of each method.
        matrix_bytes_per_value: the memory panel also shows one computed ``T x T`` matrix of this width.
    """
    points = measurements.assign(series=measurements["method"].map(labels), ms=measurements["seconds"] * 1e3,
                                 MiB=measurements["memory_bytes"] / 2**20)
    lines = []
    for fit in fits:
        n = np.array([fit.n_min, fit.n_max], dtype=np.float64)
        lines.append(pd.DataFrame({"n": n, "ms": fit.seconds(n) * 1e3, "MiB": fit.memory(n) / 2**20,
                                   "series": labels[fit.method]}))
    n_all = np.array(sorted(points["n"].unique()), dtype=np.float64)
    matrix = pd.DataFrame({"n": n_all, "MiB": n_all**2 * matrix_bytes_per_value / 2**20,
                           "series": f"one T × T float{8 * matrix_bytes_per_value} matrix (computed)"})
    time_fits = pd.concat(lines)[["n", "ms", "series"]] if lines else None
    memory_fits = pd.concat([*(f[["n", "MiB", "series"]] for f in lines), matrix])
    memory_fits = memory_fits[np.isfinite(memory_fits["MiB"])]
    time_chart = loglog_chart(points[["n", "ms", "series"]], time_fits, y="ms", y_title="time per call (ms, log scale)",
                              title="Time: best of several calls")
    memory_chart = loglog_chart(points[["n", "MiB", "series"]], memory_fits, y="MiB",
                                y_title="memory (MiB, log scale)", title="Memory per call")
    return alt.hconcat(time_chart, memory_chart, spacing=28)


def loglog_chart(points: pd.DataFrame, fits: pd.DataFrame | None = None, *, y: str, y_title: str,
                 title: str = "", y_format: str = ".3g", width: int = 380, height: int = 260) -> alt.LayerChart:
    """Measurements against sequence length on log–log axes, one line per ``series``; fitted lines dashed.

    `points` has columns ``n``, `y` and ``series``; `fits` (optional) has ``n``, `y` and ``series``
    and is drawn as dashed lines in the same colours (series names must match).
    """
    missing = {"n", y, "series"} - set(points.columns)
    if missing:
        raise ValueError(f"points lacks the columns {sorted(missing)}.")
    series = list(dict.fromkeys(points["series"]))
    if fits is not None:
        series += [s for s in dict.fromkeys(fits["series"]) if s not in series]
    x = alt.X(field="n", type="quantitative", title="sequence length T (log scale)",
              scale=alt.Scale(type="log", base=2), axis=alt.Axis(values=sorted({int(n) for n in points["n"]})))
    y_enc = alt.Y(field=y, type="quantitative", title=y_title, scale=alt.Scale(type="log"))
    color = alt.Color(field="series", type="nominal", title=None, sort=series,
                      scale=alt.Scale(domain=series, range=list(CATEGORY)),
                      legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=400))
    measured = alt.Chart(points).mark_line(point=True, strokeWidth=2).encode(
        x=x, y=y_enc, color=color,
        tooltip=[alt.Tooltip(field="series", type="nominal", title="method"),
                 alt.Tooltip(field="n", type="quantitative", title="T"),
                 alt.Tooltip(field=y, type="quantitative", title=y_title, format=y_format)],
    )
    layers = [measured]
    if fits is not None and len(fits):
        layers.append(alt.Chart(fits).mark_line(strokeDash=[5, 4], strokeWidth=1.5).encode(
            x=x, y=y_enc, color=color,
            tooltip=[alt.Tooltip(field="series", type="nominal", title="fit")],
        ))
    return alt.layer(*layers, width=width, height=height, title=title or alt.Undefined)


def measured_chart(result: CostRun, fits: Mapping[str, SlopeFit]) -> alt.HConcatChart:
    """The measured time and memory of every method against T, with the fitted lines."""
    rows = pd.DataFrame([vars(m) for m in result.measurements])
    return cost_charts(rows, list(fits.values()), METHODS, matrix_bytes_per_value=DTYPE_BYTES["float32"])


def context_chart(context_rows: Sequence[Mapping[str, object]], model_name: str) -> alt.Chart:
    """Memory of the float16 attention weights (per head, per layer, all layers) against the context length.

    `context_rows` are `cost.sizes.context_table`'s rows.
    """
    fp16 = [r for r in context_rows if r["dtype"] == "float16"]
    sizes = pd.DataFrame([{"n": r["context"], "GiB": r[col] / 2**30, "series": f"{col} (float16)"}
                          for col in ("per head", "per layer", "all layers") for r in fp16])
    return loglog_chart(sizes, y="GiB", y_title="attention weights (GiB, log scale)", y_format=",.4g",
                        title=f"{model_name}: the T × T weights, computed")

