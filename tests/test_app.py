"""The app, run headless with `streamlit.testing.v1.AppTest`."""

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from core import worked_example
from tests import lesson_values as lesson

TIMEOUT = 60
APP = str(Path(__file__).resolve().parents[1] / "streamlit_app.py")


def run_app(**query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(query)
    return at.run()


def chart_data(at: AppTest) -> dict[str, list[np.ndarray]]:
    """Every heatmap's values on the page, keyed by the chart's title, as matrices."""
    import json

    found: dict[str, np.ndarray] = {}
    for el in at.get("vega_lite_chart"):
        spec = json.loads(el.proto.spec)
        frames = {d.name: pa.ipc.open_stream(d.data.data).read_pandas() for d in el.proto.datasets}
        subcharts = spec.get("hconcat", [spec])
        for sub in subcharts:
            title = sub.get("title")
            df = frames[sub["data"]["name"]] if "data" in sub else next(iter(frames.values()))
            n_rows, n_cols = df["i"].max() + 1, df["j"].max() + 1
            found[title] = df["value"].to_numpy().reshape(n_rows, n_cols)
    return found


def test_app_starts_on_the_worked_example():
    at = run_app()
    assert not at.exception
    assert at.title[0].value.startswith("Worked example")


def test_lesson_numbers_are_on_the_page_at_seed_0():
    at = run_app()
    charts = chart_data(at)
    np.testing.assert_array_equal(np.round(charts["Q"], 3), lesson.Q)
    np.testing.assert_array_equal(np.round(charts["raw scores Q Kᵀ"], 3), lesson.RAW_SCORES)
    np.testing.assert_array_equal(np.round(charts["scaled scores Q Kᵀ / √4"], 3), lesson.SCALED_SCORES)
    np.testing.assert_array_equal(np.round(charts["attention weights A"], 3), lesson.WEIGHTS)
    np.testing.assert_array_equal(np.round(charts["output = A V"], 3), lesson.OUTPUT)
    explanation = " ".join(m.value for m in at.latex)
    assert r"0.509\,v_{1} + 0.196\,v_{2} + 0.295\,v_{3}" in explanation
    assert "-1.107 & 1.058 & 1.509 & 1.857" in explanation
    assert any("lesson's printed numbers" in c.value or "lesson's numbers" in c.value for c in at.caption)


def test_pytorch_cross_check_is_shown_and_small():
    at = run_app()
    assert float(at.metric[0].value) < 1e-6


def test_changing_the_seed_changes_the_numbers():
    at = run_app()
    at.slider(key="seed").set_value(7).run()
    assert not at.exception
    charts = chart_data(at)
    np.testing.assert_allclose(charts["attention weights A"], worked_example(7).weights)
    assert not np.allclose(np.round(charts["attention weights A"], 3), lesson.WEIGHTS)


def test_seed_from_the_url_is_restored():
    at = run_app(seed="7")
    assert at.slider(key="seed").value == 7
    np.testing.assert_allclose(chart_data(at)["output = A V"], worked_example(7).output)


@pytest.mark.parametrize("bad", ["abc", "-3", "100000", "1.5e400", ""])
def test_malformed_seed_falls_back_to_the_default(bad):
    at = run_app(seed=bad)
    assert not at.exception
    assert at.slider(key="seed").value == 0
    np.testing.assert_array_equal(np.round(chart_data(at)["attention weights A"], 3), lesson.WEIGHTS)


def test_token_selector_explains_that_tokens_output():
    at = run_app(token="sat")
    assert at.radio(key="token").value == "sat"
    explanation = " ".join(m.value for m in at.latex)
    assert r"0.233\,v_{1} + 0.104\,v_{2} + 0.663\,v_{3}" in explanation
    at = run_app(token="dog")  # not a token: falls back to the first
    assert not at.exception and at.radio(key="token").value == "the"
