"""The positional-encoding page, run headless: the lesson's table, every slider extreme, the image path."""

import base64
import json
import io
import re

import numpy as np
import pytest
from PIL import Image

from core import positional_encoding
from core.positional_analysis import position_similarity, positional_encoding_at
from tests.helpers import lesson_values as lesson
from tests.helpers.apptest import chart_specs, heatmaps, run_page
from tests.helpers.exports import parse_csv, parse_latex, recorded_downloads
from tests.helpers.registry import VALID, Case, PageTests, Probe, Quiz
from ui.charts.raster import colorize
from ui.charts.spec import view_title

PAGE = "app_pages/positional_encoding.py"


def images(at):
    """Every raster heatmap on the page: title -> decoded RGB array."""
    found = {}
    for spec, frames in chart_specs(at):
        for sub in spec.get("hconcat", [spec]):
            mark = sub.get("mark", {})
            if (mark.get("type") if isinstance(mark, dict) else mark) == "image":
                uri = frames[sub["data"]["name"]]["url"].iloc[0]
                png = base64.b64decode(uri.split(",", 1)[1])
                found[sub.get("title")] = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    return found


def wave_data(at):
    """(smooth curves, dots at the table's positions or None) of the wave chart."""
    for spec, frames in chart_specs(at):
        for sub in spec.get("hconcat", []):
            if sub.get("title") == "PE value against position":
                layers = [frames[(layer.get("data") or sub["data"])["name"]] for layer in sub["layer"]]
                return layers[0], (layers[1] if len(layers) > 1 else None)
    raise AssertionError("no wave chart on the page")


def test_defaults_show_the_lessons_table_with_values_in_the_cells():
    at = run_page(PAGE)
    assert not at.exception
    assert at.slider(key="positions").value == 5 and at.slider(key="d_model").value == 8
    charts = heatmaps(at)
    np.testing.assert_array_equal(np.round(charts["PE (5 positions × 8 dims)"], 3), lesson.PE_5x8)
    pe_spec = next(s for s, frames in chart_specs(at) if view_title(s, frames) == "PE (5 positions × 8 dims)")
    assert [layer["mark"]["type"] for layer in pe_spec["layer"]] == ["rect", "text"]  # values printed
    assert pe_spec["layer"][1]["encoding"]["text"]["format"] == ".3f"
    assert any("table the lesson prints" in c.value for c in at.caption)
    pe = positional_encoding(5, 8)
    np.testing.assert_allclose(charts["PE · PEᵀ (position × position)"], pe @ pe.T, atol=1e-12)
    assert float(at.metric[0].value) < 1e-12  # similarity depends on the offset only (even d_model)
    assert at.metric[1].value == "4.000"  # |PE_p|² = d_model / 2
    # the default curves: dims 0, 1, 2, 4 with their wavelengths, dots at the table's values
    assert at.multiselect(key="dims").value == [0, 1, 2, 4]
    curves, dots = wave_data(at)
    assert sorted(curves["series"].unique()) == ["dim 0 · sin · λ = 6.28", "dim 1 · cos · λ = 6.28",
                                                 "dim 2 · sin · λ = 62.83", "dim 4 · sin · λ = 628.32"]
    got = dots[dots["series"] == "dim 2 · sin · λ = 62.83"].sort_values("position")["value"].to_numpy()
    np.testing.assert_allclose(got, pe[:, 2], atol=1e-12)
    assert not images(at)


def test_chosen_dims_follow_the_url_and_an_empty_choice_explains_itself():
    at = run_page(PAGE, positions="100", d_model="16")
    at.multiselect(key="dims").set_value([3, 15]).run()
    assert not at.exception
    curves, dots = wave_data(at)
    assert set(curves["series"]) == {"dim 3 · cos · λ = 19.87", "dim 15 · cos · λ = 19,869.18"}
    c = curves[curves["series"].str.startswith("dim 3 ")]
    np.testing.assert_allclose(c["value"], positional_encoding_at(c["position"].to_numpy(), 16, [3])[:, 0])
    assert dots is None  # more than 64 positions: the curves only
    at.multiselect(key="dims").set_value([]).run()
    assert not at.exception and any("at least one dimension" in i.value for i in at.info)


