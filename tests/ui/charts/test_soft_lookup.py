"""Chart builders of the soft-lookup and scaling pages, tested through `to_dict()`."""

import numpy as np
import pytest

from core.lookup import fruit_dictionary, hard_lookup, similarity_scores, soft_lookup, temperature_sweep
from ui.charts.palette import SEQUENTIAL_SCHEME
from ui.charts.soft_lookup import LOOKUP_COLORS, key_space_chart, lookup_weights_chart, temperature_chart

SHOP = fruit_dictionary()
Q = SHOP.queries["sweet"]


def data_of(spec: dict, layer: dict) -> list[dict]:
    return spec["datasets"][layer["data"]["name"]]


# --- lookup charts ----------------------------------------------------------------------------------------------------

def test_key_space_chart_sizes_and_colours_keys_by_weight():
    _, w = soft_lookup(Q, SHOP.keys, SHOP.values, 0.2)
    spec = key_space_chart(SHOP.keys, SHOP.key_names, Q, w, similarity_scores(Q, SHOP.keys), SHOP.values,
                           dims=SHOP.key_dims, query_label="q: sweet", title="keys").to_dict()
    arrow, points, labels, head, _ = spec["layer"]
    assert arrow["mark"]["type"] == "rule" and points["mark"]["type"] == "circle"
    enc = points["encoding"]
    assert enc["color"]["scale"] == {"scheme": SEQUENTIAL_SCHEME, "domain": [0, 1]}
    assert enc["size"]["field"] == "weight" and enc["size"]["scale"]["domain"] == [0, 1]
    assert enc["x"]["title"] == "sweet" and enc["y"]["title"] == "sour"
    assert {t["field"] for t in enc["tooltip"]} == {"name", "x", "y", "score", "weight", "value"}
    rows = data_of(spec, points)
    assert [r["name"] for r in rows] == list(SHOP.key_names)
    np.testing.assert_allclose([r["weight"] for r in rows], w)
    (q_row,) = data_of(spec, head)
    assert (q_row["x"], q_row["y"], q_row["name"]) == (1.0, 0.0, "q: sweet")
    assert spec["title"] == "keys"


def test_key_space_chart_rejects_wrong_shapes():
    with pytest.raises(ValueError, match="2-D keys"):
        key_space_chart(np.ones((3, 3)), ["a", "b", "c"], np.ones(3), np.ones(3), np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="one name, weight"):
        key_space_chart(np.ones((3, 2)), ["a", "b"], np.ones(2), np.ones(3), np.ones(3), np.ones(3))


def test_lookup_weights_chart_groups_hard_and_soft_bars():
    _, hard = hard_lookup(Q, SHOP.keys, SHOP.values)
    _, soft = soft_lookup(Q, SHOP.keys, SHOP.values, 1.0)
    spec = lookup_weights_chart(SHOP.key_names, hard, soft).to_dict()
    bars, text = spec["layer"]
    assert bars["mark"]["type"] == "bar" and text["mark"]["type"] == "text"
    assert spec["encoding"]["xOffset"]["field"] == "lookup"
    assert bars["encoding"]["color"]["scale"]["range"] == list(LOOKUP_COLORS.values())
    assert text["encoding"]["text"]["format"] == ".2f"
    rows = spec["datasets"][spec["data"]["name"]]
    assert len(rows) == 10
    np.testing.assert_allclose([r["weight"] for r in rows], np.concatenate([hard, soft]))
    with pytest.raises(ValueError, match="need 5 hard and 5 soft"):
        lookup_weights_chart(SHOP.key_names, hard[:4], soft)


def test_temperature_chart_marks_references_and_the_current_temperature():
    taus = np.geomspace(0.01, 10, 9)
    results, weights = temperature_sweep(Q, SHOP.keys, SHOP.values, taus)
    spec = temperature_chart(taus, results, weights, SHOP.key_names, hard_result=1.8, mean_value=4.22,
                             current=0.2, ticks=[0.01, 0.1, 1, 10]).to_dict()
    left, right = spec["hconcat"]
    refs, ref_text, line, rule = left["layer"]
    assert [r["result"] for r in data_of(spec, refs)] == [1.8, 4.22]
    assert [r["label"] for r in data_of(spec, ref_text)] == ["hard result 1.80", "average of all values 4.22"]
    np.testing.assert_allclose([r["result"] for r in data_of(spec, line)], results)
    assert [r["temperature"] for r in data_of(spec, rule)] == [0.2]
    x = line["encoding"]["x"]
    assert x["scale"]["type"] == "log" and x["axis"]["values"] == [0.01, 0.1, 1.0, 10.0]
    w_lines, w_rule = right["layer"]
    w_rows = data_of(spec, w_lines)
    assert len(w_rows) == 9 * 5
    first = [r for r in w_rows if r["temperature"] == taus[0]]
    np.testing.assert_allclose([r["weight"] for r in first], weights[0])
    assert w_lines["encoding"]["color"]["field"] == "key"
    with pytest.raises(ValueError, match="need results"):
        temperature_chart(taus, results[:3], weights, SHOP.key_names, hard_result=1, mean_value=1, current=1)


# --- scaling charts ---------------------------------------------------------------------------------------------------
