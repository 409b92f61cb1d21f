"""`ui.charts.facets`, tested through `to_dict()` (and one real render): facets, colour scales, data, labels."""

import re

import numpy as np
import pandas as pd
import pytest

from tests.helpers.specs import colour_domain, exported
from ui.charts.facets import cell_values, facets_side_by_side, head_blocks, head_label, head_maps, matrix_panels
from ui.charts.heatmap import MAX_LABELLED_CELLS
from ui.charts.palette import SEQUENTIAL_SCHEME, ink_expr

LABELS = ["the", "cat", "the"]


def spec_and_data(chart):
    spec = exported(chart)  # validates the whole spec against the Vega-Lite schema
    (name,) = spec["datasets"]
    assert spec["data"] == {"name": name}
    return spec, pd.DataFrame(spec["datasets"][name])


def inner_layers(spec):
    inner = spec["spec"]
    return inner.get("layer", [inner])


def calculated(spec) -> dict[str, str]:
    return {t["as"]: t["calculate"] for t in spec.get("transform", []) if "calculate" in t}


def svg_texts(spec) -> set[str]:
    """Every text in the chart as Vega draws it (labels computed by the transforms included)."""
    import vl_convert as vlc

    return set(re.findall(r"<text[^>]*>([^<]*)</text>", vlc.vegalite_to_svg(spec)))


def test_builders_restore_altairs_validation():
    from altair.utils import schemapi

    before = schemapi.DEBUG_MODE
    head_maps(np.full((1, 2, 2), 0.5), ["a", "b"])
    assert schemapi.DEBUG_MODE == before


def test_cell_values_and_head_label():
    assert cell_values(np.array([[0.25, 0.75], [1, 2]])) == {"values": [{"value": 0.25}, {"value": 0.75},
                                                                        {"value": 1.0}, {"value": 2.0}]}
    assert head_label(1, 4, 200) == "head 2 · dims 4–7"
    assert head_label(3, 1, 200) == "head 4 · dim 3"
    assert head_label(1, 4, 60) == "head 2"
    assert head_label(1, 1, 8) == "2"


def test_head_blocks_is_one_faceted_chart_split_by_head():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(3, 8)), rng.normal(size=(3, 8))
    spec, data = spec_and_data(head_blocks({"Q": q, "K": k}, 4, row_labels=LABELS, cell_size=30))
    facet = spec["facet"]
    assert facet["column"]["field"] == "head" and facet["column"]["sort"] == ["head 1", "head 2", "head 3", "head 4"]
    assert facet["row"]["field"] == "matrix" and facet["row"]["sort"] == ["Q", "K"]
    assert spec["resolve"]["scale"] == {"x": "independent"}  # each head shows only its own columns
    rect, text = inner_layers(spec)
    scale = rect["encoding"]["color"]["scale"]
    m = float(np.abs([q, k]).max())
    assert scale["scheme"] == "blueorange" and scale["domainMid"] == 0 and colour_domain(spec, scale) == [-m, m]
    assert text["encoding"]["fill"]["scale"] is None and "color" not in text["encoding"]
    assert list(data.columns) == ["value", "lo", "hi"]  # the domain travels with the data, not in the spec
    np.testing.assert_array_equal(data["value"].to_numpy().reshape(2, 3, 8), [q, k])  # row-major, matrix by matrix
    calc = calculated(spec)
    assert spec["transform"][0]["window"] == [{"op": "row_number", "as": "_n"}]
    assert (calc["m"], calc["t"], calc["j"]) == ("floor((datum._n - 1) / 24) % 2", "floor((datum._n - 1) / 8) % 3",
                                                 "floor((datum._n - 1) / 1) % 8")
    assert calc["head"] == '["head 1", "head 2", "head 3", "head 4"][floor(datum.j / 2)]'  # d_k = 2
    assert calc["row"] == '["the (0)", "cat", "the (2)"][datum.t]' and calc["matrix"] == '["Q", "K"][datum.m]'
    tips = {layer["mark"]["tooltip"]["expr"] for layer in inner_layers(spec)}
    assert tips == {'{"matrix": datum["matrix"], "head": datum["head"], "token": datum["row"], '
                    '"dimension": datum["col"], "value": format(datum["value"], ".2f")}'}  # the same on every layer
    assert "tooltip" not in spec["spec"]["encoding"] and all("tooltip" not in layer.get("encoding", {})
                                                            for layer in inner_layers(spec))