def test_heaviest_extreme_draws_images_of_every_cell():
    at = run_page(PAGE, positions="512", d_model="512")
    assert not at.exception
    imgs = images(at)
    pe = positional_encoding(512, 512)
    np.testing.assert_array_equal(imgs["PE (512 positions × 512 dims)"], colorize(pe))
    assert imgs["PE · PEᵀ (position × position)"].shape == (512, 512, 3)
    assert float(at.metric[0].value) < 1e-10
    assert any("262,144 cells drawn as one image" in c.value for c in at.caption)


@pytest.mark.parametrize("positions, d_model", [(1, 512), (512, 1), (1, 2)])
def test_other_slider_extremes(positions, d_model):
    at = run_page(PAGE, positions=str(positions), d_model=str(d_model))
    assert not at.exception
    assert at.slider(key="positions").value == positions and at.slider(key="d_model").value == d_model
    assert at.multiselect(key="dims").value == [d for d in (0, 1, 2, 4) if d < d_model]
    if d_model % 2:
        assert any("Odd d_model" in c.value for c in at.caption)
    shown = {**heatmaps(at), **images(at)}
    title = f"PE ({positions} position{'s' * (positions > 1)} × {d_model} dim{'s' * (d_model > 1)})"
    assert title in shown


def test_tables_drawn_as_images_still_download_as_csv_and_latex():
    """At 512 x 512 the table is one image, so its numbers are offered next to it; small tables use the menu."""
    with recorded_downloads() as files:
        at = run_page(PAGE, positions="512", d_model="512")
    assert not at.exception
    pe = positional_encoding(512, 512)
    buttons = {b.label: b for b in at.get("download_button")}
    matrix, rows, cols = parse_csv(files[buttons["PE table as CSV"].proto.deferred_file_id]())
    np.testing.assert_array_equal(matrix, pe)
    assert rows[:3] == ["0", "1", "2"] and cols[-1] == "511"
    np.testing.assert_allclose(parse_latex(files[buttons["PE table as LaTeX"].proto.deferred_file_id]()), pe,
                               atol=5e-4)
    sim, _, _ = parse_csv(files[buttons["PE · PEᵀ as CSV"].proto.deferred_file_id]())
    np.testing.assert_allclose(sim, position_similarity(pe))
    small = run_page(PAGE)
    assert not any(b.label.endswith(("as CSV", "as LaTeX")) for b in small.get("download_button"))


