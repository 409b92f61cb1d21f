"""Exports for slides: charts as PNG/SVG (rendered server-side by vl-convert), matrices as CSV/LaTeX.

Pure functions, no Streamlit: a chart spec or a matrix in, bytes or text out.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd


def spec_of(chart: Any) -> dict:
    """The Vega-Lite spec of an Altair chart (or a spec dict, returned as is)."""
    return chart if isinstance(chart, dict) else chart.to_dict()


def chart_to_png(chart: Any, scale: float = 2.0) -> bytes:
    """Render a chart to PNG bytes; ``scale=2`` gives crisp slides."""
    import vl_convert as vlc

    return vlc.vegalite_to_png(spec_of(chart), scale=scale)


def chart_to_svg(chart: Any) -> str:
    """Render a chart to an SVG document."""
    import vl_convert as vlc

    return vlc.vegalite_to_svg(spec_of(chart))


def matrix_to_csv(matrix: np.ndarray, row_labels: Sequence[str] | None = None,
                  col_labels: Sequence[str] | None = None) -> str:
    """The matrix as CSV with a header row and a label column, full float precision."""
    m = np.asarray(matrix, dtype=np.float64)
    df = pd.DataFrame(m, index=list(row_labels) if row_labels is not None else None,
                      columns=list(col_labels) if col_labels is not None else None)
    buf = io.StringIO()
    df.to_csv(buf, float_format="%.17g")
    return buf.getvalue()


def matrix_to_latex(matrix: np.ndarray, decimals: int = 3) -> str:
    r"""The matrix as a LaTeX ``bmatrix``, one row per line, rounded to `decimals`."""
    m = np.asarray(matrix, dtype=np.float64)
    if m.ndim == 1:
        m = m[None, :]
    rows = [" & ".join(f"{x:.{decimals}f}".replace("-0." + "0" * decimals, "0." + "0" * decimals) for x in r)
            for r in m]
    return "\\begin{bmatrix}\n" + " \\\\\n".join(rows) + "\n\\end{bmatrix}"


def heatmap_matrices(spec: dict) -> Iterator[tuple[str, np.ndarray, list[str], list[str]]]:
    """Every `ui.charts.heatmap` matrix carried by a chart spec: ``(title, matrix, row labels, col labels)``."""
    datasets = spec.get("datasets", {})
    views = spec.get("hconcat") or spec.get("vconcat") or spec.get("concat") or [spec]
    for k, view in enumerate(views):
        name = view.get("data", {}).get("name") or spec.get("data", {}).get("name")
        records = datasets.get(name)
        if not records or not {"i", "j", "value"} <= set(records[0]):
            continue
        df = pd.DataFrame(records).sort_values(["i", "j"])
        n_rows, n_cols = int(df["i"].max()) + 1, int(df["j"].max()) + 1
        rows = df.drop_duplicates("i")["row"].astype(str).tolist()
        cols = df.drop_duplicates("j").sort_values("j")["col"].astype(str).tolist()
        title = view.get("title") or f"matrix {k + 1}"
        yield (title if isinstance(title, str) else str(title), df["value"].to_numpy().reshape(n_rows, n_cols),
               rows, cols)
