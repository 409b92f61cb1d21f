"""ui.charts.training: the training page's curves, attention grid and probabilities, without Streamlit."""

import numpy as np
import pytest

from ui.charts.palette import SEQUENTIAL_SCHEME
from ui.charts.training import attention_grid, curves_frame, position_labels, probabilities_map, training_curves


def test_curves_frame_and_training_curves():
    loss = curves_frame([0, 10, 20], {"held-out": [2.3, 1.0, 0.5], "training": [2.2, 1.1, 0.4]})
    assert list(loss.columns) == ["step", "curve", "value"] and len(loss) == 6
    acc = curves_frame([0, 10, 20], {"per token": [0.1, 0.5, 0.9]})
    spec = training_curves(loss, acc, marker_step=10, chance=0.1).to_dict()
    loss_panel, acc_panel = spec["hconcat"]
    assert loss_panel["title"] == "Loss (cross-entropy)" and acc_panel["title"] == "Accuracy on held-out sequences"
    assert loss_panel["layer"][0]["encoding"]["y"]["scale"]["type"] == "log"
    assert acc_panel["layer"][0]["encoding"]["y"]["scale"]["domain"] == [0.0, 1.0]
    assert acc_panel["layer"][0]["encoding"]["x"]["title"] == "training step"
    assert {t["field"] for t in acc_panel["layer"][0]["encoding"]["tooltip"]} == {"curve", "step", "value"}
    rules = [layer for layer in acc_panel["layer"] if layer["mark"]["type"] == "rule"]
    assert len(rules) == 2  # chance level and the checkpoint shown
    datasets = spec["datasets"]
    assert [{"step": 10}] in datasets.values() and [{"level": 0.1, "label": "chance: 0.100"}] in datasets.values()
    with pytest.raises(ValueError, match="has"):
        curves_frame([0, 1], {"x": [1.0]})


def grid_maps(spec: dict) -> dict[str, np.ndarray]:
    """The matrices of an `attention_grid` spec, keyed by panel title."""
    rows = spec["datasets"][spec["data"]["name"]]
    out = {}
    for panel in spec["facet"]["sort"]:
        cells = sorted((d["q"], d["k"], d["value"]) for d in rows if d["panel"] == panel)
        t = int(round(len(cells) ** 0.5))
        out[panel] = np.array([v for _, _, v in cells]).reshape(t, t)
    return out


def test_attention_grid_draws_every_layer_and_head():
    rng = np.random.default_rng(0)
    maps = rng.dirichlet(np.ones(3), size=(2, 5, 3))  # (L=2, H=5, T=3, T=3)
    spec = attention_grid(maps, [7, 7, 2], per_row=4).to_dict()
    assert spec["columns"] == 4  # wraps after 4 heads
    assert spec["facet"]["sort"] == [f"layer {li} · head {h}" for li in (1, 2) for h in range(1, 6)]
    found = grid_maps(spec)
    for li in range(2):
        for h in range(5):
            np.testing.assert_allclose(found[f"layer {li + 1} · head {h + 1}"], maps[li, h])
    rows = spec["datasets"][spec["data"]["name"]]
    assert [d["row"] for d in rows[:9:3]] == ["0:7", "1:7", "2:2"]  # labels stay unique for repeated tokens
    enc = spec["spec"]["encoding"]
    assert enc["x"]["sort"] == enc["y"]["sort"] == ["0:7", "1:7", "2:2"]
    assert enc["x"]["title"] == "key (position:token)" and enc["y"]["title"] == "query (position:token)"
    assert {t["field"] for t in enc["tooltip"]} == {"panel", "row", "col", "value"}
    color = spec["spec"]["layer"][0]["encoding"]["color"]["scale"]
    assert color["scheme"] == SEQUENTIAL_SCHEME and color["domain"] == [0.0, 1.0]
    assert attention_grid(maps[:, :2], [7, 7, 2]).to_dict()["columns"] == 2  # one row per layer
    with pytest.raises(ValueError, match="T = 2 tokens"):
        attention_grid(maps, [1, 2])


def test_attention_grid_prints_values_only_in_big_cells():
    maps = np.full((1, 1, 4, 4), 0.25)
    big = attention_grid(maps, [1, 2, 3, 4], cell_size=30).to_dict()["spec"]
    small = attention_grid(maps, [1, 2, 3, 4], cell_size=16).to_dict()["spec"]
    assert [lay["mark"]["type"] for lay in big["layer"]] == ["rect", "text"]
    assert [lay["mark"]["type"] for lay in small["layer"]] == ["rect"]
    assert big["width"] == {"step": 30}


def test_probabilities_map_and_labels():
    probs = np.full((3, 4), 0.25)
    spec = probabilities_map(probs, [3, 0, 3]).to_dict()
    frame = next(iter(spec["datasets"].values()))
    assert sorted({d["col"] for d in frame}) == ["0", "1", "2", "3"]
    assert position_labels([3, 0, 3]) == ["0:3", "1:0", "2:3"]
    with pytest.raises(ValueError, match="T = 2"):
        probabilities_map(probs, [1, 2])