def test_head_blocks_drops_values_and_dim_labels_when_cells_are_small():
    spec, data = spec_and_data(head_blocks({"Q": np.ones((4, 64))}, 64, row_labels=list("abcd"), cell_size=8))
    assert len(inner_layers(spec)) == 1 and "ink" not in calculated(spec)  # no text layer, no text colours
    assert spec["spec"]["encoding"]["x"]["axis"]["labels"] is False
    assert "row" not in spec["facet"]  # a single matrix: no row facet
    assert spec["facet"]["column"]["header"]["labelAngle"] == -90 and spec["spacing"]["column"] == 3


def test_head_blocks_errors():
    q = np.ones((3, 6))
    with pytest.raises(ValueError, match=r"Q must be 2-D with a width divisible by n_heads=4, got shape \(3, 6\)"):
        head_blocks({"Q": q}, 4, row_labels=LABELS)
    with pytest.raises(ValueError, match="2 row labels and Q of shape"):
        head_blocks({"Q": q}, 3, row_labels=LABELS[:2])
    with pytest.raises(ValueError, match="at least one matrix"):
        head_blocks({}, 3, row_labels=LABELS)


def test_head_maps_share_one_fixed_0_1_viridis_scale():
    w = np.random.default_rng(2).dirichlet(np.ones(3), size=(5, 3))
    spec, data = spec_and_data(head_maps(w, LABELS, columns=4, cell_size=30))
    assert spec["columns"] == 4 and spec["facet"]["field"] == "head"
    assert spec["facet"]["sort"] == [f"head {h}" for h in range(1, 6)]
    rect, text = inner_layers(spec)
    assert rect["encoding"]["color"]["scale"] == {"scheme": SEQUENTIAL_SCHEME, "domain": [0.0, 1.0]}
    assert "resolve" not in spec  # one colour scale for every head
    assert text["encoding"]["text"]["format"] == ".2f"
    assert spec["spec"]["encoding"]["x"]["title"] == "key token"
    assert spec["spec"]["encoding"]["y"]["title"] == "query token"
    np.testing.assert_array_equal(data["value"].to_numpy().reshape(5, 3, 3), w)
    calc = calculated(spec)
    assert calc["h"] == "floor((datum._n - 1) / 9) % 5" and calc["k"] == "floor((datum._n - 1) / 1) % 3"
    assert calc["row"] == '["the (0)", "cat", "the (2)"][datum.q]' and calc["col"].endswith("[datum.k]")
    assert calc["ink"] == ink_expr(SEQUENTIAL_SCHEME, "datum.value")


def test_head_maps_heavy_extreme_is_colour_only():
    t, n_heads = 16, 64
    w = np.full((n_heads, t, t), 1 / t)
    spec, data = spec_and_data(head_maps(w, [f"w{i}" for i in range(t)], columns=8, cell_size=6))
    assert n_heads * t * t > MAX_LABELLED_CELLS and len(inner_layers(spec)) == 1
    assert len(data) == n_heads * t * t and list(data.columns) == ["value"]  # the values, nothing else
    assert spec["spec"]["encoding"]["x"]["axis"]["labels"] is False  # 6-pixel cells: tooltips only


def test_head_maps_errors():
    with pytest.raises(ValueError, match=r"shape \(H, T, T\), got \(3, 3\)"):
        head_maps(np.ones((3, 3)), LABELS)
    with pytest.raises(ValueError, match="2 token labels"):
        head_maps(np.ones((1, 3, 3)), LABELS[:2])


def test_matrix_panels_keep_their_own_label_order_on_one_colour_scale():
    a = np.array([[1.0, -2.0], [3.0, 0.5]])
    spec, data = spec_and_data(matrix_panels(
        [("X", a, ["a", "b"], ["0", "1"]), ("PX", a[[1, 0]], ["b", "a"], ["0", "1"])],
        x_title="dim", y_title="token", cell_size=30,
    ))
    assert spec["facet"]["column"]["sort"] == ["X", "PX"]
    assert spec["resolve"]["scale"] == {"x": "independent", "y": "independent"}
    assert spec["spec"]["width"] == 60 and spec["spec"]["height"] == 60  # fixed sizes: Vega needs them here
    rect, _ = inner_layers(spec)
    assert colour_domain(spec, rect["encoding"]["color"]["scale"]) == [-3.0, 3.0]
    assert spec["spec"]["encoding"]["y"]["sort"] is None  # rows in the given order, not alphabetical
    assert list(data["value"]) == [1.0, -2.0, 3.0, 0.5, 3.0, 0.5, 1.0, -2.0]  # X, then PX, row-major
    calc = calculated(spec)
    assert calc["row"] == '[["a", "b"], ["b", "a"]][datum.p][datum.r]' and calc["panel"] == '["X", "PX"][datum.p]'


