"""Every colour a chart draws with can be seen (WCAG 2.1 1.4.11, 1.4.3): computed from the theme and the palette,
then checked on every chart every page sends, in normal and in presenter mode."""

import tomllib
from pathlib import Path

import numpy as np
import pytest

from devtools.appserver import router_pages
from tests.helpers.apptest import chart_specs, run_page
from ui.charts import palette
from ui.charts.palette import (
    BAND_TINT,
    CATEGORY,
    DIVERGING_SCHEME,
    MIN_MARK_CONTRAST,
    MIN_TEXT_CONTRAST,
    PAGE_BACKGROUND,
    REFERENCE_GREY,
    SEQUENTIAL_SCHEME,
    VERMILLION_TEXT,
    contrast,
    ink,
    ink_expr,
    scheme_rgb,
)

ROOT = Path(__file__).resolve().parents[3]
#: Pages that draw no chart until a student acts.
CHART_PAGES = [p for p in router_pages() if p.name not in ("exercise", "training", "decoder")]
NAMED = {"white": "#ffffff", "black": "#000000"}


def hex_of(rgb: np.ndarray) -> str:
    return "#" + "".join(f"{int(round(c)):02x}" for c in rgb)


def test_the_palette_is_computed_against_the_themes_background():
    theme = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["theme"]
    assert PAGE_BACKGROUND == theme["backgroundColor"]


@pytest.mark.parametrize("colour", [*CATEGORY, REFERENCE_GREY, VERMILLION_TEXT])
def test_every_series_colour_has_3_to_1_against_the_page(colour):
    assert contrast(colour, PAGE_BACKGROUND) >= MIN_MARK_CONTRAST


@pytest.mark.parametrize("scheme", [DIVERGING_SCHEME, SEQUENTIAL_SCHEME], ids=["diverging", "sequential"])
def test_both_ends_of_every_heatmap_scale_have_3_to_1_against_the_page(scheme):
    for end in (0.0, 1.0):
        assert contrast(scheme_rgb(scheme, end), PAGE_BACKGROUND) >= MIN_MARK_CONTRAST, (scheme, end)


def test_viridis_in_full_would_not_do():
    """Why the weights stop at 0.55 of viridis: its yellow end disappears into a white page."""
    assert contrast(scheme_rgb("viridis", 1.0), PAGE_BACKGROUND) < 1.5


@pytest.mark.parametrize("scheme", [DIVERGING_SCHEME, SEQUENTIAL_SCHEME], ids=["diverging", "sequential"])
def test_a_colour_is_the_linear_blend_of_its_two_stops(scheme):
    """Vega's interpolation between neighbouring stops, to the last bit, for a batch of any shape."""
    stops = palette.scheme_stops(scheme)
    lo, hi = palette.scheme_extent(scheme)
    t = np.random.default_rng(0).uniform(-0.2, 1.2, size=(40, 30))  # outside [0, 1] too: clipped
    t[0, :3] = [0.0, 1.0, 0.5]
    s = (lo + np.clip(t, 0.0, 1.0) * (hi - lo)) * (len(stops) - 1)
    k = np.minimum(s.astype(np.int64), len(stops) - 2)
    frac = (s - k)[..., None]
    expected = stops[k] * (1 - frac) + stops[k + 1] * frac  # (40, 30, 3)
    assert np.array_equal(scheme_rgb(scheme, t), expected)
    assert np.array_equal(scheme_rgb(scheme, t[0]), expected[0]) and scheme_rgb(scheme, 0.25).shape == (3,)


@pytest.mark.parametrize("scheme", [DIVERGING_SCHEME, SEQUENTIAL_SCHEME], ids=["diverging", "sequential"])
def test_text_in_a_cell_has_4_5_to_1_wherever_the_cell_is_on_the_scale(scheme):
    t = np.linspace(0.0, 1.0, 1001)
    cells = scheme_rgb(scheme, t)
    text = np.array([[255.0] * 3 if i == "white" else [0.0] * 3 for i in ink(scheme, t)])
    assert contrast(cells, text).min() >= MIN_TEXT_CONTRAST