@pytest.mark.parametrize("positions, d_model", [(5, 8), (50, 8), (3, 2), (40, 64), (60, 512), (12, 3)])
def test_the_wavelength_and_similarity_sentences_agree_with_the_table(positions, d_model):
    """λ's range is quoted at this d_model (2π · 10000 is approached, never reached); the similarity is said to fall
    steadily only where PE_0 · PE_k does, and where it rises again the numbers are the chart's."""
    import re

    at = run_page(PAGE, positions=positions, d_model=d_model)
    assert not at.exception
    text = "\n".join(el.value for el in at.markdown)
    pe = np.asarray(positional_encoding(positions, d_model))
    s = pe @ pe[0]  # (T,): PE_0 · PE_k, the offset chart's line
    omega_last = 1 / 10000 ** (2 * ((d_model - 1) // 2) / d_model)
    if d_model > 2:
        found = re.search(r"to ([\d,]+) positions at the last frequency \(i = (\d+)\)\. That is (\d+)% of 2π · 10000",
                          text)
        assert found, text
        assert float(found[1].replace(",", "")) == pytest.approx(2 * np.pi / omega_last, abs=0.5)
        assert int(found[2]) == (d_model - 1) // 2 and int(found[3]) == round(100 / omega_last / 10000)
    assert "almost 2π · 10000" not in text and "falls off with distance" not in text
    steady = bool(np.all(np.diff(s) <= 1e-12))
    assert ("falls steadily with the offset" in text) == steady
    assert ("does not fall steadily" in text) == (not steady)
    if not steady:
        dip = int(np.flatnonzero(np.diff(s) > 1e-12)[0])
        back = dip + 1 + int(np.argmax(s[dip + 1:]))
        assert (f"falls to {s[dip]:.2f} at offset {dip}, then rises again to {s[back]:.2f} at offset {back}"
                in text)
    similarity = next(spec for spec, _ in chart_specs(at) if "similarity against offset" in json.dumps(spec))
    assert "position q" not in json.dumps(similarity) and "position p + k" in json.dumps(similarity)
    offset_axes = [sub["encoding"]["x"] for sub in similarity["hconcat"] for sub in sub.get("layer", [sub])
                   if sub.get("encoding", {}).get("x", {}).get("field") == "offset k"]
    assert offset_axes and all(x["axis"] == {"tickMinStep": 1, "format": "d"} for x in offset_axes)


@pytest.mark.parametrize("positions, d_model", [(5, 1), (5, 2), (5, 8), (40, 3), (512, 512)])
def test_the_opening_says_how_fast_the_waves_turn_at_this_width(positions, d_model):
    """The page's opening states no speed in fixed words (a first and a last pair do not exist at d_model <= 2); the
    sentence under the sliders is computed from this table, the fixed words hold at every width."""
    from core.positional_analysis import encoding_table
    from ui.wording.positional_encoding import speeds

    at = run_page(PAGE, positions=positions, d_model=d_model)
    assert not at.exception
    text = "\n".join(el.value for el in at.markdown)
    assert speeds(encoding_table(positions, d_model)) in text
    opening = at.markdown[0].value
    assert opening.startswith("Attention compares contents only")
    assert "barely moves" not in opening and "the first pair" not in opening and "fingerprint" not in opening
    assert ("a single frequency" in text) == (d_model <= 2)
    from ui.wording.positional_encoding import columns, offset_only

    assert columns(d_model) in text and offset_only(d_model) in text  # the table's and the similarity's openings
    assert ("Even columns hold sines" in text) == (d_model > 2)


# ------------------------------------------------------------------- what the shared tests know of this page

def plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n > 1 else ''}"


def positional_shown(at) -> dict:
    tables = {k: v for k, v in heatmaps(at).items() if k.startswith("PE (")}
    curves, _ = wave_data(at)
    dims = sorted({int(re.match(r"dim (\d+) ", s).group(1)) for s in curves["series"]})
    return {"table": tables, "dims drawn": dims}


def positional_expected(p) -> dict:
    title = f"PE ({plural(p['positions'], 'position')} × {plural(p['d_model'], 'dim')})"
    return {"table": {title: positional_encoding(p["positions"], p["d_model"])}, "dims drawn": sorted(p["dims"])}


SHARED = PageTests(
    probe=Probe(dict(positions=5, d_model=8, dims=[0, 1, 2, 4]), positional_shown, positional_expected),
    valid=[Case("positional_encoding", {"dims": ["3", "5"], "present": "true"}, {"dims": [3, 5], "present": True})],
    malformed=[Case("positional_encoding", {"positions": "0", "d_model": "513", "dims": "600", "present": "maybe"},
                    {"positions": 5, "d_model": 8, "dims": [0, 1, 2, 4], "present": False})],
    elsewhere={(key, VALID): ("tests/pages/test_positional_encoding.py::test_other_slider_extremes",)
               for key in ("positions", "d_model")},
    data_step=("positions", (5, 6)),
    canvas=True,
    concept=True,
    quiz=Quiz("pe_similarity", "position 11", {"positions": "64", "d_model": "64"}),
)