def test_matrix_panels_weights_and_errors():
    w = np.full((2, 2), 0.5)
    spec, _ = spec_and_data(matrix_panels([("A", w, ["a", "b"], ["a", "b"])], signed=False))
    scale = inner_layers(spec)[0]["encoding"]["color"]["scale"]
    assert scale["scheme"] == SEQUENTIAL_SCHEME and "domainMid" not in scale
    assert colour_domain(spec, scale) == [0.0, 1.0]
    with pytest.raises(ValueError, match="one shape"):
        matrix_panels([("A", w, ["a", "b"], ["a", "b"]), ("B", np.ones((3, 2)), list("abc"), ["a", "b"])])
    with pytest.raises(ValueError, match="panel 'A': 1 row and 2 column labels for shape"):
        matrix_panels([("A", w, ["a"], ["a", "b"])])
    with pytest.raises(ValueError, match="at least one panel"):
        matrix_panels([])


def test_facets_side_by_side_keeps_both_datasets():
    a = matrix_panels([("W_o", np.eye(2), ["0", "1"], ["0", "1"])])
    b = matrix_panels([("out", np.ones((3, 2)), LABELS, ["0", "1"])])
    spec = facets_side_by_side(a, b).to_dict()
    assert [len(spec["datasets"][v["data"]["name"]]) for v in spec["hconcat"]] == [4, 6]
    assert spec["resolve"]["scale"]["color"] == "independent"


def test_the_computed_labels_are_what_vega_draws():
    """Render for real (vl-convert): token, head and panel labels come out of the `calculate` transforms."""
    maps = exported(head_maps(np.full((2, 3, 3), 1 / 3), LABELS, cell_size=30))
    blocks = exported(head_blocks({"Q": np.ones((3, 4))}, 2, row_labels=LABELS, cell_size=60))
    panels = facets_side_by_side(matrix_panels([("X", np.eye(3), LABELS, ["x", "y", "z"])]),
                                 matrix_panels([("PX", np.eye(3), ["cat", "the", "dog"], ["x", "y", "z"])]))
    assert {"head 1", "head 2", "the (0)", "cat", "the (2)", "0.33"} <= svg_texts(maps)
    assert {"head 1 · dims 0–1", "head 2 · dims 2–3", "the (0)", "0", "3", "1.00"} <= svg_texts(blocks)
    assert {"X", "PX", "dog", "the (2)", "x", "z"} <= svg_texts(exported(panels))
    # The record number really is the cell's position: each value 10*row + col is drawn in row `row`, column `col`.
    coded = np.array([[10 * r + c for c in range(3)] for r in range(3)], dtype=float)
    spec = exported(matrix_panels([("A", coded, ["r0", "r1", "r2"], ["c0", "c1", "c2"])], cell_size=60,
                                  value_format=".0f"))
    import vl_convert as vlc

    placed = re.findall(r'<text[^>]*transform="translate\(([-\d.]+),([-\d.]+)\)"[^>]*>([^<]*)</text>',
                        vlc.vegalite_to_svg(spec))
    pos = {text: (float(x), float(y)) for x, y, text in reversed(placed)}  # first occurrence wins
    for r in range(3):
        for c in range(3):
            x, y = pos[str(10 * r + c)]
            assert abs(x - pos[f"c{c}"][0]) < 2 and abs(y - pos[f"r{r}"][1]) < 2


# --- Export: every matrix of these charts is offered as CSV and LaTeX (ui.export reads the spec's usermeta) ---