@pytest.mark.parametrize("scheme", [DIVERGING_SCHEME, SEQUENTIAL_SCHEME], ids=["diverging", "sequential"])
def test_the_text_colour_is_the_one_that_stands_out_more_on_its_cell_everywhere_on_the_scale(scheme):
    """`ink` reads where the better colour changes; it picks what the cell's own luminance says, on either side of
    every change and anywhere else (outside [0, 1] as at its ends)."""
    edges = np.array([lo for lo, _ in palette.white_text_ranges(scheme)] + [hi for _, hi in
                                                                          palette.white_text_ranges(scheme)])
    t = np.concatenate([np.random.default_rng(0).uniform(-0.1, 1.1, 50_000), edges - 1e-9, edges + 1e-9])
    white = palette.relative_luminance(scheme_rgb(scheme, t)) < palette.WHITE_TEXT_BELOW
    assert ink(scheme, t).tolist() == np.where(white, "white", "black").tolist()
    assert ink(scheme, t.reshape(2, -1)).shape == (2, t.size // 2)


@pytest.mark.parametrize("scheme", [DIVERGING_SCHEME, SEQUENTIAL_SCHEME], ids=["diverging", "sequential"])
def test_the_browsers_ink_expression_chooses_as_the_server_does(scheme):
    expression = ink_expr(scheme, "t").replace("&&", " and ").replace("||", " or ")
    condition = expression.split("?")[0]
    for t in np.linspace(0.0, 1.0, 401):
        in_browser = "white" if eval(condition, {}, {"t": t}) else "black"  # the expression is plain comparisons
        on_server = str(ink(scheme, np.array([t]))[0])
        near_an_edge = any(min(abs(t - lo), abs(t - hi)) < 1e-3 for lo, hi in palette.white_text_ranges(scheme))
        assert in_browser == on_server or near_an_edge, (scheme, t)


def colours_drawn(spec: dict) -> list[tuple[str, str, float]]:
    """``(where, colour, the contrast it needs)`` for every colour the spec draws marks or text with: a mark's own
    colour, a channel's fixed or conditional value, a scale's range, and both ends of a colour scheme. Colours taken
    from the data itself (``scale: null``: a cell's ink, chosen against its cell) are checked in the palette's tests.
    A nominal colour without a range would get Vega's default scheme, which the palette does not vouch for."""
    found: list[tuple[str, str, float]] = []

    def colour(where: str, value: object, need: float) -> None:
        if isinstance(value, str):
            found.append((where, NAMED.get(value, value), need))

    def visit(node: object, mark_type: str) -> None:
        if isinstance(node, list):
            for item in node:
                visit(item, mark_type)
            return
        if not isinstance(node, dict):
            return
        mark = node.get("mark")
        if mark is not None:
            mark_type = mark if isinstance(mark, str) else mark.get("type", "")
            need = MIN_TEXT_CONTRAST if mark_type == "text" else MIN_MARK_CONTRAST
            if isinstance(mark, dict):
                colour(f"{mark_type} mark color", mark.get("color"), need)
                colour(f"{mark_type} mark fill", mark.get("fill"), need)
                if mark.get("stroke") not in ("white", PAGE_BACKGROUND):  # a white stroke parts cells; it draws nothing
                    colour(f"{mark_type} mark stroke", mark.get("stroke"), need)
        need = MIN_TEXT_CONTRAST if mark_type == "text" else MIN_MARK_CONTRAST
        for channel in ("color", "fill", "stroke"):
            enc = node.get("encoding", {}).get(channel)
            if not isinstance(enc, dict):
                continue
            colour(f"{mark_type} {channel} value", enc.get("value"), need)
            conditions = enc.get("condition", [])
            for c in conditions if isinstance(conditions, list) else [conditions]:
                colour(f"{mark_type} {channel} condition", c.get("value"), need)
            if "field" in enc and enc.get("scale", {}) is not None:
                scale = enc.get("scale", {})
                if "range" in scale:
                    for c in scale["range"]:
                        colour(f"{mark_type} {channel} range", c, need)
                elif "scheme" in scale:
                    for end in (0.0, 1.0):
                        found.append((f"{mark_type} {channel} scheme {scale['scheme']} at {end}",
                                      hex_of(scheme_rgb(scale["scheme"], end)), need))
                else:
                    found.append((f"{mark_type} {channel} on {enc['field']}: Vega's default colours", "default", need))
        for key, value in node.items():
            if key not in ("datasets", "data", "mark", "encoding"):
                visit(value, mark_type)
            elif key == "encoding":
                visit([v for v in value.values() if isinstance(v, dict) and "condition" not in v], mark_type)

    visit(spec, "")
    return found


def too_faint(spec: dict) -> list[str]:
    return sorted({f"{where}: {c}" for where, c, need in colours_drawn(spec)
                   if c != BAND_TINT and (c == "default" or contrast(c, PAGE_BACKGROUND) < need)})


def test_the_walk_finds_a_faint_colour_and_vegas_default_colours():
    """The walk is live: a light line, text under 4.5:1, viridis's yellow end and a nominal colour with Vega's
    default palette are all reported."""
    spec = {"layer": [
        {"mark": {"type": "line", "color": "#bbbbbb"}},
        {"mark": {"type": "text", "color": "#d55e00"}},
        {"mark": "rect", "encoding": {"color": {"field": "v", "type": "quantitative", "scale": {"scheme": "viridis"}}}},
        {"mark": "line", "encoding": {"color": {"field": "s", "type": "nominal"}}},
    ]}
    assert len(too_faint(spec)) == 4


@pytest.mark.parametrize("present", ["false", "true"])
@pytest.mark.parametrize("page", CHART_PAGES, ids=lambda p: p.name)
def test_every_chart_on_every_page_draws_with_colours_that_can_be_seen(page, present):
    specs = chart_specs(run_page(page.file, present=present))
    assert specs, f"{page.name}: no chart"
    faint = sorted({f for spec, _ in specs for f in too_faint(spec)})
    assert not faint, f"{page.name}: {faint}"
