"""Chart builders of the positional-encoding and masked-attention pages, tested through `to_dict()`."""


import numpy as np
import pandas as pd
import pytest

from core import causal_mask
from tests.helpers.specs import colour_domain, exported, single_data
from ui.charts.masked_attention import MASKED_GREY, mask_chart, masked_heatmap, step_bars
from ui.export import chart_to_svg


def test_masked_heatmap_draws_minus_infinity_as_grey_text():
    m = np.array([[0.5, -np.inf], [-1.25, 2.0]])
    spec = exported(masked_heatmap(m, ["a", "b"], title="scores"))
    df = single_data(spec)
    assert df["label"].tolist() == ["0.500", "−∞", "-1.250", "2.000"]
    assert df["masked"].tolist() == [False, True, False, False]
    assert df["shade"].tolist() == [0.5, 0.0, -1.25, 2.0]
    rect, text = spec["layer"]
    color = rect["encoding"]["color"]
    assert color["condition"] == {"test": "datum.masked", "value": MASKED_GREY}
    assert color["field"] == "shade" and colour_domain(spec, color["scale"]) == [-2.0, 2.0]
    assert text["encoding"]["text"]["field"] == "label"
    assert len(masked_heatmap(m, ["a", "b"], show_values=False).to_dict()["layer"]) == 1
    with pytest.raises(ValueError, match="finite values and -inf only"):
        masked_heatmap(np.array([[np.nan]]), ["a"])


@pytest.mark.parametrize("builder", ["mask", "scores"])
def test_masked_maps_take_tooltip_lines_and_highlight_a_row(builder):
    mask = causal_mask(3)
    why = np.where(mask, "may attend", "masked").astype(object)
    if builder == "mask":
        chart = mask_chart(mask, ["x", "y", "z"], extra={"why": why}, highlight_rows=[1])
    else:
        scores = np.where(mask, 1.0, -np.inf)
        chart = masked_heatmap(scores, ["x", "y", "z"], extra={"why": why}, highlight_rows=[1])
    spec = chart.to_dict()
    df = single_data(spec)
    assert df["x0"].tolist() == why.ravel().tolist()
    assert {"field": "x0", "type": "nominal", "title": "why"} in spec["encoding"]["tooltip"]
    assert df["alpha"].tolist() == [0.25] * 3 + [1.0] * 3 + [0.25] * 3
    assert df["edge"].tolist() == ["white"] * 3 + ["black"] * 3 + ["white"] * 3
    assert spec["layer"][0]["encoding"]["opacity"]["field"] == "alpha"
    assert "<svg" in chart_to_svg(spec)  # Vega itself can draw it (a schema-valid spec may still fail there)
    plain = (mask_chart(mask, ["x", "y", "z"]) if builder == "mask" else
             masked_heatmap(np.zeros((3, 3)), ["x", "y", "z"])).to_dict()
    assert "opacity" not in plain["layer"][0]["encoding"] and "alpha" not in single_data(plain)


def test_mask_chart_has_two_labelled_states():
    spec = mask_chart(causal_mask(3), ["x", "y", "z"]).to_dict()
    df = single_data(spec)
    assert df["state"].tolist() == ["may attend", "masked", "masked", "may attend", "may attend", "masked",
                                    "may attend", "may attend", "may attend"]
    assert spec["layer"][0]["encoding"]["color"]["scale"]["domain"] == ["may attend", "masked"]
    with pytest.raises(ValueError, match="boolean"):
        mask_chart(np.eye(2), ["a", "b"])


def test_step_bars_split_visible_and_future_keys():
    rows = {"no mask": np.array([0.2, 0.3, 0.5]), "mask": np.array([0.4, 0.6, 0.0])}
    spec = step_bars(rows, ["a", "b", "c"], step=2).to_dict()
    assert [p["title"] for p in spec["hconcat"]] == ["no mask", "mask"]
    datasets = [pd.DataFrame(spec["datasets"][p["data"]["name"]]) for p in spec["hconcat"]]
    assert datasets[1]["weight"].tolist() == [0.4, 0.6, 0.0]
    assert datasets[0]["status"].tolist() == ["visible (j ≤ t)", "visible (j ≤ t)", "future (j > t)"]
    shade, bars, _ = spec["hconcat"][0]["layer"]
    assert shade["transform"] == [{"filter": "datum.j >= 2"}]
    assert bars["encoding"]["x"]["sort"] == ["a", "b", "c"]  # sentence order, not alphabetical
    with pytest.raises(ValueError, match="shape"):
        step_bars({"bad": np.ones(2)}, ["a", "b", "c"], step=1)