def mha(seed: int = 0, d_model: int = 8, n_heads: int = 2, tokens=LABELS):
    """Q, K, V, the per-head weights and the output of `core.multi_head_attention` on embedded tokens."""
    from core import multi_head_attention
    from core.embeddings import embed_tokens, random_projections

    x = embed_tokens(list(tokens), d_model, seed)
    w_q, w_k, w_v, w_o = random_projections(d_model, seed, n=4)
    output, weights = multi_head_attention(x, w_q, w_k, w_v, w_o, n_heads=n_heads)
    return x @ w_q, x @ w_k, x @ w_v, weights, output


def round_trips(title, matrix, rows, cols, expected, exp_rows, exp_cols):
    """The CSV gives back every number exactly and the labels; the bmatrix every number to 3 decimals."""
    from tests.helpers.exports import parse_csv, parse_latex
    from ui.export import matrix_to_csv, matrix_to_latex

    back, back_rows, back_cols = parse_csv(matrix_to_csv(matrix, rows, cols))
    np.testing.assert_array_equal(back, expected, err_msg=title)
    assert (back_rows, back_cols) == (list(exp_rows), list(exp_cols)), title
    np.testing.assert_allclose(parse_latex(matrix_to_latex(matrix)), expected, rtol=0, atol=5e-4 + 1e-12)


def test_head_maps_export_one_matrix_per_head():
    from ui.export import chart_matrices, matrix_titles

    *_, weights, _ = mha(n_heads=2)
    spec = head_maps(weights, LABELS).to_dict()  # validated: usermeta sits at the top level
    found = chart_matrices(spec)
    assert [t for t, *_ in found] == matrix_titles(spec) == ["attention weights · head 1", "attention weights · head 2"]
    tokens = ["the (0)", "cat", "the (2)"]
    for h, (title, matrix, rows, cols) in enumerate(found):
        round_trips(title, matrix, rows, cols, weights[h], tokens, tokens)
    titled = head_maps(weights, LABELS, title="A").to_dict()
    assert matrix_titles(titled) == ["A · head 1", "A · head 2"]


def test_head_blocks_export_every_matrix_and_every_heads_block_of_it():
    from ui.export import chart_matrices

    q, k, v, *_ = mha(d_model=8, n_heads=4)
    spec = head_blocks({"Q": q, "K": k, "V": v}, 4, row_labels=LABELS).to_dict()
    found = {title: rest for title, *rest in chart_matrices(spec)}
    tokens, dims = ["the (0)", "cat", "the (2)"], [str(j) for j in range(8)]
    assert list(found)[:5] == ["Q", "Q · head 1 · dims 0–1", "Q · head 2 · dims 2–3", "Q · head 3 · dims 4–5",
                               "Q · head 4 · dims 6–7"]
    assert len(found) == 3 * (1 + 4)
    for name, m in (("Q", q), ("K", k), ("V", v)):
        round_trips(name, *found[name], m, tokens, dims)
        for h in range(4):
            title = f"{name} · head {h + 1} · dims {2 * h}–{2 * h + 1}"
            round_trips(title, *found[title], m[:, 2 * h:2 * h + 2], tokens, dims[2 * h:2 * h + 2])
    single = head_blocks({"Concat(heads)": q}, 1, row_labels=LABELS).to_dict()
    assert [t for t, *_ in chart_matrices(single)] == ["Concat(heads)"]  # one head: its block is the whole matrix


def test_matrix_panels_export_each_panel_with_its_own_labels():
    from ui.export import chart_matrices

    x = np.arange(6.0).reshape(3, 2) - 2.5
    perm = [2, 0, 1]
    panels = [("X", x, ["a", "b", "c"], ["0", "1"]), ("PX", x[perm], ["c", "a", "b"], ["0", "1"])]
    spec = matrix_panels(panels).to_dict()
    assert spec["usermeta"]["matrices"][0]["cols"] == ["0", "1"]  # shared labels stored once
    (_, m1, r1, c1), (_, m2, r2, c2) = chart_matrices(spec)
    round_trips("X", m1, r1, c1, x, ["a", "b", "c"], ["0", "1"])
    round_trips("PX", m2, r2, c2, x[perm], ["c", "a", "b"], ["0", "1"])


