"""The whole-block page's chart module, through its exported specs: the diagram, every stage, the sweep, the shuffle."""

import numpy as np
import pandas as pd
import pytest

from core.deep_stack import StackConfig, depth_sweep
from core.transformer_block import (
    LESSON_TOKENS,
    block_input,
    block_weights,
    ffn_permutation_check,
    lesson_block,
    transformer_block,
)
from ui.charts.palette import ink_on
from ui.charts.spec import view_title
from ui.charts.transformer_block import (
    DIAGRAM_WIDTH,
    HALVES,
    KIND_COLOURS,
    MODEL_PARTS,
    block_specs,
    diagram_spec,
    half_spec,
    permutation_spec,
    sweep_spec,
)
from ui.export import chart_matrices, series_tables, tooltip_tables


TITLES = {name: f"row {name}" for name in ("attention", "add_1", "norm_1", "ffn", "add_2", "norm_2")}


def specs_of(placement: str = "post", d_model: int = 4, n_heads: int = 1, d_ff: int = 16, seed: int = 0):
    block = lesson_block(seed, d_model, n_heads, d_ff, placement=placement)
    w = block_weights(seed, d_model, d_ff)
    return block, block_specs(block, LESSON_TOKENS, (w.gamma_1, w.gamma_2), (w.beta_1, w.beta_2), TITLES)


def matrices(spec: dict) -> dict[str, np.ndarray]:
    return {title: m for title, m, _, _ in chart_matrices(spec)}


@pytest.mark.parametrize("placement", ["post", "pre"])
def test_every_stage_draws_cores_matrices(placement):
    block, (first, second) = specs_of(placement, d_model=8, n_heads=2, d_ff=32)
    sub = "MHA(x)" if placement == "post" else "MHA(LN₁(x))"
    add_1 = matrices(first)
    np.testing.assert_array_equal(add_1["x"], block.input)
    np.testing.assert_array_equal(add_1[sub], block.attention.output)
    np.testing.assert_array_equal(add_1[f"x + {sub}"], block.residual_1)
    norm = matrices(second)
    np.testing.assert_array_equal(norm["LN₂: row μ, σ²"], np.stack([block.norm_2.mean, block.norm_2.var], axis=1))
    np.testing.assert_array_equal(norm["LN₂: normalised"], block.norm_2.normalised)
    np.testing.assert_array_equal(norm["LN₂: γ, β applied"], block.norm_2.output)
    ffn = matrices(second)
    np.testing.assert_array_equal(ffn["hidden φ(x W₁ + b₁), d_ff = 32"], block.ffn.hidden)
    np.testing.assert_array_equal(ffn["FFN = hidden W₂ + b₂"], block.ffn.output)


@pytest.mark.parametrize("placement", ["post", "pre"])
def test_each_half_is_one_chart_of_its_three_stages_in_the_placements_order(placement):
    _, halves = specs_of(placement)
    rows = [[view_title(row, spec["datasets"]) for row in spec["vconcat"]] for spec in halves]
    assert rows == [[TITLES[name] for name in half] for half in HALVES[placement]]
    assert [name for half in HALVES[placement] for name in half] == (
        ["attention", "add_1", "norm_1", "ffn", "add_2", "norm_2"] if placement == "post"
        else ["norm_1", "attention", "add_1", "norm_2", "ffn", "add_2"])


@pytest.mark.parametrize("placement", ["post", "pre"])
def test_a_new_d_model_or_d_ff_fills_the_structure_built_for_another(placement):
    """The maps are as wide at every d_model and d_ff, so a step of either builds no new chart: the two halves'
    structures are those of the first setting."""
    _, first = specs_of(placement, d_model=4, d_ff=16)
    for d_model, d_ff in ((8, 32), (32, 256), (12, 12), (4, 8)):
        block, other = specs_of(placement, d_model=d_model, n_heads=2, d_ff=d_ff, seed=d_model)
        assert [h["vconcat"] for h in other] == [h["vconcat"] for h in first]
        assert all(o["vconcat"] is f["vconcat"] for o, f in zip(other, first, strict=True))  # built once
        assert matrices(other[0])["x"].shape == (3, d_model)


@pytest.mark.parametrize("placement", ["post", "pre"])
def test_the_first_half_draws_the_same_chart_at_every_d_ff_and_activation(placement):
    """Attention, its residual and the first norm read neither d_ff nor φ: the page builds that half once for all."""
    def first_half(d_ff: int, activation: str) -> dict:
        w = block_weights(6, 8, d_ff)
        block = transformer_block(block_input(8), w, 2, activation=activation, placement=placement)
        return half_spec(block, 0, LESSON_TOKENS, (w.gamma_1, w.gamma_2), (w.beta_1, w.beta_2), TITLES)

    reference = first_half(32, "relu")
    for d_ff, activation in ((8, "relu"), (64, "gelu")):
        other = first_half(d_ff, activation)
        assert other["vconcat"] is reference["vconcat"]
        assert {k: v.rows() for k, v in other["datasets"].items()} == {
            k: v.rows() for k, v in reference["datasets"].items()}


def test_the_values_are_printed_in_the_cells_only_while_they_fit():
    for d_model, printed in ((4, True), (8, False)):
        _, (half, _) = specs_of(d_model=d_model, d_ff=4 * d_model)
        cells = half["datasets"]["d0"].columns  # the attention's input
        assert set(np.asarray(cells["labelled"])) == {printed}
        assert ("ink" in cells) == printed  # the text's colour only where there is text


