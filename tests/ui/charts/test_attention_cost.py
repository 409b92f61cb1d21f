"""`ui.charts.attention_cost`: the log–log chart, and the time and memory panels with their fits."""

import numpy as np
import pandas as pd
import pytest

from ui.charts.attention_cost import cost_charts, loglog_chart


def test_loglog_chart_has_log_axes_and_dashed_fits():
    points = pd.DataFrame({"n": [64, 128, 256] * 2, "ms": [1.0, 4.0, 16.0, 0.5, 2.0, 8.0],
                           "series": ["naive"] * 3 + ["fused"] * 3})
    fits = pd.DataFrame({"n": [64, 256], "ms": [1.0, 16.0], "series": ["naive"] * 2})
    spec = loglog_chart(points, fits, y="ms", y_title="time (ms)", title="Time").to_dict()
    measured, fitted = spec["layer"]
    assert measured["encoding"]["x"]["scale"] == {"type": "log", "base": 2}
    assert measured["encoding"]["y"]["scale"] == {"type": "log"}
    assert measured["encoding"]["x"]["axis"]["values"] == [64, 128, 256]
    assert fitted["mark"]["strokeDash"] == [5, 4]
    assert measured["encoding"]["color"]["scale"]["domain"] == ["naive", "fused"]
    with pytest.raises(ValueError, match="lacks the columns"):
        loglog_chart(points.drop(columns="series"), y="ms", y_title="t")


class Fit:
    """Stands in for `cost.measure.SlopeFit`."""

    def __init__(self, method, p):
        self.method, self.p, self.n_min, self.n_max = method, p, 128, 512

    def seconds(self, n):
        return 1e-9 * np.asarray(n, dtype=float) ** self.p

    def memory(self, n):
        return 4.0 * np.asarray(n, dtype=float) ** self.p


def test_cost_charts_time_and_memory_with_fits_and_the_computed_matrix():
    ns = [128, 256, 512]
    rows = pd.DataFrame({"method": ["naive"] * 3 + ["fused"] * 3, "n": ns * 2,
                         "seconds": [1e-3, 4e-3, 1.6e-2] * 2, "memory_bytes": [1.0, 4.0, 16.0, 1.0, 2.0, 4.0]})
    chart = cost_charts(rows, [Fit("naive", 2.0), Fit("fused", 1.0)], {"naive": "Naive", "fused": "Fused"})
    spec = chart.to_dict()
    time_panel, memory_panel = spec["hconcat"]
    assert time_panel["title"] == "Time: best of several calls" and memory_panel["title"] == "Memory per call"
    fits = spec["datasets"][memory_panel["layer"][1]["data"]["name"]]
    matrix = [r for r in fits if r["series"] == "one T × T float32 matrix (computed)"]
    assert [r["MiB"] for r in matrix] == [n * n * 4 / 2**20 for n in ns]
    measured = spec["datasets"][time_panel["layer"][0]["data"]["name"]]
    assert {r["series"] for r in measured} == {"Naive", "Fused"} and max(r["ms"] for r in measured) == 16.0