def test_facets_side_by_side_moves_the_layouts_to_the_top_level():
    from ui.export import chart_matrices

    *_, output = mha()
    w_o = np.eye(8)
    dims = [str(j) for j in range(8)]
    a = matrix_panels([("W_o", w_o, dims, dims)])
    b = matrix_panels([("output", output, LABELS, dims)])
    spec = facets_side_by_side(a, b).to_dict()  # validated: Vega-Lite allows usermeta only at the top
    assert all("usermeta" not in view for view in spec["hconcat"])
    assert [layout["view"] for layout in spec["usermeta"]["matrices"]] == [0, 1]
    assert "usermeta" in a.to_dict()  # the charts passed in are left as they were
    (t1, m1, *_), (t2, m2, rows, _) = chart_matrices(spec)
    assert (t1, t2) == ("W_o", "output") and rows == ["the (0)", "cat", "the (2)"]
    np.testing.assert_array_equal(m1, w_o)
    np.testing.assert_array_equal(m2, output)


def test_the_export_layout_keeps_the_heavy_specs_small():
    import json

    t, n_heads = 16, 64
    maps = head_maps(np.full((n_heads, t, t), 1 / t), [f"w{i}" for i in range(t)], columns=8, cell_size=6).to_dict()
    blocks = exported(head_blocks({n: np.ones((t, 64)) for n in "QKV"}, n_heads,
                                  row_labels=[f"w{i}" for i in range(t)], cell_size=8))
    for spec, fields in ((maps, {"value"}), (blocks, {"value", "lo", "hi"})):  # lo, hi: the colour domain
        assert len(json.dumps(spec["usermeta"], ensure_ascii=False)) < 3000  # vs 16 384 / 3 072 cell records
        (records,) = spec["datasets"].values()
        assert set(records[0]) == fields  # still no per-cell indices or labels


def test_head_maps_selection_and_head_blocks_highlight_draw():
    """A click selection on (h, q, k) in the maps; the highlighted rows of the blocks stay bright; Vega draws both."""
    import vl_convert as vlc

    maps = head_maps(np.full((2, 3, 3), 1 / 3), LABELS, select="cell").to_dict()
    (param,) = maps["params"]
    assert param["name"] == "cell" and param["select"]["fields"] == ["h", "q", "k"]
    blocks = head_blocks({"Q": np.ones((3, 4)), "K": np.ones((3, 4))}, 2, row_labels=LABELS,
                         highlight={"Q": (1, 1), "K": (2, 1)}).to_dict()
    (alpha,) = [t["calculate"] for t in blocks["transform"] if t.get("as") == "alpha"]
    # records are numbered 1.. in (matrix, token, dim) order: Q row 1 dims 2-3, K row 2 dims 2-3
    assert alpha.startswith("indexof([7, 8, 23, 24], datum._n)")
    for spec in (maps, blocks):
        assert vlc.vegalite_to_svg(spec).startswith("<svg")
    plain = head_blocks({"Q": np.ones((3, 4))}, 2, row_labels=LABELS).to_dict()
    assert not any(t.get("as") == "alpha" for t in plain["transform"])


def test_head_blocks_can_print_the_highlighted_cells_only():
    """``show_values="highlighted"``: no numbers without a highlight; with one, Vega draws exactly the bright cells'."""
    import vl_convert as vlc

    q = np.arange(12.0).reshape(3, 4) / 10
    plain = exported(head_blocks({"Q": q, "K": -q}, 2, row_labels=LABELS, cell_size=40, show_values="highlighted"))
    assert "layer" not in plain["spec"]  # the cells alone
    lit = exported(head_blocks({"Q": q, "K": -q}, 2, row_labels=LABELS, cell_size=40, show_values="highlighted",
                               highlight={"Q": (1, 1), "K": (2, 0)}))
    rect, text = lit["spec"]["layer"]
    assert text["transform"] == [{"filter": "datum.alpha == 1"}] and "transform" not in rect
    svg = vlc.vegalite_to_svg(lit)
    groups = re.findall(r'<g class="mark-text role-mark child_layer_1_marks"[^>]*>(.*?)</g>', svg)
    printed = [value for group in groups for value in re.findall(r">([^<]+)</text>", group)]
    # Q row 1, head 2 (dims 2-3) and K row 2, head 1 (dims 0-1)
    assert sorted(printed) == sorted(["0.60", "0.70", "−0.80", "−0.90"])
    small = exported(head_blocks({"Q": q}, 2, row_labels=LABELS, cell_size=20, show_values="highlighted",
                                 highlight={"Q": (1, 1)}))
    assert "layer" not in small["spec"]  # too small to print in