def test_every_cells_arithmetic_is_in_its_tooltip():
    block, (first, second) = specs_of()
    steps = dict(tooltip_tables(first))
    table = steps["x + MHA(x): x + a = s"]
    x, a, s = block.input[1, 2], block.attention.output[1, 2], block.residual_1[1, 2]
    assert table.iloc[1, 2] == f"{x:.3f} + {a:.3f} = {s:.3f}"
    z, scaled = steps["LN₁: normalised: (x − μ) / √(σ² + ε)"], steps["LN₁: γ, β applied: γ × z + β"]
    ln = block.norm_1
    assert z.iloc[0, 1] == (f"({ln.input[0, 1]:.3f} − {ln.mean[0]:.3f}) / {np.sqrt(ln.var[0] + 1e-5):.3f} = "
                            f"{ln.normalised[0, 1]:.3f}")
    gamma = block_weights(0, 4, 16).gamma_1
    assert scaled.iloc[2, 3].startswith(f"{gamma[3]:.2f} × {ln.normalised[2, 3]:.3f} + ")
    hidden = dict(tooltip_tables(second))["hidden φ(x W₁ + b₁), d_ff = 16: φ(p)"]
    assert hidden.iloc[0, 0] == f"ReLU({block.ffn.pre_activation[0, 0]:.3f}) = {block.ffn.hidden[0, 0]:.3f}"


def test_the_diagram_names_every_part_and_the_page_that_explains_it_and_fits_a_phone():
    spec = diagram_spec(12)
    boxes = pd.DataFrame(spec["datasets"]["d0"].rows())
    assert boxes["label"].tolist() == [label for label, _, _ in MODEL_PARTS]
    assert boxes["page"].tolist() == [f"→ {page}" for _, page, _ in MODEL_PARTS]
    assert [ink_on(KIND_COLOURS[k]) for k in boxes["kind"]] == boxes["ink"].tolist()
    assert spec["datasets"]["d1"].rows()[0]["label"] == "× 12 blocks"
    assert spec["width"] == DIAGRAM_WIDTH <= 390 - 2 * 24  # the phone's width less the page's margins
    assert {k: v for k, v in spec.items() if k != "datasets"} == {k: v for k, v in diagram_spec(3).items()
                                                                    if k != "datasets"}


def test_the_sweep_draws_the_sweeps_numbers_in_three_panels():
    sweep = depth_sweep(block_input(4), StackConfig(6, 1, 16, residual=False))
    spec = sweep_spec(sweep)
    titles = [view_title(view, spec["datasets"]) for view in spec["hconcat"]]
    assert titles == ["Stream and updates", "What is left of each token", "Gradient reaching each block"]
    tables = {title: make() for title, make in series_tables(spec)}
    grads = tables["Gradient reaching each block"]
    np.testing.assert_allclose(grads.iloc[:, -1].astype(float), np.round(sweep.grad_norm, 4))
    sizes = tables["Stream and updates"]
    np.testing.assert_allclose(sizes["residual stream ‖x‖"].astype(float), np.round(sweep.stream, 4))


def test_a_new_depth_fills_the_sweeps_structure_built_for_another():
    """The depth is data: a step of the stack's depth builds no new chart."""
    first = sweep_spec(depth_sweep(block_input(4), StackConfig(3, 1, 16)))
    for depth in (1, 7, 24):
        other = sweep_spec(depth_sweep(block_input(4), StackConfig(depth, 1, 16, residual=depth != 7)))
        assert other["hconcat"] is first["hconcat"]  # built once
        assert len(other["datasets"]["d2"]) == depth  # one gradient per block


#: The main area's width beside the open sidebar, in CSS px, measured in Chromium: on a 1280 × 720 projector and
#: on a 1920 × 1080 one.
MAIN_AREA_1280, MAIN_AREA_1920 = 820, 1460
#: How much wider Chromium draws the sweep than vl_convert does (its fonts): 1,164 against 1,102 px, measured.
BROWSER_FONTS = 64


@pytest.mark.parametrize(("presenter", "main_area"), [(False, MAIN_AREA_1280), (True, MAIN_AREA_1920)])
def test_the_sweep_fits_a_projector_whole(presenter, main_area):
    """Drawn by Vega as the page draws it, at 24 blocks: all three panels in view on a 1280-px projector, and on a
    1920-px one in presenter mode, so the gradient panel is never the part scrolled out of sight."""
    import re

    from ui.charts.spec import at_its_own_size, for_projector, readable_text
    from ui.export import chart_to_svg
    spec = at_its_own_size(readable_text(sweep_spec(depth_sweep(block_input(4), StackConfig(24, 1, 16)))))
    svg = chart_to_svg(for_projector(spec) if presenter else spec)
    assert float(re.search(r'<svg[^>]* width="([\d.]+)"', svg).group(1)) <= main_area - BROWSER_FONTS


def test_the_shuffle_draws_both_sides_of_the_equation():
    x, w = block_input(4), block_weights(0, 4, 16)
    check = ffn_permutation_check(x, w, (2, 0, 1))
    found = {title: (m, rows) for title, m, rows, _ in chart_matrices(permutation_spec(check, LESSON_TOKENS, 4))}
    np.testing.assert_array_equal(found["FFN(shuffled tokens)"][0], found["FFN(tokens), shuffled"][0])
    assert found["FFN(shuffled tokens)"][1] == ["sat", "the", "cat"]


@pytest.mark.parametrize("placement", ["post", "pre"])
def test_every_map_of_a_row_has_an_axis_title_above_it_so_their_titles_line_up(placement):
    """The maps of a row are aligned at their tops: a map without an x-axis title would have its own title lower."""
    _, halves = specs_of(placement)
    for spec in halves:
        for row in spec["vconcat"]:
            titles = [view["encoding"]["x"].get("title") for view in row["hconcat"]]
            assert all(titles), titles
