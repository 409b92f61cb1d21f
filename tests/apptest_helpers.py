"""Helpers for AppTest-based page tests: open a page with query parameters, read its charts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "streamlit_app.py")
TIMEOUT = 60


def run_page(page: str | None = None, **query: str) -> AppTest:
    """Run the app on `page` (e.g. ``"app_pages/multi_head.py"``; None = the default page) with a query string."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    if page is not None:
        at.switch_page(page)
    at.query_params.update({k: str(v) for k, v in query.items()})
    return at.run()


def chart_specs(at: AppTest) -> list[tuple[dict, dict[str, pd.DataFrame]]]:
    """Every Vega-Lite chart on the page as ``(spec, {dataset name: DataFrame})``."""
    out = []
    for el in at.get("vega_lite_chart"):
        frames = {d.name: pa.ipc.open_stream(d.data.data).read_pandas() for d in el.proto.datasets}
        out.append((json.loads(el.proto.spec), frames))
    return out


def heatmaps(at: AppTest) -> dict[str, np.ndarray]:
    """Every `ui.charts.heatmap` on the page (also inside hconcat), keyed by title, as a matrix."""
    found: dict[str, np.ndarray] = {}
    for spec, frames in chart_specs(at):
        for sub in spec.get("hconcat") or spec.get("vconcat") or [spec]:
            if "layer" not in sub or "data" not in sub:
                continue
            df = frames[sub["data"]["name"]]
            if not {"i", "j", "value"} <= set(df.columns):
                continue
            n_rows, n_cols = int(df["i"].max()) + 1, int(df["j"].max()) + 1
            found[sub.get("title")] = df.sort_values(["i", "j"])["value"].to_numpy().reshape(n_rows, n_cols)
    return found
